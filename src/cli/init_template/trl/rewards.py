"""Reward functions as TRL's GRPOTrainer calls them: by keyword, once per batch of
completions, with every other column of the dataset as a list
(`f(prompts=[...], completions=[...], completion_ids=[...], solution=[...], ...)`),
returning one float per completion (None: no score for that one).

Train with them unchanged:
    GRPOTrainer(model=..., reward_funcs=[accuracy_reward, format_reward], ...)

Edit and save: the workbench (`rwb`) reruns them on every rollout at once, and shows
each rollout's advantage in its group as GRPO computes it.
"""

import re

ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
FORMAT = re.compile(r"^<think>.*?</think>\s*<answer>.*?</answer>$", re.DOTALL)


def _text(completion):
    # standard format: a string; conversational: a list of messages
    return completion if isinstance(completion, str) else completion[-1]["content"]


def accuracy_reward(completions, solution, **kwargs):
    """1.0 when the text inside <answer>...</answer> is the `solution` column."""
    rewards = []
    for completion, answer in zip(completions, solution):
        found = ANSWER.search(_text(completion))
        rewards.append(1.0 if found and found.group(1).strip() == str(answer).strip() else 0.0)
    return rewards


def format_reward(completions, **kwargs):
    """1.0 when the completion is <think>...</think> then <answer>...</answer>."""
    return [1.0 if FORMAT.match(_text(c).strip()) else 0.0 for c in completions]
