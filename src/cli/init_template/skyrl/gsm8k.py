"""A SkyRL gym reward helper (the shape of skyrl_gym/envs/gsm8k/utils.py): the
environment's step calls compute_score(action, ground_truth) with the turn's text
and the row's reward_spec.ground_truth."""

import re


def compute_score(action, ground_truth, format_score=0.0, score=1.0):
    found = re.findall(r"The answer is (-?[\d,]+)", action)
    if not found:
        return 0
    return score if found[-1].replace(",", "") == ground_truth else format_score
