"""A call described as data (SPEC §3, `call = { ... }`; the 2026 trainer presets in
presets.py are the same description, named).

A description says which value goes in each position (`args`) and keyword
(`keywords`), whether every column is passed as a keyword too (`columns`), one
sample or one batch a call (`per`), and where the score is in what the function
returns (`score`, a path of keys and indexes). Each value comes from a *source*: one
of SOURCES below, a column of the sample (a dotted name reaches in), or a dict of
sources. The description is read once, when the worker loads its evaluator: a
sample costs one lookup per argument.
"""

import math
import numbers

from ..asyncs import _is_async
from ..results import NO_SCORE, InvalidResult, _as_result, _describe, _number
from .calling import Batched, Pointwise
from .samples import STEP, TEMPLATED, as_messages, as_text, conversation, parts, templated_prompt


# The keyword under which a call's positional arguments travel to the wrapper that
# makes the call (no parameter has this name: it starts with a NUL character).
POSITIONAL = "\x00args"

# Keys rwb adds to a sample that are never a column.
_INTERNAL = (TEMPLATED, STEP)


class CallSourceMissing(Exception):
    """A source names a column the sample does not have."""


class Namespace:
    """The trainer's `args`: `trainer_args` from rwb.toml as attributes (what
    argparse gives ms-swift and slime). A missing attribute says where to set it."""

    def __init__(self, values, evaluator):
        self.__dict__.update(values)
        self._rwb_evaluator = evaluator

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            "the trainer's args have no %r: set trainer_args = { %s = ... } in rwb.toml "
            "(at the top, or in [evaluators.%s])" % (name, name, self.__dict__.get("_rwb_evaluator", "NAME"))
        )

    def __repr__(self):
        shown = ", ".join("%s=%r" % kv for kv in vars(self).items() if not kv[0].startswith("_rwb"))
        return "Namespace(%s)" % shown

    def __eq__(self, other):
        return isinstance(other, Namespace) and vars(self) == vars(other)

    def __deepcopy__(self, memo):
        return self


class Context:
    """What sources read besides the sample: the evaluator's name, its chat template,
    its trainer args, and the extra values a preset adds (slime's Sample type)."""

    def __init__(self, spec, extra_sources=None):
        self.evaluator = spec.get("name") or "NAME"
        self.template = spec.get("chat_template") or "chatml"
        self.trainer_args = dict(spec.get("trainer_args") or {})
        self.namespace = Namespace(self.trainer_args, self.evaluator)
        self.sources = dict(SOURCES)
        if extra_sources:
            self.sources.update(extra_sources)


def _column(sample, conv, name):
    """A column of the sample, a dotted name reaching into dicts and lists."""
    head, _, rest = name.partition(".")
    if head in _INTERNAL or (head in conv.keys and head not in ("prompt", "messages")) or head not in sample:
        columns = sorted(k for k in sample if k not in conv.keys and k not in _INTERNAL)
        raise CallSourceMissing(
            "call source %r is neither one of rwb's sources (%s) nor a column of this sample (its columns: %s)"
            % (name, ", ".join(sorted(SOURCES)), ", ".join(columns) or "none")
        )
    value = sample[head]
    walked = head
    for part in rest.split(".") if rest else ():
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            raise CallSourceMissing("call source %r: %s has no %r (it is %s)" % (name, walked, part, _describe(value)))
        walked += "." + part
    return value


def _first_column(sample, names):
    """The first of `names` (dotted) the sample has, else None."""
    for name in names:
        head, _, rest = name.partition(".")
        value = sample.get(head)
        for part in rest.split(".") if rest else ():
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            return value
    return None


# Where the sample's ground truth is, in the order rwb looks (the first present
# wins): rwb's own name (what [samples.NAME] ground_truth = "COL" maps), veRL's and
# SkyRL's nested ones, then the columns other trainers read by default.
GROUND_TRUTH = ("ground_truth", "reward_model.ground_truth", "reward_spec.ground_truth", "answer", "label", "solution")


