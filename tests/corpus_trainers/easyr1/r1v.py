"""A sequential EasyR1 reward (REWARD_TYPE = "sequential": one dict a call), shaped like
its r1v example, written for this corpus: <think>..</think><answer>..</answer> format
and the answer's text against the ground truth."""

import re

REWARD_NAME = "r1v"
REWARD_TYPE = "sequential"


def compute_score(reward_input, format_weight=0.5):
    response = reward_input["response"]
    fmt = 1.0 if re.fullmatch(r"<think>.*?</think>\s*<answer>.*?</answer>", response, re.S) else 0.0
    tagged = re.search(r"<answer>(.*?)</answer>", response, re.S)
    given = (tagged.group(1) if tagged else response).strip().lower().rstrip(".")
    acc = 1.0 if given == str(reward_input["ground_truth"]).strip().lower() else 0.0
    return {"overall": (1 - format_weight) * acc + format_weight * fmt, "format": fmt, "accuracy": acc}
