"""A reward-kit evaluator as the reward-kit docs write them: decorated, typed
messages, component metrics."""

from typing import List, Optional

from reward_kit import EvaluateResult, Message, MetricResult, reward_function

from boxed import last_boxed


@reward_function
def evaluate(messages: List[Message], ground_truth: Optional[str] = None, **kwargs) -> EvaluateResult:
    text = messages[-1].content or ""
    answer = last_boxed(text)
    correct = answer is not None and ground_truth is not None and answer == str(ground_truth).strip()
    thinks = "<think>" in text and "</think>" in text
    score = 0.8 * float(correct) + 0.2 * float(thinks)
    return EvaluateResult(
        score=score,
        reason="answer %r, expected %r" % (answer, ground_truth),
        metrics={
            "correct": MetricResult(score=float(correct), reason="boxed answer matches" if correct else "no match"),
            "thinks": MetricResult(score=float(thinks), reason="has a think block" if thinks else "no think block"),
        },
    )
