"""What an evaluator's return becomes: rwb's result dict, read and checked the way
reward-kit's pydantic models read one (finite float scores, lax bools and strings,
step_outputs that are JSON rwb can read back). What cannot be read is an
InvalidResult whose message names the field.
"""

import decimal
import math
import numbers
import sys


class InvalidResult(Exception):
    """A return value rwb cannot read as a result (NaN score, a string, ...)."""


# What each calling style's function returns, in its trainer's words: said when a
# return cannot be read. A worker serves one evaluator, so the style it was loaded
# with is the one (set_style); any other style reads as reward-kit's.
_EXPECTED = {
    "trl": "a TRL reward function returns a list with one float per completion (None: no score), e.g. [1.0, 0.0]",
    "tunix": "a Tunix reward function returns a list with one float per completion",
    "verl": "veRL's compute_score returns a float, or a dict with 'score' (its other keys become metrics)",
    "simple": "a simple evaluator returns a float",
    "batch": "a batch-mode reward function returns a list with one EvaluateResult (or a dict with 'score', or a number) per rollout",
    "openrlhf": "an OpenRLHF reward function returns a dict with 'rewards' (and 'scores', 'extra_logs')",
    "verifiers": "a verifiers reward function returns a float",
    "areal": "an AReaL reward function returns a float (AReaL turns it into a tensor)",
    "easyr1": "an EasyR1 batch reward function returns a list with one dict holding 'overall' per input",
    "easyr1-sequential": "an EasyR1 sequential reward function returns a dict holding 'overall'",
    "swift": "an ms-swift ORM returns a list with one float per completion (None: no score)",
    "slime": "a slime reward returns a number, or a dict read through trainer_args.reward_key",
    "slime-group": "a slime group reward returns a list with one number (or dict) per sample",
    "skyrl": "SkyRL's compute_score returns a float",
    "call": "the return is read as call.score in rwb.toml says: a number, a bool or None there",
    "call-batch": "the return is a list, each item read as call.score in rwb.toml says",
}
_REWARD_KIT = "expected an EvaluateResult, a dict with 'score', a (score, metrics) tuple or a number"
_style = None


def set_style(style):
    """The style this worker's evaluator is called in (see _EXPECTED)."""
    global _style
    _style = style


def _expected():
    return _EXPECTED.get(_style, _REWARD_KIT)


def _number(value, what):
    """A score as pydantic's float field takes it: a finite real number."""
    if isinstance(value, float) or isinstance(value, int):  # bool is an int
        try:
            value = float(value)
        except OverflowError:
            raise InvalidResult(
                "%s is an integer of %d bits, too large for a float (at most about 1.8e308)"
                % (what, value.bit_length())
            ) from None
    elif isinstance(value, numbers.Real):  # numpy scalars, Fraction, ...
        value = float(value)
    elif isinstance(value, decimal.Decimal):
        value = float(value)
    else:
        raise InvalidResult("%s is %s %r, not a number" % (what, type(value).__name__, value))
    if math.isnan(value) or math.isinf(value):
        raise InvalidResult("%s is %r, not a finite number" % (what, value))
    return value


# The strings pydantic's lax bool takes, as it takes them (case-insensitive).
_TRUE_WORDS = frozenset(("1", "on", "t", "true", "y", "yes"))
_FALSE_WORDS = frozenset(("0", "off", "f", "false", "n", "no"))


def _flag(value, what):
    """An is_score_valid as pydantic's lax bool reads it: a bool, 0/1 (int or float)
    or a yes/no word; anything else is an InvalidResult naming `what`."""
    if value is True or value is False:
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return value == 1
    if isinstance(value, (str, bytes)):
        word = (value.decode("utf-8", "replace") if isinstance(value, bytes) else value).strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    raise InvalidResult("%s is %s, not a boolean (True or False)" % (what, _describe(value)))


