"""Reading a sample the way trainers present it: the last message of a role, the
prompt messages (all before the final assistant turn), the prompt as text (ChatML),
and a batch of samples as columns.
"""

from ..results import _get


def _last(messages, role):
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == role:
            content = message.get("content")
            return content if isinstance(content, str) else ("" if content is None else str(content))
    return ""


def _prompt_text(sample):
    """The prompt as the model saw it: the sample's string `prompt`, else its prompt
    messages (all but the final assistant turn) in ChatML, opening the assistant turn."""
    prompt = sample.get("prompt")
    if isinstance(prompt, str):
        return prompt
    messages = _prompt_messages(sample["messages"])
    parts = []
    for m in messages:
        role = _get(m, "role", "")
        content = _get(m, "content")
        parts.append("<|im_start|>%s\n%s<|im_end|>\n" % (role, "" if content is None else content))
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def _prompt_messages(messages):
    """The messages before the final assistant turn (the whole list when it has none)."""
    cut = len(messages)
    if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant":
        cut -= 1
    return messages[:cut]


def _columns(samples, exclude):
    keys = []
    for s in samples:
        for k in s:
            if k not in exclude and k not in keys:
                keys.append(k)
    return {k: [s.get(k) for s in samples] for k in keys}
