"""A format reward first written for TRL (plural `prompts`, `completions`), reused in
AReaL with trainer = "areal": AReaL hands it one sample, so `prompts` is one templated
prompt string, `completions` one completion string, and `*ids` takes the prompt and
completion token ids AReaL passes by position. The row's `messages` come as a keyword."""

import re

_THINK_ANSWER = re.compile(r"^\s*<think>.+?</think>\s*<answer>.+?</answer>\s*(<\|im_end\|>)?\s*$", re.S)
_BOXED = re.compile(r"\\boxed\{.+\}")


def think_format_reward(prompts, completions, *ids, **kwargs):
    messages = kwargs.get("messages") or []
    asked = messages[-1]["content"] if messages else prompts
    if "<answer>" in asked:
        ok = bool(_THINK_ANSWER.match(completions))
    else:
        ok = bool(_BOXED.search(completions)) and "<think>" in completions
    # the templated prompt must have ended with the assistant header (AReaL decodes it)
    if not prompts.endswith("<|im_start|>assistant\n"):
        return -1.0
    return 1.0 if ok else 0.0
