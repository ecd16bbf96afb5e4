"""TRL reward functions for a dataset in TRL's "standard" format (string `prompt`, string
completion): GRPOTrainer then calls them with `prompts` and `completions` as plain strings,
every other column as a list, plus `completion_ids`, `trainer_state`, `log_extra` and
`log_metric`. Shaped like the Unsloth GRPO notebook functions, written for text."""

import re

REASONING_START, REASONING_END = "<start_working_out>", "<end_working_out>"
SOLUTION_START, SOLUTION_END = "<SOLUTION>", "</SOLUTION>"
_FORMAT = re.compile(
    rf"^[\s]{{0,}}{REASONING_START}.+?{REASONING_END}.*?{SOLUTION_START}(.+?){SOLUTION_END}[\s]{{0,}}$",
    flags=re.MULTILINE | re.DOTALL,
)
_NUMBER = re.compile(SOLUTION_START + r".*?([\d\.\,]{1,})", flags=re.MULTILINE | re.DOTALL)


def match_format_exactly(completions, **kwargs):
    return [3.0 if _FORMAT.search(text) is not None else 0.0 for text in completions]


def match_format_approximately(completions, **kwargs):
    scores = []
    for text in completions:
        score = 0.0
        for tag in (REASONING_END, SOLUTION_START, SOLUTION_END):
            score += 0.5 if text.count(tag) == 1 else -1.0
        scores.append(score)
    return scores


def check_answer(prompts, completions, answer, **kwargs):
    """3 for the exact answer, less when it is near; reads the question's last line from
    the prompt string to log it."""
    log_metric = kwargs.get("log_metric")
    scores = []
    for prompt, text, gold in zip(prompts, completions, answer):
        found = _FORMAT.search(text)
        if found is None:
            scores.append(0.0)
            continue
        guess = found.group(1).strip()
        if guess == gold:
            scores.append(3.0)
            continue
        try:
            ratio = float(guess) / float(gold)
        except (ValueError, ZeroDivisionError):
            scores.append(-1.5)
            continue
        scores.append(1.0 if 0.9 <= ratio <= 1.1 else 0.5 if 0.8 <= ratio <= 1.2 else -1.5)
    if log_metric is not None:
        log_metric("answer/exact", sum(s == 3.0 for s in scores) / len(scores))
    return scores


def check_numbers(prompts, completions, answer, **kwargs):
    """The first number in the solution, commas dropped; None (no score) when the row
    has no answer to compare with."""
    out = []
    for text, gold in zip(completions, answer):
        if not gold:
            out.append(None)
            continue
        found = _NUMBER.search(text)
        if found is None:
            out.append(-2.5)
            continue
        try:
            out.append(3.5 if float(found.group(1).replace(",", "")) == float(gold) else -1.5)
        except ValueError:
            out.append(0.0)
    return out


def unique_chars(completions, **kwargs):
    """The standard-format example of TRL's reward-function docs: the number of distinct
    characters of each completion string."""
    return [float(len(set(text))) for text in completions]
