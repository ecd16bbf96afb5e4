"""Reward functions written in the shape of NVIDIA-NeMo/RL's VLM environment
(nemo_rl/environments/rewards.py and vlm_environment.py at
7ea279abfbeb698b092856d0dab61e7cf39bc909): each `(ground_truth, response) ->
(reward, is_correct)`, combined with normalised weights by
`combine_reward_functions` into the `verify_func` VLMVerifyWorker calls as
`ret_score, _ = self.verify_func(ground_truth, response)` inside a try whose except
scores 0.0. The code is ours.
"""

import re


def format_reward(ground_truth, response, think_tag="think", answer_tag="answer"):
    reward = 0.0
    if re.search(r"<%s>[\s\S]*</%s>" % (think_tag, think_tag), response):
        reward += 0.25
    if re.search(r"<%s>[\s\S]*</%s>" % (answer_tag, answer_tag), response):
        reward += 0.75
    return reward, None


def exact_answer_alphanumeric_reward(ground_truth, response, answer_tag="answer"):
    match = re.search(r"<%s>([\s\S]*)</%s>" % (answer_tag, answer_tag), response)
    if match:
        answer = "".join(c for c in match.group(1) if c.isalnum()).lower()
        truth = "".join(c for c in ground_truth if c.isalnum()).lower()
        if answer == truth:
            return 1.0, True
    return 0.0, False


def numeric_closeness_reward(ground_truth, response, answer_tag="answer"):
    """How close the tagged answer is to the ground truth as numbers (1 at equal,
    falling with the relative error). It parses without a guard: a tagged answer that
    is no number raises, and the environment's except scores the sample 0."""
    match = re.search(r"<%s>([\s\S]*)</%s>" % (answer_tag, answer_tag), response)
    if not match:
        return 0.0, False
    answer = float(match.group(1).replace(",", "").strip())
    truth = float(ground_truth)
    error = abs(answer - truth) / max(abs(truth), 1.0)
    return max(0.0, 1.0 - error), error < 1e-9


def combine_reward_functions(reward_functions):
    total = sum(weight for _, weight in reward_functions)
    weights = [weight / total for _, weight in reward_functions]

    def combined_reward_func(ground_truth, response):
        scored = [fn(ground_truth, response) for fn, _ in reward_functions]
        correct = all(c for _, c in scored if c is not None)
        return sum(r * w for (r, _), w in zip(scored, weights)), correct

    return combined_reward_func


# as VLMVerifyWorker.__init__ builds it from the environment's reward_functions config
verify_func = combine_reward_functions(
    [(format_reward, 1.0), (exact_answer_alphanumeric_reward, 2.0), (numeric_closeness_reward, 1.0)]
)
