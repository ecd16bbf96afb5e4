"""rwb's bundled stand-in for reward_kit.models (reward-kit 0.4.1), standard library only.

rwb uses it only when the interpreter cannot import the real reward-kit. The models
accept and reject the same inputs as the real pydantic models and raise
`ValidationError`s whose text matches pydantic 2.11's, so a function that runs here
runs the same when deployed.
"""

import json
import math
from decimal import Decimal

__all__ = [
    "Message",
    "MetricResult",
    "StepOutput",
    "EvaluateResult",
    "ValidationError",
    "MetricRewardOutput",
    "RewardOutput",
]

_DOCS = "https://errors.pydantic.dev/2.11/v/"
_REQUIRED = object()
_INVALID = object()


def _input_repr(value):
    """repr(value), cut like pydantic-core cuts it: past 50 UTF-8 bytes, the first 25
    and the last 24 bytes, moved to character boundaries."""
    text = repr(value)
    data = text.encode("utf-8")
    if len(data) <= 50:
        return text
    head = 25
    while head > 0 and (data[head] & 0xC0) == 0x80:
        head -= 1
    tail = len(data) - 24
    while tail < len(data) and (data[tail] & 0xC0) == 0x80:
        tail += 1
    return data[:head].decode("utf-8") + "..." + data[tail:].decode("utf-8")


class ValidationError(ValueError):
    """Same name, message layout and `errors()` as pydantic's ValidationError."""

    def __init__(self, title, errors):
        self.title = title
        self._errors = errors
        super().__init__(self._render())

    def errors(self):
        return [dict(e) for e in self._errors]

    def error_count(self):
        return len(self._errors)

    def _render(self):
        count = len(self._errors)
        lines = ["%d validation error%s for %s" % (count, "" if count == 1 else "s", self.title)]
        for e in self._errors:
            if e["loc"]:
                lines.append(".".join(str(part) for part in e["loc"]))
            lines.append(
                "  %s [type=%s, input_value=%s, input_type=%s]"
                % (e["msg"], e["type"], _input_repr(e["input"]), type(e["input"]).__name__)
            )
            lines.append("    For further information visit %s%s" % (_DOCS, e["type"]))
        return "\n".join(lines)

    def __str__(self):
        return self._render()


def _error(errors, loc, kind, msg, value):
    errors.append({"type": kind, "loc": tuple(loc), "msg": msg, "input": value})
    return _INVALID


# ----------------------------------------------------------------------------------
# Field validators: (value, loc, errors) -> validated value or _INVALID
# ----------------------------------------------------------------------------------


def _float(le=None, ge=None):
    def check(value, loc, errors):
        original = value
        if isinstance(value, bool):
            value = float(value)
        elif isinstance(value, int):
            try:
                value = float(value)
            except OverflowError:
                return _error(errors, loc, "float_type", "Input should be a valid number", original)
        elif isinstance(value, (float, Decimal)):
            value = float(value)
        elif isinstance(value, (str, bytes)):
            text = value.decode() if isinstance(value, bytes) else value
            try:
                if "_" in text:
                    raise ValueError(text)
                value = float(text.strip())
            except ValueError:
                return _error(
                    errors,
                    loc,
                    "float_parsing",
                    "Input should be a valid number, unable to parse string as a number",
                    original,
                )
        else:
            return _error(errors, loc, "float_type", "Input should be a valid number", original)
        if le is not None and not value <= le:
            return _error(errors, loc, "less_than_equal", "Input should be less than or equal to %g" % le, original)
        if ge is not None and not value >= ge:
            return _error(
                errors, loc, "greater_than_equal", "Input should be greater than or equal to %g" % ge, original
            )
        return value

    return check


def _str(value, loc, errors):
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return _error(errors, loc, "string_unicode", "Input should be a valid string, unable to parse raw data as a unicode string", value)
    return _error(errors, loc, "string_type", "Input should be a valid string", value)


_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}


def _bool(value, loc, errors):
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
    if isinstance(value, (str, int, float)):
        return _error(errors, loc, "bool_parsing", "Input should be a valid boolean, unable to interpret input", value)
    return _error(errors, loc, "bool_type", "Input should be a valid boolean", value)


