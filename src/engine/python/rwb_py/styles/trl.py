"""TRL's style: `f(prompts=, completions=, **columns) -> list[float | None]`, one call
per batch of consecutive samples; None for a sample is "no score".
"""

from .calling import Batched, _filter_kwargs
from .samples import batch_columns, parts


NAME = "trl"


def detect(seen):
    """It declares `completions`, and `prompts` or no `messages`; or, as TRL's factory
    callables (soft overlong punishment, token repetition penalty), `completion_ids`
    and none of the other styles' names."""
    names, var_kw = seen.names, seen.var_kw
    others = {"messages", "solution_str", "response", "queries", "completion", "rollouts_messages"}
    if "completion_ids" in names and "completions" not in names and not names & others:
        return "%s completion_ids%s (a TRL reward callable over token ids)" % (
            seen.what,
            ", **kwargs" if var_kw else "",
        )
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
        # in the sample's own form, as TRL passes its dataset's: strings for the
        # standard format, message lists for conversational and chat samples
        each = [parts(s) for s in samples]
        kwargs = dict(self.extra)
        kwargs.update(batch_columns(samples, each))
        kwargs["prompts"] = [p.prompt for p in each]
        kwargs["completions"] = [p.completion for p in each]
        return _filter_kwargs(kwargs, self.accepted)
