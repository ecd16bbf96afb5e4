"""The verifiers style: a Rubric reward function, called by keyword with only the
parameters it declares among prompt, completion, answer, state, task, info (and
parser); an exception scores 0.0 and is shown on the row, as a Rubric logs it.
"""

from ..asyncs import _is_async
from .calling import Pointwise, Swallowed, _filter_kwargs
from .samples import _last, _prompt_messages, conversation


# What a verifiers Rubric passes a reward function, by keyword, filtered to what it
# declares (verifiers.rubrics.Rubric.call_reward_func).
VERIFIERS_NAMES = frozenset(("prompt", "completion", "answer", "state", "task", "info", "parser"))


NAME = "verifiers"


def detect(seen):
    """It declares `completion`, not `messages`, and nothing a Rubric does not pass."""
    names = seen.names
    if "completion" in names and "messages" not in names and names <= VERIFIERS_NAMES:
        declared = ", ".join(sorted(names)) + (", **kwargs" if seen.var_kw else "")
        return "%s %s (a verifiers Rubric reward function)" % (seen.what, declared)
    return None


class Caller(Pointwise):
    style = NAME

    def __init__(self, fn, extra_kwargs, spec):
        Pointwise.__init__(self, fn, extra_kwargs, spec)
        self.fn = _verifiers_call(fn)
        if "parser" in self.accepted[0] and "parser" not in extra_kwargs:
            self.extra = _with_verifiers_parser(extra_kwargs)

    def arguments(self, sample):
        messages = sample.get("messages")
        if not isinstance(messages, list):  # prompt and completion, as a Rubric has them
            messages = conversation(sample)
        return _filter_kwargs(_verifiers_arguments(sample, messages, self.extra), self.accepted)


def _verifiers_arguments(sample, messages, extra):
    """A sample as a verifiers Rubric passes it: `prompt` and `completion` as messages
    (chat), or as strings when the sample's `prompt` is a string (completion format);
    `answer` the sample's `answer`, else its `ground_truth`, else ""; `state`, `task`
    ("default") and `info` ({}) from the sample's fields of those names."""
    prompt = sample.get("prompt")
    completion = sample.get("completion")
    if isinstance(prompt, str):
        if completion is None:
            completion = _last(messages, "assistant")
    else:
        prompt_messages = _prompt_messages(messages)
        if not isinstance(prompt, list):
            prompt = prompt_messages
        if completion is None:
            completion = messages[len(prompt_messages) :]
    answer = sample.get("answer", sample.get("ground_truth"))
    state = sample.get("state")
    info = sample.get("info")
    kwargs = dict(extra)
    kwargs.update(
        prompt=prompt,
        completion=completion,
        answer="" if answer is None else answer,
        state=state if isinstance(state, dict) else {},
        task=sample.get("task") or "default",
        info=info if isinstance(info, dict) else {},
    )
    return kwargs


def _with_verifiers_parser(extra):
    """A function that declares `parser` gets the Rubric's default, `verifiers.Parser()`,
    when verifiers is installed; else nothing, and the call's TypeError names it."""
    try:
        import verifiers

        return dict(extra, parser=verifiers.Parser())
    except Exception:
        return extra


def _verifiers_call(fn):
    """`fn` called as a verifiers Rubric calls it: its return read with float(), and an
    Exception (not a timeout, which is a BaseException) scored 0.0 and kept."""
    name = getattr(fn, "__name__", type(fn).__name__)
    if _is_async(fn):

        async def call_async(**kwargs):
            try:
                return float(await fn(**kwargs))
            except Exception as exc:
                return Swallowed(name, exc)

        return call_async

    def call(**kwargs):
        try:
            return float(fn(**kwargs))
        except Exception as exc:
            return Swallowed(name, exc)

    return call
