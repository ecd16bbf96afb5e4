"""TRL's extra reward-function arguments (GRPOTrainer._calculate_rewards at
huggingface/trl f2cd5771, see tests/corpus/TRAINERS.md): `trainer_state`, a
transformers.TrainerState; `log_extra(column, values)` and `log_metric(name, value)`,
whose values rwb puts on the batch's rows as metrics. Through a real Worker serving
batches over a socket pair, and its contract checks."""

import json
import textwrap
import unittest

from test_worker_helpers import W, send_batch, start_worker

import importlib

TRL = importlib.import_module("rwb_py_under_test.styles.trl")
STEP = importlib.import_module("rwb_py_under_test.styles.samples").STEP

EVALUATORS = textwrap.dedent(
    '''
    import math

    SEEN = []

    def logs(completions, ground_truth, log_extra=None, log_metric=None, **kwargs):
        right = [c == g for c, g in zip(completions, ground_truth)]
        log_extra("golden", list(ground_truth))
        log_extra("length", [len(c) for c in completions])
        log_extra("odd", [None, math.nan, ["a", 1], {"k": "v"}][: len(completions)])
        log_extra("short", ["only the first"])
        log_extra("twice", ["old"] * len(completions))
        log_extra("twice", ["new"] * len(completions))
        log_metric("accuracy", sum(right) / len(right))
        log_metric("accuracy", 0.0)
        log_metric("note", "not a number")
        return [1.0 if r else None for r in right]

    def state(completions, trainer_state, **kwargs):
        s = trainer_state
        SEEN.append(s)
        return [float(s.global_step), s.epoch, float(s.max_steps), float(s.logging_steps)][: len(completions)]

    def declares_nothing_extra(completions, ground_truth):
        return [0.5] * len(completions)

    def returns_its_own_metrics(completions, log_metric, **kwargs):
        log_metric("mine", 2.0)
        log_metric("other", 3.0)
        return [{"score": 1.0, "metrics": {"mine": 0.25}} for _ in completions]
    '''
)

SAMPLES = [
    {"prompt": "p%d" % n, "completion": c, "ground_truth": g}
    for n, (c, g) in enumerate([("4", "4"), ("5", "4"), ("9", "9"), ("x", "7")])
]


def metric(score=None, reason=None):
    return {"score": score, "is_score_valid": score is not None, "reason": reason}


