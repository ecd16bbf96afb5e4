"""Reward functions shaped like the ones in Tunix's GRPO demo (examples/grpo_gemma.ipynb):
RLLearner calls each by keyword with `prompts` (the templated prompt strings), `completions`
(the generated text) and the dataset's columns (`answer`, `question`, ...) as numpy arrays.
Written for this corpus; the shapes (signatures, tags, score steps) follow the demo."""

import re

REASONING_START, REASONING_END = "<reasoning>", "</reasoning>"
SOLUTION_START, SOLUTION_END = "<answer>", "</answer>"

# the whole completion: reasoning, then the answer, nothing but blanks around
FORMAT = re.compile(
    r"^\s*" + REASONING_START + r".+?" + REASONING_END + r".*?" + SOLUTION_START + r"(.+?)" + SOLUTION_END + r"\s*$",
    flags=re.MULTILINE | re.DOTALL,
)
FIRST_NUMBER = re.compile(SOLUTION_START + r".*?([\d\.]+)", flags=re.MULTILINE | re.DOTALL)


def match_format_exactly(prompts, completions, **kwargs):
    return [3.0 if FORMAT.search(text) else 0 for text in completions]


def match_format_approximately(prompts, completions, **kwargs):
    """Half a point for each tag seen exactly once (and for starting with the reasoning
    tag), half a point off otherwise: -2.5 to 2.5. Given a list of messages it raises
    AttributeError (a list has `count` but no `find`)."""
    scores = []
    for text in completions:
        score = 0.0
        score += 0.5 if text.count(REASONING_START) == 1 else -0.5
        score += 0.5 if text.find(REASONING_START) == 0 else -0.5
        for tag in (REASONING_END, SOLUTION_START, SOLUTION_END):
            score += 0.5 if text.count(tag) == 1 else -0.5
        scores.append(score)
    return scores


def check_answer(prompts, completions, answer, **kwargs):
    guesses = []
    for text in completions:
        found = FORMAT.search(text) if text is not None else None
        guesses.append(found.group(1) if found else None)
    assert len(guesses) == len(answer), f"{len(guesses)} completions, {len(answer)} answers"
    scores = []
    for guess, gold in zip(guesses, answer):
        if guess is None:
            scores.append(0)
        elif guess == gold:
            scores.append(3.0)
        elif guess.strip() == gold.strip():
            scores.append(1.5)
        else:
            try:
                ratio = float(guess) / float(gold)
            except Exception:
                scores.append(-0.5)
                continue
            if 0.9 <= ratio <= 1.1:
                scores.append(0.5)
            elif 0.8 <= ratio <= 1.2:
                scores.append(0.25)
            else:
                scores.append(-1.0)
    return scores


def check_numbers(prompts, completions, answer, **kwargs):
    """The first number after the answer tag, compared as a float; prints the first
    example of the batch as the demo does (reads the `question` column)."""
    question = kwargs["question"]
    guesses = [(m.group(1) if (m := FIRST_NUMBER.search(text)) else None) for text in completions]
    print(f"question: {question[0]}\nanswer: {answer[0]}\nextracted: {guesses[0]}")
    scores = []
    for guess, gold in zip(guesses, answer):
        if guess is None:
            scores.append(0)
            continue
        try:
            scores.append(1.5 if float(guess.strip()) == float(gold.strip()) else 0.0)
        except Exception:
            scores.append(0)
    return scores
