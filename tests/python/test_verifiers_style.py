"""The verifiers style in rwb_worker.py: detected from a Rubric function's signature,
called with a sample mapped as a verifiers Rubric passes it, an exception scored 0.0
with the error kept on the row, and `async def` functions awaited."""

import asyncio
import unittest

from test_worker_helpers import W

CHAT = {
    "messages": [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
    ],
    "ground_truth": "4",
    "task": "arith",
    "info": {"id": 7},
}


def parsed(completion, parser):
    return 1.0


class DetectTest(unittest.TestCase):
    def test_rubric_signatures_are_verifiers(self):
        def correct(completion, answer):
            return 1.0

        async def judged(prompt, completion, answer, state, task, info, **kwargs):
            return 1.0

        self.assertEqual(
            W.choose_style(correct),
            ("verifiers", "declares answer, completion (a verifiers Rubric reward function)"),
        )
        self.assertEqual(
            W.choose_style(judged),
            (
                "verifiers",
                "declares answer, completion, info, prompt, state, task, **kwargs (a verifiers Rubric reward function)",
            ),
        )

    def test_other_styles_are_unchanged(self):
        def with_messages(messages, completion, **kwargs):
            return 1.0

        def trl(completions, **kwargs):
            return [1.0]

        def other_names(completion, reference):
            return 1.0

        self.assertEqual(W.choose_style(with_messages)[0], "reward-kit")
        self.assertEqual(W.choose_style(trl)[0], "trl")
        self.assertEqual(W.choose_style(other_names)[0], "reward-kit")


class CallTest(unittest.TestCase):
    def caller(self, fn):
        caller = W.make_caller(fn, "verifiers", {})
        return caller

    def test_a_chat_sample_as_the_rubric_passes_it(self):
        seen = {}

        def everything(prompt, completion, answer, state, task, info):
            seen.update(prompt=prompt, completion=completion, answer=answer, state=state, task=task, info=info)
            return True

        caller = self.caller(everything)
        value = caller.fn(**caller.arguments(dict(CHAT)))
        self.assertEqual(value, 1.0)
        self.assertEqual(seen["prompt"], CHAT["messages"][:2])
        self.assertEqual(seen["completion"], CHAT["messages"][2:])
        self.assertEqual((seen["answer"], seen["state"], seen["task"], seen["info"]), ("4", {}, "arith", {"id": 7}))

    def test_a_string_prompt_makes_the_completion_a_string(self):
        caller = self.caller(lambda prompt, completion: 0.0)
        sample = dict(CHAT, prompt="2+2?")
        del sample["task"]
        kwargs = caller.arguments(sample)
        self.assertEqual((kwargs["prompt"], kwargs["completion"]), ("2+2?", "4"))

    def test_an_exception_scores_zero_with_the_error_on_the_row(self):
        def broken(completion):
            raise KeyError("score")

        caller = self.caller(broken)
        result = caller.result(caller.fn(**caller.arguments(dict(CHAT))))
        self.assertEqual(
            result,
            {
                "score": 0.0,
                "is_score_valid": True,
                "reason": "Error calling reward function broken: 'score'",
                "metrics": {},
                "step_outputs": None,
                "error": "KeyError: 'score'",
            },
        )

    def test_a_declared_parser_without_verifiers_installed_shows_on_the_row(self):
        try:
            import verifiers  # noqa: F401

            self.skipTest("verifiers is installed: its Parser() is passed")
        except ImportError:
            pass
        caller = self.caller(parsed)
        kwargs = caller.arguments(dict(CHAT))
        self.assertNotIn("parser", kwargs)
        result = caller.result(caller.fn(**kwargs))
        self.assertEqual(result["score"], 0.0)
        self.assertEqual(result["error"], "TypeError: parsed() missing 1 required positional argument: 'parser'")

    def test_async_functions_are_awaited(self):
        async def judged(completion, answer):
            await asyncio.sleep(0)
            return completion[-1]["content"] == answer

        caller = self.caller(judged)
        self.assertTrue(W._is_async(caller.fn))
        value = W._awaited(caller.fn)(**caller.arguments(dict(CHAT)))
        self.assertEqual(caller.result(value)["score"], 1.0)


if __name__ == "__main__":
    unittest.main()
