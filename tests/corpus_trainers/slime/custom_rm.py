"""slime custom rewards (--custom-rm-path custom_rm.reward_math, ...), written for this
corpus. slime awaits `fn(args, sample)` once per sample (rm_hub async_rm), or, with
--group-rm, `fn(args, samples)` once per group of --n-samples-per-prompt samples
(batched_async_rm). `sample` is slime's Sample: prompt (templated when
--apply-chat-template), response, label (--label-key), metadata, status, ..."""

import re


def _boxed(text):
    found = re.findall(r"\\boxed\{([^{}]*)\}", text)
    return found[-1].strip() if found else None


def _same(answer, label):
    if answer is None or label is None:
        return False
    a, b = answer.replace(",", "").replace(" ", ""), str(label).replace(",", "").replace(" ", "")
    try:
        return abs(float(a) - float(b)) < 1e-6
    except ValueError:
        return a.lower() == b.lower()


async def reward_math(args, sample, **kwargs):
    """1 for the right boxed answer, 0 otherwise; a truncated generation scores 0."""
    if sample.status == type(sample).Status.TRUNCATED:
        return 0
    return 1 if _same(_boxed(sample.response), sample.label) else 0


async def reward_detailed(args, sample, **kwargs):
    """A dict reward: slime trains on args.reward_key's entry. The prompt must be the
    chat-templated one (--apply-chat-template) for the format check to pass."""
    answered = _boxed(sample.response)
    correct = _same(answered, sample.label)
    templated = isinstance(sample.prompt, str) and sample.prompt.rstrip().endswith("assistant")
    formatted = "</think>" in sample.response and answered is not None
    hard = (sample.metadata or {}).get("difficulty") == "hard"
    score = (1.5 if hard else 1.0) * correct + (0.1 if formatted and templated else 0.0)
    return {"score": score, "acc": float(correct), "format": float(formatted), "templated": float(templated)}


async def reward_group_majority(args, samples, **kwargs):
    """Group reward: an answer right by the label earns 1, and a wrong one that the
    group's majority shares loses 0.5 (a confidently wrong group)."""
    answers = [_boxed(s.response) for s in samples]
    counts = {}
    for a in answers:
        if a is not None:
            counts[a] = counts.get(a, 0) + 1
    majority = max(counts, key=lambda a: (counts[a], a)) if counts else None
    rewards = []
    for sample, answer in zip(samples, answers):
        if _same(answer, sample.label):
            rewards.append(1.0)
        elif answer is not None and answer == majority and counts[answer] > len(samples) // 2:
            rewards.append(-0.5)
        else:
            rewards.append(0.0)
    return rewards
