"""A veRL-style GSM8K scorer as Tunix's CLI runs it with `verl_compatible=true`: the CLI
wraps the file's `compute_score` and calls `compute_score(completion_text, ground_truth)`
positionally, the ground truth being the row's `reward_model["ground_truth"]`."""

import re

_CLIP = 300


def compute_score(solution_str, ground_truth, method="strict", format_score=0.0, score=1.0):
    text = solution_str[-_CLIP:]
    found = re.findall(r"#### (\-?[0-9\.\,]+)", text)
    if not found:
        return 0
    answer = found[-1].replace(",", "").replace("$", "")
    return score if answer == ground_truth else format_score
