"""A reward file shaped like Tunix's CLI one (tunix/cli/reward_fn/gsm8k.py): the CLI
imports the file and uses every public function defined in it as a reward function,
called like the demo's. Unlike the demo, the answer tag need not be closed, the
approximate check has no "starts with" term, and answers are compared without commas."""

import re

REASONING_START, REASONING_END = "<reasoning>", "</reasoning>"
SOLUTION_START, SOLUTION_END = "<answer>", "</answer>"
_FORMAT = re.compile(
    re.escape(REASONING_START) + r".+?" + re.escape(REASONING_END) + r".*?"
    + re.escape(SOLUTION_START) + r"(.+?)(?:" + re.escape(SOLUTION_END) + r"|$)",
    flags=re.MULTILINE | re.DOTALL,
)


def _clean(value):
    return str(value).strip().replace(",", "")


def match_format_approximately(prompts, completions, **kwargs):
    """-2 to 2: half a point for each of the four tags seen exactly once. Given lists of
    messages instead of text it raises nothing: `list.count(tag)` is 0, so -2.0."""
    out = []
    for text in completions:
        out.append(sum(0.5 if text.count(tag) == 1 else -0.5
                       for tag in (REASONING_START, REASONING_END, SOLUTION_START, SOLUTION_END)))
    return out


def check_answer(prompts, completions, answer, **kwargs):
    """-1 to 3: 3 for the answer (as text or as a number), less the further off it is."""
    golds = [_clean(a) for a in answer]
    out = []
    for text, gold in zip(completions, golds):
        found = _FORMAT.search(text)
        if found is None:
            out.append(0)
            continue
        guess = _clean(found.group(1))
        if guess == gold:
            out.append(3.0)
            continue
        try:
            g, t = float(guess), float(gold)
        except ValueError:
            out.append(-0.5)
            continue
        if g == t:
            out.append(3.0)
        elif t == 0:
            out.append(-1.0 if g != 0 else 0.0)
        elif 0.9 <= g / t <= 1.1:
            out.append(0.5)
        elif 0.8 <= g / t <= 1.2:
            out.append(0.25)
        else:
            out.append(-1.0)
    return out
