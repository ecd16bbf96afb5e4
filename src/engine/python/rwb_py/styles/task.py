"""verifiers 1.x tasks (SPEC §3): a `vf.Task` subclass scored on a sample's trace as
verifiers' own replay scores one.
"""

import inspect

from .calling import Pointwise


NAME = "verifiers-task"


def is_task_class(fn):
    """Whether `fn` is a subclass of verifiers' `Task` (1.x)."""
    if not inspect.isclass(fn):
        return False
    return any(
        base.__name__ == "Task" and (base.__module__ or "").startswith("verifiers")
        for base in inspect.getmro(fn)[1:]
    )


def detect(seen):
    """It is a verifiers 1.x Task subclass: scored, never called as a function."""
    if is_task_class(seen.fn):
        return "is a verifiers Task subclass (%s): its rewards and metrics score the sample's trace" % seen.fn.__name__
    return None


class Caller(Pointwise):
    style = NAME
    direct = False

    def arguments(self, sample):
        raise NotImplementedError("verifiers 1.x tasks are not scored yet")
