"""TRL reward functions for conversational data (message-list `prompt` and `completion`,
or chat samples): `completions[i]` is a list of messages, `prompts[i]` the prompt's
messages. Shaped like the Unsloth Llama 3.1 GRPO notebook and open-r1's factories."""

import functools
import re


def _text(completion):
    return completion[0]["content"]


def _between(text, tag):
    part = text.split(f"<{tag}>")[-1]
    return part.split(f"</{tag}>")[0].strip()


def correctness_reward_func(prompts, completions, answer, **kwargs):
    question = prompts[0][-1]["content"]
    extracted = [_between(_text(c), "answer") for c in completions]
    print(f"question: {question}\nanswer: {answer[0]}\nextracted: {extracted[0]}")
    return [2.0 if guess == gold else 0.0 for guess, gold in zip(extracted, answer)]


def int_reward_func(completions, **kwargs):
    return [0.5 if _between(_text(c), "answer").isdigit() else 0.0 for c in completions]


def strict_format_reward_func(completions, **kwargs):
    pattern = r"^<reasoning>\n.*?\n</reasoning>\n<answer>\n.*?\n</answer>\n$"
    return [0.5 if re.match(pattern, _text(c), flags=re.DOTALL) else 0.0 for c in completions]


def xmlcount_reward_func(completions, **kwargs):
    out = []
    for c in completions:
        text = _text(c)
        score = 0.0
        if text.count("<reasoning>\n") == 1:
            score += 0.125
        if text.count("\n</reasoning>\n") == 1:
            score += 0.125
        if text.count("\n<answer>\n") == 1:
            score += 0.125
            score -= len(text.split("\n</answer>\n")[-1]) * 0.001
        if text.count("\n</answer>") == 1:
            score += 0.125
            score -= (len(text.split("\n</answer>")[-1]) - 1) * 0.001
        out.append(score)
    return out


def get_repetition_penalty_reward(ngram_size, max_penalty):
    """open-r1's shape: a closure over word n-grams of the completion text."""
    if max_penalty > 0:
        raise ValueError(f"max_penalty {max_penalty} should not be positive")

    def repetition_penalty_reward(completions, **kwargs):
        out = []
        for c in completions:
            words = _text(c).lower().split()
            if len(words) < ngram_size:
                out.append(0.0)
                continue
            grams = list(zip(*[words[i:] for i in range(ngram_size)]))
            out.append((1 - len(set(grams)) / len(grams)) * max_penalty)
        return out

    return repetition_penalty_reward


def _reasoning_steps(completions, minimum, **kwargs):
    steps = re.compile(r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)", re.MULTILINE)
    return [min(1.0, len(steps.findall(_text(c))) / minimum) for c in completions]


repetition_penalty = get_repetition_penalty_reward(ngram_size=2, max_penalty=-0.5)
reasoning_steps = functools.update_wrapper(functools.partial(_reasoning_steps, minimum=3), _reasoning_steps)
