"""Unit tests of the described calls (styles/described.py), the 2026 frameworks'
presets and their detection (styles/presets.py, styles/frameworks.py), and the
loading of a reward file named like a standard-library module."""

import asyncio
import importlib
import math
import os
import sys
import tempfile
import textwrap
import unittest

from test_worker_helpers import W

D = importlib.import_module("rwb_py_under_test.styles.described")
F = importlib.import_module("rwb_py_under_test.styles.frameworks")
S = importlib.import_module("rwb_py_under_test.styles")
LOAD = importlib.import_module("rwb_py_under_test.load")


CHAT = {
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
    ],
    "answer": "#### 4",
    "meta": {"target": [3, 4]},
    "prompt_ids": [1, 2],
}
PAIR = {"prompt": "Q: 3*3?", "completion": "9", "label": "9", "reward_spec": {"ground_truth": "9"}}


def spec(call=None, **more):
    out = {"name": "ev", "chat_template": "raw", "trainer_args": {}, "call": call or {}}
    out.update(more)
    return out


def call(caller, sample):
    """What the worker does: the arguments, then the call through caller.fn."""
    kwargs = caller.arguments(sample)
    value = caller.fn(**kwargs)
    if asyncio.iscoroutine(value):
        value = asyncio.new_event_loop().run_until_complete(value)
    return value


class SourcesTest(unittest.TestCase):
    def test_every_source_reads_its_part_of_a_chat_and_a_pair_sample(self):
        ctx = D.Context(spec())
        conv = W.parts(CHAT)
        self.assertEqual(D.value_of("response", CHAT, conv, ctx), "4")
        self.assertEqual(D.value_of("prompt", CHAT, conv, ctx), "Be brief.\n2+2?")
        self.assertEqual(D.value_of("prompt_messages", CHAT, conv, ctx), CHAT["messages"][:2])
        self.assertEqual(D.value_of("messages", CHAT, conv, ctx), CHAT["messages"])
        self.assertEqual(D.value_of("ground_truth", CHAT, conv, ctx), "#### 4")
        self.assertEqual(D.value_of("prompt_ids", CHAT, conv, ctx), [1, 2])
        self.assertIsNone(D.value_of("completion_ids", CHAT, conv, ctx))
        self.assertEqual(D.value_of("meta.target.1", CHAT, conv, ctx), 4)
        self.assertEqual(
            D.value_of("row", CHAT, conv, ctx),
            {"answer": "#### 4", "meta": {"target": [3, 4]}, "prompt_ids": [1, 2], "messages": CHAT["messages"][:2]},
        )
        self.assertEqual(
            D.value_of({"r": "response", "gt": "ground_truth"}, CHAT, conv, ctx), {"r": "4", "gt": "#### 4"}
        )
        pair = W.parts(PAIR)
        self.assertEqual(D.value_of("prompt", PAIR, pair, ctx), "Q: 3*3?")
        self.assertEqual(D.value_of("completion", PAIR, pair, ctx), "9")
        # the ground truth of SkyRL's rows is nested; `label` comes later in the order
        self.assertEqual(D.value_of("ground_truth", PAIR, pair, ctx), "9")
        self.assertEqual(D.value_of("row", PAIR, pair, ctx)["prompt"], "Q: 3*3?")
        self.assertNotIn("completion", D.value_of("row", PAIR, pair, ctx))

    def test_a_missing_column_says_which_sources_and_columns_there_are(self):
        ctx = D.Context(spec())
        with self.assertRaises(D.CallSourceMissing) as caught:
            D.value_of("solution", CHAT, W.parts(CHAT), ctx)
        message = str(caught.exception)
        self.assertIn("'solution' is neither one of rwb's sources", message)
        self.assertIn("its columns: answer, meta, prompt_ids", message)
        with self.assertRaises(D.CallSourceMissing) as caught:
            D.value_of("meta.target.7", CHAT, W.parts(CHAT), ctx)
        self.assertIn("meta.target has no '7'", str(caught.exception))

    def test_trainer_args_are_a_namespace_that_names_a_missing_one(self):
        ctx = D.Context(spec(trainer_args={"reward_key": "acc"}))
        self.assertEqual(ctx.namespace.reward_key, "acc")
        with self.assertRaises(AttributeError) as caught:
            ctx.namespace.rm_type
        self.assertIn("set trainer_args = { rm_type = ... } in rwb.toml", str(caught.exception))


