"""An EasyR1 reward file (the shape of examples/reward_function/math.py; EasyR1's
default file name is math.py, and it still sees the standard library's math).
REWARD_TYPE = "batch": compute_score gets one list of
{response, response_length, ground_truth} dicts per batch and returns one dict per
input; `overall` is the reward, every other key is logged."""

import math
import re

REWARD_NAME = "math"
REWARD_TYPE = "batch"


def compute_score(reward_inputs, format_weight=0.1):
    scores = []
    for item in reward_inputs:
        response = item["response"]
        found = re.findall(r"The answer is (-?[\d,]+)\.", response)
        accuracy = 1.0 if found and found[-1].replace(",", "") == str(item["ground_truth"]) else 0.0
        fmt = 1.0 if found else 0.0
        # a gentle length factor, through the standard library's math
        brevity = 1.0 / (1.0 + math.log1p(max(item["response_length"] - 20, 0)))
        scores.append({
            "overall": (1 - format_weight) * accuracy + format_weight * fmt,
            "format": fmt,
            "accuracy": accuracy,
            "brevity": brevity,
        })
    return scores
