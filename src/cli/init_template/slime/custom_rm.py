"""A slime custom reward (--custom-rm-path custom_rm.reward): awaited once per sample as
reward(args, sample), with slime's Sample (prompt, response, label, metadata, ...).
A dict reward is read through --reward-key (trainer_args.reward_key here)."""

import re


async def reward(args, sample, **kwargs):
    found = re.findall(r"The answer is (-?[\d,]+)", sample.response)
    correct = bool(found) and found[-1].replace(",", "") == sample.label
    return {"score": 1.0 if correct else 0.0, "formatted": 1.0 if found else 0.0}
