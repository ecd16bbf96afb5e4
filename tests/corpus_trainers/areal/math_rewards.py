"""Rewards in the shape AReaL's built-in ones have (areal/reward/*.py): AReaL's
RLVRWorkflow calls them as reward_fn(prompt_str, completions_str, prompt_ids,
completion_ids, **data_row), the first four by position, the row's fields (`answer`,
`messages`, ...) by keyword. Written for this corpus, not copied."""

import re

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _as_number(text):
    try:
        return float(text.replace(",", "").replace("$", "").strip())
    except (AttributeError, ValueError):
        return None


def _boxed(text):
    """The content of the last \\boxed{...}, braces balanced; None without one."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed")
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
    return None


def _prediction(completion):
    boxed = _boxed(completion)
    if boxed is not None:
        return _as_number(boxed)
    numbers = _NUMBER.findall(completion)
    return _as_number(numbers[-1]) if numbers else None


def _gold(answer):
    """GSM8K's solutions end with '#### N'; a bare number is its own gold."""
    if "####" in answer:
        answer = answer.split("####")[-1]
    return _as_number(answer)


def gsm8k_reward_fn(prompt, completions, prompt_ids, completion_ids, answer, **kwargs):
    try:
        gold = _gold(str(answer))
        pred = _prediction(str(completions))
        if gold is None or pred is None:
            return 0.0
        return float(abs(gold - pred) < 1e-6)
    except Exception:
        return 0.0


def clevr_count_reward_fn(prompt, completions, prompt_ids, completion_ids, answer, **kwargs):
    """CLEVR counting: the model ends with the count in square brackets, e.g. [3]."""
    counts = re.findall(r"\[(\d+)\]", completions)
    if not counts:
        return 0
    return float(counts[-1] == answer.strip())


def _last_bracket_or_number(text):
    bracketed = re.findall(r"\[([^\[\]]+)\]", text)
    if bracketed:
        return bracketed[-1].strip()
    numbers = _NUMBER.findall(text)
    return numbers[-1] if numbers else None


def geometry3k_reward_fn(prompt, completions, prompt_ids, completion_ids, answer, **kwargs):
    """Geometry3K-style: last [..] (or last number) on both sides, numerically equal;
    a rambling answer (over 48 generated tokens) loses 0.2."""
    pred = _last_bracket_or_number(completions)
    gold = _last_bracket_or_number(answer)
    if pred is None or gold is None:
        return 0.0
    p, g = _as_number(pred), _as_number(gold)
    if p is not None and g is not None:
        reward = 1.0 if abs(p - g) <= 1e-4 * max(1.0, abs(g)) else 0.0
    else:
        reward = 1.0 if pred.replace(" ", "") == gold.replace(" ", "") else 0.0
    if completion_ids is not None and len(completion_ids) > 48:
        reward -= 0.2
    return reward
