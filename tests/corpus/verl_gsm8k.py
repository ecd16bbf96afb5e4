"""A veRL `compute_score` shaped like the GSM8K one: the answer after '####'."""

import re

_ANSWER = re.compile(r"#### (-?[0-9.,]+)")


def compute_score(data_source, solution_str, ground_truth, extra_info=None, format_score=0.1, score=1.0):
    found = _ANSWER.findall(solution_str)
    if not found:
        return 0.0
    answer = found[-1].replace(",", "")
    if answer == str(ground_truth):
        return {"score": score, "acc": 1.0}
    return {"score": format_score, "acc": 0.0}
