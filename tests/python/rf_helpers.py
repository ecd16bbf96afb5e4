"""Functions for the RewardFunction cases in cases.py to load by func_path."""

from reward_kit import EvaluateResult, MetricResult


def as_dict(messages, ground_truth=None, **kwargs):
    return {
        "score": 0.25,
        "reason": "gt=%r kw=%s" % (ground_truth, sorted(kwargs)),
        "metrics": {"m": {"score": 0.5, "reason": "half", "is_score_valid": False}, "n": 1},
    }


def as_tuple(messages, ground_truth=None, **kwargs):
    return (0.75, {"length": 0.1})


def as_result(messages, ground_truth=None, **kwargs):
    reply = messages[-1]["content"]
    return EvaluateResult(
        score=1.0 if reply == ground_truth else 0.0,
        reason="%r vs %r" % (reply, ground_truth),
        metrics={"exact": MetricResult(score=1.0, reason="r")},
    )


def as_number(messages, **kwargs):
    return 0.5


def raising(messages, **kwargs):
    raise RuntimeError("broken judge")
