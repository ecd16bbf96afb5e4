"""A battery of reward_kit behaviour cases, runnable under the real reward-kit 0.4.1 or
under rwb's bundled stand-in (whichever `reward_kit` the importer put first on sys.path).

Every case is a small function registered with @case. It exercises the public API only
and returns a JSON-able description of what happened, built with `attempt()`,
`describe()` and `raised()`, so the description under the real package (committed as
expected_041.json) can be compared with the one under the bundled package.

Run everything with `run_all()`; see run_cases.py and test_bundled_reward_kit.py.
"""

import inspect
import json
import math
import warnings
from typing import Dict, List, Optional

import reward_kit
import reward_kit.typed_interface
from reward_kit import EvaluateResult, Message, MetricResult, reward_function
from reward_kit.models import StepOutput

CASES = []


def case(fn):
    """Registers a case; its name in the output is the function's name."""
    CASES.append(fn)
    return fn


# ----------------------------------------------------------------------------------
# Describing outcomes
# ----------------------------------------------------------------------------------


def plain(value):
    """A JSON-able copy of a plain value. Non-finite floats and other objects become
    tagged dicts, so nothing is lost silently."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else "<%s %r>" % (type(k).__name__, k)): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return {"type": type(value).__name__, "repr": repr(value)}


def describe(value):
    """What a value is: type name and repr, plus model_dump and model_dump_json for
    models, and item by item for lists and tuples."""
    if hasattr(value, "model_dump") and not isinstance(value, type):
        return {
            "type": type(value).__name__,
            "repr": repr(value),
            "dump": plain(value.model_dump()),
            "json": value.model_dump_json(),
        }
    if isinstance(value, (list, tuple)):
        return {"type": type(value).__name__, "items": [describe(v) for v in value]}
    return {"type": type(value).__name__, "repr": repr(value)}


def raised(exc):
    """An exception: bare type name, str(), and whether it was raised `from None`."""
    return {
        "raised": type(exc).__name__,
        "message": str(exc),
        "from_none": exc.__cause__ is None and bool(exc.__suppress_context__),
    }


def attempt(thunk, show=describe):
    """Calls thunk(): {"ok": show(value)} or the exception it raised."""
    try:
        value = thunk()
    except Exception as exc:
        return raised(exc)
    return {"ok": show(value)}


def kinds(value):
    """Type names of an argument the user function received (item by item for lists)."""
    if isinstance(value, list):
        return [type(v).__name__ for v in value]
    return type(value).__name__


MSGS = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def probe(fn, **call):
    """Calls a decorated function that records what it received in fn.seen."""
    out = attempt(lambda: fn(**call))
    out["seen"] = getattr(fn, "seen", None)
    return out


def recorder(annotation, param="messages", mode="pointwise"):
    """A decorated function whose `param` has `annotation` (None: unannotated); it
    records the kinds and descriptions of what it receives and returns score 1.0
    (a one-item list in batch mode)."""
    seen = {}

    def fn(**kwargs):
        value = kwargs.get(param)
        seen["kinds"] = kinds(value)
        seen["value"] = describe(value)
        seen["other"] = sorted(k for k in kwargs if k != param)
        return [EvaluateResult(score=1.0)] if mode == "batch" else EvaluateResult(score=1.0)

    # Give fn the signature `(param: annotation, **kwargs)`, as a def would have.
    params = [
        inspect.Parameter(param, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)
        if annotation is not None
        else inspect.Parameter(param, inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD),
    ]
    fn.__signature__ = inspect.Signature(params)
    fn.__annotations__ = {} if annotation is None else {param: annotation}
    fn.__name__ = "rec"
    wrapped = reward_function(mode=mode)(fn)
    wrapped.seen = seen
    return wrapped


def returning(value, mode="pointwise", name="my_reward"):
    """A decorated function that returns `value` (called once: pass a fresh value)."""

    def fn(messages, **kwargs):
        return value

    fn.__name__ = name
    return reward_function(mode=mode)(fn)


def ret(value, mode="pointwise"):
    """What the decorator makes of a returned value."""
    f = returning(value, mode)
    return attempt(lambda: f(messages=MSGS))


# ----------------------------------------------------------------------------------
# The decorator: forms, attributes, **kwargs check, argument binding
# ----------------------------------------------------------------------------------


@case
def deco_bare():
    def evaluate(messages, **kwargs):
        return EvaluateResult(score=0.5)

    f = reward_function(evaluate)
    return {
        "name": f.__name__,
        "wrapped_is_original": f.__wrapped__ is evaluate,
        "attrs": plain(
            [
                f._reward_function_id,
                f._reward_function_requirements,
                f._reward_function_mode,
                f._reward_function_resources,
            ]
        ),
        "call": attempt(lambda: f(messages=MSGS)),
    }


@case
def deco_with_args():
    @reward_function(id="myid", requirements=["numpy"], mode="pointwise")
    def evaluate(messages: List[Message], ground_truth=None, **kwargs):
        return EvaluateResult(score=0.25)

    return {
        "name": evaluate.__name__,
        "signature": str(inspect.signature(evaluate)),
        "attrs": plain(
            [
                evaluate._reward_function_id,
                evaluate._reward_function_requirements,
                evaluate._reward_function_mode,
                evaluate._reward_function_resources,
            ]
        ),
        "call": attempt(lambda: evaluate(messages=MSGS)),
    }


@case
def deco_same_function_both_modules():
    return reward_kit.reward_function is reward_kit.typed_interface.reward_function


@case
def deco_missing_kwargs_bare():
    def nokw(messages):
        return 1.0

    return attempt(lambda: reward_function(nokw))


@case
def deco_missing_kwargs_with_args():
    def nokw(messages):
        return 1.0

    return {
        "batch": attempt(lambda: reward_function(mode="batch")(nokw)),
        "id": attempt(lambda: reward_function(id="x", requirements=["a"])(nokw)),
    }


@case
def deco_missing_kwargs_varargs_only():
    def only_args(*args):
        return 1.0

    return attempt(lambda: reward_function(only_args))


@case
def deco_missing_kwargs_lambda():
    return attempt(lambda: reward_function(lambda messages: 1.0))


@case
def deco_kwargs_other_name():
    @reward_function
    def evaluate(messages, **kw):
        return {"score": 1.0, "reason": json.dumps(sorted(kw.items()))}

    return attempt(lambda: evaluate(messages=MSGS, ground_truth=None, foo=1, bar="b"))


@case
def deco_kwarg_named_kwargs():
    @reward_function
    def evaluate(messages, **kwargs):
        return {"score": 1.0, "reason": repr(kwargs)}

    return attempt(lambda: evaluate(messages=MSGS, kwargs=1))


@case
def deco_mode_positional():
    return attempt(lambda: reward_function("pointwise"))


@case
def deco_bad_mode():
    calls = []

    @reward_function(mode="weird")
    def evaluate(messages, **kwargs):
        calls.append(1)
        return {"score": 1.0}

    return {"call": attempt(lambda: evaluate(messages=MSGS)), "user_function_ran": len(calls)}


@case
def deco_positional_call():
    @reward_function
    def evaluate(messages: List[Message], ground_truth=None, **kwargs):
        return {"score": 1.0, "reason": "%s %r" % (kinds(messages), ground_truth)}

    return {
        "two": attempt(lambda: evaluate(MSGS, "gt")),
        "too_many": attempt(lambda: evaluate(MSGS, "gt", "extra")),
        "twice": attempt(lambda: evaluate(MSGS, messages=MSGS)),
    }


@case
def deco_missing_messages():
    @reward_function
    def evaluate(messages, **kwargs):
        return {"score": 1.0}

    return attempt(lambda: evaluate(ground_truth=None))


@case
def deco_default_ground_truth_coerced():
    @reward_function
    def evaluate(messages, ground_truth: List[Message] = [{"role": "user", "content": "d"}], **kwargs):
        return {"score": 1.0, "reason": repr(ground_truth)}

    return attempt(lambda: evaluate(messages=MSGS))


@case
def deco_resources():
    log = []

    class FakeResource:
        def __init__(self, name):
            self.name = name

        def setup(self):
            log.append("setup " + self.name)

        def get_client(self):
            log.append("client " + self.name)
            return "client-" + self.name

        def cleanup(self):
            log.append("cleanup " + self.name)

    @reward_function(resources={"llms": [FakeResource("a"), FakeResource("b")]})
    def with_param(messages, resources=None, **kwargs):
        return {"score": 1.0, "reason": repr(resources)}

    after_decoration = list(log)

    @reward_function(resources={"llms": [FakeResource("c")]})
    def without_param(messages, **kwargs):
        return {"score": 1.0, "reason": repr(sorted(kwargs))}

    return {
        "after_decoration": after_decoration,
        "with_param": attempt(lambda: with_param(messages=MSGS)),
        "without_param": attempt(lambda: without_param(messages=MSGS)),
        "log": log,
    }


@case
def deco_user_exception_propagates():
    boom = ValueError("user boom")

    @reward_function
    def evaluate(messages, **kwargs):
        raise boom

    try:
        evaluate(messages=MSGS)
    except Exception as exc:
        return dict(raised(exc), same_object=exc is boom)


@case
def deco_user_key_and_zero_division():
    @reward_function
    def key(messages, **kwargs):
        return {}["k"]

    @reward_function
    def div(messages, **kwargs):
        return 1 / 0

    return {"key": attempt(lambda: key(messages=MSGS)), "div": attempt(lambda: div(messages=MSGS))}


@case
def deco_user_builds_invalid_models():
    @reward_function
    def bad_result(messages, **kwargs):
        return EvaluateResult(score="x")

    @reward_function
    def bad_metric(messages, **kwargs):
        return EvaluateResult(score=0.5, metrics={"a": MetricResult(score=1.5, reason="x")})

    def is_value_error(thunk):
        try:
            thunk()
        except Exception as exc:
            return isinstance(exc, ValueError)

    return {
        "result": attempt(lambda: bad_result(messages=MSGS)),
        "metric": attempt(lambda: bad_metric(messages=MSGS)),
        "is_value_error": is_value_error(lambda: bad_result(messages=MSGS)),
    }


# ----------------------------------------------------------------------------------
# Coercion of `messages` by annotation
# ----------------------------------------------------------------------------------


@case
def msgs_List_Message():
    return probe(recorder(List[Message]), messages=MSGS, ground_truth=None)


@case
def msgs_list_Message():
    return probe(recorder(list[Message]), messages=MSGS, ground_truth=None)


@case
def msgs_Optional_List_Message():
    return probe(recorder(Optional[List[Message]]), messages=MSGS)


@case
def msgs_List_Dict():
    return probe(recorder(List[Dict]), messages=MSGS)


@case
def msgs_plain_list():
    return {"list": probe(recorder(list), messages=MSGS), "List": probe(recorder(List), messages=MSGS)}


@case
def msgs_unannotated():
    return probe(recorder(None), messages=MSGS)


@case
def msgs_string_annotation():
    return probe(recorder("List[Message]"), messages=MSGS)


@case
def msgs_message_instances_kept():
    given = Message(role="user", content="already")
    kept = []

    @reward_function
    def evaluate(messages: List[Message], **kwargs):
        kept.append([m is given for m in messages])
        return {"score": 1.0, "reason": repr(messages)}

    out = attempt(lambda: evaluate(messages=[given, {"role": "assistant", "content": "x"}]))
    out["identity"] = kept
    return out


@case
def msgs_unknown_keys_ignored():
    return probe(recorder(List[Message]), messages=[{"role": "user", "content": "hi", "foo": 1}])


@case
def msgs_none_content_and_empty_role():
    return probe(recorder(List[Message]), messages=[{"role": "assistant", "content": None}, {"role": ""}])


@case
def msgs_missing_role():
    return probe(recorder(List[Message]), messages=[{"content": "x"}])


@case
def msgs_int_role():
    return probe(recorder(List[Message]), messages=[{"role": 1, "content": "x"}])


@case
def msgs_none_role():
    return probe(recorder(List[Message]), messages=[{"role": None, "content": "x"}])


@case
def msgs_int_content():
    return probe(recorder(List[Message]), messages=[{"role": "user", "content": 5}])


@case
def msgs_other_content_types():
    f = recorder(List[Message])
    return {
        "float": attempt(lambda: f(messages=[{"role": "user", "content": 1.5}])),
        "bool": attempt(lambda: f(messages=[{"role": "user", "content": True}])),
        "parts": attempt(lambda: f(messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}])),
        "bytes": probe(f, messages=[{"role": "user", "content": b"hi"}]),
    }


@case
def msgs_two_bad_fields():
    return probe(recorder(List[Message]), messages=[{"content": 2, "role": 1}])


@case
def msgs_non_dict_item():
    return probe(recorder(List[Message]), messages=[{"role": "user", "content": "a"}, "oops"])


@case
def msgs_non_dict_item_kinds():
    f = recorder(List[Message])
    return {
        "int": attempt(lambda: f(messages=[3])),
        "none": attempt(lambda: f(messages=[{"role": "user"}, {"role": "user"}, None])),
        "list": attempt(lambda: f(messages=[["user", "hi"]])),
    }


@case
def msgs_not_a_list():
    f = recorder(List[Message])
    return {
        "tuple": attempt(lambda: f(messages=tuple(MSGS))),
        "str": attempt(lambda: f(messages="hi")),
        "none": attempt(lambda: f(messages=None)),
        "dict": attempt(lambda: f(messages={"role": "user"})),
    }


@case
def msgs_non_string_key():
    return probe(recorder(List[Message]), messages=[{"role": "user", 1: "x"}])


@case
def msgs_tool_calls_ok():
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
    return probe(recorder(List[Message]), messages=[{"role": "assistant", "content": None, "tool_calls": [call]}])


@case
def msgs_tool_calls_missing_fields():
    return probe(recorder(List[Message]), messages=[{"role": "assistant", "tool_calls": [{"id": "1"}]}])


@case
def msgs_tool_calls_bad_values():
    f = recorder(List[Message])
    custom = {"id": "c", "type": "custom", "function": {"name": "f", "arguments": "{}"}}
    dict_args = {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    return {
        "type_custom": attempt(lambda: f(messages=[{"role": "assistant", "tool_calls": [custom]}])),
        "arguments_dict": attempt(lambda: f(messages=[{"role": "assistant", "tool_calls": [dict_args]}])),
        "not_a_list": attempt(lambda: f(messages=[{"role": "assistant", "tool_calls": {"id": "x"}}])),
    }


@case
def msgs_tool_calls_extra_keys():
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}, "index": 0}
    return probe(recorder(List[Message]), messages=[{"role": "assistant", "tool_calls": [call]}])


@case
def msgs_function_call_and_tool_message():
    return probe(
        recorder(List[Message]),
        messages=[
            {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
            {"role": "tool", "content": "r", "tool_call_id": "call_1", "name": "f"},
        ],
    )


@case
def msgs_batch_mode_not_coerced():
    return probe(recorder(List[Message], mode="batch"), messages=MSGS)


# ----------------------------------------------------------------------------------
# Coercion of `ground_truth`
# ----------------------------------------------------------------------------------


@case
def gt_List_Message():
    return probe(recorder(List[Message], param="ground_truth"), messages=MSGS, ground_truth=MSGS)


@case
def gt_list_Message_batch_mode():
    return probe(recorder(list[Message], param="ground_truth", mode="batch"), ground_truth=MSGS)


@case
def gt_none_skips():
    return probe(recorder(List[Message], param="ground_truth"), ground_truth=None)


@case
def gt_not_coerced_annotations():
    return {
        "optional": probe(recorder(Optional[List[Message]], param="ground_truth"), ground_truth=MSGS),
        "list_dict": probe(recorder(List[Dict], param="ground_truth"), ground_truth=MSGS),
        "str": probe(recorder(str, param="ground_truth"), ground_truth=MSGS),
        "none": probe(recorder(None, param="ground_truth"), ground_truth=MSGS),
    }


@case
def gt_not_a_list():
    f = recorder(List[Message], param="ground_truth")
    return {
        "str": attempt(lambda: f(ground_truth="42")),
        "dict": attempt(lambda: f(ground_truth={"role": "user"})),
        "tuple": attempt(lambda: f(ground_truth=tuple(MSGS))),
    }


@case
def gt_bad_items():
    f = recorder(List[Message], param="ground_truth")
    return {
        "int": attempt(lambda: f(ground_truth=[{"role": "user"}, 7])),
        "missing_role": attempt(lambda: f(ground_truth=[{"content": "x"}])),
        "int_content": attempt(lambda: f(ground_truth=[{"role": "user", "content": 5}])),
    }


# ----------------------------------------------------------------------------------
# Return values in pointwise mode
# ----------------------------------------------------------------------------------


@case
def ret_evaluate_result_passthrough():
    out = {}
    for label, value in [
        ("plain", EvaluateResult(score=0.5, reason="r")),
        ("out_of_range", EvaluateResult(score=5.0)),
        ("nan", EvaluateResult(score=float("nan"))),
    ]:
        f = returning(value)
        result = f(messages=MSGS)
        out[label] = {"same_object": result is value, "result": describe(result)}
    return out


@case
def ret_dict_score():
    return ret({"score": 0.5})


@case
def ret_dict_extra_keys():
    return ret({"score": 0.5, "extra": 1, "foo": "bar"})


@case
def ret_dict_metrics():
    return ret({"score": 0.5, "metrics": {"a": {"score": 1.0, "reason": "ok", "success": True}}})


@case
def ret_dict_metric_objects():
    return ret({"score": 0.2, "reason": None, "metrics": {"a": MetricResult(score=0.3, reason="m")}})


@case
def ret_dict_lax_scores():
    return {
        "int": ret({"score": 1}),
        "true": ret({"score": True}),
        "str": ret({"score": "0.5"}),
        "str_spaces": ret({"score": " 0.5 "}),
        "str_inf": ret({"score": "inf"}),
        "str_exp": ret({"score": "1e-3"}),
    }


@case
def ret_dict_unchecked_range():
    return {
        "5": ret({"score": 5}),
        "-1": ret({"score": -1}),
        "nan": ret({"score": float("nan")}),
        "inf": ret({"score": float("inf")}),
        "-inf": ret({"score": float("-inf")}),
    }


@case
def ret_dict_is_score_valid():
    return {
        "yes": ret({"score": 0.5, "is_score_valid": "yes"}),
        "0": ret({"score": 0.5, "is_score_valid": 0}),
        "1.0": ret({"score": 0.5, "is_score_valid": 1.0}),
        "off": ret({"score": 0.5, "is_score_valid": "off"}),
        "maybe": ret({"score": 0.5, "is_score_valid": "maybe"}),
        "2": ret({"score": 0.5, "is_score_valid": 2}),
        "none": ret({"score": 0.5, "is_score_valid": None}),
    }


@case
def ret_dict_error_and_step_outputs():
    return {
        "error": ret({"score": 0.0, "error": "boom"}),
        "steps": ret({"score": 0.5, "step_outputs": [{"step_index": 0, "base_reward": 0.1}]}),
        "steps_str_index": ret(
            {"score": 0.5, "step_outputs": [{"step_index": "a", "base_reward": 1, "metrics": {"x": [1]}}]}
        ),
    }


@case
def ret_dict_without_score():
    return {"reason_only": ret({"reason": "x"}), "empty": ret({})}


@case
def ret_non_dict_values():
    return {
        "float": ret(0.5),
        "int": ret(1),
        "tuple": ret((0.5, {"a": 0.7})),
        "none": ret(None),
        "str": ret("hello"),
        "list": ret([0.5]),
        "metric_result": ret(MetricResult(score=0.5, reason="x")),
    }


@case
def ret_bad_field_values():
    return {
        "score_abc": ret({"score": "abc"}),
        "score_none": ret({"score": None}),
        "score_list": ret({"score": [1]}),
        "score_huge_int": ret({"score": 10**400}),
        "reason_int": ret({"score": 0.5, "reason": 5}),
        "reason_bytes": ret({"score": 0.5, "reason": b"r"}),
        "metrics_list": ret({"score": 0.5, "metrics": [1]}),
        "metrics_none": ret({"score": 0.5, "metrics": None}),
        "step_missing_base": ret({"score": 0.5, "step_outputs": [{"step_index": 0}]}),
        "steps_not_list": ret({"score": 0.5, "step_outputs": {"step_index": 0}}),
    }


@case
def ret_metric_problems():
    return {
        "float_metric": ret({"score": 0.5, "metrics": {"a": 0.7}}),
        "str_metric": ret({"score": 0.5, "metrics": {"a": "good"}}),
        "missing_reason": ret({"score": 0.5, "metrics": {"a": {"score": 1.0}}}),
        "reason_none": ret({"score": 0.5, "metrics": {"a": {"score": 1.0, "reason": None}}}),
        "score_1.5": ret({"score": 0.5, "metrics": {"a": {"score": 1.5, "reason": "x"}}}),
        "score_negative": ret({"score": 0.5, "metrics": {"a": {"score": -0.5, "reason": "x"}}}),
        "score_nan": ret({"score": 0.5, "metrics": {"a": {"score": float("nan"), "reason": "x"}}}),
        "int_key": ret({"score": 0.5, "metrics": {1: {"score": 0.5, "reason": "x"}}}),
    }


@case
def ret_many_errors_field_order():
    # Dict order is the reverse of the model's field order: errors follow the model.
    value = {
        "metrics": {"m": {"reason": 3, "score": 2}},
        "reason": 5,
        "is_score_valid": "maybe",
        "score": "abc",
    }
    return ret(value)


@case
def ret_nested_errors_several_metrics():
    value = {
        "reason": "top",
        "metrics": {
            "a": {"score": 1.5},
            "b": 0.3,
            "c": {"reason": "no score"},
            "d": {"score": 0.5, "reason": "fine"},
        },
        "step_outputs": [{"step_index": 1.5, "base_reward": "x"}, {"base_reward": 1}],
    }
    return ret(value)


# ----------------------------------------------------------------------------------
# input_value truncation in error texts (pydantic-core: 50 UTF-8 bytes)
# ----------------------------------------------------------------------------------


def _sized(key, unit, total_bytes, filler="y"):
    """{key: text} whose repr is exactly total_bytes UTF-8 bytes, mostly `unit`s."""
    base = len(repr({key: ""}).encode("utf-8"))
    room = total_bytes - base
    count = room // len(unit.encode("utf-8"))
    text = unit * count + filler * (room - count * len(unit.encode("utf-8")))
    value = {key: text}
    assert len(repr(value).encode("utf-8")) == total_bytes
    return value


@case
def trunc_missing_score_ascii():
    return {
        "50": ret(_sized("reason", "y", 50)),
        "51": ret(_sized("reason", "y", 51)),
        "200": ret(_sized("reason", "y", 200)),
    }


@case
def trunc_missing_score_non_ascii():
    return {
        "2byte_50": ret(_sized("reason", "é", 50)),
        "2byte_51": ret(_sized("reason", "é", 51)),
        "3byte_51": ret(_sized("reason", "☃", 51)),
        "3byte_52": ret(_sized("reason", "☃", 52)),
        "4byte_53": ret(_sized("reason", "😀", 53)),
        "4byte_54": ret(_sized("reason", "😀", 54)),
    }


@case
def trunc_message_content():
    f = recorder(List[Message])
    return {
        "ascii_50": attempt(lambda: f(messages=[_sized("content", "y", 50)])),
        "ascii_51": attempt(lambda: f(messages=[_sized("content", "y", 51)])),
        "non_ascii_long": attempt(lambda: f(messages=[{"content": "é" * 30}])),
    }


@case
def trunc_long_strings():
    return {
        "score_str": ret({"score": "a" * 60}),
        "score_escapes": ret({"score": "it's\n\t\"q\"" * 6}),
        "reason_int_long": ret({"score": 0.5, "reason": 10**60}),
        "metric_floats_in_dict": ret({"score": 0.5, "metrics": {"a": {"score": 1e-05, "x": 1e16, "y": "r" * 40}}}),
    }


# ----------------------------------------------------------------------------------
# Batch mode
# ----------------------------------------------------------------------------------


def bret(value):
    return ret(value, mode="batch")


@case
def batch_returns_results():
    value = [EvaluateResult(score=0.1), EvaluateResult(score=0.2)]
    f = returning(value, mode="batch")
    result = f(messages=MSGS)
    return {"same_object": result is value, "result": describe(result)}


@case
def batch_returns_coerced():
    return {
        "dicts": bret([{"score": 0.1}, {"score": "0.2", "extra": 1}]),
        "tuple": bret((EvaluateResult(score=0.3),)),
        "mixed": bret([EvaluateResult(score=0.4), {"score": 0.5}]),
        "empty": bret([]),
        "generator": bret(x for x in [{"score": 0.6}]),
    }


@case
def batch_returns_invalid():
    return {
        "dict": bret({"score": 0.5}),
        "none": bret(None),
        "floats": bret([0.5, 0.7]),
        "missing_score": bret([{"score": 0.5}, {"reason": "x"}]),
        "str": bret("ab"),
    }


@case
def batch_returns_single_result():
    return bret(EvaluateResult(score=0.5))


@case
def batch_rollouts_coerced():
    f = recorder(List[List[Message]], param="rollouts_messages", mode="batch")
    return probe(f, rollouts_messages=[MSGS, [{"role": "user", "content": "x"}]])


@case
def batch_rollouts_not_coerced():
    return {
        "builtin_list": probe(
            recorder(list[list[Message]], param="rollouts_messages", mode="batch"), rollouts_messages=[MSGS]
        ),
        "list_dict": probe(
            recorder(List[List[Dict]], param="rollouts_messages", mode="batch"), rollouts_messages=[MSGS]
        ),
        "pointwise": probe(recorder(List[List[Message]], param="rollouts_messages"), rollouts_messages=[MSGS]),
    }


@case
def batch_rollouts_errors():
    f = recorder(List[List[Message]], param="rollouts_messages", mode="batch")
    return {
        "dict_rollout": attempt(lambda: f(rollouts_messages=[{"role": "user"}])),
        "int_item": attempt(lambda: f(rollouts_messages=[[1]])),
        "bad_message": attempt(lambda: f(rollouts_messages=[MSGS, [{"content": "x"}]])),
        "int": attempt(lambda: f(rollouts_messages=5)),
        "none": attempt(lambda: f(rollouts_messages=None)),
        "str": attempt(lambda: f(rollouts_messages="x")),
    }


# ----------------------------------------------------------------------------------
# MetricResult
# ----------------------------------------------------------------------------------


@case
def metric_basic():
    m = MetricResult(score=0.5, reason="x")
    return {"describe": describe(m), "str": str(m), "exclude_none": plain(m.model_dump(exclude_none=True))}


@case
def metric_score_range():
    return {
        "1.5": attempt(lambda: MetricResult(score=1.5, reason="x")),
        "-0.1": attempt(lambda: MetricResult(score=-0.1, reason="x")),
        "nan": attempt(lambda: MetricResult(score=float("nan"), reason="x")),
        "inf": attempt(lambda: MetricResult(score=float("inf"), reason="x")),
        "1.0000001": attempt(lambda: MetricResult(score=1.0000001, reason="x")),
        "1": attempt(lambda: MetricResult(score=1, reason="x")),
        "0": attempt(lambda: MetricResult(score=0, reason="x")),
        "str": attempt(lambda: MetricResult(score="0.5", reason="x")),
        "true": attempt(lambda: MetricResult(score=True, reason="x")),
    }


@case
def metric_reason_required():
    return {
        "missing": attempt(lambda: MetricResult(score=0.5)),
        "none": attempt(lambda: MetricResult(score=0.5, reason=None)),
        "nothing": attempt(lambda: MetricResult()),
        "empty_str": attempt(lambda: MetricResult(score=0.5, reason="")),
    }


@case
def metric_success_ignored():
    return {
        "true": attempt(lambda: MetricResult(score=0.5, reason="x", success=True)),
        "false": attempt(lambda: MetricResult(score=0.5, reason="x", success=False)),
        "invalid_flag": attempt(lambda: MetricResult(score=0.5, reason="x", is_score_valid=False, success=True)),
    }


def mapping_access(obj):
    """The dict-like API reward-kit gives MetricResult and EvaluateResult."""
    return {
        "score": attempt(lambda: obj["score"]),
        "nope": attempt(lambda: obj["nope"]),
        "get_score": attempt(lambda: obj.get("score")),
        "get_default": attempt(lambda: obj.get("nope", 7)),
        "keys": attempt(lambda: list(obj.keys())),
        "keys_type": type(obj.keys()).__name__,
        "values": attempt(lambda: obj.values()),
        "items": attempt(lambda: obj.items(), show=lambda v: {"type": type(v).__name__, "repr": repr(v)}),
        "contains": ["score" in obj, "nope" in obj],
        "iter": attempt(lambda: list(iter(obj))),
        "dict": attempt(lambda: dict(obj), show=lambda v: repr(v)),
    }


@case
def metric_mapping_access():
    return mapping_access(MetricResult(score=0.5, reason="x"))


@case
def metric_key_error_text():
    m = MetricResult(score=0.5, reason="x")
    try:
        m["nope"]
    except KeyError as exc:
        return {"str": str(exc), "repr": repr(exc), "args": list(exc.args)}


@case
def metric_equality():
    return [
        MetricResult(score=0.5, reason="x") == MetricResult(score=0.5, reason="x"),
        MetricResult(score=0.5, reason="x") == MetricResult(score=0.5, reason="y"),
        MetricResult(score=1, reason="x") == MetricResult(score=1.0, reason="x", is_score_valid=True),
    ]


# ----------------------------------------------------------------------------------
# EvaluateResult
# ----------------------------------------------------------------------------------


def tutorial_result():
    return EvaluateResult(
        score=1 / 3,
        reason="Relevance score: 0.33",
        metrics={
            "keyword_overlap": MetricResult(score=1 / 3, reason="Keyword overlap ratio: 0.33 (1/3 keywords)"),
            "direct_answer": MetricResult(score=0.0, reason="No explicit answer indicators"),
        },
    )


@case
def er_tutorial_outputs():
    r = tutorial_result()
    return {
        "describe": describe(r),
        "str": str(r),
        "json_dumps_dump": json.dumps(r.model_dump()),
        "json_indent": r.model_dump_json(indent=2),
        "json_dumps_indent": json.dumps(r.model_dump(), indent=2),
        "exclude_none": plain(r.model_dump(exclude_none=True)),
        "json_exclude_none": r.model_dump_json(exclude_none=True),
    }


@case
def er_construction():
    return {
        "nothing": attempt(lambda: EvaluateResult()),
        "score_1.5": attempt(lambda: EvaluateResult(score=1.5)),
        "extra_kwargs": attempt(lambda: EvaluateResult(score=0.5, foo=1, success=True)),
        "score_str": attempt(lambda: EvaluateResult(score="x")),
        "metrics_dict_invalid": attempt(
            lambda: EvaluateResult(score=0.5, metrics={"a": {"score": 1.5, "reason": "x"}})
        ),
        "metrics_prebuilt_invalid": attempt(
            lambda: EvaluateResult(score=0.5, metrics={"a": MetricResult(score=1.5, reason="x")})
        ),
        "metrics_default_not_shared": EvaluateResult(score=1).metrics is not EvaluateResult(score=1).metrics,
    }


@case
def er_non_finite():
    out = {}
    for label, value in [("nan", float("nan")), ("inf", float("inf")), ("-inf", float("-inf"))]:
        r = EvaluateResult(score=value)
        out[label] = {"repr": repr(r), "json": r.model_dump_json(), "json_dumps": json.dumps(r.model_dump())}
    return out


@case
def er_json_float_formats():
    values = [
        1e-05, 1.5e-05, 1e-06, 1e-07, 0.0001, 1e16, 1e22, 1.7976931348623157e308, 5e-324,
        0.1 + 0.2, 1000000000000000.0, 123456789.123, 100.0, -0.0, 2.5e-08, -1e-05,
    ]
    return {repr(v): EvaluateResult(score=v).model_dump_json() for v in values}


@case
def er_json_unicode():
    r = EvaluateResult(score=0.5, reason='héllo ☃ "q" \n \t \\ \x01 😀')
    return {"json": r.model_dump_json(), "json_dumps": json.dumps(r.model_dump()), "repr": repr(r)}


@case
def er_mapping_access():
    r = tutorial_result()
    out = mapping_access(r)
    out["metrics_types"] = {k: type(v).__name__ for k, v in r["metrics"].items()}
    out["nested_subscript"] = attempt(lambda: r["metrics"]["keyword_overlap"]["score"])
    return out


@case
def er_legacy_dict_json():
    r = EvaluateResult(score=0.5, reason="r")
    return {"dict": attempt(lambda: r.dict()), "json": attempt(lambda: r.json())}


@case
def er_equality_and_copy():
    a = EvaluateResult(score=0.5, metrics={"m": MetricResult(score=0.1, reason="r")})
    b = EvaluateResult(score=0.5, metrics={"m": {"score": 0.1, "reason": "r"}})
    c = a.model_copy(update={"score": 0.9})
    return {"equal": a == b, "copy": describe(c), "original_kept": a.score}


@case
def er_model_validate():
    return {
        "dict": attempt(
            lambda: EvaluateResult.model_validate({"score": "0.5", "metrics": {"a": {"score": 1, "reason": "r"}}})
        ),
        "float": attempt(lambda: EvaluateResult.model_validate(0.5)),
        "json": attempt(lambda: EvaluateResult.model_validate_json('{"score": 0.25, "reason": null}')),
    }


@case
def validation_error_api():
    try:
        EvaluateResult(score="abc", metrics={"a": {"score": 2}})
    except Exception as exc:
        errors = exc.errors()
        return {
            "type": type(exc).__name__,
            "is_value_error": isinstance(exc, ValueError),
            "title": exc.title,
            "error_count": exc.error_count(),
            "locs": [list(e["loc"]) for e in errors],
            "types": [e["type"] for e in errors],
            "msgs": [e["msg"] for e in errors],
            "inputs": [plain(e["input"]) for e in errors],
        }


# ----------------------------------------------------------------------------------
# Message
# ----------------------------------------------------------------------------------


@case
def message_basic():
    return {
        "describe": describe(Message(role="user", content="hi")),
        "str": str(Message(role="user", content="hi")),
        "default_content": describe(Message(role="user")),
        "none_content": describe(Message(role="assistant", content=None)),
        "unknown_field": describe(Message(role="user", content="x", foo=1)),
        "exclude_none": plain(Message(role="user", content="hi").model_dump(exclude_none=True)),
    }


@case
def message_not_subscriptable():
    m = Message(role="user", content="hi")
    return {
        "subscript": attempt(lambda: m["role"]),
        "get": attempt(lambda: m.get("role")),
        "unknown_attr": attempt(lambda: Message(role="user", foo=1).foo),
        "contains": attempt(lambda: "role" in m),
        "iter": attempt(lambda: list(m), show=plain),
    }


@case
def message_construction_errors():
    return {
        "no_role": attempt(lambda: Message(content="x")),
        "int_role": attempt(lambda: Message(role=1)),
        "int_content": attempt(lambda: Message(role="user", content=5)),
        "both": attempt(lambda: Message(role=1, content=2)),
        "bytes_content": attempt(lambda: Message(role="user", content=b"hi")),
    }


@case
def message_model_validate():
    return {
        "no_role": attempt(lambda: Message.model_validate({"content": "x"})),
        "int_role": attempt(lambda: Message.model_validate({"role": 1})),
        "ok": attempt(lambda: Message.model_validate({"role": "user", "content": "x"})),
    }


@case
def message_equality_and_assignment():
    m = Message(role="user")
    m.role = 5
    return {
        "equal": Message(role="u") == Message(role="u", content=""),
        "not_equal": Message(role="u") == Message(role="a"),
        "assigned": repr(m),
    }


@case
def message_tool_call_repr():
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
    m = Message(role="assistant", content=None, tool_calls=[call])
    return {"describe": describe(m), "tool_call": describe(m.tool_calls[0]), "function": repr(m.tool_calls[0].function)}


# ----------------------------------------------------------------------------------
# StepOutput
# ----------------------------------------------------------------------------------


@case
def step_output_basic():
    s = StepOutput(step_index=0, base_reward=0.1)
    return {
        "describe": describe(s),
        "str_index": describe(StepOutput(step_index="a", base_reward=1, metrics={"k": [1, 2]}, reason="r")),
        "subscript": attempt(lambda: s["step_index"]),
        "get": attempt(lambda: s.get("step_index")),
    }


@case
def step_output_index_coercion():
    return {
        "1.0": attempt(lambda: StepOutput(step_index=1.0, base_reward=0)),
        "1.5": attempt(lambda: StepOutput(step_index=1.5, base_reward=0)),
        "none": attempt(lambda: StepOutput(step_index=None, base_reward=0)),
        "true": attempt(lambda: StepOutput(step_index=True, base_reward=0)),
        "str_digits": attempt(lambda: StepOutput(step_index="3", base_reward=0)),
        "missing": attempt(lambda: StepOutput()),
        "base_reward_str": attempt(lambda: StepOutput(step_index=0, base_reward="x")),
        "metrics_list": attempt(lambda: StepOutput(step_index=0, base_reward=0, metrics=[1])),
    }


# ----------------------------------------------------------------------------------
# RewardFunction: local by func_path, remote against a loopback endpoint, TRL adapter
# ----------------------------------------------------------------------------------


class Endpoint:
    """A loopback HTTP server for one case: answers every POST with `status` and the
    JSON `reply`, and records what it received (path, auth and content-type headers,
    JSON body)."""

    def __init__(self, status, reply):
        import http.server
        import threading

        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "content_type": self.headers.get("Content-Type"),
                        "body": json.loads(body),
                    }
                )
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def call(self, key, thunk):
        """thunk() with FIREWORKS_API_KEY set to `key` (None: unset); the outcome with
        this server's address written as URL, and what the server received."""
        import os

        saved = os.environ.pop("FIREWORKS_API_KEY", None)
        if key is not None:
            os.environ["FIREWORKS_API_KEY"] = key
        try:
            out = attempt(thunk)
        finally:
            os.environ.pop("FIREWORKS_API_KEY", None)
            if saved is not None:
                os.environ["FIREWORKS_API_KEY"] = saved
            self.server.shutdown()
            self.server.server_close()
        if "message" in out:
            out["message"] = out["message"].replace(self.url, "URL")
        out["received"] = self.seen
        return out


