"""Reading a sample the way trainers present it (SPEC §3, "Samples in every form").

A sample holds its conversation in one of two forms: *chat*, a `messages` list whose
final assistant turn is the completion; or *prompt and completion*, `prompt` and
`completion` each a string (TRL's standard format) or a list of messages
(conversational). A row with `messages` is chat even when it also has `prompt` or
`completion` keys: they are then columns. Each style asks this module for the parts in
the form it passes them: as the sample has them, as messages, or as text.

The prompt as a trainer templated it (Tunix's `prompts`, OpenRLHF's `queries`, old
veRL's `solution_str`) comes from rwb when a Jinja template is set (rwb renders it and
hands it over under TEMPLATED), else it is made here: ChatML, or the turns' contents
as they are (`raw`).
"""

from ..results import _get

# The key under which a prompt rwb rendered travels inside a sample (no JSON a user
# writes has it: it starts with a NUL character).
TEMPLATED = "\x00rwb_prompt"
_TEMPLATED_JSON = b'"\\u0000rwb_prompt"'
# The key under which the step (and epoch) a sample's source logged travels inside a
# TRL-style sample, `{"step": N, "epoch": N}`, for its `trainer_state` (put there by
# rwb's pool, src/engine/pool.rs; never a column).
STEP = "\x00rwb_step"


def with_templated_prompt(raw, prompt_line):
    """The sample line `raw` (a JSON object's bytes) with the JSON string on
    `prompt_line` added under TEMPLATED."""
    value = prompt_line.strip() or b"null"
    body = raw.strip()
    rest = body[1:].lstrip()
    joiner = b"" if rest.startswith(b"}") else b","
    return b"{" + _TEMPLATED_JSON + b":" + value + joiner + rest


class Parts:
    """A sample's conversation: `prompt` and `completion` as the sample holds them
    (lists of messages for chat), `chat` whether it came from `messages`, and the keys
    that make up the conversation (every other key is a column)."""

    __slots__ = ("prompt", "completion", "chat", "keys")

    def __init__(self, prompt, completion, chat, keys):
        self.prompt = prompt
        self.completion = completion
        self.chat = chat
        self.keys = keys


_CHAT_KEYS = ("messages", TEMPLATED, STEP)
_PAIR_KEYS = ("prompt", "completion", TEMPLATED, STEP)


def parts(sample):
    """The conversation of `sample`, in whichever form it has (rwb sends only samples
    in one of them; anything else raises the KeyError a trainer would)."""
    messages = sample.get("messages")
    if isinstance(messages, list):
        prompt = _prompt_messages(messages)
        return Parts(prompt, messages[len(prompt) :], True, _CHAT_KEYS)
    return Parts(sample["prompt"], sample["completion"], False, _PAIR_KEYS)


def as_messages(part, role):
    """A prompt or completion as a list of messages: a string is one turn of `role`."""
    if isinstance(part, str):
        return [{"role": role, "content": part}]
    return part if isinstance(part, list) else []


def as_text(part, role="assistant"):
    """A completion (or prompt) as text: a string as it is, else the content of its
    last turn of `role` (of any role when it has none)."""
    if isinstance(part, str):
        return part
    if not isinstance(part, list):
        return "" if part is None else str(part)
    text = _last(part, role)
    if text or not part:
        return text
    content = _get(part[-1], "content")
    return content if isinstance(content, str) else ("" if content is None else str(content))


def conversation(sample):
    """The whole conversation as messages (reward-kit's `messages`)."""
    messages = sample.get("messages")
    if isinstance(messages, list):
        return messages
    return as_messages(sample["prompt"], "user") + as_messages(sample["completion"], "assistant")


def columns_of(sample, keys):
    """The sample's keys that are columns (not its conversation)."""
    return {k: v for k, v in sample.items() if k not in keys}


def _last(messages, role):
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == role:
            content = message.get("content")
            return content if isinstance(content, str) else ("" if content is None else str(content))
    return ""


def templated_prompt(sample, template="chatml"):
    """The prompt as the trainer templated it: the one rwb rendered (a Jinja
    template), a string prompt as it is (already the text the trainer saw), else the
    prompt turns in ChatML opening the assistant turn, or their contents joined by a
    newline (`raw`)."""
    rendered = sample.get(TEMPLATED)
    if isinstance(rendered, str):
        return rendered
    # a string prompt, also beside `messages` (a veRL dump's `input` mapped to it), is
    # the text the trainer saw
    prompt = sample.get("prompt")
    if isinstance(prompt, str):
        return prompt
    prompt = parts(sample).prompt
    if template == "raw":
        return "\n".join(_content(m) for m in prompt)
    out = []
    for m in prompt:
        out.append("<|im_start|>%s\n%s<|im_end|>\n" % (_get(m, "role", ""), _content(m)))
    out.append("<|im_start|>assistant\n")
    return "".join(out)


def _content(message):
    content = _get(message, "content")
    return "" if content is None else content


def _prompt_messages(messages):
    """The messages before the final assistant turn (the whole list when it has none)."""
    cut = len(messages)
    if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant":
        cut -= 1
    return messages[:cut]


def batch_columns(samples, each):
    """A batch's columns, each a list over the batch: every key of a sample that is
    not its conversation (`each[i].keys` for sample i), None where a sample lacks it."""
    keys = []
    for s, p in zip(samples, each):
        for k in s:
            if k not in p.keys and k not in keys:
                keys.append(k)
    return {k: [s.get(k) if k not in p.keys else None for s, p in zip(samples, each)] for k in keys}
