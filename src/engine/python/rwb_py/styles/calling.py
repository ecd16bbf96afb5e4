"""What every calling style shares: reading a function's signature, passing it only
the keywords it declares, and the two kinds of Caller, one call per sample
(Pointwise) and one call per batch (Batched).
"""

import inspect
import traceback

from ..results import InvalidResult, _as_result, _describe


def _accepts(fn):
    """(names of parameters, whether it takes **kwargs) of the user's function."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return set(), True
    names = {p.name for p in params.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
    return names, var_kw


def _filter_kwargs(kwargs, accepted):
    names, var_kw = accepted
    if var_kw:
        return kwargs
    return {k: v for k, v in kwargs.items() if k in names}


def is_decorated(fn):
    """Whether `fn` went through @reward_function (the real one or the bundled one)."""
    return getattr(fn, "_reward_function_mode", None) is not None


class Calling:
    """What every style's Caller holds: the function, the keywords rwb.toml adds
    (`kwargs`) and what the function accepts. `spec` is the evaluator's spec, for a
    style's own options."""

    style = None

    def __init__(self, fn, extra_kwargs, spec):
        self.fn = fn
        self.extra = extra_kwargs
        self.accepted = _accepts(fn)


class Pointwise(Calling):
    """One call per sample. A style's Caller sets `style` and writes `arguments`: a
    parsed sample -> the call's keywords."""

    batched = False
    # whether a plain dict return ({"score", "reason"}) is the result as it stands,
    # so that Worker.run_pointwise writes its line directly (veRL's is not: it reads a
    # dict's other keys as metrics)
    direct = True
    # contract checks: whether the score, and each metric's score, should be in [0, 1]
    unit_score = False
    unit_metrics = False
    # whether the return was validated already (a decorated reward-kit function's)
    strict = False

    def result(self, value):
        if type(value) is Swallowed:
            return value.result()
        return _as_result(value, self.strict)


class Swallowed:
    """What a verifiers Rubric makes of a reward function that raised: a score of 0.0,
    the error logged. The row keeps the score and shows the log line as its reason
    and the exception as its error."""

    __slots__ = ("name", "exc")

    def __init__(self, name, exc):
        self.name = name
        self.exc = exc

    def result(self):
        exc = self.exc
        return {
            "score": 0.0,
            "is_score_valid": True,
            "reason": "Error calling reward function %s: %s" % (self.name, exc),
            "metrics": {},
            "step_outputs": None,
            "error": "".join(traceback.format_exception_only(type(exc), exc)).strip(),
        }


class Batched(Calling):
    """One call per batch. A style's Caller sets `style` and writes `arguments`:
    parsed samples -> the call's keywords."""

    batched = True
    # whether None for a sample means "no score" (TRL) rather than an invalid result
    none_is_no_score = False

    def results(self, value, count):
        if not isinstance(value, (list, tuple)):
            raise InvalidResult("a batched evaluator must return a list; it returned %s" % _describe(value))
        if len(value) != count:
            raise InvalidResult("returned %d scores for a batch of %d samples" % (len(value), count))
        out = []
        for item in value:
            if item is None and self.none_is_no_score:
                out.append(None)
            else:
                out.append(_as_result(item, False))
        return out