def _remote(status, reply, key, **call):
    ep = Endpoint(status, reply)
    rf = reward_kit.RewardFunction(mode="remote", endpoint=ep.url + "/evaluate", temperature=0)
    return ep.call(key, lambda: rf(MSGS, **call))


@case
def reward_function_remote():
    reply = {
        "score": 0.7,
        "reason": "fine",
        "metrics": {"a": {"score": 0.5, "reason": "r", "success": False}, "b": 0.25, "c": {"score": 1.0}},
        "extra": 1,
    }
    return {
        "flat_kwargs_with_key": _remote(200, reply, "fw-key", ground_truth="g", extra_arg=[1]),
        "no_key_default_ground_truth": _remote(200, {"score": 1}, None),
        "server_error": _remote(500, {"detail": "down"}, "k"),
        "not_found": _remote(404, {"detail": "no"}, "k"),
        "no_score": _remote(200, {"result": 1}, "k"),
        "not_a_dict": _remote(200, [0.5], "k"),
    }


@case
def reward_function_construction():
    RF = reward_kit.RewardFunction
    named = RF(mode="remote", name="my-eval")
    return {
        "name_endpoint": named.endpoint,
        "hosted_endpoint": RF(mode="fireworks_hosted", model_id="m1").endpoint,
        "kept": [named.mode, named.name, named.func, named.kwargs],
        "local_without_func": attempt(lambda: RF()),
        "remote_without_endpoint": attempt(lambda: RF(mode="remote")),
        "hosted_without_model": attempt(lambda: RF(mode="fireworks_hosted")),
        "bad_mode": attempt(lambda: RF(mode="cloud")),
        "bad_path": attempt(lambda: RF(func_path="nodots")),
        "missing_module": attempt(lambda: RF(func_path="no_such_module_rwb:f")),
        "missing_function": attempt(lambda: RF(func_path="rf_helpers.nothing")),
    }


