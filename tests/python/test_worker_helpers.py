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
import signal
import sys
import tempfile
import textwrap
import time
import types
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "src", "engine", "python"))


# The modules of the worker package (src/engine/python/rwb_py) whose names the tests
# read through W. The style modules stay out: each has its own NAME, detect, Caller.
PARTS = (
    "paths", "wire", "results", "errors", "timeouts", "output", "imports", "asyncs", "load",
    "styles", "styles.calling", "styles.samples", "worker", "concurrent", "checks", "zygote",
)


def _load_worker():
    """The worker package, imported by path under a name of its own, with the names of
    its modules in one namespace (a name two modules define must be the same object)."""
    package_dir = os.path.join(ENGINE_DIR, "rwb_py")
    spec = importlib.util.spec_from_file_location(
        "rwb_py_under_test", os.path.join(package_dir, "__init__.py"), submodule_search_locations=[package_dir]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = package
    spec.loader.exec_module(package)
    names = {}
    for part in PARTS:
        module = importlib.import_module("%s.%s" % (spec.name, part))
        for name, value in vars(module).items():
            if name.startswith("__"):
                continue
            if names.setdefault(name, value) is not value:
                raise AssertionError("%s.%s is not the %s another module defines" % (part, name, name))
    names["__file__"] = os.path.join(package_dir, "worker.py")
    return types.SimpleNamespace(**names)


W = _load_worker()
NAN = float("nan")


def start_worker(source, spec, filename="main.py"):
    """A worker for `source` (written as `filename` into a new folder) with `spec` (the
    name, file and a 0 timeout filled in), serving one end of a socket pair on a thread
    of this process: returns the other end and the thread."""
    import socket
    import threading

    folder = tempfile.mkdtemp()
    path = os.path.join(folder, filename)
    with open(path, "w") as f:
        f.write(source)
    ours, theirs = socket.socketpair()
    worker = W.Worker(theirs, dict({"name": "e", "file": path, "timeout": 0}, **spec), folder)
    worker.open_mark(os.path.join(folder, "mark"))

    def run():
        with redirect_stdout(worker.capture):
            if worker.load() is not None:
                worker.serve()
        theirs.close()

    thread = threading.Thread(target=run)
    thread.start()
    return ours, thread


def send_batch(sock, op, samples, first_id=0):
    """Sends `samples` (dicts) as one batch of `op`, numbered from `first_id`, then quit."""
    lines = ["%s %d" % (op, len(samples))] + ["%d %s" % (first_id + n, json.dumps(s)) for n, s in enumerate(samples)]
    sock.sendall(("\n".join(lines) + "\nQ\n").encode())


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

    def setUp(self):
        # a worker loaded by another test set its evaluator's style
        W.set_style(None)

    def tearDown(self):
        W.set_style(None)

    def test_an_unreadable_return_is_explained_in_its_trainers_words(self):
        W.set_style("trl")
        self.assertInvalid(
            "42",
            "the evaluator returned str '42'; a TRL reward function returns a list with one "
            "float per completion (None: no score), e.g. [1.0, 0.0]",
        )
        W.set_style("verl")
        self.assertInvalid(
            [1.0],
            "the evaluator returned list [1.0]; veRL's compute_score returns a float, or a dict "
            "with 'score' (its other keys become metrics)",
        )

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


class AfterConstructionTest(unittest.TestCase):
    """Fields set on a result after it was built are read the way pydantic's lax
    validation would have read them at construction, or named as invalid."""

    @classmethod
    def setUpClass(cls):
        cls.rk = bundled_reward_kit(cls)

    def assertInvalid(self, call, message):
        with self.assertRaises(W.InvalidResult) as ctx:
            call()
        self.assertEqual(str(ctx.exception), message)

    def test_flag_takes_what_a_lax_bool_takes(self):
        for value, expected in [(True, True), (0, False), (1, True), (1.0, True), ("yes", True), (" Off ", False), (b"t", True)]:
            self.assertIs(W._flag(value, "is_score_valid"), expected, value)
        self.assertInvalid(lambda: W._flag(2, "is_score_valid"), "is_score_valid is int 2, not a boolean (True or False)")
        self.assertInvalid(lambda: W._flag(0.5, "x"), "x is float 0.5, not a boolean (True or False)")
        self.assertInvalid(lambda: W._flag(None, "x"), "x is NoneType None, not a boolean (True or False)")
        self.assertInvalid(lambda: W._flag("maybe", "x"), "x is str 'maybe', not a boolean (True or False)")

    def test_text_takes_str_bytes_and_none_only(self):
        self.assertIsNone(W._text(None, "reason"))
        self.assertEqual(W._text("r", "reason"), "r")
        self.assertEqual(W._text(b"from bytes", "reason"), "from bytes")
        self.assertInvalid(lambda: W._text(5, "reason"), "reason is int 5, not a string")
        self.assertInvalid(lambda: W._text(1.5, "error"), "error is float 1.5, not a string")
        self.assertInvalid(
            lambda: W._text(b"\xff", "reason"),
            "reason is bytes that are not UTF-8 text ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte)",
        )

    def test_number_names_an_integer_beyond_float_range(self):
        import decimal
        import fractions

        self.assertEqual(W._number(10**300, "score"), 1e300)
        self.assertEqual(W._number(fractions.Fraction(1, 4), "score"), 0.25)
        self.assertEqual(W._number(decimal.Decimal("0.5"), "score"), 0.5)
        self.assertInvalid(
            lambda: W._number(10**400, "score"),
            "score is an integer of 1329 bits, too large for a float (at most about 1.8e308)",
        )
        self.assertInvalid(lambda: W._number(decimal.Decimal("Infinity"), "score"), "score is inf, not a finite number")

    def test_an_evaluate_result_changed_after_construction(self):
        rk = self.rk
        r = rk.EvaluateResult(score=0.5, reason="r", metrics={"m": rk.MetricResult(score=0.25, reason="q")})
        r.is_score_valid = 1
        r.metrics["m"].is_score_valid = "no"
        r.error = b"e"
        self.assertEqual(
            W._as_result(r, True),
            result(0.5, "r", {"m": metric(0.25, "q", is_score_valid=False)}, error="e"),
        )
        r.reason = 5
        self.assertInvalid(lambda: W._as_result(r, True), "reason is int 5, not a string")
        r.reason = "r"
        r.metrics["m"].reason = ["a"]
        self.assertInvalid(lambda: W._as_result(r, True), "metric 'm' reason is list ['a'], not a string")
        r.metrics = "none"
        self.assertInvalid(lambda: W._as_result(r, True), "metrics is str 'none', not a dict of MetricResult")
        r.metrics = {}
        r.score = 10**400
        self.assertInvalid(
            lambda: W._as_result(r, True),
            "score is an integer of 1329 bits, too large for a float (at most about 1.8e308)",
        )

    def test_step_outputs_must_be_json_rwb_reads_back(self):
        def nested(levels):
            value = 0.5
            for _ in range(levels):
                value = [value]
            return value

        def steps(metrics):
            return {"score": 0.5, "step_outputs": [{"step_index": 0, "base_reward": 0.1, "metrics": metrics}]}

        # the result line wraps step_outputs in 3 levels: 3 + 100 stays under serde_json's 128
        ok = W._as_result(steps({"d": nested(97)}), False)
        self.assertEqual(ok["step_outputs"][0]["metrics"]["d"], nested(97))
        self.assertInvalid(
            lambda: W._as_result(steps({"d": nested(98)}), False),
            "step_outputs[0]['metrics']['d'][0][0][0][0][0][0][0][0][0]... nests lists/dicts "
            "more than 100 levels deep; rwb reads at most 100",
        )
        self.assertInvalid(
            lambda: W._as_result(steps({"big": -(2**1100)}), False),
            "step_outputs[0]['metrics']['big'] is an integer of 1101 bits, too large for a float",
        )
        self.assertInvalid(
            lambda: W._as_result(steps({"n": [1.0, NAN]}), False),
            "step_outputs[0]['metrics']['n'][1] is nan, not a finite number",
        )
        self.assertInvalid(
            lambda: W._as_result(steps({"s": {1}}), False),
            "step_outputs[0]['metrics']['s'] is set {1}, which JSON cannot hold",
        )
        self.assertInvalid(
            lambda: W._as_result(steps({(1, 2): 0}), False),
            "step_outputs[0]['metrics'] has a key tuple (1, 2); JSON keys are strings",
        )
        self.assertInvalid(lambda: W._as_result({"score": 0.5, "step_outputs": 3}, False), "step_outputs is int 3, not a list")


class EvaluationTimeoutTest(unittest.TestCase):
    """The watchdog's timeout holds whatever user code does with SIGALRM, and one
    that is swallowed is still reported."""

    TIMEOUT = 0.2

    def setUp(self):
        self.evaluation = W.Evaluation(self.TIMEOUT, W.Capture())

    def timed(self, fn):
        started = time.perf_counter()
        with self.assertRaises(W.EvalTimeout):
            self.evaluation.call(fn, {})
        return time.perf_counter() - started

    def spin(self, seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    def test_a_call_that_returns_in_time_is_not_interrupted(self):
        self.assertEqual(self.evaluation.call(lambda: 5, {}), 5)
        time.sleep(self.TIMEOUT * 1.5)  # idle: the watchdog wakes and finds no call
        self.assertEqual(self.evaluation.call(lambda: time.sleep(self.TIMEOUT * 0.6) or 6, {}), 6)
        self.assertEqual(self.evaluation.call(lambda: time.sleep(self.TIMEOUT * 0.6) or 7, {}), 7)

    def test_cancelling_and_replacing_sigalrm_does_not_cancel_the_timeout(self):
        def math_verify_style():
            def mine(signum, frame):
                raise TimeoutError("theirs")

            old = signal.signal(signal.SIGALRM, mine)
            signal.alarm(5)
            try:
                sum(range(1000))
            finally:
                signal.alarm(0)
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
            self.spin(5)

        took = self.timed(math_verify_style)
        self.assertGreaterEqual(took, self.TIMEOUT)
        self.assertLess(took, self.TIMEOUT + 0.1)

    def test_a_blocking_sleep_is_interrupted(self):
        took = self.timed(lambda: time.sleep(5))
        self.assertLess(took, self.TIMEOUT + 0.1)

    def test_a_swallowed_timeout_is_still_the_result(self):
        def swallows():
            end = time.perf_counter() + self.TIMEOUT * 2
            while time.perf_counter() < end:
                try:
                    self.spin(end - time.perf_counter())
                except BaseException:
                    pass
            return 1.0

        self.timed(swallows)

    def test_an_error_raised_instead_of_the_timeout_is_the_timeout(self):
        def converts():
            try:
                time.sleep(5)
            except BaseException:
                raise ValueError("not a timeout, says the user")

        self.timed(converts)

    def test_an_error_raised_in_time_is_that_error(self):
        def fails():
            raise KeyError("k")

        with self.assertRaises(KeyError):
            self.evaluation.call(fails, {})


class ProcessGroupTest(unittest.TestCase):
    """What a worker's evaluations start lives in the worker's process group, and the
    zygote kills that group even after the worker itself is gone."""

    def gone(self, pid):
        try:
            with open("/proc/%d/stat" % pid) as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    def test_the_zygote_kills_the_group_a_dead_worker_left_behind(self):
        import subprocess

        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # a worker: leads its group, starts a process, dies
            W._own_process_group()
            sleeper = subprocess.Popen(["sleep", "60"])
            os.write(write, b"%d" % sleeper.pid)
            os._exit(0)
        os.close(write)
        sleeper = int(os.read(read, 32))
        os.close(read)
        os.waitpid(pid, 0)
        self.assertEqual(os.getpgid(sleeper), pid)
        self.assertEqual(W._live_groups({pid}), {pid})
        W._kill_worker_groups({pid})
        deadline = time.monotonic() + 5
        while not self.gone(sleeper) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertTrue(self.gone(sleeper), "the orphan outlived its worker's group")


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

    def test_a_wrappers_error_points_at_the_users_line_through_its_cause(self):
        # verifiers' TaskError is raised `from` the reward's own exception, outside
        # the project: the row names the user's line and shows both tracebacks
        def wrapper():
            try:
                self.evaluator.evaluate([])
            except ValueError as exc:
                raise RuntimeError("task scoring: ValueError: no messages") from exc

        exc = self.catch(wrapper)
        info = W._error_info(exc, [self.root])
        self.assertEqual((info["type"], info["file"], info["line"]), ("RuntimeError", "errinfo_helpers.py", 3))
        text = info["traceback"]
        self.assertLess(text.index("ValueError: no messages"), text.index("direct cause of the following"))
        self.assertTrue(text.endswith("RuntimeError: task scoring: ValueError: no messages\n"), text)

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


class PlainResultTests(unittest.TestCase):
    """The shortcuts for the common case (a dict with a float score and a reason, read
    and written directly) give exactly what the general paths give, and leave every
    other value to them."""

    DICTS = [
        {"score": 0.5},
        {"score": 0.5, "reason": "length"},
        {"score": 1.0, "reason": None, "metrics": {}},
        {"score": -0.0, "metrics": None},
        {"score": 1e-300, "reason": "caf\u00e9 \u2713"},
        # not plain: the general path decides
        {"score": 1},
        {"score": True},
        {"score": NAN},
        {"score": float("inf"), "reason": "x"},
        {"score": None},
        {},
        {"score": 0.5, "reason": 5},
        {"score": 0.5, "reason": b"bytes"},
        {"score": 0.5, "metrics": {"a": 0.25}},
        {"score": 0.5, "metrics": []},
        {"score": 0.5, "metrics": "none"},
        {"score": 0.5, "is_score_valid": False},
        {"score": 0.5, "error": "a result_error"},
        {"score": 0.5, "step_outputs": []},
        {"score": 0.5, "other": 1},
    ]

    def _read(self, fn, value):
        try:
            return ("ok", fn(value, False))
        except W.InvalidResult as exc:
            return ("InvalidResult", str(exc))

    def test_a_plain_dict_reads_as_the_general_path_reads_it(self):
        class Reason(str):
            pass

        class Score(float):
            pass

        dicts = self.DICTS + [{"score": 0.5, "reason": Reason("sub")}, {"score": Score(0.5)}]
        for value in dicts:
            with self.subTest(value=value):
                got = self._read(W._as_result, value)
                self.assertEqual(got, self._read(W._read_result, value))
                if got[0] == "ok":
                    self.assertEqual(list(got[1]), list(W._RESULT_FIELDS))
        self.assertIsNotNone(W._plain_result({"score": 0.5, "reason": "r", "metrics": {}}))
        self.assertIsNone(W._plain_result({"score": 1}))

    def test_a_result_line_is_what_the_encoder_writes(self):
        ok = W._as_result({"score": 0.125, "reason": "r"}, False)
        reasons = ["plain", "", None, "caf\u00e9 \u2713", 'say "hi" \\ back', "two\nlines\ttab", "\x01\x1f\x7f",
                   "\u2028\u2029", "\U0001F600"]
        scores = [0.0, -0.0, 1.0, 0.1, 1e-300, 1e300, 1e16, 1e-05, 123456789.125, -2.5]
        messages = []
        for n, reason in enumerate(reasons):
            for score in scores:
                m = {"i": n * 1000 + 7, "ms": 0.0123 * n, "ok": dict(ok, score=score, reason=reason)}
                messages.append(m)
                messages.append(dict(m, out="printed \u00e9\n"))
        messages += [
            {"i": 1, "ms": 2.0, "ok": dict(ok, is_score_valid=False)},
            {"i": 2 ** 70, "ms": 0.5, "ok": ok},
            {"i": 1, "ms": 0.5, "ok": W.NO_SCORE},
            {"i": 1, "ms": 0.5, "ok": dict(ok, metrics={"m": {"score": 0.5, "is_score_valid": True, "reason": None}})},
            {"i": 1, "ms": 0.5, "ok": dict(ok, step_outputs=[{"step": 1}])},
            {"i": 1, "ms": 0.5, "ok": dict(ok, error="a result_error")},
            {"i": 1, "ms": 0.5, "err": {"type": "ValueError", "message": "boom"}},
            {"i": 1, "ms": 0.5, "err": {"type": "ValueError", "message": "boom"}, "out": "x"},
            {"i": 1, "ms": 0.5, "ok": ok, "out": None},
            {"done": 3},
        ]
        for m in messages:
            with self.subTest(message=m):
                self.assertEqual(W._result_line(m), W._dumps(m))

    def test_a_result_line_refuses_what_the_encoder_refuses(self):
        ok = W._as_result({"score": 0.5}, False)
        for bad in ({"i": 1, "ms": 0.5, "ok": dict(ok, reason="lone \ud800")},
                    {"i": 1, "ms": NAN, "ok": ok},
                    {"i": 1, "ms": 0.5, "ok": dict(ok, score=float("inf"))}):
            with self.subTest(message=bad):
                with self.assertRaises(ValueError):
                    W._dumps(bad)
                with self.assertRaises(ValueError):
                    W._result_line(bad)

    def test_a_sample_line_reads_as_json_loads_reads_it(self):
        for raw in (b'{"messages": [{"role": "user", "content": "caf\xc3\xa9"}], "n": 1.5}\n',
                    b'  {"messages": [], "x": "\\u00e9 \\ud83d\\ude00"}  ',
                    b'{"messages": [], "big": 123456789012345678901234567890}'):
            with self.subTest(raw=raw):
                self.assertEqual(W._sample(raw), json.loads(raw))

    def test_a_sample_as_marshal_data_with_its_zero_reads_as_the_dict(self):
        import marshal

        sample = {"messages": [{"role": "user", "content": "caf\u00e9"}], "n": 1.5, "k": 10 ** 30}
        self.assertEqual(W._sample(marshal.dumps(sample) + b"\0"), sample)
        with self.assertRaises(ValueError):
            W._sample(b"")  # not a sample, and no IndexError

    def test_a_batch_mixing_marshal_and_json_samples_scores_each_as_json_would(self):
        import marshal
        import socket

        source = "def evaluate(messages, ground_truth=None, **kw):\n    return {'score': len(messages[-1]['content']) / 10, 'reason': repr(kw.get('n'))}\n"
        samples = [
            {"messages": [{"role": "user", "content": "abc"}], "n": 1.5},
            {"messages": [{"role": "user", "content": "x\ny\u00e9"}], "n": 10 ** 20},
            {"messages": [{"role": "user", "content": "\u0000"}], "n": None},
        ]

        def results(packed):
            ours, thread = start_worker(source, {})
            message = b"B %d\n" % len(samples)
            for n, s in enumerate(samples):
                if packed and n != 1:  # the second goes as JSON, as rwb sends what it does not pack
                    data = marshal.dumps(s) + b"\0"
                    message += b"%d @%010d\n" % (n, len(data)) + data
                else:
                    message += b"%d %s\n" % (n, json.dumps(s).encode())
            ours.sendall(message + b"Q\n")
            thread.join(10)
            got = []
            with ours.makefile("rb") as answers:
                for line in answers:
                    row = json.loads(line)
                    if "i" in row:
                        row.pop("ms", None)
                        row.pop("ns", None)
                        got.append(row)
            ours.close()
            return got

        plain = results(False)
        self.assertEqual([r["ok"]["reason"] for r in plain], ["1.5", "100000000000000000000", "None"])
        self.assertEqual(results(True), plain)


if __name__ == "__main__":
    unittest.main()