def _row(sample, conv):
    """The sample's row as the data had it, without its completion: every column,
    and the prompt (a chat sample's `messages` are its prompt turns)."""
    row = {k: v for k, v in sample.items() if k not in conv.keys and k not in _INTERNAL}
    if conv.chat:
        row["messages"] = list(conv.prompt)
    else:
        row["prompt"] = conv.prompt
    return row


def _areal_row(sample, conv):
    """The data row as AReaL hands it on as keywords: every column, and `messages`
    the prompt turns (AReaL's rows hold the prompt as messages; no `prompt` key,
    which would collide with the reward's first parameter). The token-id columns
    stand for what AReaL's engine returned (`resp.input_tokens`, `output_tokens`),
    passed by position: they are no data field."""
    row = {k: v for k, v in sample.items() if k not in conv.keys and k not in _INTERNAL and k not in _ID_COLUMNS}
    row["messages"] = as_messages(conv.prompt, "user")
    return row


_ID_COLUMNS = ("prompt_ids", "completion_ids", "input_tokens", "output_tokens")


def _columns(sample, conv):
    return {k: v for k, v in sample.items() if k not in conv.keys and k not in _INTERNAL}


def _easyr1_ground_truth(sample):
    """EasyR1's ground truth: its dataset's `answer_key` column (`answer` unless
    trainer_args says; verl/utils/dataset.py pops it into `ground_truth`), else the
    sample's ground truth as rwb finds it."""
    return sample.get("answer", _first_column(sample, GROUND_TRUTH))


def _trainer_state(sample):
    """The trainer's TrainerState (transformers'), at the step the sample's source
    logged: what ms-swift hands every reward function as `trainer_state`."""
    from .trl import trainer_state

    return trainer_state([sample], None)


# name -> (sample, parts, context) -> value; and whether a batch gets one value for
# all its samples rather than a list (the trainer's args are the same for all).
SOURCES = {
    "response": lambda s, c, x: as_text(c.completion),
    "completion": lambda s, c, x: c.completion,
    "prompt": lambda s, c, x: templated_prompt(s, x.template),
    "prompt_messages": lambda s, c, x: as_messages(c.prompt, "user"),
    "messages": lambda s, c, x: conversation(s),
    "ground_truth": lambda s, c, x: _first_column(s, GROUND_TRUTH),
    "row": lambda s, c, x: _row(s, c),
    "areal_row": lambda s, c, x: _areal_row(s, c),
    "trainer_args": lambda s, c, x: x.namespace,
    "prompt_ids": lambda s, c, x: _first_column(s, ("prompt_ids", "input_tokens")),
    "completion_ids": lambda s, c, x: _first_column(s, ("completion_ids", "output_tokens")),
    "response_length": lambda s, c, x: s.get("response_length"),
    "trainer_state": lambda s, c, x: _trainer_state(s),
    "easyr1_ground_truth": lambda s, c, x: (
        s.get(x.trainer_args["answer_key"], _first_column(s, GROUND_TRUTH))
        if isinstance(x.trainer_args.get("answer_key"), str)
        else _easyr1_ground_truth(s)
    ),
}
SHARED = frozenset(("trainer_args", "trainer_state"))


def value_of(source, sample, conv, ctx):
    """The value `source` gives for one sample."""
    if isinstance(source, dict):
        return {k: value_of(v, sample, conv, ctx) for k, v in source.items()}
    if source is None:
        return None
    get = ctx.sources.get(source)
    if get is not None:
        return get(sample, conv, ctx)
    return _column(sample, conv, source)


def batch_value(source, samples, each, ctx):
    """The value `source` gives for a batch: a list over it (one value for a shared
    source such as the trainer's args)."""
    if isinstance(source, str) and source in SHARED:
        return value_of(source, samples[0] if samples else {}, each[0] if each else None, ctx)
    return [value_of(source, s, p, ctx) for s, p in zip(samples, each)]


