"""An AReaL reward function (the shape of areal/reward/gsm8k.py): RLVRWorkflow calls it
once per rollout, positionally, as fn(prompt, completions, prompt_ids, completion_ids,
**data), where data is the dataset row (here `messages` and `answer`)."""

import re


def gsm8k_reward_fn(prompt, completions, prompt_ids, completion_ids, answer, **kwargs):
    truth = answer.split("####")[-1].strip()
    found = re.findall(r"The answer is (-?[\d,]+)", completions)
    return 1.0 if found and found[-1].replace(",", "") == truth else 0.0
