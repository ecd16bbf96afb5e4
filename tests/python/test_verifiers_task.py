"""The verifiers-task style (styles/task.py): a verifiers 1.x `Task` subclass scored on a
sample's trace as vf-replay scores one, with verifiers' own `Task.score`.

Scoring needs verifiers 1.x (`pip install 'verifiers>=0.4'`). When this interpreter
lacks it and RWB_VERIFIERS_PYTHON names one that has it, this module runs itself
under that interpreter (so `cargo test --test python_side` covers it there too).
Without verifiers, only the clear "install verifiers" error is tested.
"""

import json
import os
import subprocess
import sys
import textwrap
import types
import unittest

from test_worker_helpers import W, send_batch, start_worker

HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import verifiers.v1 as vf

    HAVE_VF = True
except ImportError:
    vf = None
    HAVE_VF = False

VF_PYTHON = os.environ.get("RWB_VERIFIERS_PYTHON")
IN_CHILD = os.environ.get("RWB_VERIFIERS_TASK_CHILD") == "1"


TASK_SOURCE = textwrap.dedent(
    '''
    import verifiers.v1 as vf


    class QAData(vf.TaskData):
        answer: str


    class QAConfig(vf.TaskConfig):
        power: float = 1.0


    class QATask(vf.Task[QAData, vf.State, QAConfig]):
        @vf.reward(weight=2.0)
        async def correct(self, trace) -> float:
            if self.data.answer == "boom":
                raise ValueError("cannot grade %r" % trace.last_reply)
            return float(trace.last_reply == self.data.answer)

        @vf.reward(weight=0.5)
        async def brevity(self, trace, task) -> float:
            return (1.0 / (1 + len(trace.last_reply))) ** self.config.power

        @vf.reward(priority=5)
        async def shape(self, trace):
            return {"has_digit": any(c.isdigit() for c in trace.last_reply), "one_line": "\\n" not in trace.last_reply}

        @vf.reward
        async def in_sandbox(self, trace, runtime) -> float:
            return 1.0

        @vf.metric
        async def turns(self, trace) -> float:
            return trace.num_turns


    class SandboxOnly(vf.Task[QAData]):
        @vf.reward
        async def checked(self, trace, runtime) -> float:
            return 1.0

        @vf.metric
        async def length(self, trace) -> float:
            return len(trace.last_reply)


    class NanTask(vf.Task[QAData]):
        @vf.reward
        async def undefined(self, trace) -> float:
            return float("nan")
    '''
)


def chat(reply, answer="42", **more):
    sample = {
        "messages": [
            {"role": "system", "content": "Answer with a number."},
            {"role": "user", "content": "What is 6*7?"},
            {"role": "assistant", "content": reply},
        ],
        "answer": answer,
    }
    sample["messages"][-1].update(more)
    return sample


def load_tasks():
    module = types.ModuleType("rwb_test_vf_tasks")
    exec(compile(TASK_SOURCE, "tasks.py", "exec"), module.__dict__)
    return module


def spec(**trainer_args):
    return {"name": "qa", "trainer_args": trainer_args, "kwargs": {}, "chat_template": None}


def run(caller, sample):
    """The row the worker makes of `sample`: the call awaited on the worker's loop."""
    kwargs = caller.arguments(sample)
    value = W._awaited(caller.fn)(**kwargs)
    return caller.result(value)


