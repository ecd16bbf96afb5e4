"""reward-kit's pointwise style: `fn(messages=..., ground_truth=..., **sample keys)`,
one call per sample; a function no other rule claims is called so too.
"""

from .calling import Pointwise, _filter_kwargs, is_decorated
from .samples import columns_of, conversation


NAME = "reward-kit"


def by_messages(seen):
    """It declares `messages` (the reason says whether it is decorated)."""
    if "messages" in seen.names:
        return "decorated with @reward_function" if is_decorated(seen.fn) else "%s messages" % seen.what
    return None


def by_decorator(seen):
    """It went through @reward_function (tried after simple's rule)."""
    if is_decorated(seen.fn):
        return "decorated with @reward_function"
    return None


def by_default(seen):
    """Why a function no rule claims is called reward-kit style."""
    names, var_kw, what = seen.names, seen.var_kw, seen.what
    if names or not var_kw:
        listed = ", ".join(sorted(names)) or "no parameters"
        return "%s %s: none of messages, completions, solution_str, response; called reward-kit style" % (
            what,
            listed,
        )
    return "%s only **kwargs; called reward-kit style" % what


class Caller(Pointwise):
    style = NAME
    unit_score = True
    unit_metrics = True

    def __init__(self, fn, extra_kwargs, spec):
        Pointwise.__init__(self, fn, extra_kwargs, spec)
        self.strict = is_decorated(fn)

    def arguments(self, sample):
        # rwb.toml's kwargs first, the sample's keys over them; with neither kwargs
        # nor a filter (a function that takes **kwargs), one copy of the sample
        # (this runs once per sample)
        extra = self.extra
        if "messages" in sample:
            kwargs = {**extra, **sample} if extra else sample.copy()
        else:  # prompt and completion: one conversation, the other keys columns
            kwargs = dict(extra)
            kwargs.update(columns_of(sample, ("prompt", "completion")))
            kwargs["messages"] = conversation(sample)
        kwargs["ground_truth"] = sample.get("ground_truth")
        return kwargs if self.accepted[1] else _filter_kwargs(kwargs, self.accepted)
