"""Unit tests of the described calls (styles/described.py), the 2026 frameworks'
presets and their detection (styles/presets.py, styles/frameworks.py), and the
loading of a reward file named like a standard-library module."""

import asyncio
import copy
import dataclasses
import importlib
import json
import math
import os
import sys
import tempfile
import textwrap
import types
import unittest

from test_worker_helpers import W, send_batch, start_worker

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


@dataclasses.dataclass
class Verification:
    """open-instruct's VerificationResult shape."""

    score: float
    cost: float = 0.0


class LongTailTest(unittest.TestCase):
    """The long tail's calls (SPEC §3, issue 46): build, method, templates, attribute
    paths, on_error."""

    def test_a_template_formats_its_sources_and_escapes_braces(self):
        ctx = D.Context(spec())
        conv = W.parts(CHAT)
        boxed = D.compiled("\\boxed{{{ground_truth}}}")
        self.assertIsInstance(boxed, D.Template)
        self.assertEqual(D.value_of(boxed, CHAT, conv, ctx), "\\boxed{#### 4}")
        self.assertEqual(D.value_of(D.compiled("{response}/{meta.target.1}"), CHAT, conv, ctx), "4/4")
        # a list of sources is a list, a template inside it too (NeMo-RL's [gold], [response])
        self.assertEqual(
            D.value_of(D.compiled([["\\boxed{{{ground_truth}}}"], ["response"]]), CHAT, conv, ctx),
            [["\\boxed{#### 4}"], ["4"]],
        )
        self.assertEqual(D.value_of(D.compiled("{{literal}}"), CHAT, conv, ctx), "{literal}")
        with self.assertRaises(D.CallSourceMissing) as caught:
            D.value_of(D.compiled("\\boxed{{{solution}}}"), CHAT, conv, ctx)
        message = str(caught.exception)
        self.assertTrue(
            message.startswith(
                'ev: the template "\\boxed{{{solution}}}" in call of [evaluators.ev] in rwb.toml: call source \'solution\''
            ),
            message,
        )
        self.assertIn("is neither one of rwb's sources (", message)
        self.assertIn("its columns: answer, meta, prompt_ids", message)
        for text, why in [
            ("{ground_truth", "has a { that is not closed"),
            ("a}b", "has a } that closes nothing"),
            ("{}", "names {}, which is no source name"),
            ("{x:>3}", "names {x:>3}, which is no source name"),
        ]:
            with self.assertRaises(ValueError, msg=text) as caught:
                D.Template(text)
            self.assertIn(why, str(caught.exception))
            self.assertIn("{{ or }} for a brace", str(caught.exception))

    def test_trainer_args_keys_are_sources_read_by_key_and_attribute(self):
        ctx = D.Context(spec(trainer_args={"verifier_config": {"max_length": 8, "judge": {"model": "m"}}, "n": 2}))
        conv = W.parts(CHAT)
        config = D.value_of("trainer_args.verifier_config", CHAT, conv, ctx)
        self.assertEqual((config.max_length, config["max_length"], config.judge.model), (8, 8, "m"))
        self.assertIs(D.value_of("trainer_args.verifier_config", PAIR, W.parts(PAIR), ctx), config)
        self.assertEqual(D.value_of("trainer_args.n", CHAT, conv, ctx), 2)
        self.assertFalse(hasattr(config, "threshold"))
        with self.assertRaises(AttributeError) as caught:
            config.judge.temperature
        self.assertEqual(
            str(caught.exception),
            "trainer_args has no verifier_config.judge.temperature: write trainer_args = { verifier_config = "
            "{ judge = { temperature = ... } } } in rwb.toml (at the top, or in [evaluators.ev])",
        )
        with self.assertRaises(KeyError):
            config["threshold"]
        copied = copy.deepcopy(config)
        copied.max_length = 9
        self.assertEqual((copied["max_length"], config.max_length), (9, 8))
        with self.assertRaises(D.CallSourceMissing) as caught:
            D.value_of("trainer_args.verifier_config.api_url", CHAT, conv, ctx)
        self.assertIn("trainer_args has no verifier_config.api_url: write trainer_args = {", str(caught.exception))
        # in a batch, one value for all its samples
        self.assertEqual(D.batch_value("trainer_args.n", [CHAT, PAIR], [conv, W.parts(PAIR)], ctx), 2)
        self.assertEqual(
            D.batch_value(D.compiled("n={trainer_args.n}"), [CHAT, PAIR], [conv, W.parts(PAIR)], ctx), "n=2"
        )

    def open_instruct_verifier(self):
        class GSM8K:
            built = []

            def __init__(self, verifier_config=None):
                GSM8K.built.append(verifier_config)
                self.verifier_config = verifier_config

            def __call__(self, tokenized_prediction, prediction, label, query=None, rollout_state=None):
                return Verification(score=float(prediction.strip() == str(label).strip("# ")))

            async def async_call(self, tokenized_prediction, prediction, label, query=None, rollout_state=None):
                await asyncio.sleep(0)
                return self(tokenized_prediction, prediction, label, query)

        return GSM8K

    OPEN_INSTRUCT = {
        "build": {"args": ["trainer_args.verifier_config"]},
        "method": "async_call",
        "keywords": {"tokenized_prediction": "completion_ids", "prediction": "response", "label": "ground_truth"},
        "score": ["score"],
        "score_text": ".score",
    }

    def test_a_class_is_built_once_and_its_async_method_awaited(self):
        GSM8K = self.open_instruct_verifier()
        caller = D.SampleCaller(GSM8K, {}, spec(self.OPEN_INSTRUCT, trainer_args={"verifier_config": {"k": 1}}))
        self.assertEqual(len(GSM8K.built), 1)
        self.assertEqual(GSM8K.built[0].k, 1)
        self.assertTrue(asyncio.iscoroutinefunction(caller.fn))
        self.assertEqual(caller.result(call(caller, CHAT))["score"], 1.0)
        self.assertEqual(caller.result(call(caller, dict(CHAT, answer="5")))["score"], 0.0)
        self.assertEqual(len(GSM8K.built), 1, "built once per worker, not per sample")
        self.assertEqual(
            caller.d.text(),
            "built = GSM8K(trainer_args.verifier_config), once per worker; built.async_call("
            "tokenized_prediction=completion_ids, prediction=response, label=ground_truth), awaited; "
            "one sample a call; the score at .score",
        )
        # __call__ when no method is named; an empty build takes no arguments
        plain = D.SampleCaller(GSM8K, {}, spec(dict(self.OPEN_INSTRUCT, method=None, build={})))
        self.assertFalse(asyncio.iscoroutinefunction(plain.fn))
        self.assertIsNone(GSM8K.built[-1])
        self.assertEqual(plain.result(call(plain, CHAT))["score"], 1.0)
        # the worker's own loop awaits it too (the worker's path)
        worker = S.make_caller(GSM8K, "call", {}, spec(self.OPEN_INSTRUCT, trainer_args={"verifier_config": {}}))
        self.assertEqual(worker.result(W._awaited(worker.fn)(**worker.arguments(CHAT)))["score"], 1.0)

    def test_what_cannot_be_built_or_called_names_the_evaluator_and_the_line(self):
        GSM8K = self.open_instruct_verifier()
        with self.assertRaises(D.CallBuildError) as caught:
            D.SampleCaller(GSM8K, {}, spec(self.OPEN_INSTRUCT))
        self.assertEqual(
            str(caught.exception),
            "ev: cannot build GSM8K(trainer_args.verifier_config): call source 'trainer_args.verifier_config': "
            "trainer_args has no verifier_config: write trainer_args = { verifier_config = ... } in rwb.toml "
            "(at the top, or in [evaluators.ev])",
        )

        class Code:
            def __init__(self, verifier_config):
                self.threshold = verifier_config.code_pass_rate_reward_threshold

            async def async_call(self, **kwargs):
                return Verification(1.0)

            def verify_batch(self):
                pass

        with self.assertRaises(D.CallBuildError) as caught:
            D.SampleCaller(Code, {}, spec(self.OPEN_INSTRUCT, trainer_args={"verifier_config": {}}))
        self.assertEqual(
            str(caught.exception),
            "ev: cannot build Code(trainer_args.verifier_config) as call.build in [evaluators.ev] of rwb.toml says: "
            "AttributeError: trainer_args has no verifier_config.code_pass_rate_reward_threshold: write "
            "trainer_args = { verifier_config = { code_pass_rate_reward_threshold = ... } } in rwb.toml "
            "(at the top, or in [evaluators.ev])",
        )
        built = {"verifier_config": {"code_pass_rate_reward_threshold": 0.5}}
        with self.assertRaises(D.CallBuildError) as caught:
            D.SampleCaller(Code, {}, spec(dict(self.OPEN_INSTRUCT, method="verify"), trainer_args=built))
        self.assertEqual(
            str(caught.exception),
            "ev: the built Code has no method 'verify' (call.method in [evaluators.ev] of rwb.toml); "
            "its methods: async_call, verify_batch",
        )
        with self.assertRaises(D.CallBuildError) as caught:
            D.SampleCaller(Code, {}, spec(dict(self.OPEN_INSTRUCT, method=None), trainer_args=built))
        self.assertIn("the built Code cannot be called: name its entry point with call = { ..., method", str(caught.exception))
        self.assertIn("its methods: async_call, verify_batch", str(caught.exception))
        with self.assertRaises(D.CallBuildError) as caught:
            D.SampleCaller(lambda **kw: 1.0, {}, spec(self.OPEN_INSTRUCT, trainer_args=built))
        self.assertIn("ev: call.build builds a class, but <lambda> is function", str(caught.exception))
        # a per-sample source cannot build (rwb.toml is checked for it too)
        with self.assertRaises(D.CallBuildError) as caught:
            D.SampleCaller(Code, {}, spec(dict(self.OPEN_INSTRUCT, build={"args": ["response"]})))
        self.assertIn("call.build reads 'response', a value of each sample", str(caught.exception))
        # the worker reports it as the evaluator's load error, on its rows
        with self.assertRaises(D.CallBuildError):
            S.make_caller(Code, "call", {}, spec(dict(self.OPEN_INSTRUCT, method="verify"), trainer_args=built))

    def test_attribute_paths_read_objects_and_say_what_came_back(self):
        def reading(text):
            path = [int(p[1:-1]) if p.startswith("[") else p for p in text.replace("[", ".[").strip(".").split(".") if p]
            return D.Reading(D.Description({"score": path, "score_text": text}), D.Context(spec()))

        self.assertEqual(reading(".score").read(Verification(0.75))["score"], 0.75)
        self.assertEqual(reading("[0].score").read((Verification(0.5), "x"))["score"], 0.5)
        result = types.SimpleNamespace(reward=1, other=2)
        self.assertEqual(reading("result.reward").read({"result": result})["score"], 1.0)
        self.assertEqual(reading("result.reward").read(types.SimpleNamespace(result={"reward": True}))["score"], 1.0)
        with self.assertRaises(W.InvalidResult) as caught:
            reading(".score").read((0.5, None))
        self.assertIn("ev: the score is at .score, but the function returned tuple (0.5, None), which has no 'score'", str(caught.exception))
        with self.assertRaises(W.InvalidResult) as caught:
            reading("result.reward").read({"result": types.SimpleNamespace(value=1)})
        self.assertIn(
            "ev: the score is at result.reward, but result is SimpleNamespace namespace(value=1), which has no "
            "'reward' (its attributes: value): write call = { ..., score = \"result.value\" }",
            str(caught.exception),
        )

    def test_on_error_scores_an_exception_as_the_trainer_does_and_keeps_it(self):
        def verify_func(golds, predictions):
            if "{" in predictions[0] and "}" not in predictions[0]:
                raise ValueError("unbalanced braces")
            return float(golds == ["\\boxed{%s}" % predictions[0]]), None

        table = {"args": [["\\boxed{{{ground_truth}}}"], ["response"]], "score": [0], "score_text": "[0]", "on_error": 0.0}
        caller = D.SampleCaller(verify_func, {}, spec(table))
        self.assertEqual(caller.result(call(caller, dict(PAIR, ground_truth="9")))["score"], 1.0)
        raised = caller.result(call(caller, dict(PAIR, completion="\\boxed{9")))
        self.assertEqual(
            raised,
            {
                "score": 0.0,
                "is_score_valid": True,
                "reason": "the call raised ValueError; scored 0.0 as the trainer scores an exception (call.on_error)",
                "metrics": {},
                "step_outputs": None,
                "error": "ValueError: unbalanced braces",
            },
        )
        self.assertEqual(
            caller.d.text(),
            'fn(["\\boxed{{{ground_truth}}}"], [response]); one sample a call; the score at [0]; '
            "an exception scores 0.0 (on_error), the row keeping it as a warning",
        )
        # rwb's timeout is no exception of the user's: it still ends the call
        def slow(**kwargs):
            raise W.EvalTimeout()

        with self.assertRaises(W.EvalTimeout):
            call(D.SampleCaller(slow, {}, spec({"on_error": 0.0})), PAIR)
        # an async call, and a batch: every sample of the batch that raised
        async def judge(**kwargs):
            raise RuntimeError("judge down")

        out = D.SampleCaller(judge, {}, spec({"on_error": -1.0}))
        self.assertEqual(out.result(call(out, PAIR))["score"], -1.0)

        def batch(responses):
            raise KeyError("x")

        batched = D.BatchCaller(batch, {}, spec({"args": ["response"], "per": "batch", "on_error": 0.0}))
        results = batched.results(call(batched, [CHAT, PAIR]), 2)
        self.assertEqual([(r["score"], r["error"]) for r in results], [(0.0, "KeyError: 'x'")] * 2)
        # without on_error, an exception is the sample's error, as before
        with self.assertRaises(ValueError):
            plain = D.SampleCaller(verify_func, {}, spec(dict(table, on_error=None)))
            call(plain, dict(PAIR, completion="\\boxed{9"))

    def test_a_worker_scores_on_error_rows_with_their_exception(self):
        source = textwrap.dedent(
            """
            def verify(gold, response):
                if not response.isdigit():
                    raise ValueError("not a number: %r" % response)
                return float(gold == response), gold
            """
        )
        table = {"args": ["ground_truth", "response"], "score": [0], "score_text": "[0]", "on_error": 0.0}
        ours, thread = start_worker(source, {"function": "verify", "style": "call", "call": table})
        send_batch(ours, "B", [PAIR, dict(PAIR, completion="nine")])
        thread.join(10)
        with ours.makefile("rb") as answers:
            lines = [json.loads(line) for line in answers]
        ours.close()
        ready = lines[0]
        self.assertTrue(ready["ready"], ready)
        self.assertIn("an exception scores 0.0 (on_error)", ready["call"])
        got = {line["i"]: line["ok"] for line in lines if "i" in line}
        self.assertEqual(got[0]["score"], 1.0)
        self.assertIsNone(got[0]["error"])
        self.assertEqual((got[1]["score"], got[1]["error"]), (0.0, "ValueError: not a number: 'nine'"))


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
