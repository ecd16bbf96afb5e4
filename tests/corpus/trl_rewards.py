"""TRL reward functions shaped like the ones open-r1 and TRL publish: they take
`completions` (conversational: a list of messages per completion) and `**kwargs`, and
dataset columns by name; no `prompts` parameter."""

import re

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_FORMAT = re.compile(r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$", re.DOTALL)


def _text(completion):
    return completion[0]["content"]


def _last_boxed(text):
    found = _BOXED.findall(text)
    return found[-1].strip() if found else None


def accuracy_reward(completions, solution, **kwargs):
    """1.0 when the last \\boxed{} answer equals the solution; None when the gold
    solution is empty (the trainer then ignores the sample for this reward)."""
    out = []
    for completion, gold in zip(completions, solution):
        if not gold:
            out.append(None)
            continue
        out.append(1.0 if _last_boxed(_text(completion)) == gold.strip() else 0.0)
    return out


def format_reward(completions, **kwargs):
    return [1.0 if _FORMAT.match(_text(c)) else 0.0 for c in completions]


def len_reward(completions, solution, **kwargs):
    """Batch-relative: shorter correct answers earn more, measured against the
    shortest and longest completion of the same batch."""
    texts = [_text(c) for c in completions]
    lengths = [len(t) for t in texts]
    shortest, longest = min(lengths), max(lengths)
    if shortest == longest:
        return [0.0] * len(texts)
    rewards = []
    for text, n, gold in zip(texts, lengths, solution):
        weight = 0.5 - (n - shortest) / (longest - shortest)
        correct = bool(gold) and _last_boxed(text) == gold.strip()
        rewards.append(weight if correct else min(0.0, weight))
    return rewards


class LengthPenalty:
    """A callable reward object, as TRL accepts them in `reward_funcs`."""

    def __init__(self, target):
        self.target = target

    def __call__(self, completions, **kwargs):
        return [-abs(len(_text(c)) - self.target) / self.target for c in completions]


length_penalty = LengthPenalty(target=120)
