"""A veRL reward function: `compute_score(data_source, solution_str, ground_truth,
extra_info)`, called once per response as veRL's reward manager calls it, with
`ground_truth` from the row's `reward_model.ground_truth`. It returns a float, or a
dict with "score" (its other keys become metrics, as veRL logs them).

Train with it unchanged:
    custom_reward_function.path=reward.py custom_reward_function.name=compute_score

Edit and save: the workbench (`rwb`) reruns it on every rollout at once, and shows
each rollout's advantage in its group as veRL's GRPO computes it.
"""

import re

FINAL = re.compile(r"####\s*(-?[0-9][0-9,]*(?:\.[0-9]+)?)")


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """GSM8K's rule: the number after the last "####" is the answer."""
    found = FINAL.findall(solution_str)
    if not found:
        return {"score": 0.0, "formatted": 0.0}
    answer = found[-1].replace(",", "")
    return {"score": 1.0 if answer == str(ground_truth) else 0.0, "formatted": 1.0}