class DescribedCallTest(unittest.TestCase):
    def test_positions_keywords_and_columns(self):
        seen = []

        def fn(a, b, *, solution, **kwargs):
            seen.append((a, b, solution, sorted(kwargs)))
            return 0.5

        caller = D.SampleCaller(
            fn,
            {"bonus": 2},
            spec({"args": ["response", "row"], "keywords": {"solution": "answer"}, "columns": True}),
        )
        self.assertEqual(caller.result(call(caller, CHAT))["score"], 0.5)
        a, b, solution, keys = seen[0]
        self.assertEqual((a, solution), ("4", "#### 4"))
        self.assertEqual(b["messages"], CHAT["messages"][:2])
        self.assertEqual(keys, ["answer", "bonus", "meta", "prompt_ids"])

    def test_a_batch_gets_lists_and_shared_args_once(self):
        def fn(responses, args, **kwargs):
            self.assertEqual(args.n, 3)
            self.assertEqual(kwargs["label"], [None, "9"])
            return [len(r) for r in responses]

        caller = D.BatchCaller(
            fn, {}, spec({"args": ["response", "trainer_args"], "per": "batch", "columns": True}, trainer_args={"n": 3})
        )
        out = caller.results(call(caller, [CHAT, PAIR]), 2)
        self.assertEqual([r["score"] for r in out], [1.0, 1.0])
        with self.assertRaises(W.InvalidResult) as caught:
            caller.results([1.0], 2)
        self.assertEqual(str(caught.exception), "ev returned 1 values for a batch of 2 samples")

    def test_score_paths(self):
        def reading(path):
            return D.Reading(D.Description({"score": path, "score_text": D._path_text(path)}), D.Context(spec()))

        self.assertEqual(reading(["overall"]).read({"overall": 0.7, "format": True})["metrics"]["format"]["score"], 1.0)
        self.assertEqual(reading([0]).read((0.25, 0.5, 0.1))["score"], 0.25)
        self.assertEqual(reading(["rewards", 0]).read({"rewards": [1]})["score"], 1.0)
        self.assertEqual(reading([]).read(True)["score"], 1.0)
        self.assertIsNone(reading([]).read(None)["score"])
        self.assertIsNone(reading([0]).read([None], batch_item=True))
        self.assertIsNone(reading([0]).read([math.nan], batch_item=True))
        cases = [
            (["overall"], {"acc": 1.0}, "ev: the score is at overall, but the function returned a dict without 'overall' (keys: acc): write call = { ..., score = \"acc\" } in [evaluators.ev] of rwb.toml"),
            ([2], [0.1], "ev: the score is at [2], but the return holds 1 value(s): write call = { ..., score = \"[0]\" }"),
            ([0], 0.5, "ev: the score is at [0], but the return is float 0.5, not a list"),
            (["overall"], "x", "ev: the score is at overall, but the function returned str 'x', which has no 'overall'"),
            ([], {"acc": 1}, "ev returned a dict without 'score' (keys: acc): write call = { ..., score = \"acc\" }"),
            ([], [0.1, 0.2], "ev returned list [0.1, 0.2] where one score was expected: write call = { ..., score = \"[0]\" }"),
            (["s"], {"s": "high"}, "ev: the score at s is str 'high', not a number"),
        ]
        for path, value, start in cases:
            with self.assertRaises(W.InvalidResult, msg=repr(value)) as caught:
                reading(path).read(value)
            self.assertTrue(str(caught.exception).startswith(start), str(caught.exception))


