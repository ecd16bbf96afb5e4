"""Tunix's style: how `RLLearner` calls a reward function (tunix/rl/reward_manager.py,
SequenceRewardManager._compute_rewards, at google/tunix c7d8950f; see
tests/corpus/TRAINERS.md).

Once per batch, by keyword: `prompts` the templated prompt strings, `completions` the
generated text, every other data column as a numpy array (a column of dicts as a dict
of arrays, as grain batches them; plain lists when numpy is missing), `mode="train"`
and `trajectory_ids` ("{prompt}_{generation}" over the batch's consecutive groups). A
result must hold one value per sample; a None value is NaN to Tunix (rwb: no score).
Nothing catches what the function raises: the step fails, and so do the batch's rows.
Its signature is TRL's, so this style is chosen by `style = "tunix"` or by
`trainer = "tunix"`.
"""

from ..results import InvalidResult, _as_result, _describe
from .calling import Batched, _filter_kwargs
from .samples import TEMPLATED, as_text, batch_columns, parts, templated_prompt


NAME = "tunix"


def by_trainer(seen):
    """A TRL-shaped signature of a user who trains with Tunix."""
    if seen.trainer != NAME:
        return None
    names = seen.names
    if "completions" in names and ("prompts" in names or "messages" not in names):
        return '%s prompts/completions and trainer = "tunix" in rwb.toml (Tunix\'s RLLearner call)' % seen.what
    return None


class Caller(Batched):
    style = NAME

    def __init__(self, fn, extra_kwargs, spec):
        Batched.__init__(self, fn, extra_kwargs, spec)
        self.template = spec.get("chat_template") or "chatml"

    def arguments(self, samples):
        each = [parts(s) for s in samples]
        prompts = [templated_prompt(s, self.template) for s in samples]
        kwargs = dict(self.extra)
        for name, values in batch_columns(samples, each).items():
            if name != TEMPLATED:
                kwargs[name] = _as_array(values)
        kwargs["prompts"] = prompts
        kwargs["completions"] = [as_text(p.completion) for p in each]
        kwargs.setdefault("mode", "train")
        kwargs["trajectory_ids"] = _trajectory_ids(prompts)
        return _filter_kwargs(kwargs, self.accepted)

    def results(self, value, count):
        if value is None:
            raise InvalidResult("the reward function returned None (Tunix raises on it)")
        try:
            items = list(value)
        except TypeError:
            raise InvalidResult("a Tunix reward function must return a list; it returned %s" % _describe(value))
        if len(items) != count:
            raise InvalidResult("returned %d rewards for a batch of %d samples (Tunix raises RuntimeError)" % (len(items), count))
        out = []
        for item in items:
            if item is None or (isinstance(item, float) and item != item):
                out.append(None)  # NaN to Tunix, summed as 0 across functions
            else:
                out.append(_as_result(_plain_number(item), False))
        return out


def _plain_number(item):
    """A numpy scalar as the Python number it holds."""
    tolist = getattr(item, "tolist", None)
    return tolist() if callable(tolist) and not isinstance(item, (list, tuple)) else item


def _as_array(values):
    """A column as Tunix hands it on: a numpy array, a column of dicts as a dict of
    arrays; the list itself when numpy is not installed."""
    try:
        import numpy
    except ImportError:
        return values
    if values and all(isinstance(v, dict) for v in values):
        keys = []
        for v in values:
            keys.extend(k for k in v if k not in keys)
        return {k: _as_array([v.get(k) for v in values]) for k in keys}
    try:
        return numpy.array(values)
    except Exception:
        return numpy.array(values, dtype=object)


def _trajectory_ids(prompts):
    """"{prompt index}_{generation index}" for each sample: consecutive samples with
    the same prompt are one prompt's generations."""
    out, row, gen, last = [], -1, 0, object()
    for p in prompts:
        if p != last:
            row, gen, last = row + 1, 0, p
        else:
            gen += 1
        out.append("%d_%d" % (row, gen))
    return out
