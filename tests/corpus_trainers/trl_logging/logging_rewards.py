"""TRL reward functions that read the trainer's state and log to TRL's completions table
and metrics (GRPOTrainer passes `trainer_state`, `log_extra(column, values)` and
`log_metric(name, value)` to every reward function, TRL >= 1.0). Shaped like the
"logging extra columns and metrics" and curriculum examples of TRL's GRPO docs, written
for this corpus."""

import asyncio
import re

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_THINK = re.compile(r"^<think>.+?</think>", re.DOTALL)


def boxed_answer(completions, ground_truth, log_extra=None, log_metric=None, **kwargs):
    """1.0 when the last \\boxed{...} equals the answer; logs the answer and what was
    found beside each completion, and the batch's accuracy."""
    found = []
    for text in completions:
        matches = _BOXED.findall(text)
        found.append(matches[-1].strip() if matches else None)
    rewards = [1.0 if f is not None and f == gt else 0.0 for f, gt in zip(found, ground_truth)]
    if log_extra:
        log_extra("golden_answer", list(ground_truth))
        log_extra("extracted_answer", [f if f is not None else "[none]" for f in found])
    if log_metric:
        log_metric("accuracy", sum(rewards) / len(rewards))
    return rewards


def length_curriculum(completions, trainer_state, **kwargs):
    """Early in training a short answer is best; the target length grows with the
    fraction of training done (global_step / max_steps) and the reward falls with the
    distance from it. Logs the target it used for each completion."""
    progress = trainer_state.global_step / trainer_state.max_steps if trainer_state.max_steps else 0.0
    target = 20 + 60 * min(1.0, progress)
    rewards = [round(1.0 - min(1.0, abs(len(text) - target) / target), 6) for text in completions]
    log_extra = kwargs.get("log_extra")
    if log_extra is not None:
        log_extra("target_length", [target] * len(completions))
        log_extra("epoch_seen", [trainer_state.epoch] * len(completions))
    return rewards


def think_format(completions, log_metric, **kwargs):
    """0.5 for a completion that opens with a <think> block; `log_metric` is a required
    parameter. Logs the share that did, and 1.0 under the same name (TRL averages a
    name's values)."""
    ok = [_THINK.match(text) is not None for text in completions]
    log_metric("format/think", sum(ok) / len(ok))
    log_metric("format/think", 1.0)
    return [0.5 if good else 0.0 for good in ok]


async def answer_overlap(prompts, completions, ground_truth, log_extra, **kwargs):
    """An async reward function (TRL awaits it with the same arguments): the share of the
    answer's characters present in the completion, and the prompt's length logged."""
    await asyncio.sleep(0)
    out = []
    for text, gt in zip(completions, ground_truth):
        out.append(sum(1 for ch in gt if ch in text) / len(gt))
    log_extra("prompt_chars", [len(p) for p in prompts])
    return out