@unittest.skipUnless(HAVE_VF or (VF_PYTHON and not IN_CHILD), "needs verifiers>=0.4 (set RWB_VERIFIERS_PYTHON)")
class UnderVerifiersPythonTest(unittest.TestCase):
    """When this interpreter lacks verifiers, the scoring tests run under the one
    RWB_VERIFIERS_PYTHON names."""

    def test_scoring_tests_pass_under_the_verifiers_python(self):
        if HAVE_VF:
            self.skipTest("this interpreter has verifiers: the tests run here")
        done = subprocess.run(
            [VF_PYTHON, "-m", "unittest", "test_verifiers_task", "-v"],
            cwd=HERE,
            env=dict(os.environ, RWB_VERIFIERS_TASK_CHILD="1", PYTHONDONTWRITEBYTECODE="1"),
            capture_output=True,
            text=True,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("skipped 'needs verifiers", done.stderr)


@unittest.skipIf(HAVE_VF, "verifiers is installed here")
class WithoutVerifiersTest(unittest.TestCase):
    def test_a_task_class_without_verifiers_asks_to_install_it(self):
        Task = type("Task", (), {"__module__": "verifiers.v1.task"})
        MyTask = type("MyTask", (Task,), {})
        self.assertEqual(W.choose_style(MyTask)[0], "verifiers-task")
        with self.assertRaises(ImportError) as raised:
            W.make_caller(MyTask, "verifiers-task", {}, spec())
        self.assertEqual(type(raised.exception).__name__, "VerifiersMissing")
        message = str(raised.exception)
        self.assertIn("verifiers>=0.4", message)
        self.assertIn("--python", message)
        self.assertIn(sys.executable, message)


@unittest.skipUnless(HAVE_VF, "needs verifiers>=0.4")
class TaskScoringTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tasks = load_tasks()

    def caller(self, task=None, **trainer_args):
        return W.make_caller(task or self.tasks.QATask, "verifiers-task", {}, spec(**trainer_args))

    def test_detected_as_a_task(self):
        style, reason = W.choose_style(self.tasks.QATask)
        self.assertEqual(style, "verifiers-task")
        self.assertIn("QATask", reason)

    def test_a_chat_sample_is_scored_as_verifiers_scores_it(self):
        row = run(self.caller(), chat("42"))
        # has_digit 1 + one_line 1 (shape's keys, weight 1), brevity 0.5 x 1/3, correct 2 x 1
        self.assertAlmostEqual(row["score"], 1.0 + 1.0 + 0.5 * (1 / 3) + 2.0)
        metrics = row["metrics"]
        # verifiers' order: shape (priority 5) is seeded first, then unseeded when it
        # returns keys, which land after the seeded brevity and correct
        self.assertEqual(list(metrics), ["brevity", "correct", "has_digit", "one_line", "turns"])
        self.assertEqual(metrics["correct"], {"score": 1.0, "is_score_valid": True, "reason": "reward, weight 2"})
        self.assertAlmostEqual(metrics["brevity"]["score"], 1 / 3)
        self.assertEqual(metrics["turns"]["score"], 1.0)
        self.assertEqual(metrics["turns"]["reason"], "metric (not summed)")
        self.assertIn("skipped offline, no runtime: in_sandbox", row["reason"])
        self.assertNotIn("in_sandbox", metrics)
        self.assertIsNone(row["error"])

    def test_the_score_is_what_task_score_records(self):
        caller = self.caller()
        for reply in ("42", "41", "It is 42.\nDone", ""):
            kwargs = caller.arguments(chat(reply))
            trace = kwargs["trace"].model_copy(deep=True)
            task = self.tasks.QATask(kwargs["row"], self.tasks.QAConfig())
            W._awaited(task.score)(trace=trace)
            row = caller.result(W._awaited(caller.fn)(**kwargs))
            self.assertEqual(row["score"], float(trace.reward), reply)
            for name, reward in trace.rewards.items():
                self.assertEqual(row["metrics"][name]["score"], reward.score)

    def test_reasoning_content_is_not_the_reply(self):
        row = run(self.caller(), chat("41", reasoning_content="42"))
        self.assertEqual(row["metrics"]["correct"]["score"], 0.0)
        row = run(self.caller(), chat("42", reasoning_content="let me think: 41"))
        self.assertEqual(row["metrics"]["correct"]["score"], 1.0)

    def test_the_config_comes_from_trainer_args(self):
        squared = run(self.caller(power=2.0), chat("42"))
        self.assertAlmostEqual(squared["metrics"]["brevity"]["score"], 1 / 9)
        weighted = run(self.caller(rewards={"correct": {"weight": 0.25}}), chat("42"))
        self.assertAlmostEqual(weighted["score"], 1.0 + 1.0 + 0.5 * (1 / 3) + 0.25)
        with self.assertRaises(ValueError) as raised:
            self.caller(powr=2.0)
        self.assertEqual(type(raised.exception).__name__, "TaskConfigInvalid")
        self.assertIn("QAConfig", str(raised.exception))
        self.assertIn("powr", str(raised.exception))

    def test_a_prompt_completion_sample(self):
        sample = {"prompt": "What is 6*7?", "completion": "42", "answer": "42"}
        row = run(self.caller(), sample)
        self.assertEqual(row["metrics"]["correct"]["score"], 1.0)
        kwargs = self.caller().arguments(sample)
        self.assertEqual(kwargs["row"].prompt, "What is 6*7?")
        self.assertEqual([n.sampled for n in kwargs["trace"].nodes], [False, True])

    def test_the_task_data_are_the_sample_columns(self):
        kwargs = self.caller().arguments(dict(chat("42"), id=7, extra="x"))
        data = kwargs["row"]
        self.assertEqual((data.answer, data.prompt, data.system_prompt), ("42", "What is 6*7?", "Answer with a number."))
        self.assertIn("column 'id'", kwargs["notes"][0])  # an int id does not fit TaskData.id (str)
        with self.assertRaises(ValueError) as raised:
            self.caller().arguments({"messages": chat("42")["messages"]})
        self.assertEqual(type(raised.exception).__name__, "BadTaskData")
        self.assertIn("answer", str(raised.exception))

    def test_only_generated_assistant_turns_are_sampled(self):
        sample = chat("42")
        sample["messages"][2:2] = [
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": {"x": "6*7"}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
        ]
        sample["messages"].insert(1, {"role": "user", "content": "Example: 1+1?"})
        sample["messages"].insert(2, {"role": "assistant", "content": "2"})
        trace = self.caller().arguments(sample)["trace"]
        self.assertEqual([n.sampled for n in trace.nodes], [False, False, False, False, True, False, True])
        self.assertEqual(trace.num_turns, 2)
        self.assertEqual(trace.last_reply, "42")
        self.assertEqual(trace.nodes[4].message.tool_calls[0].arguments, '{"x": "6*7"}')

    def test_a_reward_that_raises_fails_the_row_with_task_error(self):
        caller = self.caller()
        with self.assertRaises(Exception) as raised:
            run(caller, chat("41", answer="boom"))
        self.assertEqual(type(raised.exception).__name__, "TaskError")
        self.assertIn("ValueError: cannot grade '41'", str(raised.exception))

    def test_every_reward_skipped_scores_zero(self):
        row = run(self.caller(self.tasks.SandboxOnly), chat("42"))
        self.assertEqual(row["score"], 0.0)
        self.assertEqual(list(row["metrics"]), ["length"])
        self.assertIn("every reward needs a runtime (skipped offline: checked)", row["reason"])

    def test_a_nan_reward_is_an_invalid_result(self):
        # verifiers records NaN (and its total is NaN); rwb's score must be finite
        with self.assertRaises(W.InvalidResult) as raised:
            run(self.caller(self.tasks.NanTask), chat("42"))
        self.assertIn("undefined=nan", str(raised.exception))

    def saved(self, reply="42", answer="42", **trace_fields):
        """A trace as traces.jsonl writes it (one trace of a single-trace episode)."""
        data = self.tasks.QAData(prompt="What is 6*7?", system_prompt="Answer with a number.", answer=answer)
        task = self.tasks.QATask(data)
        trace = vf.Trace(
            task=vf.TraceTask(type="QATask", data=data, key=task.key, hash=task.hash),
            agent=vf.AgentInfo(config=vf.AgentConfig(model="m")),
            nodes=[
                {"message": {"role": "system", "content": "Answer with a number."}},
                {"parent": 0, "message": {"role": "user", "content": "What is 6*7?"}},
                {"parent": 1, "message": {"role": "assistant", "content": reply}, "sampled": True},
            ],
            rewards={"stale": {"score": 9.0, "weight": 1.0}, "in_sandbox": {"score": 1.0, "weight": 1.0}},
            metrics={"turns": 7.0},
            is_completed=True,
            ok=True,
            stop_condition="agent_completed",
        )
        for name, value in trace_fields.items():
            setattr(trace, name, value)
        return json.loads(trace.model_dump_json(exclude_none=True))

    def test_a_saved_trace_is_rescored_as_replay_does(self):
        line = self.saved()
        row = run(self.caller(), {"trace": line, "task_data": line["task"]["data"], "answer": "42"})
        self.assertAlmostEqual(row["score"], 1.0 + 1.0 + 0.5 * (1 / 3) + 2.0)
        self.assertNotIn("stale", row["metrics"])  # the recorded rewards are cleared
        self.assertNotIn("in_sandbox", row["metrics"])  # and a runtime reward is not recomputed
        self.assertEqual(row["metrics"]["turns"]["score"], 1.0)
        # the trace's data, not the row's columns, are the task's
        row = run(self.caller(), {"trace": self.saved(answer="41"), "answer": "42"})
        self.assertEqual(row["metrics"]["correct"]["score"], 0.0)

    def recorded_rollout(self, answer, calls, root_reply=None):
        """A trace as a live rollout records it, built by verifiers' own code: each model
        call's request parsed by the chat dialect, resolved against the message graph
        (`graph.prepare_turn`) and its reply committed as a sampled node, as the
        interception server does; `root_reply` set as the ACP harness sets it. `calls`
        are (request messages, reply content, tool calls) in the order they committed.
        Returns the trace as traces.jsonl holds it (a JSON object)."""
        from verifiers.v1 import graph
        from verifiers.v1.dialects.chat import ChatDialect

        chat = ChatDialect()
        data = self.tasks.QAData(prompt=calls[0][0][-1]["content"], answer=answer)
        task = self.tasks.QATask(data)
        trace = vf.Trace(
            task=vf.TraceTask(type="QATask", data=data, key=task.key, hash=task.hash),
            agent=vf.AgentInfo(config=vf.AgentConfig(model="m")),
        )
        for n, (messages, content, tool_calls) in enumerate(calls):
            request = chat.parse_request({"model": "m", "messages": messages})
            turn = graph.prepare_turn(trace, request.messages, request.tools)
            reply = {"role": "assistant", "content": content}
            if tool_calls:
                reply["tool_calls"] = tool_calls
            raw = {
                "id": "chatcmpl-%d" % n,
                "object": "chat.completion",
                "created": 1800000000,
                "model": "m",
                "choices": [{"index": 0, "message": reply, "finish_reason": "tool_calls" if tool_calls else "stop"}],
            }
            turn.commit(chat.parse_response(chat.validate_response(raw)))
        if root_reply is not None:
            trace.root_reply = root_reply.strip()
        trace.stop("agent_completed")
        trace.ok = True
        return json.loads(trace.model_dump_json(exclude_none=True))

    def assert_scored_as_verifiers_scores(self, line):
        """The row rwb makes of the saved trace is what `Task.score` records for it."""
        caller = self.caller()
        row = run(caller, {"trace": line, "task_data": line["task"]["data"], "answer": line["task"]["data"]["answer"]})
        trace = caller.wire_trace.model_validate(line)
        data = self.tasks.QAData.model_validate(trace.task.data.model_dump())
        W._awaited(self.tasks.QATask(data).score)(trace=trace)
        self.assertEqual(row["score"], float(trace.reward))
        for name, reward in trace.rewards.items():
            if reward is not None:
                self.assertEqual(row["metrics"][name]["score"], reward.score, name)
        for name, value in trace.metrics.items():
            self.assertEqual(row["metrics"][name]["score"], value, name)
        return row

    def test_a_saved_multi_turn_trace_keeps_every_generated_turn(self):
        opening = [{"role": "user", "content": "What is 6*5?"}]
        follow_up = opening + [{"role": "assistant", "content": "30"}, {"role": "user", "content": "And 6*7?"}]
        line = self.recorded_rollout("42", [(opening, "30", None), (follow_up, "42", None)])
        self.assertEqual([n.get("sampled", False) for n in line["nodes"]], [False, True, False, True])
        row = self.assert_scored_as_verifiers_scores(line)
        # both replies are the model's: two turns, the second one graded
        self.assertEqual(row["metrics"]["turns"]["score"], 2.0)
        self.assertEqual(row["metrics"]["correct"]["score"], 1.0)

    def test_a_saved_delegated_trace_is_graded_on_its_root_reply(self):
        if "root_reply" not in vf.Trace.model_fields:
            self.skipTest("this verifiers' Trace has no root_reply")
        root = [{"role": "system", "content": "Delegate checks."}, {"role": "user", "content": "What is 6*7?"}]
        spawn = [{"id": "c1", "type": "function", "function": {"name": "spawn", "arguments": "{}"}}]
        after = root + [
            {"role": "assistant", "content": "", "tool_calls": spawn},
            {"role": "tool", "tool_call_id": "c1", "content": "checker started"},
        ]
        checker = [{"role": "system", "content": "You check."}, {"role": "user", "content": "Check 6*7"}]
        line = self.recorded_rollout(
            "42", [(root, "", spawn), (after, "42", None), (checker, "Checking 6*7 ...", None)], root_reply="42\n"
        )
        self.assertEqual(line["root_reply"], "42")
        row = self.assert_scored_as_verifiers_scores(line)
        # the reply is the root agent's, not the checker's last sampled text
        self.assertEqual(row["metrics"]["correct"]["score"], 1.0)
        self.assertEqual(row["metrics"]["turns"]["score"], 3.0)

    def test_a_failed_rollout_is_not_scored(self):
        line = self.saved(ok=False, stop_condition="task_error")
        with self.assertRaises(Exception) as raised:
            self.caller().arguments({"trace": line})
        self.assertEqual(type(raised.exception).__name__, "NotScored")
        message = str(raised.exception)
        self.assertIn("ok: false", message)
        self.assertIn("stop_condition task_error", message)
        self.assertIn("logged reward 10", message)

    def test_a_multi_agent_trace_is_refused(self):
        line = self.saved()
        line["agent"]["name"] = "solver"
        with self.assertRaises(Exception) as raised:
            self.caller().arguments({"trace": line})
        self.assertEqual(type(raised.exception).__name__, "MultiAgentRow")
        self.assertIn("'solver' seat of a multi-agent episode", str(raised.exception))
        with self.assertRaises(Exception) as raised:
            self.caller().arguments({"traces": [self.saved(), self.saved()]})
        self.assertEqual(type(raised.exception).__name__, "MultiAgentRow")

    def test_the_call_does_not_change_its_arguments(self):
        caller = self.caller()
        kwargs = caller.arguments({"trace": self.saved()})
        before = kwargs["trace"].model_copy(deep=True)
        first = W._awaited(caller.fn)(**kwargs)
        self.assertEqual(kwargs["trace"], before)
        self.assertEqual(first, W._awaited(caller.fn)(**kwargs))

    def test_a_worker_scores_rows_and_reports_task_error(self):
        ours, thread = start_worker(TASK_SOURCE, {"function": "QATask"}, "tasks.py")
        send_batch(ours, "B", [chat("42"), chat("41", answer="boom")])
        reply = ours.makefile("rb", buffering=0)
        ready = json.loads(reply.readline())
        self.assertTrue(ready.get("ready"), ready)
        self.assertEqual(ready["style"], "verifiers-task")
        rows = {}
        for line in reply:
            row = json.loads(line)
            if "done" in row:
                break
            rows[row["i"]] = row
        thread.join()
        reply.close()
        ours.close()
        self.assertAlmostEqual(rows[0]["ok"]["score"], 1.0 + 1.0 + 0.5 * (1 / 3) + 2.0)
        self.assertEqual(rows[1]["err"]["type"], "TaskError")
        self.assertIn("task QATask scoring: ValueError: cannot grade '41'", rows[1]["err"]["message"])


if __name__ == "__main__":
    unittest.main()
