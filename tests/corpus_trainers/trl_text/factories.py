"""Reward callables built by factories, in the shapes TRL and open-r1 publish them. None
is a plain function defined with `completions` in its signature, which is what a
signature check looks for:

- `soft_overlong`: TRL's current `get_soft_overlong_punishment` shape, an instance of a
  class whose `__call__(self, completion_ids, **kwargs)` reads only token ids, with a
  class attribute `__name__` so it looks like a function by name;
- `soft_overlong_closure`: the same computation as TRL 0.2x/1.0 returned it, a closure
  `soft_overlong_punishment_reward(completion_ids, **kwargs)`;
- `repetition_penalty`: TRL's `get_repetition_penalty_reward` shape, token n-grams, also
  a class instance with `__name__`;
- `length_target`: a `functools.partial` of a function with a bound `target`;
- `length_target_wrapped`: the same partial passed through `functools.update_wrapper`, as
  open-r1 registers its code rewards (it then has `__name__` and `__wrapped__`);
- `keyword_bonus`: an instance of a class with `__call__(self, prompts, completions,
  **kwargs)` and no `__name__` at all.
"""

import functools


class _SoftOverlong:
    __name__ = "soft_overlong_punishment_reward"

    def __init__(self, max_completion_len, soft_punish_cache):
        self.max_completion_len = max_completion_len
        self.soft_punish_cache = soft_punish_cache

    def __call__(self, completion_ids, **kwargs):
        limit, cache = self.max_completion_len, self.soft_punish_cache
        out = []
        for ids in completion_ids:
            n = len(ids)
            if n <= limit - cache:
                out.append(0.0)
            elif n <= limit:
                out.append((limit - cache - n) / cache)
            else:
                out.append(-1.0)
        return out


def get_soft_overlong_punishment(max_completion_len, soft_punish_cache):
    return _SoftOverlong(max_completion_len, soft_punish_cache)


def get_soft_overlong_punishment_closure(max_completion_len, soft_punish_cache):
    def soft_overlong_punishment_reward(completion_ids, **kwargs):
        out = []
        for ids in completion_ids:
            n = len(ids)
            if n <= max_completion_len - soft_punish_cache:
                out.append(0.0)
            elif n <= max_completion_len:
                out.append((max_completion_len - soft_punish_cache - n) / soft_punish_cache)
            else:
                out.append(-1.0)
        return out

    return soft_overlong_punishment_reward


class _RepetitionPenalty:
    __name__ = "repetition_penalty_reward"

    def __init__(self, ngram_size, max_penalty):
        self.ngram_size = ngram_size
        self.max_penalty = max_penalty

    def __call__(self, completion_ids, **kwargs):
        out = []
        for ids in completion_ids:
            if len(ids) < self.ngram_size:
                out.append(0.0)
                continue
            grams = [tuple(ids[i : i + self.ngram_size]) for i in range(len(ids) - self.ngram_size + 1)]
            repeated = 1 - len(set(grams)) / len(grams)
            out.append(repeated * self.max_penalty if repeated else 0.0)
        return out


def get_repetition_penalty_reward(ngram_size=3, max_penalty=-1.0):
    if max_penalty > 0:
        raise ValueError(f"max_penalty {max_penalty} should not be positive")
    return _RepetitionPenalty(ngram_size, max_penalty)


def _length_to_target(completions, target, **kwargs):
    return [-abs(len(text) - target) / target for text in completions]


class KeywordBonus:
    def __init__(self, words):
        self.words = [w.lower() for w in words]

    def __call__(self, prompts, completions, **kwargs):
        out = []
        for prompt, text in zip(prompts, completions):
            asked = [w for w in self.words if w in prompt.lower()]
            out.append(sum(0.25 for w in asked if w in text.lower()))
        return out


soft_overlong = get_soft_overlong_punishment(max_completion_len=24, soft_punish_cache=8)
soft_overlong_closure = get_soft_overlong_punishment_closure(max_completion_len=24, soft_punish_cache=8)
repetition_penalty = get_repetition_penalty_reward(ngram_size=2, max_penalty=-1.0)
length_target = functools.partial(_length_to_target, target=60)
length_target_wrapped = functools.update_wrapper(functools.partial(_length_to_target, target=60), _length_to_target)
keyword_bonus = KeywordBonus(["total", "left", "each"])
