"""The simple style: `f(response, prompt=, answer=, **sample keys) -> float`, one call
per sample, with the last assistant and user messages as text.
"""

from .calling import Pointwise, _filter_kwargs
from .samples import _last


NAME = "simple"


def detect(seen):
    """It declares `response` (and not `messages`: reward-kit's rule comes first)."""
    if "response" in seen.names:
        return "%s response, no messages" % seen.what
    return None


class Caller(Pointwise):
    style = NAME
    unit_score = True

    def arguments(self, sample):
        messages = sample["messages"]
        kwargs = dict(self.extra)
        kwargs.update({k: v for k, v in sample.items() if k != "messages"})
        kwargs["response"] = _last(messages, "assistant")
        kwargs["prompt"] = _last(messages, "user")
        answer = sample.get("answer", sample.get("ground_truth"))
        kwargs["answer"] = "" if answer is None else answer
        return _filter_kwargs(kwargs, self.accepted)
