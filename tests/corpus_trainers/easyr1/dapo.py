"""A DAPO-style batch reward for EasyR1 (written for this corpus): "Answer: X" on the
last lines graded against the ground truth (+1 / -1), plus a soft over-length penalty
on the response's token count (`response_length`). The lengths are EasyR1's
reward_function_kwargs."""

import re

REWARD_NAME = "dapo"
REWARD_TYPE = "batch"


def _normalize(answer):
    answer = answer.strip().rstrip(".")
    answer = re.sub(r"\\text\{(.*?)\}", r"\1", answer)
    for unit in ("dollars", "degrees", "cm", "meters", "units"):
        answer = answer.replace(unit, "")
    answer = answer.replace("$", "").replace(",", "").replace(" ", "")
    return answer.lower()


def accuracy(response, ground_truth):
    found = re.findall(r"(?i)answer\s*:\s*([^\n]+)", response)
    return 1.0 if found and _normalize(found[-1]) == _normalize(ground_truth) else -1.0


def overlong(response_length, max_response_length, overlong_buffer_length):
    free = max_response_length - overlong_buffer_length
    if response_length <= free:
        return 0.0
    if response_length <= max_response_length:
        return (free - response_length) / overlong_buffer_length
    return -1.0


def compute_score(reward_inputs, max_response_length, overlong_buffer_length, overlong_penalty_factor):
    out = []
    for item in reward_inputs:
        acc = accuracy(item["response"][-300:], item["ground_truth"])
        over = overlong(item["response_length"], max_response_length, overlong_buffer_length)
        out.append({"overall": acc + over * overlong_penalty_factor, "accuracy": acc, "overlong": over,
                    "accuracy_normalized": 0.5 * (acc + 1.0)})
    return out
