"""A knights-and-knaves scorer shaped like Logic-RL's verl/utils/reward_score/kk.py. Its
RewardManager (older veRL, as in TinyZero) decodes the prompt and the response together
with the special tokens and calls `compute_score(solution_str=..., ground_truth=...)`, the
ground truth being `reward_model.ground_truth`, a dict. The scorer cuts the text at the
assistant header of the prompt, so the tags it counts include the "<think>" the prompt
itself ends with."""

import re


def _after_header(solution_str):
    for header in ("Assistant:", "<|im_start|>assistant"):
        if header in solution_str:
            return solution_str.split(header, 1)[1]
    return None


def _roles(text):
    """'(1) Zoey is a knave' lines -> {'Zoey': 'knave'}."""
    out = {}
    for line in text.split("\n"):
        found = re.search(r"\b([A-Za-z]+)\b.*?\b(knight|knave)\b", line.strip(), re.IGNORECASE)
        if found:
            out[found.group(1)] = found.group(2).lower()
    return out


def _well_formed(text):
    tags = ["<think>", "</think>", "<answer>", "</answer>"]
    if any(text.count(t) != 1 for t in tags):
        return False
    positions = [text.find(t) for t in tags]
    return positions == sorted(positions)


def _claimed(answer, names):
    lowered = answer.lower()
    if lowered.count("knight") + lowered.count("knave") != len(names):
        return None
    out = {}
    for name in names:
        found = re.search(rf"\b{re.escape(name)}\b\s+is\s+a\s+\b(knight|knave)\b", answer, re.IGNORECASE)
        if not found:
            return None
        out[name] = found.group(1).lower()
    return out


def compute_score(solution_str, ground_truth, format_reward=1, answer_reward=1.0):
    truth = _roles(ground_truth.get("solution_text_format", ""))
    response = _after_header(solution_str)
    if response is None:
        return -abs(format_reward) - 2
    answers = re.findall(r"<answer>(.*?)</answer>", response, re.DOTALL)
    shaped = _well_formed(response)
    score = format_reward if shaped else -abs(format_reward)
    if not (shaped and answers):
        return score - 2
    claimed = _claimed(answers[-1].strip(), list(truth))
    if claimed is None:
        return score - 2
    return score + (2 if claimed == truth else -1.5)