@case
def reward_function_local():
    RF = reward_kit.RewardFunction

    def run(path, **call):
        return attempt(lambda: RF(func_path=path, bonus=1)(MSGS, **call))

    return {
        "dict_colon": run("rf_helpers:as_dict", ground_truth="g", other=2),
        "dict_dots_default_ground_truth": run("rf_helpers.as_dict"),
        "tuple": run("rf_helpers.as_tuple"),
        "result": run("rf_helpers:as_result", ground_truth="hello"),
        "number": run("rf_helpers:as_number"),
        "raising": run("rf_helpers:raising"),
        "func": attempt(lambda: RF(func=lambda messages, ground_truth, **kw: (1.0, {}))(MSGS)),
    }


@case
def reward_function_trl_adapter():
    adapter = reward_kit.RewardFunction(func_path="rf_helpers:as_result").get_trl_adapter()
    prompts = [[{"role": "user", "content": "q%d" % i}] for i in range(5)]
    completions = [
        [{"role": "assistant", "content": "4"}],
        "4",
        [{"role": "user", "content": "4"}],
        [],
        {"content": "4"},
    ]
    failing = reward_kit.RewardFunction(func_path="rf_helpers:raising").get_trl_adapter()
    return {
        "scores": attempt(lambda: adapter(prompts, completions, solution=["4", ["4"], "4", ["x"], 4])),
        "no_solution": attempt(lambda: adapter(prompts[:2], completions[:2])),
        "no_completions": attempt(lambda: adapter(prompts[:2])),
        "shorter_completions": attempt(lambda: adapter(prompts, completions[:2], solution="4")),
        "raising_scores_zero": attempt(lambda: failing(prompts[:2], completions[:2])),
    }


# ----------------------------------------------------------------------------------
# Running
# ----------------------------------------------------------------------------------


def run_all():
    """Runs every case; returns {case name: result}. Warnings (pydantic deprecation
    notices) are silenced so they do not clutter the output."""
    results = {}
    for fn in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                results[fn.__name__] = fn()
            except Exception as exc:  # the case itself broke: record that as its result
                results[fn.__name__] = {"case_crashed": raised(exc)}
    return results