def _text(value, what):
    """A reason or error as pydantic's lax str reads it: a str, UTF-8 bytes, or None;
    anything else (a number too) is an InvalidResult naming `what`."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidResult("%s is bytes that are not UTF-8 text (%s)" % (what, exc)) from None
    raise InvalidResult("%s is %s, not a string" % (what, _describe(value)))


# serde_json, which reads every result line in rwb, refuses nesting deeper than 128
# arrays/objects. A result line wraps step_outputs in 3 levels; leave a margin.
MAX_NESTING = 100
_LARGEST_FLOAT = sys.float_info.max


def _plain_json(value, where, depth=0):
    """Check that `value` (free-form user data: step_outputs) is JSON rwb can read
    back: finite numbers within float range, str keys or scalar keys, known types,
    at most MAX_NESTING levels. Raises InvalidResult naming where the problem is."""
    if value is None or isinstance(value, (str, bool)):
        return
    if isinstance(value, int):
        if abs(value) > _LARGEST_FLOAT:
            raise InvalidResult("%s is an integer of %d bits, too large for a float" % (where(), value.bit_length()))
        return
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise InvalidResult("%s is %r, not a finite number" % (where(), value))
        return
    if not isinstance(value, (list, tuple, dict)):
        raise InvalidResult("%s is %s, which JSON cannot hold" % (where(), _describe(value)))
    if depth >= MAX_NESTING:
        path = where()
        if len(path) > 60:
            path = path[: path.rindex("[", 0, 60)] + "..."  # cut between subscripts
        raise InvalidResult("%s nests lists/dicts more than %d levels deep; rwb reads at most %d" % (path, MAX_NESTING, MAX_NESTING))
    if isinstance(value, dict):
        for key, item in value.items():
            if not (key is None or isinstance(key, (str, int, float))):
                raise InvalidResult("%s has a key %s; JSON keys are strings" % (where(), _describe(key)))
            _plain_json(item, lambda key=key: "%s[%r]" % (where(), key), depth + 1)
    else:
        for n, item in enumerate(value):
            _plain_json(item, lambda n=n: "%s[%d]" % (where(), n), depth + 1)


def _step_outputs(steps):
    """step_outputs as plain JSON data (StepOutput objects dumped), checked."""
    if steps is None:
        return None
    if not isinstance(steps, (list, tuple)):
        raise InvalidResult("step_outputs is %s, not a list" % _describe(steps))
    out = [s.model_dump() if hasattr(s, "model_dump") else s for s in steps]
    _plain_json(out, lambda: "step_outputs")
    return out


def _get(obj, key, default=None):
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _as_metric(name, value):
    """One component metric in rwb's result shape."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"is_score_valid": True, "score": _number(value, "metric %r score" % name), "reason": None}
    if isinstance(value, bool):
        return {"is_score_valid": True, "score": float(value), "reason": None}
    if hasattr(value, "model_dump") and not isinstance(value, dict):
        value = value.model_dump()
    score = _get(value, "score")
    if score is None:
        raise InvalidResult("metric %r has no score" % (name,))
    reason = _get(value, "reason")
    valid = _get(value, "is_score_valid", True)
    return {
        "is_score_valid": _flag(valid, "metric %r is_score_valid" % (name,)) if valid is not None else True,
        "score": _number(score, "metric %r score" % (name,)),
        "reason": None if reason is None else str(reason),
    }


_PLAIN_KEYS = frozenset(("score", "reason", "metrics"))


def _as_result(value, strict):
    """Read what an evaluator returned as rwb's result dict: a plain dict result at
    once (see _plain_result), anything else by _read_result."""
    if type(value) is dict:
        plain = _plain_result(value)
        if plain is not None:
            return plain
    return _read_result(value, strict)


def _plain_result(value):
    """The result of the most common return, a dict holding a finite float `score`
    and at most a str `reason` and empty `metrics`, or None for any other dict.
    _read_result gives the same result for it (tests/python pins that); this only
    skips the checks such a dict passes anyway."""
    parts = _plain_parts(value)
    if parts is None:
        return None
    return {"score": parts[0], "is_score_valid": True, "reason": parts[1], "metrics": {}, "step_outputs": None, "error": None}


def _plain_parts(value):
    """(score, reason) of a plain dict result (see _plain_result), else None."""
    if type(value) is not dict or not _PLAIN_KEYS.issuperset(value):
        return None
    score = value.get("score")
    if type(score) is not float or score - score != 0.0:  # NaN and +-inf give NaN
        return None
    reason = value.get("reason")
    if reason is not None and type(reason) is not str:
        return None
    metrics = value.get("metrics")
    if metrics is not None and (type(metrics) is not dict or metrics):
        return None
    return score, reason