class TrlExtrasTest(unittest.TestCase):
    def serve(self, function, samples, op="B", **spec):
        """What a worker writes for `samples` (dicts) sent as one batch of `op`."""
        ours, thread = start_worker(EVALUATORS, dict({"function": function}, **spec), "rewards.py")
        send_batch(ours, op, samples)
        reply = ours.makefile("rb", buffering=0)
        ready = json.loads(reply.readline())
        self.assertEqual(ready.get("style"), "trl", ready)
        rows = {}
        for line in reply:
            row = json.loads(line)
            if "done" in row:
                break
            rows[row["i"]] = row
        thread.join()
        ours.close()
        return rows

    def test_logged_columns_and_metrics_land_on_each_row(self):
        rows = self.serve("logs", SAMPLES)
        accuracy = metric(0.25)  # the mean of the two calls: 0.5 and 0.0
        note = {"score": None, "is_score_valid": False, "reason": "not a number"}
        expected_odd = [
            {"score": None, "is_score_valid": False, "reason": None},
            {"score": None, "is_score_valid": False, "reason": "NaN"},
            {"score": None, "is_score_valid": False, "reason": '["a", 1]'},
            {"score": None, "is_score_valid": False, "reason": '{"k": "v"}'},
        ]
        for n, sample in enumerate(SAMPLES):
            ok = rows[n]["ok"]
            want = {
                "accuracy": accuracy,
                "note": note,
                "golden": {"score": None, "is_score_valid": False, "reason": sample["ground_truth"]},
                "length": metric(1.0),
                "odd": expected_odd[n],
                "twice": {"score": None, "is_score_valid": False, "reason": "new"},
            }
            if n == 0:
                want["short"] = {"score": None, "is_score_valid": False, "reason": "only the first"}
            self.assertEqual(ok["metrics"], want, n)
        # a scored row and a "no score" row (None) both carry what was logged
        self.assertEqual((rows[0]["ok"]["score"], rows[0]["ok"]["is_score_valid"]), (1.0, True))
        self.assertEqual((rows[1]["ok"]["score"], rows[1]["ok"]["is_score_valid"]), (None, False))
        self.assertIn("returned None", rows[1]["ok"]["reason"])
        self.assertEqual(W.NO_SCORE["metrics"], {})  # the shared constant is untouched

    def test_the_trainer_state_holds_the_logged_step_and_the_configured_fields(self):
        samples = [dict(s) for s in SAMPLES]
        samples[0][STEP] = {"step": 120, "epoch": 2}
        samples[1][STEP] = {"step": 999, "epoch": None}  # a batch is its first sample's step
        rows = self.serve("state", samples, kwargs={"trainer_state": {"max_steps": 500, "global_step": 7}})
        self.assertEqual([rows[n]["ok"]["score"] for n in range(4)], [120.0, 2.0, 500.0, 500.0])
        # without a logged step: the configured one, else transformers' default 0
        rows = self.serve("state", SAMPLES, kwargs={"trainer_state": {"global_step": 7}})
        self.assertEqual([rows[n]["ok"]["score"] for n in range(4)], [7.0, 0.0, 0.0, 500.0])
        # the step key is no column
        caller = W.make_caller(lambda completions, **kw: kw, "trl", {})
        kwargs = caller.arguments(samples[:1])
        self.assertNotIn(STEP, kwargs)
        self.assertEqual(kwargs["trainer_state"].global_step, 120)

    def test_the_trainer_state_has_transformers_fields_and_defaults(self):
        state = TRL.TrainerState()
        expected = {
            "epoch": 0, "global_step": 0, "max_steps": 0, "logging_steps": 500, "eval_steps": 500,
            "save_steps": 500, "train_batch_size": None, "num_train_epochs": 0, "num_input_tokens_seen": 0,
            "total_flos": 0, "log_history": [], "best_metric": None, "best_global_step": None,
            "best_model_checkpoint": None, "is_local_process_zero": True, "is_world_process_zero": True,
            "is_hyper_param_search": False, "trial_name": None, "trial_params": None, "stateful_callbacks": {},
        }
        self.assertEqual(vars(state), expected)
        try:
            from transformers.trainer_callback import TrainerState
        except ImportError:
            return  # transformers is not installed here; the fields above were read from it
        import dataclasses

        real = dataclasses.asdict(TrainerState())
        self.assertEqual(vars(state), real)

    def test_a_function_that_declares_neither_gets_neither(self):
        caller = W.make_caller(TRL_NO_EXTRAS, "trl", {})
        kwargs = caller.arguments(SAMPLES)
        self.assertEqual(sorted(kwargs), ["completions", "ground_truth"])
        rows = self.serve("declares_nothing_extra", SAMPLES)
        self.assertEqual([rows[n]["ok"]["metrics"] for n in range(4)], [{}] * 4)

    def test_a_metric_the_function_returns_keeps_its_value(self):
        rows = self.serve("returns_its_own_metrics", SAMPLES[:2])
        self.assertEqual(rows[0]["ok"]["metrics"], {"mine": metric(0.25), "other": metric(3.0)})

    def test_contract_checks_see_no_mutation_in_the_logging_arguments(self):
        rows = self.serve("logs", SAMPLES, op="C")
        self.assertEqual([rows[n]["issues"] for n in range(4)], [[]] * 4)


def TRL_NO_EXTRAS(completions, ground_truth):
    return [0.5] * len(completions)


if __name__ == "__main__":
    unittest.main()