def _int_or_str(value, loc, errors):
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, float) and math.isfinite(value):
        _error(
            errors,
            list(loc) + ["int"],
            "int_from_float",
            "Input should be a valid integer, got a number with a fractional part",
            value,
        )
    else:
        _error(errors, list(loc) + ["int"], "int_type", "Input should be a valid integer", value)
    return _error(errors, list(loc) + ["str"], "string_type", "Input should be a valid string", value)


def _any(value, loc, errors):
    return value


def _optional(inner):
    def check(value, loc, errors):
        return None if value is None else inner(value, loc, errors)

    return check


def _dict_of(inner):
    def check(value, loc, errors):
        if not isinstance(value, dict):
            return _error(errors, loc, "dict_type", "Input should be a valid dictionary", value)
        out = {}
        ok = True
        for key, item in value.items():
            if not isinstance(key, str):
                _error(errors, list(loc) + [key, "[key]"], "string_type", "Input should be a valid string", key)
                ok = False
            checked = inner(item, list(loc) + [key], errors)
            if checked is _INVALID:
                ok = False
            out[key] = checked
        return out if ok else _INVALID

    return check


def _list_of(inner):
    def check(value, loc, errors):
        if isinstance(value, (str, bytes, bytearray, dict)) or not hasattr(value, "__iter__"):
            return _error(errors, loc, "list_type", "Input should be a valid list", value)
        value = list(value)
        out = []
        ok = True
        for index, item in enumerate(value):
            checked = inner(item, list(loc) + [index], errors)
            if checked is _INVALID:
                ok = False
            out.append(checked)
        return out if ok else _INVALID

    return check


def _literal(expected):
    def check(value, loc, errors):
        if value == expected:
            return value
        return _error(errors, loc, "literal_error", "Input should be %r" % (expected,), value)

    return check


def _model(cls_name):
    def check(value, loc, errors):
        cls = globals()[cls_name]
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            return _error(
                errors, loc, "model_type", "Input should be a valid dictionary or instance of %s" % cls.__name__, value
            )
        fields = cls._check_fields(value, loc, errors)
        if fields is _INVALID:
            return _INVALID
        return cls._from_fields(fields)

    return check


# ----------------------------------------------------------------------------------
# The model base: declared fields, validation on construction, pydantic-like API
# ----------------------------------------------------------------------------------


class _Model(object):
    # (name, validator, default) in declaration order; default _REQUIRED or a value
    # (callables are factories)
    _fields = ()
    # Whether unknown keys are kept (openai's models) or dropped (pydantic's default)
    _keep_extra = False

    def __init__(self, **data):
        errors = []
        fields = self._check_fields(data, [], errors)
        if fields is _INVALID:
            raise ValidationError(type(self).__name__, errors)
        self.__dict__.update(fields)

    @classmethod
    def _check_fields(cls, data, loc, errors):
        out = {}
        before = len(errors)
        for name, check, default in cls._fields:
            if name in data:
                out[name] = check(data[name], list(loc) + [name], errors)
            elif default is _REQUIRED:
                _error(errors, list(loc) + [name], "missing", "Field required", data)
            else:
                out[name] = default() if callable(default) else default
        if cls._keep_extra:
            declared = {name for name, _, _ in cls._fields}
            for key, value in data.items():
                if key not in declared:
                    out[key] = value
        return _INVALID if len(errors) > before else out

    @classmethod
    def _from_fields(cls, fields):
        obj = cls.__new__(cls)
        obj.__dict__.update(fields)
        return obj

    @classmethod
    def model_validate(cls, obj):
        errors = []
        value = _model(cls.__name__)(obj, [], errors)
        if value is _INVALID:
            raise ValidationError(cls.__name__, errors)
        return value

    @classmethod
    def model_validate_json(cls, text):
        return cls.model_validate(json.loads(text))

    @property
    def model_fields(self):
        return {name: None for name, _, _ in self._fields}

    __fields__ = model_fields

    def _names(self):
        names = [name for name, _, _ in self._fields]
        if self._keep_extra:
            names.extend(k for k in self.__dict__ if k not in names)
        return names

    def __iter__(self):
        return iter([(name, getattr(self, name, None)) for name in self._names()])

    def model_dump(self, exclude_none=False, **_ignored):
        out = {}
        for name in self._names():
            value = _dump(getattr(self, name, None), exclude_none)
            if exclude_none and value is None:
                continue
            out[name] = value
        return out

    def dict(self, **kwargs):
        return self.model_dump(**kwargs)

    def model_dump_json(self, indent=None, exclude_none=False, **_ignored):
        return _to_json(self.model_dump(exclude_none=exclude_none), indent, 0)

    def json(self, **kwargs):
        return self.model_dump_json(**kwargs)

    def model_copy(self, update=None, deep=False):
        clone = self._from_fields(dict(self.__dict__))
        if update:
            clone.__dict__.update(update)
        return clone

    def __eq__(self, other):
        return type(self) is type(other) and self.model_dump() == other.model_dump()

    def __repr__(self):
        parts = ", ".join("%s=%r" % (name, getattr(self, name, None)) for name in self._names())
        return "%s(%s)" % (type(self).__name__, parts)

    def __str__(self):
        return " ".join("%s=%r" % (name, getattr(self, name, None)) for name in self._names())


