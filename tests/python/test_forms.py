"""Samples in every form, called as every trainer calls them (SPEC §3): chat samples
and prompt/completion samples (strings or message lists) through each style, and the
Tunix and OpenRLHF styles, with the numbers their trainers' code would give."""

import json
import unittest

from test_worker_helpers import W

import importlib
InvalidResult = importlib.import_module("rwb_py_under_test.results").InvalidResult
S = importlib.import_module("rwb_py_under_test.styles.samples")

CHAT = {
    "messages": [
        {"role": "system", "content": "Think first."},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<answer>4</answer>"},
    ],
    "answer": "4",
}
TEXT = {"prompt": "Q: 2+2? A:", "completion": " <answer>4</answer>", "answer": "4", "label": "4"}
CONVERSATIONAL = {
    "prompt": [{"role": "user", "content": "2+2?"}],
    "completion": [{"role": "assistant", "content": "<answer>4</answer>"}],
    "answer": "4",
}


def trl(prompts, completions, **kwargs):
    return [1.0 for _ in completions]


def tunix_style(prompts, completions, **kwargs):
    return [1.0 for _ in completions]


class FormsTest(unittest.TestCase):
    def test_trl_gets_strings_for_text_samples_and_message_lists_for_the_others(self):
        caller = W.make_caller(trl, "trl", {})
        kwargs = caller.arguments([TEXT, CONVERSATIONAL, CHAT])
        self.assertEqual(kwargs["prompts"][0], "Q: 2+2? A:")
        self.assertEqual(kwargs["completions"][0], " <answer>4</answer>")
        self.assertEqual(kwargs["prompts"][1], CONVERSATIONAL["prompt"])
        self.assertEqual(kwargs["completions"][1], CONVERSATIONAL["completion"])
        self.assertEqual(kwargs["prompts"][2], CHAT["messages"][:2])
        self.assertEqual(kwargs["completions"][2], CHAT["messages"][2:])
        # the conversation is not a column; `label` exists only on the text sample
        self.assertNotIn("messages", kwargs)
        self.assertEqual(kwargs["answer"], ["4", "4", "4"])
        self.assertEqual(kwargs["label"], ["4", None, None])

    def test_a_chat_sample_keeps_its_prompt_key_as_a_column(self):
        caller = W.make_caller(trl, "trl", {})
        sample = dict(CHAT, prompt="as logged", completion="also logged")
        kwargs = caller.arguments([sample])
        self.assertEqual(kwargs["prompts"], [CHAT["messages"][:2]])
        self.assertEqual(kwargs["prompt"], ["as logged"])
        self.assertEqual(kwargs["completion"], ["also logged"])

    def test_reward_kit_simple_and_verl_read_text_samples(self):
        def evaluate(messages, ground_truth=None, **kwargs):
            return {"score": 1.0}

        kwargs = W.make_caller(evaluate, "reward-kit", {}).arguments(TEXT)
        self.assertEqual(
            kwargs["messages"],
            [{"role": "user", "content": "Q: 2+2? A:"}, {"role": "assistant", "content": " <answer>4</answer>"}],
        )
        self.assertNotIn("prompt", kwargs)
        self.assertEqual(kwargs["label"], "4")

        def simple(response, prompt="", **kwargs):
            return 1.0

        kwargs = W.make_caller(simple, "simple", {}).arguments(CONVERSATIONAL)
        self.assertEqual((kwargs["response"], kwargs["prompt"]), ("<answer>4</answer>", "2+2?"))

        def compute_score(solution_str, ground_truth):
            return 1.0

        verl = W.make_caller(compute_score, "verl", {}, {"solution_str": "prompt+response"})
        self.assertEqual(verl.arguments(TEXT), {"solution_str": "Q: 2+2? A: <answer>4</answer>", "ground_truth": None})
        raw = W.make_caller(compute_score, "verl", {}, {"solution_str": "prompt+response", "chat_template": "raw"})
        self.assertEqual(raw.arguments(CHAT)["solution_str"], "Think first.\n2+2?<answer>4</answer>")

    def test_deepscaler_names_the_solution_llm_solution(self):
        def compute_score(data_source, llm_solution, ground_truth=None):
            return 1.0

        self.assertEqual(W.detect_style(compute_score), "verl")
        kwargs = W.make_caller(compute_score, "verl", {}).arguments(TEXT)
        self.assertEqual(kwargs["llm_solution"], " <answer>4</answer>")
        self.assertNotIn("solution_str", kwargs)

    def test_a_rendered_prompt_travels_inside_the_sample_line(self):
        raw = S.with_templated_prompt(b'{"messages": [], "a": 1}\n', json.dumps("<bos>hi\n").encode() + b"\n")
        sample = json.loads(raw)
        self.assertEqual(sample[S.TEMPLATED], "<bos>hi\n")
        self.assertEqual(S.templated_prompt(sample), "<bos>hi\n")
        self.assertEqual(json.loads(S.with_templated_prompt(b"{}", b"null")), {S.TEMPLATED: None})


