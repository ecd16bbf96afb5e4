"""A math scorer shaped like DeepScaleR's (rllm, May 2025: rllm/rewards/math_reward.py):
its RewardManager decodes prompt and response together with the special tokens and calls
`rllm_reward_fn(data_source=..., llm_solution=..., ground_truth=...)` -- `llm_solution`,
not `solution_str`. The text after the first "</think>" must hold a \\boxed{} answer; with
DeepSeek-R1-Distill's template the prompt ends with "<think>\\n", never "</think>", so the
cut lands in the response."""

import re


def _boxed(text):
    found = re.findall(r"\\boxed\{([^{}]*)\}", text)
    return found[-1].strip() if found else None


def rllm_reward_fn(data_source, llm_solution, ground_truth, extra_info={}, **kwargs):
    if "</think>" not in llm_solution:
        return 0.0
    answer = _boxed(llm_solution.split("</think>")[1])
    if answer is None:
        return 0.0
    truths = ground_truth if isinstance(ground_truth, list) else [ground_truth]
    return 1.0 if any(answer.replace(" ", "") == str(t).replace(" ", "") for t in truths) else 0.0
