"""The simple style: `f(response, prompt=, answer=, **sample keys) -> float`, one call
per sample, with the last assistant and user messages as text.
"""

from .calling import Pointwise, _filter_kwargs
from .samples import as_text, columns_of, parts


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
        conv = parts(sample)
        kwargs = dict(self.extra)
        kwargs.update(columns_of(sample, conv.keys))
        kwargs["response"] = as_text(conv.completion, "assistant")
        kwargs["prompt"] = as_text(conv.prompt, "user")
        answer = sample.get("answer", sample.get("ground_truth"))
        kwargs["answer"] = "" if answer is None else answer
        return _filter_kwargs(kwargs, self.accepted)