class TunixTest(unittest.TestCase):
    def test_a_trl_shaped_function_is_tunix_when_the_trainer_is(self):
        self.assertEqual(W.detect_style(tunix_style), "trl")
        style, why = W.choose_style(tunix_style, "tunix")
        self.assertEqual(style, "tunix")
        self.assertIn('trainer = "tunix"', why)

    def test_tunix_passes_templated_text_completion_text_and_its_extras(self):
        caller = W.make_caller(tunix_style, "tunix", {})
        batch = [dict(CHAT), dict(CHAT), dict(TEXT)]
        kwargs = caller.arguments(batch)
        chatml = "<|im_start|>system\nThink first.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"
        self.assertEqual(kwargs["prompts"], [chatml, chatml, "Q: 2+2? A:"])
        self.assertEqual(kwargs["completions"], ["<answer>4</answer>", "<answer>4</answer>", " <answer>4</answer>"])
        self.assertEqual(kwargs["mode"], "train")
        self.assertEqual(kwargs["trajectory_ids"], ["0_0", "0_1", "1_0"])
        self.assertEqual(list(kwargs["answer"]), ["4", "4", "4"])

    def test_tunix_results_none_is_no_score_and_a_short_list_is_invalid(self):
        caller = W.make_caller(tunix_style, "tunix", {})
        rows = caller.results([1.5, None, float("nan")], 3)
        self.assertEqual(rows[0]["score"], 1.5)
        self.assertEqual(rows[1:], [None, None])
        with self.assertRaises(InvalidResult):
            caller.results([1.0], 3)
        with self.assertRaises(InvalidResult):
            caller.results(None, 3)


class OpenRlhfTest(unittest.TestCase):
    def test_reward_func_is_detected_from_queries_and_called_per_sample_positionally(self):
        seen = []

        def reward_func(queries, prompts, labels):
            seen.append((queries, prompts, labels))
            return {"rewards": [1.0], "scores": [0.5], "extra_logs": {"acc": [1.0]}}

        self.assertEqual(W.detect_style(reward_func), "openrlhf")
        caller = W.make_caller(reward_func, "openrlhf", {})
        value = caller.fn(**caller.arguments(TEXT))
        self.assertEqual(seen, [(["Q: 2+2? A: <answer>4</answer>"], ["Q: 2+2? A:"], ["4"])])
        row = caller.result(value)
        self.assertEqual(row["score"], 1.0)
        self.assertEqual(row["metrics"]["scores"]["score"], 0.5)
        self.assertEqual(row["metrics"]["acc"]["score"], 1.0)

    def test_a_return_without_rewards_or_with_too_many_is_an_invalid_result(self):
        def reward_func(queries, prompts, labels):
            return {}

        caller = W.make_caller(reward_func, "openrlhf", {})
        with self.assertRaisesRegex(InvalidResult, 'no "rewards" \\(keys: scores\\)'):
            caller.result({"scores": [1.0]})
        with self.assertRaisesRegex(InvalidResult, "rewards holds 2 values for one sample"):
            caller.result({"rewards": [1.0, 0.0]})
        with self.assertRaisesRegex(InvalidResult, "returns a dict"):
            caller.result(1.0)


class TrlCallablesTest(unittest.TestCase):
    def test_callables_over_token_ids_are_trl(self):
        class SoftOverlong:
            __name__ = "soft_overlong_punishment_reward"

            def __call__(self, completion_ids, **kwargs):
                return [0.0 for _ in completion_ids]

        style, why = W.choose_style(SoftOverlong())
        self.assertEqual(style, "trl")
        self.assertIn("completion_ids", why)
        kwargs = W.make_caller(SoftOverlong(), "trl", {}).arguments([dict(TEXT, completion_ids=[5, 6, 7])])
        self.assertEqual(kwargs["completion_ids"], [[5, 6, 7]])


if __name__ == "__main__":
    unittest.main()
