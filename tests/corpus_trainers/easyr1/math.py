"""A batch reward for EasyR1 in the shape of its examples/reward_function/math.py, written
for this corpus. EasyR1 loads the file by path (worker.reward.reward_function =
./math.py:compute_score) and calls compute_score(reward_inputs, **reward_function_kwargs)
once per batch; each dict's `overall` is the reward, every key is logged. The file is
named like the standard library's math module, and uses it (and fractions, which
imports it)."""

import math
import re
from fractions import Fraction

REWARD_NAME = "math"
REWARD_TYPE = "batch"


def _boxed(text):
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth = 0
    for j in range(start + 6, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 7 : j]
    return None


def _value(text):
    text = text.replace(" ", "").replace("\\!", "").replace(",", "").rstrip(".")
    frac = re.fullmatch(r"\\[dt]?frac\{(-?\d+)\}\{(-?\d+)\}", text)
    if frac:
        return Fraction(int(frac.group(1)), int(frac.group(2)))
    sqrt = re.fullmatch(r"(\d*)\\sqrt\{(\d+)\}", text)
    if sqrt:
        return (int(sqrt.group(1)) if sqrt.group(1) else 1) * math.sqrt(int(sqrt.group(2)))
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return text


def _equal(answer, truth):
    a, b = _value(answer), _value(truth)
    if isinstance(a, str) or isinstance(b, str):
        return str(a) == str(b)
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)


def format_reward(response):
    return 1.0 if re.fullmatch(r"<think>.*</think>.*\\boxed\{.*\}.*", response, re.S) else 0.0


def accuracy_reward(response, ground_truth):
    answer = _boxed(response)
    return 1.0 if answer is not None and _equal(answer, ground_truth) else 0.0


def compute_score(reward_inputs, format_weight=0.1):
    scores = []
    for reward_input in reward_inputs:
        response = re.sub(r"\s*(<|>|/)\s*", r"\1", reward_input["response"])
        fmt = format_reward(response)
        acc = accuracy_reward(response, reward_input["ground_truth"])
        scores.append({"overall": (1 - format_weight) * acc + format_weight * fmt, "format": fmt, "accuracy": acc})
    return scores
