"""Unit tests of the pure helpers in src/engine/python/rwb_worker.py.

The worker is imported by path; it needs only the standard library. The decorated
functions for detect_style come from rwb's bundled reward_kit, imported the way the
zygote imports it when the real package is absent.
"""

import functools
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "src", "engine", "python"))


def _load_worker():
    spec = importlib.util.spec_from_file_location("rwb_worker_under_test", os.path.join(ENGINE_DIR, "rwb_worker.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


W = _load_worker()
NAN = float("nan")


def bundled_reward_kit(test_class):
    """rwb's bundled reward_kit, imported as the zygote imports it when the real
    package is missing (skips the class if a real reward_kit is already imported)."""
    sys.path.insert(0, ENGINE_DIR)
    try:
        import reward_kit
        import reward_kit.models
    finally:
        sys.path.remove(ENGINE_DIR)
    if not getattr(reward_kit, "RWB_BUNDLED", False):
        raise unittest.SkipTest("%s uses the bundled reward_kit; the real one is imported" % test_class.__name__)
    return reward_kit


class FakeModel:
    """Stands in for a pydantic model: only model_dump() matters to _as_result."""

    def __init__(self, **data):
        self.data = data

    def model_dump(self):
        return {k: (v.model_dump() if isinstance(v, FakeModel) else v) for k, v in self.data.items()}


class LegacyOutput:
    """A RewardOutput-like object with to_dict()."""

    def to_dict(self):
        return {"score": 0.25, "metrics": {"m": {"score": 0.5, "reason": "legacy"}}}


class ScoreAndMetrics:
    """An object with plain score/metrics attributes and no dump method."""

    score = 0.75
    metrics = {"m": 0.5}
    reason = "attrs"


def result(score, reason=None, metrics=None, is_score_valid=True, step_outputs=None, error=None):
    """rwb's result shape, for expected values."""
    return {
        "score": score,
        "is_score_valid": is_score_valid,
        "reason": reason,
        "metrics": metrics or {},
        "step_outputs": step_outputs,
        "error": error,
    }


def metric(score, reason=None, is_score_valid=True):
    return {"is_score_valid": is_score_valid, "score": score, "reason": reason}


class AsResultTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rk = bundled_reward_kit(cls)

    def assertInvalid(self, value, message, strict=False):
        with self.assertRaises(W.InvalidResult) as ctx:
            W._as_result(value, strict)
        self.assertEqual(str(ctx.exception), message)

    def test_evaluate_result_like_object(self):
        value = FakeModel(
            score=0.5,
            is_score_valid=True,
            reason="r",
            metrics={"a": FakeModel(is_score_valid=False, score=1.0, reason="ok")},
            step_outputs=[{"step_index": 0, "base_reward": 0.1, "metrics": {}, "reason": None}],
            error=None,
        )
        expected = result(
            0.5,
            "r",
            {"a": metric(1.0, "ok", is_score_valid=False)},
            step_outputs=[{"step_index": 0, "base_reward": 0.1, "metrics": {}, "reason": None}],
        )
        self.assertEqual(W._as_result(value, True), expected)
        self.assertEqual(W._as_result(value, False), expected)

    def test_evaluate_result_object(self):
        rk = self.rk
        value = rk.EvaluateResult(
            score=0.5,
            reason="r",
            metrics={"a": rk.MetricResult(score=1, reason="ok", is_score_valid=False), "b": {"score": 0, "reason": ""}},
            step_outputs=[rk.models.StepOutput(step_index=0, base_reward=0.1)],
            error="e",
        )
        expected = result(
            0.5,
            "r",
            {"a": metric(1.0, "ok", is_score_valid=False), "b": metric(0.0, "")},
            step_outputs=[{"step_index": 0, "base_reward": 0.1, "metrics": {}, "reason": None}],
            error="e",
        )
        self.assertEqual(W._as_result(value, True), expected)
        self.assertEqual(W._as_result(value, False), expected)
        json.dumps(W._as_result(value, True), allow_nan=False)

    def test_evaluate_result_object_not_finite(self):
        rk = self.rk
        self.assertInvalid(rk.EvaluateResult(score=NAN), "score is nan, not a finite number", strict=True)
        self.assertInvalid(rk.EvaluateResult(score=float("inf")), "score is inf, not a finite number")
        bad = rk.MetricResult(score=0.5, reason="x")
        bad.score = NAN  # models are not validated on assignment
        self.assertInvalid(
            rk.EvaluateResult(score=0.5, metrics={"a": bad}),
            "metric 'a' score is nan, not a finite number",
            strict=True,
        )

    def test_step_output_objects_are_dumped(self):
        step = FakeModel(step_index="a", base_reward=1.0)
        out = W._as_result({"score": 1, "step_outputs": [step]}, False)
        self.assertEqual(out["step_outputs"], [{"step_index": "a", "base_reward": 1.0}])

    def test_legacy_objects(self):
        self.assertEqual(W._as_result(LegacyOutput(), False), result(0.25, metrics={"m": metric(0.5, "legacy")}))
        self.assertEqual(W._as_result(ScoreAndMetrics(), False), result(0.75, "attrs", {"m": metric(0.5)}))

    def test_dict(self):
        value = {
            "score": 1,
            "reason": 5,
            "error": "boom",
            "is_score_valid": None,
            "metrics": {"a": {"score": 1, "reason": "x"}, "b": 0.25, 3: True},
            "extra": "ignored",
        }
        expected = result(
            1.0, "5", {"a": metric(1.0, "x"), "b": metric(0.25), "3": metric(1.0)}, error="boom"
        )
        out = W._as_result(value, False)
        self.assertEqual(out, expected)
        self.assertIsInstance(out["score"], float)
        self.assertEqual(W._as_result({"score": True}, True)["score"], 1.0)

    def test_dict_without_score(self):
        self.assertInvalid(
            {"reason": "x", "metrics": {}}, "the evaluator returned a dict without a 'score' (keys: reason, metrics)"
        )
        self.assertInvalid({}, "the evaluator returned a dict without a 'score' (keys: none)")
        self.assertInvalid({"score": None}, "the evaluator returned a dict without a 'score' (keys: score)")

    def test_tuple(self):
        self.assertEqual(W._as_result((0.5, {"a": 0.7}), False), result(0.5, metrics={"a": metric(0.7)}))
        self.assertEqual(W._as_result((0.5, "not metrics"), False), result(0.5))
        self.assertInvalid(
            (0.5, {"a": 0.7}),
            "the evaluator returned tuple (0.5, {'a': 0.7}); expected an EvaluateResult, "
            "a dict with 'score', a (score, metrics) tuple or a number",
            strict=True,
        )
        self.assertInvalid(
            (1, 2, 3),
            "the evaluator returned tuple (1, 2, 3); expected an EvaluateResult, "
            "a dict with 'score', a (score, metrics) tuple or a number",
        )

    def test_number(self):
        self.assertEqual(W._as_result(1, False), result(1.0))
        self.assertEqual(W._as_result(0.25, False), result(0.25))
        self.assertInvalid(
            0.25,
            "the evaluator returned float 0.25; expected an EvaluateResult, "
            "a dict with 'score', a (score, metrics) tuple or a number",
            strict=True,
        )

    def test_string_and_other_values(self):
        self.assertInvalid(
            "hello",
            "the evaluator returned str 'hello'; expected an EvaluateResult, "
            "a dict with 'score', a (score, metrics) tuple or a number",
        )
        self.assertInvalid(
            None,
            "the evaluator returned NoneType None; expected an EvaluateResult, "
            "a dict with 'score', a (score, metrics) tuple or a number",
        )
        long_text = "x" * 100
        self.assertInvalid(
            long_text,
            "the evaluator returned str '%s...; expected an EvaluateResult, "
            "a dict with 'score', a (score, metrics) tuple or a number" % ("x" * 76),
        )
        self.assertInvalid({"score": "0.5"}, "score is str '0.5', not a number")

    def test_non_finite_score(self):
        self.assertInvalid(NAN, "score is nan, not a finite number")
        self.assertInvalid({"score": float("inf")}, "score is inf, not a finite number")
        self.assertInvalid(FakeModel(score=float("-inf")), "score is -inf, not a finite number", strict=True)

    def test_nested_metric_nan(self):
        self.assertInvalid({"score": 0.5, "metrics": {"a": NAN}}, "metric 'a' score is nan, not a finite number")
        self.assertInvalid(
            {"score": 0.5, "metrics": {"a": {"score": NAN, "reason": "x"}}},
            "metric 'a' score is nan, not a finite number",
        )
        self.assertInvalid(
            FakeModel(score=0.5, metrics={"b": FakeModel(score=NAN, reason="x")}),
            "metric 'b' score is nan, not a finite number",
            strict=True,
        )

    def test_bad_metrics(self):
        self.assertInvalid({"score": 0.5, "metrics": [1]}, "'metrics' is list, not a dict of metric results")
        self.assertInvalid({"score": 0.5, "metrics": {"a": {"reason": "x"}}}, "metric 'a' has no score")
        self.assertInvalid(
            {"score": 0.5, "metrics": {"a": {"score": "x"}}}, "metric 'a' score is str 'x', not a number"
        )

    def test_result_is_json_writable(self):
        out = W._as_result({"score": 0.5, "metrics": {"a": {"score": 0.1, "reason": "r"}}}, False)
        json.dumps(out, allow_nan=False)


class DetectStyleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.reward_function = staticmethod(bundled_reward_kit(cls).reward_function)

    def test_trl(self):
        def reward(prompts, completions, **kwargs):
            return [1.0]

        self.assertEqual(W.detect_style(reward), "trl")

        def both(prompts, completions, messages=None, solution_str=None):
            return [1.0]

        self.assertEqual(W.detect_style(both), "trl")

    def test_verl(self):
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            return 1.0

        self.assertEqual(W.detect_style(compute_score), "verl")

        def with_messages(messages, solution_str, **kwargs):
            return 1.0

        self.assertEqual(W.detect_style(with_messages), "verl")

    def test_simple(self):
        def score(response, **kwargs):
            return 1.0

        def score_all(prompt, response, answer):
            return 1.0

        self.assertEqual(W.detect_style(score), "simple")
        self.assertEqual(W.detect_style(score_all), "simple")

    def test_reward_kit(self):
        def evaluate(messages, ground_truth=None, **kwargs):
            return {"score": 1.0}

        def only_kwargs(**kwargs):
            return {"score": 1.0}

        def messages_and_response(messages, response, **kwargs):
            return {"score": 1.0}

        self.assertEqual(W.detect_style(evaluate), "reward-kit")
        self.assertEqual(W.detect_style(self.reward_function(evaluate)), "reward-kit")
        self.assertEqual(W.detect_style(self.reward_function(id="x")(evaluate)), "reward-kit")
        self.assertEqual(W.detect_style(only_kwargs), "reward-kit")
        self.assertEqual(W.detect_style(messages_and_response), "reward-kit")
        self.assertEqual(W.detect_style(max), "reward-kit")  # no signature available

    def test_batch(self):
        def batch(rollouts_messages, **kwargs):
            return []

        def batch_messages(messages, **kwargs):
            return []

        self.assertEqual(W.detect_style(batch), "batch")
        self.assertEqual(W.detect_style(self.reward_function(mode="batch")(batch)), "batch")
        # Decorated in batch mode: batch whatever the parameters are called.
        self.assertEqual(W.detect_style(self.reward_function(mode="batch")(batch_messages)), "batch")

    def test_is_decorated(self):
        def evaluate(messages, **kwargs):
            return {"score": 1.0}

        self.assertFalse(W.is_decorated(evaluate))
        self.assertTrue(W.is_decorated(self.reward_function(evaluate)))

        @functools.wraps(evaluate)
        def plain_wrapper(*args, **kwargs):
            return evaluate(*args, **kwargs)

        self.assertFalse(W.is_decorated(plain_wrapper))


class CaptureTest(unittest.TestCase):
    def test_collects_writes(self):
        cap = W.Capture()
        self.assertIsNone(cap.take())
        self.assertEqual(cap.write("ab"), 2)
        cap.write("cé")
        print("line", 3, file=cap)
        self.assertEqual(cap.take(), "abcéline 3\n")
        self.assertIsNone(cap.take())

    def test_stream_properties(self):
        cap = W.Capture()
        self.assertTrue(cap.writable())
        self.assertFalse(cap.isatty())
        cap.flush()
        with self.assertRaises(TypeError) as ctx:
            cap.write(b"bytes")
        self.assertEqual(str(ctx.exception), "write() argument must be str, not bytes")

    def test_redirected_stdout(self):
        cap = W.Capture()
        with redirect_stdout(cap):
            print("hello")
        self.assertEqual(cap.take(), "hello\n")

    def test_exactly_at_limit_is_kept(self):
        cap = W.Capture()
        cap.write("x" * W.OUTPUT_LIMIT)
        self.assertEqual(cap.take(), "x" * W.OUTPUT_LIMIT)

    def test_truncates_one_large_write(self):
        cap = W.Capture()
        cap.write("x" * (W.OUTPUT_LIMIT + 10))
        self.assertEqual(
            cap.take(),
            "x" * W.OUTPUT_LIMIT
            + "\n[rwb: output cut at %d of %d characters]" % (W.OUTPUT_LIMIT, W.OUTPUT_LIMIT + 10),
        )

    def test_truncates_many_writes_and_resets(self):
        cap = W.Capture()
        cap.write("a" * (W.OUTPUT_LIMIT - 1))
        cap.write("bcd")  # crosses the limit: kept, then cut
        cap.write("e" * 100)  # past the limit: only counted
        total = W.OUTPUT_LIMIT + 102
        self.assertEqual(
            cap.take(),
            "a" * (W.OUTPUT_LIMIT - 1) + "b" + "\n[rwb: output cut at %d of %d characters]" % (W.OUTPUT_LIMIT, total),
        )
        cap.write("fresh")
        self.assertEqual(cap.take(), "fresh")


class ErrorInfoTest(unittest.TestCase):
    """_error_info on exceptions raised by files in a throwaway project folder. The
    reported file is relative to the first root when it lies inside it."""

    def setUp(self):
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="rwb_errinfo_"))
        self.addCleanup(shutil.rmtree, self.root)
        self.write(
            "errinfo_evaluator.py",
            """\
            import json
            import errinfo_helpers as helpers
            import errinfo_sitelib as sitelib

            def evaluate(messages, **kwargs):
                return helpers.parse(messages)

            def broken_json(**kwargs):
                return json.loads("{")

            def via_site_packages(**kwargs):
                return sitelib.fail()
            """,
        )
        self.write(
            "errinfo_helpers.py",
            """\
            def parse(messages):
                if not messages:
                    raise ValueError("no messages")
                return len(messages)
            """,
        )
        self.write(
            "venv/lib/python3.11/site-packages/errinfo_sitelib.py",
            """\
            def fail():
                raise KeyError("k")
            """,
        )
        self.write("errinfo_bad_syntax.py", "x = 1\ndef broken(:\n    pass\n")
        sys.path[0:0] = [self.root, os.path.join(self.root, "venv/lib/python3.11/site-packages")]
        self.addCleanup(self.forget_modules)
        import errinfo_evaluator

        self.evaluator = errinfo_evaluator

    def write(self, relative, text):
        path = os.path.join(self.root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def forget_modules(self):
        for entry in (self.root, os.path.join(self.root, "venv/lib/python3.11/site-packages")):
            sys.path.remove(entry)
        for name in ("errinfo_evaluator", "errinfo_helpers", "errinfo_sitelib", "errinfo_bad_syntax"):
            sys.modules.pop(name, None)

    def catch(self, fn, *args, **kwargs):
        try:
            fn(*args, **kwargs)
        except BaseException as exc:
            return exc
        self.fail("no exception")

    def test_innermost_project_frame(self):
        exc = self.catch(self.evaluator.evaluate, [])
        info = W._error_info(exc, [self.root])
        self.assertEqual(info["type"], "ValueError")
        self.assertEqual(info["message"], "no messages")
        self.assertEqual(info["file"], "errinfo_helpers.py")
        self.assertEqual(info["line"], 3)
        self.assertTrue(info["traceback"].endswith("ValueError: no messages\n"), info["traceback"])

    def test_exception_raised_outside_the_project(self):
        exc = self.catch(self.evaluator.broken_json)
        info = W._error_info(exc, [self.root])
        self.assertEqual(info["type"], "JSONDecodeError")
        self.assertEqual(info["message"], "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)")
        self.assertEqual((info["file"], info["line"]), ("errinfo_evaluator.py", 9))

    def test_site_packages_inside_root_is_not_project(self):
        exc = self.catch(self.evaluator.via_site_packages)
        info = W._error_info(exc, [self.root])
        self.assertEqual((info["type"], info["message"]), ("KeyError", "'k'"))
        self.assertEqual((info["file"], info["line"]), ("errinfo_evaluator.py", 12))

    def test_file_in_a_later_root_is_absolute(self):
        exc = self.catch(self.evaluator.evaluate, [])
        info = W._error_info(exc, [os.path.join(self.root, "elsewhere"), self.root])
        self.assertEqual((info["file"], info["line"]), (os.path.join(self.root, "errinfo_helpers.py"), 3))

    def test_no_project_frame(self):
        exc = self.catch(self.evaluator.evaluate, [])
        info = W._error_info(exc, [os.path.join(self.root, "elsewhere")])
        self.assertNotIn("file", info)
        self.assertNotIn("line", info)
        unraised = W._error_info(RuntimeError("never raised"), [self.root])
        self.assertEqual(
            unraised, {"type": "RuntimeError", "message": "never raised", "traceback": "RuntimeError: never raised\n"}
        )

    def test_kind_and_skip_frames(self):
        exc = self.catch(self.evaluator.evaluate, [])
        full = W._error_info(exc, [self.root])
        skipped = W._error_info(exc, [self.root], kind="ImportFailed", skip_frames=1)
        self.assertEqual(skipped["type"], "ImportFailed")
        self.assertIn(os.path.basename(__file__), full["traceback"])
        self.assertNotIn(os.path.basename(__file__), skipped["traceback"])
        self.assertEqual((skipped["file"], skipped["line"]), (full["file"], full["line"]))

    def test_syntax_error_points_at_the_file(self):
        exc = self.catch(__import__, "errinfo_bad_syntax")
        info = W._error_info(exc, [self.root])
        self.assertEqual(info["type"], "SyntaxError")
        self.assertEqual((info["file"], info["line"]), ("errinfo_bad_syntax.py", 2))


class ProtocolLineTests(unittest.TestCase):
    """_dumps writes every line rwb reads: one compact JSON object, UTF-8 as is, and
    never NaN or infinity (send_result turns those into an InvalidResult)."""

    def test_one_compact_line_in_utf8(self):
        line = W._dumps({"i": 3, "ok": {"reason": "caf\u00e9 \u2713", "metrics": {}}})
        self.assertEqual(line, '{"i":3,"ok":{"reason":"caf\u00e9 \u2713","metrics":{}}}\n'.encode("utf-8"))
        self.assertEqual(json.loads(line), {"i": 3, "ok": {"reason": "caf\u00e9 \u2713", "metrics": {}}})

    def test_refuses_non_finite_numbers(self):
        for bad in (NAN, float("inf"), float("-inf")):
            with self.assertRaises(ValueError):
                W._dumps({"i": 1, "ok": {"score": bad}})

    def test_refuses_objects_json_cannot_write(self):
        with self.assertRaises(TypeError):
            W._dumps({"i": 1, "ok": {"step_outputs": [object()]}})


if __name__ == "__main__":
    unittest.main()