def _dump(value, exclude_none):
    if isinstance(value, _Model):
        return value.model_dump(exclude_none=exclude_none)
    if isinstance(value, dict):
        return {k: _dump(v, exclude_none) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_dump(v, exclude_none) for v in value]
    return value


def _json_float(x):
    """A float as pydantic-core writes it in JSON: null for NaN and infinities, else
    the shortest digits laid out as Rust's ryu does (1e16, 0.00001, 1e-6)."""
    if math.isnan(x) or math.isinf(x):
        return "null"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    mantissa, _, exp = ("%r" % abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    # decimal exponent of the first significant digit
    if exp:
        point = int(exp) + len(whole)
    elif whole != "0":
        point = len(whole)
    else:
        point = -(len(frac) - len(frac.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    length = len(digits)
    k = point - length  # value = digits * 10**k
    if 0 <= k and point <= 16:
        return sign + digits + "0" * k + ".0"
    if 0 < point <= 16:
        return sign + digits[:point] + "." + digits[point:]
    if -5 < point <= 0:
        return sign + "0." + "0" * (-point) + digits
    shown = digits[0] + ("." + digits[1:] if length > 1 else "")
    return "%s%se%d" % (sign, shown, point - 1)


def _to_json(value, indent, depth):
    """json.dumps as pydantic's model_dump_json writes it (floats by _json_float)."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, dict):
        items = [(json.dumps(str(k), ensure_ascii=False), _to_json(v, indent, depth + 1)) for k, v in value.items()]
        if not items:
            return "{}"
        if indent is None:
            return "{" + ",".join("%s:%s" % kv for kv in items) + "}"
        pad, inner = " " * (indent * depth), " " * (indent * (depth + 1))
        return "{\n" + ",\n".join("%s%s: %s" % (inner, k, v) for k, v in items) + "\n" + pad + "}"
    if isinstance(value, (list, tuple)):
        items = [_to_json(v, indent, depth + 1) for v in value]
        if not items:
            return "[]"
        if indent is None:
            return "[" + ",".join(items) + "]"
        pad, inner = " " * (indent * depth), " " * (indent * (depth + 1))
        return "[\n" + ",\n".join(inner + v for v in items) + "\n" + pad + "]"
    return json.dumps(str(value), ensure_ascii=False)


class _Mapping(object):
    """The read-only dict view reward-kit gives MetricResult and EvaluateResult."""

    def __getitem__(self, key):
        if key in self.model_fields:
            return getattr(self, key)
        raise KeyError(f"'{key}'")

    def __contains__(self, key):
        return key in self.model_fields

    def get(self, key, default=None):
        return getattr(self, key, default)

    def keys(self):
        return self.model_fields.keys()

    def values(self):
        return [getattr(self, k) for k in self.model_fields]

    def items(self):
        return [(k, getattr(self, k)) for k in self.model_fields]

    def __iter__(self):
        return iter(self.model_fields)


# ----------------------------------------------------------------------------------
# The models
# ----------------------------------------------------------------------------------


class FunctionCall(_Model):
    _fields = (("arguments", _str, _REQUIRED), ("name", _str, _REQUIRED))
    _keep_extra = True


class Function(FunctionCall):
    pass


class ChatCompletionMessageToolCall(_Model):
    _keep_extra = True
    _fields = (
        ("id", _str, _REQUIRED),
        ("function", _model("Function"), _REQUIRED),
        ("type", _literal("function"), _REQUIRED),
    )


class Message(_Model):
    """One chat message. Attribute access only: like reward-kit 0.4.1's, it is not
    subscriptable."""

    _fields = (
        ("role", _str, _REQUIRED),
        ("content", _optional(_str), ""),
        ("name", _optional(_str), None),
        ("tool_call_id", _optional(_str), None),
        ("tool_calls", _optional(_list_of(_model("ChatCompletionMessageToolCall"))), None),
        ("function_call", _optional(_model("FunctionCall")), None),
    )

    @classmethod
    def model_validate(cls, obj, *args, **kwargs):
        if isinstance(obj, dict) and "role" not in obj:
            raise ValueError("Role is required")
        return super().model_validate(obj)


class MetricResult(_Mapping, _Model):
    """One component's score in [0, 1] and its reason. Unknown arguments (such as
    `success=`) are ignored, as pydantic ignores them."""

    _fields = (
        ("is_score_valid", _bool, True),
        ("score", _float(le=1.0, ge=0.0), _REQUIRED),
        ("reason", _str, _REQUIRED),
    )


class StepOutput(_Model):
    _fields = (
        ("step_index", _int_or_str, _REQUIRED),
        ("base_reward", _float(), _REQUIRED),
        ("metrics", _dict_of(_any), dict),
        ("reason", _optional(_str), None),
    )


class EvaluateResult(_Mapping, _Model):
    """An evaluator's result: overall score (no range check), reason and components."""

    _fields = (
        ("score", _float(), _REQUIRED),
        ("is_score_valid", _bool, True),
        ("reason", _optional(_str), None),
        ("metrics", _dict_of(_model("MetricResult")), dict),
        ("step_outputs", _optional(_list_of(_model("StepOutput"))), None),
        ("error", _optional(_str), None),
    )


def validate_result_list(value):
    """Validates a batch-mode return (what pydantic's List[EvaluateResult] adapter does)."""
    errors = []
    out = _list_of(_model("EvaluateResult"))(value, [], errors)
    if out is _INVALID:
        raise ValidationError("list[EvaluateResult]", errors)
    return out


# ----------------------------------------------------------------------------------
# Legacy result types that older reward-kit documents use
# ----------------------------------------------------------------------------------


class MetricRewardOutput(object):
    """Legacy component result: a score and a reason."""

    def __init__(self, score, reason=None):
        self.score = score
        self.reason = reason

    def to_dict(self):
        return {"score": self.score, "reason": self.reason}

    def __repr__(self):
        return "MetricRewardOutput(score=%r, reason=%r)" % (self.score, self.reason)


class RewardOutput(object):
    """Legacy result: a score and named MetricRewardOutputs."""

    def __init__(self, score, metrics=None):
        self.score = score
        self.metrics = dict(metrics or {})

    def to_dict(self):
        return {
            "score": self.score,
            "metrics": {k: (v.to_dict() if hasattr(v, "to_dict") else v) for k, v in self.metrics.items()},
        }

    def to_evaluate_result(self):
        metrics = {}
        for name, metric in self.metrics.items():
            score = getattr(metric, "score", metric.get("score") if isinstance(metric, dict) else metric)
            reason = getattr(metric, "reason", metric.get("reason") if isinstance(metric, dict) else None)
            metrics[name] = MetricResult(score=score, reason="" if reason is None else reason)
        return EvaluateResult(score=self.score, metrics=metrics)

    def __repr__(self):
        return "RewardOutput(score=%r, metrics=%r)" % (self.score, self.metrics)