class Description:
    """A call description, read once: positional sources, keyword sources, whether
    the columns (or another source's dict) are spread as keywords, the score path."""

    __slots__ = ("name", "args", "keywords", "batched", "columns", "spread", "score", "score_text", "where")

    def __init__(self, table, name="call", where=None):
        self.name = name
        self.args = list(table.get("args") or ())
        self.keywords = dict(table.get("keywords") or {})
        self.batched = table.get("per") in ("batch", "group")
        self.columns = bool(table.get("columns"))
        # a source whose dict is passed as keywords (AReaL's **data)
        self.spread = table.get("spread")
        self.score = list(table.get("score") or ())
        self.score_text = table.get("score_text") or _path_text(self.score)
        # how an error says where to change the description
        self.where = where

    def text(self):
        """The description as `rwb check` shows it: the call's shape."""
        parts_ = [_source_text(s) for s in self.args]
        parts_ += ["%s=%s" % (k, _source_text(v)) for k, v in self.keywords.items()]
        if self.spread:
            parts_.append("**%s" % self.spread)
        if self.columns:
            parts_.append("**columns")
        per = "one call per batch, each value a list over it" if self.batched else "one sample a call"
        score = "the score at %s" % self.score_text if self.score else "the return is the score"
        return "fn(%s); %s; %s" % (", ".join(parts_), per, score)


def _source_text(source):
    if isinstance(source, dict):
        return "{%s}" % ", ".join("%s: %s" % (k, _source_text(v)) for k, v in source.items())
    return "None" if source is None else str(source)


def _path_text(path):
    out = ""
    for step in path:
        if isinstance(step, int):
            out += "[%d]" % step
        else:
            out += ("." if out else "") + str(step)
    return out


def positional_call(fn):
    """`fn` called with the arguments under POSITIONAL in their positions and the
    rest by keyword; an `async def` stays one (the worker awaits it)."""
    if _is_async(fn):

        async def call_async(**kwargs):
            args = kwargs.pop(POSITIONAL, ())
            return await fn(*args, **kwargs)

        return call_async

    def call(**kwargs):
        args = kwargs.pop(POSITIONAL, ())
        return fn(*args, **kwargs)

    return call