class FrameworksTest(unittest.TestCase):
    def choose(self, fn, trainer=None):
        return S.choose_style(fn, trainer)

    def test_signatures_are_detected(self):
        def gsm8k_reward_fn(prompt, completions, prompt_ids, completion_ids, answer, **kwargs):
            return 1.0

        def dapo(reward_inputs, **kwargs):
            return []

        def seq(reward_input):
            return {}

        async def slime_rm(args, sample, **kwargs):
            return 0

        async def slime_group(args, samples):
            return []

        class Repetition:
            def __init__(self, args=None, **kwargs):
                pass

            def __call__(self, completions, **kwargs):
                return []

        self.assertEqual(self.choose(gsm8k_reward_fn)[0], "areal")
        self.assertEqual(self.choose(dapo)[0], "easyr1")
        self.assertEqual(self.choose(seq)[0], "easyr1-sequential")
        self.assertEqual(self.choose(slime_rm)[0], "slime")
        self.assertEqual(self.choose(slime_group)[0], "slime-group")
        self.assertEqual(
            self.choose(Repetition),
            ("swift", "is a class: constructed with the trainer's args and called per batch, as ms-swift does an ORM"),
        )

    def test_easyr1_follows_the_modules_reward_type(self):
        import types

        module = types.ModuleType("custom_reward_fn_test")
        exec("REWARD_TYPE = 'sequential'\ndef compute_score(reward_inputs):\n    return {'overall': 1.0}\n", module.__dict__)
        sys.modules[module.__name__] = module
        try:
            style, why = self.choose(module.compute_score)
        finally:
            del sys.modules[module.__name__]
        self.assertEqual(style, "easyr1-sequential")
        self.assertIn('sequential by its module\'s REWARD_TYPE = "sequential"', why)

    def test_the_trainer_preset_wins_over_the_signature(self):
        def compute_score(action, ground_truth):
            return 1.0

        def trl_shaped(completions, **kwargs):
            return []

        style, why = self.choose(compute_score, "skyrl")
        self.assertEqual(style, "skyrl")
        self.assertTrue(why.startswith('trainer = "skyrl" in rwb.toml'), why)
        self.assertEqual(self.choose(trl_shaped, "areal")[0], "areal")
        self.assertEqual(self.choose(trl_shaped)[0], "trl")

    def test_areal_is_called_positionally_with_the_row(self):
        got = {}

        def reward(prompt, completions, prompt_ids, completion_ids, answer, **kwargs):
            got.update(prompt=prompt, completions=completions, ids=(prompt_ids, completion_ids), answer=answer, kw=kwargs)
            return 1

        caller = S.make_caller(reward, "areal", {}, spec())
        self.assertEqual(caller.result(call(caller, CHAT))["score"], 1.0)
        self.assertEqual(got["prompt"], "Be brief.\n2+2?")
        self.assertEqual((got["completions"], got["ids"], got["answer"]), ("4", ([1, 2], None), "#### 4"))
        self.assertEqual(got["kw"]["messages"], CHAT["messages"][:2])

    def test_easyr1_reads_overall_and_says_what_to_do_without_it(self):
        def batch(reward_inputs):
            return [{"overall": 0.5, "format": 1.0} if i["ground_truth"] else {"accuracy": 0.0} for i in reward_inputs]

        caller = S.make_caller(batch, "easyr1", {}, spec())
        kwargs = caller.arguments([CHAT, PAIR])
        self.assertEqual(
            kwargs[D.POSITIONAL][0][0], {"response": "4", "response_length": None, "ground_truth": "#### 4"}
        )
        first = caller.reading.read({"overall": 0.5, "format": 1.0}, True)
        self.assertEqual((first["score"], first["metrics"]["format"]["score"]), (0.5, 1.0))
        with self.assertRaises(W.InvalidResult) as caught:
            caller.reading.read({"accuracy": 0.0}, True)
        self.assertIn("EasyR1 reads each dict's 'overall' as the score", str(caught.exception))

    def test_swift_constructs_the_class_once_with_the_trainers_args(self):
        class Orm:
            built = 0

            def __init__(self, args=None, **kwargs):
                Orm.built += 1
                self.n = args.repetition_n_grams

            def __call__(self, completions, **kwargs):
                return [float(len(c) >= self.n) for c in completions]

        caller = S.make_caller(Orm, "swift", {}, spec(trainer_args={"repetition_n_grams": 2}))
        out = caller.results(call(caller, [CHAT, PAIR]), 2)
        self.assertEqual([r["score"] for r in out], [0.0, 0.0])
        self.assertEqual(Orm.built, 1)

        class Needs:
            def __init__(self, args, tokenizer):
                pass

        with self.assertRaises(TypeError) as caught:
            S.make_caller(Needs, "swift", {}, spec())
        self.assertIn("cannot construct Needs(args=args) as ms-swift does", str(caught.exception))
        self.assertIn("trainer_args = { ... }", str(caught.exception))

    def test_slime_hands_a_sample_and_reads_a_dict_through_reward_key(self):
        async def rm(args, sample, **kwargs):
            return {"acc": float(sample.label == sample.response), "fmt": 1}

        caller = S.make_caller(rm, "slime", {}, spec(trainer_args={"reward_key": "acc"}))
        kwargs = caller.arguments(dict(PAIR))
        args, sample = kwargs[D.POSITIONAL]
        self.assertEqual((sample.prompt, sample.response, sample.label), ("Q: 3*3?", "9", "9"))
        self.assertEqual((sample.metadata, sample.tokens), ({}, []))
        result = caller.result(call(caller, dict(PAIR)))
        self.assertEqual((result["score"], result["metrics"]["fmt"]["score"]), (1.0, 1.0))
        templated = S.make_caller(rm, "slime", {}, spec(chat_template="chatml", trainer_args={"apply_chat_template": True}))
        _, sample = templated.arguments(dict(PAIR))[D.POSITIONAL]
        self.assertEqual(sample.prompt, "<|im_start|>user\nQ: 3*3?<|im_end|>\n<|im_start|>assistant\n")
        bare = S.make_caller(rm, "slime", {}, spec())
        with self.assertRaises(W.InvalidResult) as caught:
            bare.result({"acc": 1.0})
        self.assertIn('set trainer_args = { reward_key = "KEY" } in rwb.toml', str(caught.exception))


class StandardLibraryNamesTest(unittest.TestCase):
    def test_a_file_named_math_runs_as_itself_and_hides_nothing(self):
        folder = tempfile.mkdtemp()
        path = os.path.join(folder, "math.py")
        with open(path, "w") as f:
            f.write(
                textwrap.dedent(
                    """
                    import math as standard
                    import fractions  # imports math itself

                    def compute_score(reward_inputs):
                        return [{"overall": standard.log(1.0) + float(fractions.Fraction(4, 2))} for _ in reward_inputs]
                    """
                )
            )
        sys.path.insert(0, folder)
        try:
            fn = LOAD.evaluator_function({"function": "compute_score"}, "math", path)
        finally:
            sys.path.remove(folder)
        self.assertIs(sys.modules["math"], math)
        self.assertEqual(fn.__module__, "_rwb_evaluator_math")
        self.assertEqual(fn([{}]), [{"overall": 2.0}])


if __name__ == "__main__":
    unittest.main()
