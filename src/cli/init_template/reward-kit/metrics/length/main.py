"""A first evaluator: does the answer have a sensible length and mention the question?

Edit this file and save: the workbench (`rwb`) reruns it on every sample at once.
"""

from typing import List

from reward_kit import EvaluateResult, Message, MetricResult, reward_function


@reward_function
def evaluate(messages: List[Message], ground_truth=None, **kwargs) -> EvaluateResult:
    question = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
    answer = messages[-1].content or "" if messages and messages[-1].role == "assistant" else ""
    if not answer:
        return EvaluateResult(score=0.0, reason="no assistant answer to score", metrics={})

    words = len(answer.split())
    length = 1.0 if 20 <= words <= 150 else 0.5 if 5 <= words <= 300 else 0.0
    asked = {w.strip("?.,!").lower() for w in question.split() if len(w) > 3}
    said = {w.strip("?.,!").lower() for w in answer.split()}
    overlap = len(asked & said) / len(asked) if asked else 0.5

    score = 0.5 * length + 0.5 * overlap
    return EvaluateResult(
        score=score,
        reason=f"{words} words; {len(asked & said)} of {len(asked)} question words answered",
        metrics={
            "length": MetricResult(score=length, reason=f"{words} words (20 to 150 is best)"),
            "on_topic": MetricResult(score=overlap, reason=f"question words in the answer: {sorted(asked & said)}"),
        },
    )
