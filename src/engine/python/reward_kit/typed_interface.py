"""rwb's bundled stand-in for reward_kit.typed_interface: the @reward_function decorator.

Behaves as reward-kit 0.4.1's decorator does: it checks for **kwargs when applied,
turns `messages` (and `ground_truth`) into Message objects only when annotated exactly
List[Message] / list[Message], lets the function's exceptions through unchanged, and
validates the return value into an EvaluateResult with the same error texts.
"""

import inspect
from functools import wraps
from typing import List, get_args, get_origin

from .models import (
    EvaluateResult,
    Message,
    RewardOutput,
    ValidationError,
    _model,
    _INVALID,
    validate_result_list,
)

__all__ = ["reward_function"]


def _is_list_of_message(annotation):
    if get_origin(annotation) in (list, List):
        args = get_args(annotation)
        return bool(args) and args[0] == Message
    return False


def _is_list_of_list_of_message(annotation):
    if get_origin(annotation) != list:
        return False
    inner = get_args(annotation)
    if len(inner) != 1 or get_origin(inner[0]) != list:
        return False
    args = get_args(inner[0])
    return len(args) == 1 and args[0] == Message


def _to_messages(data, name):
    if not isinstance(data, list):
        raise TypeError(f"Expected a list for '{name}', got {type(data)}")
    out = []
    for index, item in enumerate(data):
        if isinstance(item, Message):
            out.append(item)
        elif isinstance(item, dict):
            out.append(Message(**item))
        else:
            raise TypeError(f"Unexpected type for item {index} in '{name}': {type(item)}")
    return out


def _validate_single(result):
    if isinstance(result, EvaluateResult):
        return result
    if isinstance(result, RewardOutput):  # legacy type, read like an EvaluateResult
        return result.to_evaluate_result()
    errors = []
    value = _model("EvaluateResult")(result, [], errors)
    if value is _INVALID:
        raise ValidationError("EvaluateResult", errors)
    return value


def reward_function(_func=None, *, mode="pointwise", id=None, requirements=None, resources=None):
    """Marks a reward function. Usable bare or with arguments."""

    def decorator(func):
        sig = inspect.signature(func)
        params = sig.parameters
        if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values()):
            raise ValueError(
                f"Function '{func.__name__}' must accept **kwargs parameter. "
                f"Please add '**kwargs' to the function signature."
            )
        managers = {}
        if resources:
            for kind, items in resources.items():
                managers[kind] = []
                for resource in items:
                    resource.setup()
                    managers[kind].append(resource)

        @wraps(func)
        def wrapper(*args, **kwargs):
            bound = sig.bind_partial(*args, **kwargs)
            bound.apply_defaults()
            values = dict(bound.arguments)

            if mode == "pointwise" and "messages" in params and "messages" in values:
                if _is_list_of_message(params["messages"].annotation):
                    try:
                        values["messages"] = _to_messages(values["messages"], "messages")
                    except Exception as err:
                        raise ValueError(f"Input 'messages' failed Pydantic validation: {err}") from None
            elif mode == "batch" and "rollouts_messages" in params and "rollouts_messages" in values:
                if _is_list_of_list_of_message(params["rollouts_messages"].annotation):
                    try:
                        values["rollouts_messages"] = [
                            _to_messages(rollout, f"rollouts_messages[{i}]")
                            for i, rollout in enumerate(values["rollouts_messages"])
                        ]
                    except Exception as err:
                        raise ValueError(f"Input 'rollouts_messages' failed Pydantic validation: {err}") from None

            if "ground_truth" in params and "ground_truth" in values:
                truth = values["ground_truth"]
                if _is_list_of_message(params["ground_truth"].annotation) and truth is not None:
                    if not isinstance(truth, list):
                        raise TypeError(
                            f"'ground_truth' expected a list for List[Message] hint, got {type(truth)}"
                        )
                    try:
                        converted = []
                        for item in truth:
                            if isinstance(item, Message):
                                converted.append(item)
                            elif isinstance(item, dict):
                                converted.append(Message(**item))
                            else:
                                raise TypeError(f"Unexpected type in ground_truth list: {type(item)}")
                        values["ground_truth"] = converted
                    except Exception as err:
                        raise ValueError(
                            f"Input 'ground_truth' failed Pydantic validation for List[Message]: {err}"
                        ) from None

            if managers:
                values["resources"] = {kind: [m.get_client() for m in ms] for kind, ms in managers.items()}

            call_args, call_kwargs = [], {}
            for name, param in params.items():
                if param.kind == inspect.Parameter.VAR_POSITIONAL:
                    call_args.extend(values.get(name, ()))
                elif param.kind == inspect.Parameter.VAR_KEYWORD:
                    call_kwargs.update(values.get(name, {}))
                elif name in values:
                    if param.kind == inspect.Parameter.POSITIONAL_ONLY:
                        call_args.append(values[name])
                    else:
                        call_kwargs[name] = values[name]

            result = func(*call_args, **call_kwargs)

            try:
                if mode == "pointwise":
                    return _validate_single(result)
                if mode == "batch":
                    if isinstance(result, list) and all(isinstance(r, EvaluateResult) for r in result):
                        return result
                    return validate_result_list(result)
                raise ValueError(f"Internal error: Invalid mode '{mode}' in wrapper.")
            except ValidationError as err:
                raise ValueError(
                    f"Return value from function '{func.__name__}' failed Pydantic validation for mode '{mode}':\n{err}"
                ) from None

        wrapper._reward_function_id = id
        wrapper._reward_function_requirements = requirements
        wrapper._reward_function_mode = mode
        wrapper._reward_function_resources = resources
        return wrapper

    if _func is None:
        return decorator
    return decorator(_func)
