"""Unit tests of how rwb_worker.py chooses a calling style and builds each style's
arguments: TRL signatures without `prompts`, TRL's callable reward objects, veRL's
prompt+response `solution_str`, and TRL columns."""

import unittest

from test_worker_helpers import W, bundled_reward_kit


class AccuracyReward:
    """Like TRL's callable reward classes: inspected through __call__."""

    def __call__(self, completions, **kwargs):
        return [1.0 for _ in completions]


class ChooseStyleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.reward_function = staticmethod(bundled_reward_kit(cls).reward_function)

    def test_trl_functions_without_prompts(self):
        def accuracy_reward(completions, solution, **kwargs):
            return [1.0]

        def think_format_reward(completions, **kwargs):
            return [1.0]

        self.assertEqual(
            W.choose_style(accuracy_reward),
            ("trl", "declares completions and **kwargs, no messages (TRL's reward function signature)"),
        )
        self.assertEqual(W.detect_style(think_format_reward), "trl")

    def test_trl_with_prompts(self):
        def reward(prompts, completions, **kwargs):
            return [1.0]

        def with_messages(prompts, completions, messages):
            return [1.0]

        self.assertEqual(
            W.choose_style(reward),
            ("trl", "declares prompts, completions and **kwargs, no messages (TRL's reward function signature)"),
        )
        self.assertEqual(
            W.choose_style(with_messages),
            ("trl", "declares prompts and completions (TRL's reward function signature)"),
        )

    def test_completions_beside_messages_is_reward_kit(self):
        def evaluate(messages, completions=None, **kwargs):
            return {"score": 1.0}

        self.assertEqual(W.choose_style(evaluate), ("reward-kit", "declares messages"))

    def test_callable_object_is_read_through_its_call(self):
        self.assertEqual(
            W.choose_style(AccuracyReward()),
            (
                "trl",
                "is a callable AccuracyReward object whose __call__ declares completions and **kwargs, "
                "no messages (TRL's reward function signature)",
            ),
        )

    def test_reasons_of_the_other_styles(self):
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            return 1.0

        def simple(response, **kwargs):
            return 1.0

        def evaluate(messages, **kwargs):
            return {"score": 1.0}

        def nothing_known(text, **kwargs):
            return 1.0

        self.assertEqual(W.choose_style(compute_score), ("verl", "declares solution_str (veRL's compute_score signature)"))
        self.assertEqual(W.choose_style(simple), ("simple", "declares response, no messages"))
        self.assertEqual(W.choose_style(self.reward_function(evaluate)), ("reward-kit", "decorated with @reward_function"))
        self.assertEqual(
            W.choose_style(self.reward_function(mode="batch")(evaluate)),
            ("batch", 'decorated with @reward_function(mode="batch")'),
        )
        self.assertEqual(
            W.choose_style(nothing_known),
            ("reward-kit", "declares text: none of messages, completions, solution_str, response; called reward-kit style"),
        )


CONVERSATION = [
    {"role": "system", "content": "Think first."},
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "<answer>4</answer>"},
]


class VerlSolutionStrTest(unittest.TestCase):
    def compute_score(self, data_source, solution_str, ground_truth, extra_info=None):
        return 1.0

    def test_response_only_by_default(self):
        caller = W.make_caller(self.compute_score, "verl", {})
        kwargs = caller.arguments({"messages": CONVERSATION, "ground_truth": "4"})
        self.assertEqual(kwargs["solution_str"], "<answer>4</answer>")

    def test_prompt_messages_in_chatml_then_the_response(self):
        caller = W.make_caller(self.compute_score, "verl", {}, {"solution_str": "prompt+response"})
        kwargs = caller.arguments({"messages": CONVERSATION, "ground_truth": "4"})
        self.assertEqual(
            kwargs["solution_str"],
            "<|im_start|>system\nThink first.<|im_end|>\n"
            "<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n<answer>4</answer>",
        )

    def test_a_string_prompt_is_used_as_it_is(self):
        caller = W.make_caller(self.compute_score, "verl", {}, {"solution_str": "prompt+response"})
        sample = {"messages": CONVERSATION, "prompt": "User: 2+2? Assistant:", "ground_truth": "4"}
        self.assertEqual(caller.arguments(sample)["solution_str"], "User: 2+2? Assistant:<answer>4</answer>")


class TrlArgumentsTest(unittest.TestCase):
    def reward(self, completions, **kwargs):
        return [1.0 for _ in completions]

    def test_keyword_arguments_and_columns(self):
        caller = W.make_caller(self.reward, "trl", {})
        samples = [
            {"messages": CONVERSATION, "solution": "4"},
            {"messages": CONVERSATION[1:], "solution": "5", "extra": 1},
        ]
        kwargs = caller.arguments(samples)
        self.assertEqual(kwargs["prompts"], [CONVERSATION[:2], CONVERSATION[1:2]])
        self.assertEqual(kwargs["completions"], [CONVERSATION[2:], CONVERSATION[2:]])
        self.assertEqual(kwargs["solution"], ["4", "5"])
        self.assertEqual(kwargs["extra"], [None, 1])
        self.assertNotIn("completion_ids", kwargs, "rwb has no tokenizer: nothing is invented")

    def test_completion_ids_pass_when_the_samples_have_them(self):
        caller = W.make_caller(self.reward, "trl", {})
        kwargs = caller.arguments([{"messages": CONVERSATION, "completion_ids": [1, 2]}])
        self.assertEqual(kwargs["completion_ids"], [[1, 2]])


if __name__ == "__main__":
    unittest.main()
