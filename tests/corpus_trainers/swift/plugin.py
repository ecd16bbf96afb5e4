"""ms-swift reward plugins (--external_plugins plugin.py, --reward_funcs NAME), written
for this corpus in the shape of swift/rewards/orm.py: each reward is a class built once
by the trainer as Class(args=training_args), its instance called per batch with the
completions' text and every dataset column batched as keywords (`solution`,
`messages`, ...). ORM below stands in for swift.rewards.ORM."""

import math
import re


class ORM:
    def __init__(self, args=None, **kwargs):
        self.args = args

    def __call__(self, completions, **kwargs):
        raise NotImplementedError


def _final_answer(text):
    boxed = re.findall(r"\\boxed\{([^{}]*)\}", text)
    if boxed:
        return boxed[-1].strip()
    tagged = re.findall(r"<answer>(.*?)</answer>", text, re.S)
    return tagged[-1].strip() if tagged else None


def _number(text):
    try:
        return float(text.replace(",", "").replace("$", "").strip())
    except (AttributeError, ValueError):
        return None


class MathAccuracy(ORM):
    """1.0 / 0.0 against `solution`; None (no reward, NaN in ms-swift) when the
    solution itself is not a number this checker can read."""

    def __call__(self, completions, solution, **kwargs):
        rewards = []
        for completion, truth in zip(completions, solution):
            gold = _number(str(truth).split("####")[-1])
            if gold is None:
                rewards.append(None)
                continue
            pred = _number(_final_answer(completion) or "")
            rewards.append(1.0 if pred is not None and abs(pred - gold) < 1e-6 else 0.0)
        return rewards


class ThinkFormat(ORM):
    """The system prompt of the conversation says which format is asked for. The
    conversation must end with the reply being scored (ms-swift's messages do); no
    reward otherwise."""

    def __call__(self, completions, messages, **kwargs):
        rewards = []
        for completion, conversation in zip(completions, messages):
            if conversation[-1]["role"] != "assistant" or conversation[-1]["content"] != completion:
                rewards.append(None)
                continue
            system = conversation[0]["content"] if conversation and conversation[0]["role"] == "system" else ""
            if "<answer>" in system:
                ok = re.fullmatch(r"\s*<think>.*?</think>\s*<answer>.*?</answer>\s*", completion, re.S)
            else:
                ok = re.search(r"</think>.*\\boxed\{", completion, re.S)
            rewards.append(1.0 if ok else 0.0)
        return rewards


class CosineLength(ORM):
    """Cosine-scaled length reward (Yeo et al.): short right answers earn most, short
    wrong ones lose most; the values are the trainer's cosine_* arguments."""

    def __init__(self, args=None, **kwargs):
        super().__init__(args)
        self.min_wrong = args.cosine_min_len_value_wrong
        self.max_wrong = args.cosine_max_len_value_wrong
        self.min_right = args.cosine_min_len_value_correct
        self.max_right = args.cosine_max_len_value_correct
        self.max_len = args.cosine_max_len
        self.accuracy = MathAccuracy(args)

    def __call__(self, completions, solution, **kwargs):
        correct = self.accuracy(completions, solution)
        rewards = []
        for completion, right in zip(completions, correct):
            length = len(completion.split())
            progress = min(length, self.max_len) / self.max_len
            if right:
                lo, hi = self.max_right, self.min_right
            else:
                lo, hi = self.max_wrong, self.min_wrong
            rewards.append(lo + 0.5 * (hi - lo) * (1.0 + math.cos(progress * math.pi)))
        return rewards


class RepetitionPenalty(ORM):
    """Word n-gram repetition, scaled to the trainer's repetition_max_penalty."""

    def __init__(self, args=None, **kwargs):
        super().__init__(args)
        self.n = args.repetition_n_grams
        self.max_penalty = args.repetition_max_penalty

    def __call__(self, completions, **kwargs):
        rewards = []
        for completion in completions:
            words = completion.lower().split()
            if len(words) < self.n:
                rewards.append(0.0)
                continue
            grams = [tuple(words[i : i + self.n]) for i in range(len(words) - self.n + 1)]
            rewards.append((1 - len(set(grams)) / len(grams)) * self.max_penalty)
        return rewards


orms = {
    "math_accuracy": MathAccuracy,
    "think_format": ThinkFormat,
    "cosine_length": CosineLength,
    "repetition": RepetitionPenalty,
}


class WarmupLength(ORM):
    """A length bonus that fades in over the first steps: reads the trainer's
    TrainerState (`trainer_state.global_step`, `max_steps`), as curriculum rewards do."""

    def __call__(self, completions, trainer_state=None, **kwargs):
        step = trainer_state.global_step
        ramp = 1.0 if not trainer_state.max_steps else min(1.0, step / trainer_state.max_steps)
        return [min(len(c.split()), 20) / 20.0 * (1.0 - ramp) + 0.5 * ramp for c in completions]
