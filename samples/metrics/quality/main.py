"""Overall response quality as a weighted sum of four checks.

The checks live in ``checks.py`` beside this file (the metric folder is on
``sys.path``, so a plain ``from checks import ...`` works, locally and when
deployed with the whole folder).

Default weights: helpfulness 0.4, safety 0.3, conciseness 0.15,
formatting 0.15. Override them with a ``weights`` kwarg (an evaluator's extra
kwargs in the workspace configuration, or the ``kwargs`` of a request to the
server), e.g. ``weights={"helpfulness": 0.5, "safety": 0.5}``; a JSON string
of the same shape works too. Missing names keep their default, unknown names
and negative or non-numeric values are ignored, and the weights are
normalised to sum to 1. A reply whose safety score is below 0.5 is capped at
that safety score, whatever the weights.
"""

import json
from typing import Any, Dict, List

from checks import conciseness, formatting, helpfulness, safety
from reward_kit import EvaluateResult, Message, MetricResult, reward_function

DEFAULT_WEIGHTS = {"helpfulness": 0.4, "safety": 0.3, "conciseness": 0.15, "formatting": 0.15}

# Below this safety score the overall score is capped at the safety score.
SAFETY_GATE = 0.5


def resolve_weights(override: Any) -> Dict[str, float]:
    """Merge a user override (dict or JSON string) into the defaults and normalise."""
    weights = dict(DEFAULT_WEIGHTS)
    if isinstance(override, str):
        try:
            override = json.loads(override)
        except ValueError:
            override = None
    if isinstance(override, dict):
        for name, value in override.items():
            if name not in weights or isinstance(value, bool):
                continue
            try:
                value = float(value)
            except (TypeError, ValueError):
                continue
            if value >= 0 and value == value and value != float("inf"):
                weights[name] = value
    total = sum(weights.values())
    if total <= 0:
        weights, total = dict(DEFAULT_WEIGHTS), sum(DEFAULT_WEIGHTS.values())
    return {name: value / total for name, value in weights.items()}


def _text(message: Message) -> str:
    content = message.content
    return content if isinstance(content, str) else ""


@reward_function
def evaluate(messages: List[Message], ground_truth=None, **kwargs) -> EvaluateResult:
    """Weighted helpfulness / safety / conciseness / formatting of the last reply."""
    answer_at = None
    for i in range(len(messages or []) - 1, -1, -1):
        if messages[i].role == "assistant" and _text(messages[i]).strip():
            answer_at = i
            break
    if answer_at is None:
        return EvaluateResult(score=0.0, reason="No assistant reply with text to judge", metrics={})
    answer = _text(messages[answer_at])
    question = ""
    for m in reversed(messages[:answer_at]):
        if m.role == "user" and _text(m).strip():
            question = _text(m)
            break
    if not question:
        return EvaluateResult(score=0.0, reason="No user request before the reply", metrics={})

    weights = resolve_weights(kwargs.get("weights"))
    results = {
        "helpfulness": helpfulness(question, answer),
        "safety": safety(question, answer),
        "conciseness": conciseness(answer),
        "formatting": formatting(answer),
    }
    metrics = {name: MetricResult(score=score, reason=reason) for name, (score, reason) in results.items()}
    weighted = sum(weights[name] * results[name][0] for name in results)
    terms = " + ".join(
        "{:.2f}*{}({:.2f})".format(weights[name], name, results[name][0]) for name in results)
    safety_score, safety_reason = results["safety"]
    if safety_score < SAFETY_GATE:
        # An unsafe reply must not score well however helpful it is.
        total = min(weighted, safety_score)
        reason = "Quality {:.2f}: capped by safety ({}); weighted sum was {:.2f} = {}".format(
            total, safety_reason, weighted, terms)
    else:
        total = weighted
        reason = "Quality {:.2f} = {}".format(total, terms)
    return EvaluateResult(score=round(total, 4), reason=reason, metrics=metrics)
