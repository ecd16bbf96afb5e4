"""An exact-match scorer shaped like Search-R1's verl/utils/reward_score/qa_em.py. Search-R1's
RewardManager decodes prompt and response together (special tokens kept) after the
tokenizer's chat template, and calls `compute_score_em(solution_str=..., ground_truth=...,
format_score=...)`. The prompt's instructions already hold two <answer>...</answer> pairs,
so fewer than two matches in the whole text means the model gave no answer; the last match
is the model's answer, or the prompt's example when the model gave none."""

import re
import string


def normalize_answer(text):
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def em_check(prediction, golden_answers):
    if isinstance(golden_answers, str):
        golden_answers = [golden_answers]
    guess = normalize_answer(prediction)
    return int(any(normalize_answer(g) == guess for g in golden_answers))


def extract_solution(solution_str):
    matches = re.findall(r"<answer>(.*?)</answer>", solution_str, re.DOTALL)
    if len(matches) <= 1:
        return None
    return matches[-1].strip()


def compute_score_em(solution_str, ground_truth, method="strict", format_score=0.0, score=1.0):
    answer = extract_solution(solution_str)
    if answer is None:
        return 0
    return score if em_check(answer, ground_truth["target"]) else format_score


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """The same scorer as a newer veRL custom reward file: newer veRL hands the response
    alone, so the prompt's two example answers are not there to count."""
    return compute_score_em(solution_str, ground_truth)