class Reading:
    """How a return becomes a result: the score at the description's path (a bool is
    1.0/0.0, None is no score), and a dict's other numeric keys as metrics. A return
    the path does not fit is an InvalidResult naming the evaluator, the path, what
    came back and the rwb.toml line to write."""

    def __init__(self, description, ctx, hint=None):
        self.d = description
        self.ctx = ctx
        # what the error says to do (a preset says its trainer's rule)
        self.hint = hint

    def fix(self, suggestion):
        if self.hint:
            return self.hint
        return "write call = { ..., score = %s } in [evaluators.%s] of rwb.toml" % (suggestion, self.ctx.evaluator)

    def read(self, value, batch_item=False):
        value = _plain(value)
        path = self.d.score
        if not path:
            return self._whole(value)
        metrics = {}
        if isinstance(value, dict):
            metrics = _metrics_beside(value, path[0])
        walked = value
        for n, step in enumerate(path):
            walked = _plain(walked)
            at = _path_text(path[: n + 1])
            if isinstance(step, int):
                if not isinstance(walked, (list, tuple)):
                    raise InvalidResult(
                        "%s: the score is at %s, but %s is %s, not a list: %s"
                        % (self.ctx.evaluator, self.d.score_text, _path_text(path[:n]) or "the return", _describe(walked), self.fix('"KEY"'))
                    )
                if not -len(walked) <= step < len(walked):
                    raise InvalidResult(
                        "%s: the score is at %s, but %s holds %d value(s): %s"
                        % (self.ctx.evaluator, self.d.score_text, _path_text(path[:n]) or "the return", len(walked), self.fix('"[0]"'))
                    )
                walked = walked[step]
            else:
                if isinstance(walked, dict):
                    if step not in walked:
                        keys = ", ".join(map(str, walked)) or "none"
                        first = next((k for k, v in walked.items() if _is_number(v)), None)
                        raise InvalidResult(
                            "%s: the score is at %s, but the function returned a dict without %r (keys: %s): %s"
                            % (self.ctx.evaluator, at, step, keys, self.fix('"%s"' % first if first else '"KEY"'))
                        )
                    walked = walked[step]
                elif hasattr(walked, step) and not isinstance(walked, (str, bytes, numbers.Number)):
                    walked = getattr(walked, step)
                else:
                    raise InvalidResult(
                        "%s: the score is at %s, but the function returned %s, which has no %r: %s"
                        % (self.ctx.evaluator, self.d.score_text, _describe(walked), step, self.fix('"[0]"' if isinstance(walked, (list, tuple)) else "nothing (the return is the score)"))
                    )
        score = _plain(walked)
        if batch_item and isinstance(score, float) and math.isnan(score):
            score = None  # NaN in a batch is the trainer's "no score"
        if score is None:
            return None if batch_item else dict(NO_SCORE)
        if isinstance(score, bool):
            score = float(score)
        if not _is_number(score):
            raise InvalidResult(
                "%s: the score at %s is %s, not a number" % (self.ctx.evaluator, self.d.score_text, _describe(score))
            )
        return {"score": _number(score, "score"), "is_score_valid": True, "reason": None, "metrics": metrics, "step_outputs": None, "error": None}

    def _whole(self, value):
        """No path: a number or bool is the score, None no score; a dict with `score`
        is read with its other numeric keys as metrics; anything else is the usual
        result reading."""
        if value is None:
            return dict(NO_SCORE)
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, dict) and "score" in value and not isinstance(value.get("metrics"), dict):
            metrics = _metrics_beside(value, "score")
            score = _plain(value["score"])
            if isinstance(score, bool):
                score = float(score)
            if _is_number(score):
                return {"score": _number(score, "score"), "is_score_valid": True, "reason": _reason(value), "metrics": metrics, "step_outputs": None, "error": None}
        if isinstance(value, dict) and "score" not in value:
            first = next((k for k, v in value.items() if _is_number(_plain(v))), None)
            raise InvalidResult(
                "%s returned a dict without 'score' (keys: %s): %s"
                % (self.ctx.evaluator, ", ".join(map(str, value)) or "none", self.fix('"%s"' % first if first else '"KEY"'))
            )
        if isinstance(value, (list, tuple)):
            raise InvalidResult(
                "%s returned %s where one score was expected: %s" % (self.ctx.evaluator, _describe(value), self.fix('"[0]"'))
            )
        return _as_result(value, False)


def _plain(value):
    """A tensor, array or numpy scalar as the Python value it holds."""
    if isinstance(value, (dict, list, tuple, str, bytes, bool, int, float)) or value is None:
        return value
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        try:
            return tolist()
        except Exception:
            return value
    return value


def _is_number(value):
    """A bool or a real number (numpy scalars included)."""
    return isinstance(value, numbers.Real)


def _reason(value):
    reason = value.get("reason")
    return reason if isinstance(reason, str) else None


def _metrics_beside(value, score_key):
    """A dict return's other numeric (or bool) keys, as metrics."""
    out = {}
    for key, item in value.items():
        if key == score_key or key in ("reason", "metrics"):
            continue
        item = _plain(item)
        if isinstance(item, bool):
            item = float(item)
        if isinstance(item, numbers.Real) and math.isfinite(float(item)):
            out[str(key)] = {"score": float(item), "is_score_valid": True, "reason": None}
    return out