def _read_result(value, strict):
    """Read what an evaluator returned as rwb's result dict.

    `strict` is for decorated reward-kit functions, whose return the decorator has
    already validated; anything else is read as leniently as reward-kit's legacy
    paths are: EvaluateResult-like objects, dicts with a score, (score, metrics)
    tuples and bare numbers."""
    if _is_evaluate_result(value):
        return _read_evaluate_result(value)
    if hasattr(value, "model_dump") and not isinstance(value, dict):
        value = value.model_dump()
    elif hasattr(value, "to_dict") and not isinstance(value, dict):
        value = value.to_dict()
    elif not isinstance(value, dict) and hasattr(value, "score") and hasattr(value, "metrics"):
        value = {"score": value.score, "metrics": value.metrics, "reason": getattr(value, "reason", None)}
    if isinstance(value, tuple) and len(value) == 2 and not strict:
        score, metrics = value
        value = {"score": score, "metrics": metrics if isinstance(metrics, dict) else {}}
    if isinstance(value, (int, float)) and not strict:
        value = {"score": value}
    if not isinstance(value, dict):
        raise InvalidResult("the evaluator returned %s; %s" % (_describe(value), _expected()))
    if "score" not in value or value["score"] is None:
        keys = ", ".join(map(str, value)) or "none"
        raise InvalidResult("the evaluator returned a dict without a 'score' (keys: %s)" % keys)
    metrics = value.get("metrics") or {}
    if not isinstance(metrics, dict):
        raise InvalidResult("'metrics' is %s, not a dict of metric results" % type(metrics).__name__)
    reason = value.get("reason")
    error = value.get("error")
    valid = value.get("is_score_valid", True)
    return {
        "score": _number(value["score"], "score"),
        "is_score_valid": _flag(valid, "is_score_valid") if valid is not None else True,
        "reason": None if reason is None else str(reason),
        "metrics": {str(k): _as_metric(k, v) for k, v in metrics.items()},
        "step_outputs": _step_outputs(value.get("step_outputs")),
        "error": None if error is None else str(error),
    }


_RESULT_FIELDS = ("score", "is_score_valid", "reason", "metrics", "step_outputs", "error")


def _is_evaluate_result(value):
    cls = type(value)
    return cls.__name__ == "EvaluateResult" and all(hasattr(value, f) for f in _RESULT_FIELDS)


def _read_evaluate_result(value):
    """An EvaluateResult (real or bundled) read by attribute. Its fields were
    validated when it was built, but pydantic does not validate assignments
    (`r.reason = 5`): each field is checked again the way construction would have
    checked it, so that what rwb reports is what reward-kit would have accepted."""
    metrics = {}
    raw_metrics = value.metrics or {}
    if not isinstance(raw_metrics, dict):
        raise InvalidResult("metrics is %s, not a dict of MetricResult" % _describe(raw_metrics))
    for name, m in raw_metrics.items():
        if _is_metric_result(m):
            metrics[str(name)] = {
                "is_score_valid": _flag(m.is_score_valid, "metric %r is_score_valid" % (name,)),
                "score": _number(m.score, "metric %r score" % (name,)),
                "reason": _text(m.reason, "metric %r reason" % (name,)),
            }
        else:
            metrics[str(name)] = _as_metric(name, m)
    return {
        "score": _number(value.score, "score"),
        "is_score_valid": _flag(value.is_score_valid, "is_score_valid"),
        "reason": _text(value.reason, "reason"),
        "metrics": metrics,
        "step_outputs": _step_outputs(value.step_outputs),
        "error": _text(value.error, "error"),
    }


def _is_metric_result(m):
    return type(m).__name__ == "MetricResult" and hasattr(m, "score") and hasattr(m, "reason")


def _describe(value):
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return "%s %s" % (type(value).__name__, text)


NO_SCORE = {
    "score": None,
    "is_score_valid": False,
    "reason": "the evaluator returned None (no score) for this sample",
    "metrics": {},
    "step_outputs": None,
    "error": None,
}
