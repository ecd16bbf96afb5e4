"""reward-kit's batch mode: `fn(rollouts_messages=[...], **columns)`, one call per
batch.
"""

from .calling import Batched, _filter_kwargs
from .samples import batch_columns, conversation, parts


NAME = "batch"


def by_decorator(seen):
    """It is decorated with @reward_function(mode="batch") (tried first of all)."""
    if getattr(seen.fn, "_reward_function_mode", None) == "batch":
        return 'decorated with @reward_function(mode="batch")'
    return None


def by_parameters(seen):
    """It declares `rollouts_messages`."""
    if "rollouts_messages" in seen.names:
        return "%s rollouts_messages (reward-kit batch mode)" % seen.what
    return None


class Caller(Batched):
    style = NAME

    def arguments(self, samples):
        kwargs = dict(self.extra)
        kwargs.update(batch_columns(samples, [parts(s) for s in samples]))
        kwargs["rollouts_messages"] = [conversation(s) for s in samples]
        return _filter_kwargs(kwargs, self.accepted)
