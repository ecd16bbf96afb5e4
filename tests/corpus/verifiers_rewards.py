"""Reward functions shaped like a verifiers environment's Rubric functions: called by
keyword with only the parameters they declare among prompt, completion, answer, state,
task and info; async or plain; an exception counts as 0.0 in the Rubric."""

import asyncio
import re

ANSWER = re.compile(r"<answer>\s*(.*?)\s*</answer>|\\boxed\{([^}]*)\}", re.S)


async def correct_answer(completion, answer):
    """1.0 when the last reply's <answer> (or \\boxed{}) is the answer. A reply with
    neither raises, as a parser would: the Rubric scores it 0.0."""
    await asyncio.sleep(0)
    found = ANSWER.search(completion[-1]["content"])
    if found is None:
        raise ValueError("no <answer> or \\boxed{} in the completion")
    given = (found.group(1) or found.group(2) or "").strip()
    given = given.replace("\\boxed{", "").rstrip("}")
    return given == str(answer)


def think_format(prompt, completion, **kwargs):
    """0.5 for a <think> block, plus 0.5 when the prompt had a system message."""
    text = completion[-1]["content"]
    score = 0.5 if "<think>" in text and "</think>" in text else 0.0
    if prompt and prompt[0]["role"] == "system":
        score += 0.5
    return score
