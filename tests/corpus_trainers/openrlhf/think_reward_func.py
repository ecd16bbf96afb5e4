"""An OpenRLHF reward file that reads the whole query: the response must open with a
reasoning block and end with a boxed answer. It finds the response by cutting the query
at the end of the generation prompt of the model's template (Qwen2.5's
"<|im_start|>assistant\\n", Llama 3's "<|start_header_id|>assistant<|end_header_id|>\\n\\n"),
so it scores 0.0 for every sample when the query was templated some other way. Returns
numpy arrays for `rewards`, a plain number for `scores` and a numpy scalar in
`extra_logs`: the shapes OpenRLHF accepts besides tensors."""

import re

import numpy as np

_HEADERS = ("<|im_start|>assistant\n", "<|start_header_id|>assistant<|end_header_id|>\n\n")
# the end-of-turn token OpenRLHF decodes at the end of a finished response is allowed
_SHAPE = re.compile(r"^<think>.+?</think>.*\\boxed\{[^{}]+\}\s*(<\|im_end\|>|<\|eot_id\|>)?$", re.DOTALL)


def reward_func(queries, prompts, labels, **kwargs):
    rewards = []
    for query in queries:
        cut = max((query.rfind(h) + len(h) for h in _HEADERS if h in query), default=-1)
        response = query[cut:] if cut >= 0 else ""
        rewards.append(1.0 if _SHAPE.match(response) else 0.0)
    rewards = np.array(rewards, dtype=np.float32)
    return {
        "rewards": rewards,
        "scores": float(rewards.mean()),
        "extra_logs": {"think_rate": np.float32(rewards.mean())},
    }
