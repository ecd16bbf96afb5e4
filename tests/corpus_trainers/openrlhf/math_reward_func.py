"""An OpenRLHF reward file shaped like examples/python/math_reward_func.py, given to
training as `--reward.remote_url math_reward_func.py`: OpenRLHF loads the file's
`reward_func` and calls it with lists `queries` (templated prompt + completion, decoded
with special tokens), `prompts` (the templated prompts) and `labels` (the `--data.label_key`
column). Returns torch tensors when torch is importable, as the original does; plain lists
otherwise (the CI venv has no torch)."""

try:
    import torch
except ImportError:  # pragma: no cover - depends on the interpreter
    torch = None


def _last_boxed(text):
    """The contents of the last \\boxed{...}, braces balanced; None when there is none."""
    start = text.rfind("\\boxed")
    if start < 0:
        return None
    depth, end = 0, None
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                end = i
                break
    if end is None:
        return None
    boxed = text[start : end + 1]
    if not boxed.startswith("\\boxed{"):
        return None
    return boxed[len("\\boxed{") : -1]


def _normal(answer):
    text = str(answer).strip().replace(" ", "").replace(",", "").rstrip(".")
    if text.startswith("$") and text.endswith("$"):
        text = text[1:-1]
    try:
        value = float(text)
        return repr(int(value)) if value == int(value) else repr(value)
    except ValueError:
        return text


def reward_func(queries, prompts, labels, **kwargs):
    rewards = []
    for query, prompt, label in zip(queries, prompts, labels):
        # the response is what follows the prompt in the query
        response = query[len(prompt):] if isinstance(prompt, str) and prompt in query else query
        predicted = _last_boxed(response)
        correct = predicted is not None and label is not None and _normal(predicted) == _normal(label)
        rewards.append(1.0 if correct else 0.0)
        print(f"[math reward] predicted {predicted!r}, label {label!r}, correct {correct}")
    if torch is not None:
        values = torch.tensor(rewards, dtype=torch.float)
        return {"rewards": values, "scores": values, "extra_logs": {"math_accuracy": values.mean()}}
    accuracy = sum(rewards) / len(rewards) if rewards else 0.0
    return {"rewards": rewards, "scores": list(rewards), "extra_logs": {"math_accuracy": accuracy}}
