"""A skyrl-gym environment's reward helper in the shape of skyrl_gym/envs/gsm8k/utils.py,
written for this corpus: the env's step(action) returns
compute_score(action, extras["reward_spec"]["ground_truth"]) as the turn's reward."""

import re


def _strict(solution_str):
    found = re.search(r"#### (\-?[0-9\.\,]+)", solution_str)
    if found is None:
        return None
    return found.group(1).replace(",", "").replace("$", "")


def _flexible(solution_str):
    numbers = re.findall(r"(\-?[0-9\.\,]+)", solution_str)
    for candidate in reversed(numbers):
        if candidate not in ("", "."):
            return candidate.replace(",", "").rstrip(".")
    return None


def compute_score(solution_str, ground_truth, method="strict", format_score=0.0, score=1.0):
    answer = _strict(solution_str) if method == "strict" else _flexible(solution_str)
    if answer is None:
        return 0
    return score if answer == ground_truth else format_score


def compute_score_flexible(solution_str, ground_truth):
    """The env variant that grades the last number and rewards a well-formed miss."""
    return compute_score(solution_str, ground_truth, method="flexible", format_score=0.1)
