"""Shaped like TinyZero's scorers of older veRL: `solution_str` is the decoded prompt
and response, and the scorer cuts it at the assistant turn before reading the answer."""

import re


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    if "Assistant:" in solution_str:
        solution_str = solution_str.split("Assistant:", 1)[1]
    elif "<|im_start|>assistant" in solution_str:
        solution_str = solution_str.split("<|im_start|>assistant", 1)[1]
    else:
        return 0.0
    answers = re.findall(r"<answer>(.*?)</answer>", solution_str, re.DOTALL)
    if not answers:
        return 0.0
    return 1.0 if answers[-1].strip() == str(ground_truth).strip() else 0.1
