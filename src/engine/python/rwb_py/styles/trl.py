"""TRL's style: `f(prompts=, completions=, **columns) -> list[float | None]`, one call
per batch of consecutive samples; None for a sample is "no score".
"""

from .calling import Batched, _filter_kwargs
from .samples import _columns, _prompt_messages


NAME = "trl"


def detect(seen):
    """It declares `completions`, and `prompts` or no `messages`."""
    names, var_kw = seen.names, seen.var_kw
    if "completions" in names and ("prompts" in names or "messages" not in names):
        parts = [p for p in ("prompts", "completions") if p in names] + (["**kwargs"] if var_kw else [])
        declared = " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else parts[0]
        if "messages" not in names:
            declared += ", no messages"
        return "%s %s (TRL's reward function signature)" % (seen.what, declared)
    return None


class Caller(Batched):
    style = NAME
    none_is_no_score = True

    def arguments(self, samples):
        prompts, completions = [], []
        for s in samples:
            messages = s["messages"]
            prompt = _prompt_messages(messages)
            prompts.append(prompt)
            completions.append(messages[len(prompt) :])
        kwargs = dict(self.extra)
        kwargs.update(_columns(samples, exclude=("messages",)))
        kwargs["prompts"] = prompts
        kwargs["completions"] = completions
        return _filter_kwargs(kwargs, self.accepted)
