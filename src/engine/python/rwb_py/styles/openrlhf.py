"""OpenRLHF's style: a reward file given with `--reward.remote_url FILE.py` (formerly
`--remote_rm_url`), whose `reward_func(queries, prompts, labels)` the agent executor
calls once per sample, positionally, with one-element lists (openrlhf/utils/agent.py at
OpenRLHF 3c3be623; see tests/corpus/TRAINERS.md): `queries` the templated prompt
followed by the completion, `prompts` the templated prompt, `labels` the sample's
`label` ("" without one). It returns a dict: `rewards` (a tensor, list or number) is
the score; `scores` and each `extra_logs` entry are metrics.
"""

from ..results import InvalidResult, _as_result, _describe
from .calling import Pointwise
from .samples import as_text, parts, templated_prompt


NAME = "openrlhf"


def detect(seen):
    """It declares `queries`."""
    if "queries" in seen.names:
        return "%s queries (OpenRLHF's reward_func(queries, prompts, labels))" % seen.what
    return None


class Caller(Pointwise):
    style = NAME
    direct = False

    def __init__(self, fn, extra_kwargs, spec):
        Pointwise.__init__(self, fn, extra_kwargs, spec)
        self.template = spec.get("chat_template") or "chatml"
        call = fn
        self.fn = lambda queries, prompts, labels, **extra: call(queries, prompts, labels, **extra)

    def arguments(self, sample):
        prompt = templated_prompt(sample, self.template)
        query = prompt + as_text(parts(sample).completion)
        label = sample.get("label")
        kwargs = dict(self.extra)
        kwargs.update(queries=[query], prompts=[prompt], labels=["" if label is None else label])
        return kwargs

    def result(self, value):
        if not isinstance(value, dict):
            raise InvalidResult(
                'an OpenRLHF reward_func returns a dict with "rewards"; it returned %s' % _describe(value)
            )
        if value.get("rewards") is None:
            raise InvalidResult(
                'the returned dict has no "rewards" (keys: %s)' % (", ".join(sorted(map(str, value))) or "none")
            )
        score = _one(value["rewards"], "rewards")
        metrics = {}
        if value.get("scores") is not None:
            metrics["scores"] = _metric(_one(value["scores"], "scores"))
        for name, logged in (value.get("extra_logs") or {}).items():
            metrics[str(name)] = _metric(_first(logged, "extra_logs[%r]" % name))
        return _as_result({"score": score, "reason": None, "metrics": metrics}, False)


def _flat(value):
    """A tensor, array, nested list or number as a flat list of its values."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        value = tolist()
    if not isinstance(value, (list, tuple)):
        return [value]
    return [item for part in value for item in _flat(part)]


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidResult("%s is %s, not a number" % (what, _describe(value)))
    return float(value)


def _one(value, what):
    """The single number a per-sample `rewards` or `scores` holds."""
    flat = _flat(value)
    if len(flat) != 1:
        raise InvalidResult("%s holds %d values for one sample" % (what, len(flat)))
    return _number(flat[0], what)


def _first(value, what):
    """An extra_log as OpenRLHF reads it: its first value (`.flatten()[0]`)."""
    flat = _flat(value)
    if not flat:
        raise InvalidResult("%s is empty" % what)
    return _number(flat[0], what)


def _metric(score):
    return {"score": score, "reason": None}
