"""Countdown, scored as AReaL's countdown example scores it (examples/countdown/train.py
calls compute_score(completions_str, data) with the whole data row as the ground
truth). Written for this corpus: the equation in the last line's <answer> tags must use
each given number exactly once and reach the target."""

import re


def _equation(solution_str):
    last_line = solution_str.strip().split("\n")[-1]
    found = re.findall(r"<answer>(.*?)</answer>", last_line)
    return found[-1].strip() if found else None


def _evaluate(equation):
    if not re.fullmatch(r"[\d+\-*/().\s]+", equation):
        return None
    try:
        return eval(equation, {"__builtins__": {}}, {})
    except Exception:
        return None


def compute_score(solution_str, ground_truth, method="strict", format_score=0.1, score=1.0):
    target, numbers = ground_truth.get("target"), ground_truth.get("numbers")
    if target is None or numbers is None:  # a math row of the mixed set: no countdown task
        return 0
    equation = _equation(solution_str)
    if equation is None:
        return 0
    used = sorted(int(n) for n in re.findall(r"\d+", equation))
    if used != sorted(numbers):
        return format_score
    value = _evaluate(equation)
    if value is None or abs(value - target) >= 1e-5:
        return format_score
    return score