class SampleCaller(Pointwise):
    """One call a sample, as a description says."""

    style = "call"
    direct = False

    def __init__(self, fn, extra_kwargs, spec, description=None, ctx=None, hint=None):
        Pointwise.__init__(self, fn, extra_kwargs, spec)
        self.d = description or Description(spec.get("call") or {}, where="call")
        self.ctx = ctx or Context(spec)
        self.reading = Reading(self.d, self.ctx, hint)
        self.fn = positional_call(fn)

    def arguments(self, sample):
        conv = parts(sample)
        ctx, d = self.ctx, self.d
        kwargs = dict(self.extra)
        if d.columns:
            kwargs.update(_columns(sample, conv))
        if d.spread:
            kwargs.update(value_of(d.spread, sample, conv, ctx))
        for name, source in d.keywords.items():
            kwargs[name] = value_of(source, sample, conv, ctx)
        if d.args:
            kwargs[POSITIONAL] = [value_of(s, sample, conv, ctx) for s in d.args]
        return kwargs

    def result(self, value):
        return self.reading.read(value)


class BatchCaller(Batched):
    """One call a batch, as a description says: each source a list over the batch."""

    style = "call-batch"
    none_is_no_score = True

    def __init__(self, fn, extra_kwargs, spec, description=None, ctx=None, hint=None):
        Batched.__init__(self, fn, extra_kwargs, spec)
        self.d = description or Description(spec.get("call") or {}, where="call")
        self.ctx = ctx or Context(spec)
        self.reading = Reading(self.d, self.ctx, hint)
        self.fn = positional_call(fn)

    def arguments(self, samples):
        each = [parts(s) for s in samples]
        ctx, d = self.ctx, self.d
        kwargs = dict(self.extra)
        if d.columns:
            keys = []
            for s, p in zip(samples, each):
                keys.extend(k for k in s if k not in p.keys and k not in _INTERNAL and k not in keys)
            kwargs.update({k: [s.get(k) if k not in p.keys else None for s, p in zip(samples, each)] for k in keys})
        for name, source in d.keywords.items():
            kwargs[name] = batch_value(source, samples, each, ctx)
        if d.args:
            kwargs[POSITIONAL] = [batch_value(s, samples, each, ctx) for s in d.args]
        return kwargs

    def results(self, value, count):
        value = _plain(value)
        if not isinstance(value, (list, tuple)):
            raise InvalidResult(
                "%s: a batched call must return one value per sample; it returned %s" % (self.ctx.evaluator, _describe(value))
            )
        if len(value) != count:
            raise InvalidResult(
                "%s returned %d values for a batch of %d samples" % (self.ctx.evaluator, len(value), count)
            )
        return [self.reading.read(item, batch_item=True) for item in value]


def describe_value(value, width=48):
    """An argument as `rwb check` shows it: its kind and the first characters."""
    kind = type(value).__name__
    if isinstance(value, (list, tuple)):
        kind = "%s[%d]" % (kind, len(value))
    elif isinstance(value, dict):
        kind = "dict{%s}" % ", ".join(map(str, list(value)[:6])) + ("…" if len(value) > 6 else "")
    if isinstance(value, str):
        text = value
    elif callable(value) and not isinstance(value, type) and type(value).__repr__ is object.__repr__:
        # a callback handed to the function (TRL's log_extra): its kind, not an address
        text = "a callable %s" % kind
    else:
        try:
            text = repr(value)
        except Exception:
            text = "<%s>" % kind
    text = text.replace("\n", "\\n")
    if len(text) > width:
        text = text[: width - 1] + "…"
    return kind, text


def call_preview(caller, sample_or_samples):
    """The call `caller` makes for one sample (or batch): a list of
    {"arg": position or keyword name, "kind", "value"} for `rwb check`."""
    kwargs = caller.arguments(sample_or_samples)
    out = []
    for n, value in enumerate(kwargs.get(POSITIONAL, ())):
        kind, text = describe_value(value)
        out.append({"arg": str(n), "kind": kind, "value": text})
    for name, value in kwargs.items():
        if name == POSITIONAL:
            continue
        kind, text = describe_value(value)
        out.append({"arg": name, "kind": kind, "value": text})
    return out

