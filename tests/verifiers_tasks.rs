//! verifiers 1.x Tasks through the real binary (SPEC §3, "verifiers 1.x"): a `vf.Task`
//! subclass named in rwb.toml scores chat samples, prompt-completion samples, saved
//! traces and the rows of a traces.jsonl read as it is (multi-turn and delegated
//! rollouts included), and every row's score and components are what verifiers' own
//! code records for the same trace. The expected values come from running verifiers itself (a
//! script that builds each sample's trace the way a rollout records it and awaits
//! `Task.score`, and that writes saved traces with verifiers' traces.jsonl writer and
//! re-scores them as `vf-replay` does): nothing here is a hard-coded number.
//!
//! Needs a Python with verifiers 0.4 (`pip install verifiers==0.4.0`) named by
//! RWB_VERIFIERS_PYTHON (.ci/run makes one); skipped with a message otherwise.

mod common;

use common::{output_within, Ws, RUN_LIMIT};
use serde_json::Value;
use std::process::Command;

/// The task: two weighted rewards (one raises on the sample whose answer is "boom"),
/// one reward that needs a runtime, one metric, and a config option.
const TASKS: &str = r#####"
import verifiers.v1 as vf


class QAData(vf.TaskData):
    answer: str


class QAConfig(vf.TaskConfig):
    power: float = 1.0


class QATask(vf.Task[QAData, vf.State, QAConfig]):
    @vf.reward(weight=2.0)
    async def correct(self, trace) -> float:
        return float(trace.last_reply.strip() == self.data.answer)

    @vf.reward(weight=0.5)
    async def brevity(self, trace, task) -> float:
        if task.answer == "boom":
            raise ValueError("cannot grade %r" % trace.last_reply)
        return (1.0 / (1 + len(trace.last_reply))) ** self.config.power

    @vf.reward
    async def executes(self, trace, runtime) -> float:
        result = await runtime.run("python -c 'print(6*7)'")
        return float(result.stdout.strip() == self.data.answer)

    @vf.metric
    async def turns(self, trace) -> float:
        return trace.num_turns
"#####;

/// `trainer_args` of the evaluator: the task's config (a weight overridden through
/// `rewards`, as `--env.taskset.task.rewards` does).
const TRAINER_ARGS: &str = r#"{"power": 2.0, "rewards": {"correct": {"weight": 3.0}}}"#;

/// The chat (and prompt-completion) samples, in OpenAI's message form.
const CHAT: &str = r#####"{"messages": [{"role": "system", "content": "Answer with a number."}, {"role": "user", "content": "What is 6*7?"}, {"role": "assistant", "content": "42"}], "answer": "42"}
{"messages": [{"role": "user", "content": "What is 6*7?"}, {"role": "assistant", "content": "41", "reasoning_content": "6*7 is 42"}], "answer": "42"}
{"messages": [{"role": "user", "content": "What is 6*7? Use the tool."}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "calc", "arguments": "{\"x\": \"6*7\"}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "42"}, {"role": "assistant", "content": "The answer is 42."}], "answer": "42"}
{"messages": [{"role": "user", "content": "Grade me"}, {"role": "assistant", "content": "41"}], "answer": "boom"}
{"prompt": "What is 2+2?", "completion": "4", "answer": "4"}
"#####;

/// Builds with verifiers' own classes what a rollout of each sample records, scores
/// it with `Task.score`, writes saved traces with verifiers' traces.jsonl writer and
/// re-scores them as vf-replay's `rescore` does. Writes samples.jsonl (the chat
/// samples, then one row per saved trace) and prints one expected result per line.
const EXPECTED: &str = r#####"
import asyncio
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")

import verifiers.v1 as vf
from verifiers.v1.configs.agent import WireAgentConfig
from verifiers.v1.episode import EnvInfo, Episode
from verifiers.v1.state import state_cls
from verifiers.v1.task import WireTaskData
from verifiers.v1.utils.trace_store import read_episodes, write_episode

import tasks

config = tasks.QATask.config_type().model_validate(json.loads(sys.argv[1]))


def vf_message(m):
    if m["role"] == "assistant":
        out = {"role": "assistant", "content": m.get("content")}
        if "reasoning_content" in m:
            out["reasoning_content"] = m["reasoning_content"]
        if m.get("tool_calls"):
            out["tool_calls"] = [
                {"id": c["id"], "type": c["type"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                for c in m["tool_calls"]
            ]
        return out
    return dict(m)


def rollout_trace(sample):
    """The trace a rollout of this sample records: its turns a chain of nodes, the
    model's (the assistant turns after the last user turn) sampled."""
    if "messages" in sample:
        messages = sample["messages"]
    else:
        messages = [{"role": "user", "content": sample["prompt"]}, {"role": "assistant", "content": sample["completion"]}]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    fields = {"answer": sample["answer"]}
    prompt = messages[: last_user + 1]
    if prompt[0]["role"] == "system":
        fields["system_prompt"] = prompt[0]["content"]
        prompt = prompt[1:]
    fields["prompt"] = prompt[0]["content"] if len(prompt) == 1 else prompt
    data = tasks.QAData(**fields)
    task = tasks.QATask(data, config)
    nodes = [
        {"parent": n - 1 if n else None, "message": vf_message(m), "sampled": n > last_user and m["role"] == "assistant"}
        for n, m in enumerate(messages)
    ]
    trace = vf.Trace(
        task=vf.TraceTask(type="QATask", data=data, key=task.key, hash=task.hash),
        state=state_cls(tasks.QATask)(),
        agent=vf.AgentInfo(config=vf.AgentConfig(model="m")),
        nodes=nodes,
        is_completed=True,
        ok=True,
        stop_condition="agent_completed",
    )
    return task, trace


def recorded(trace):
    return {
        "reward": float(trace.reward),
        "rewards": [[k, None if r is None else r.score] for k, r in trace.rewards.items()],
        "metrics": [[k, v] for k, v in trace.metrics.items()],
    }


async def scored(task, trace):
    try:
        await task.score(trace)
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    return recorded(trace)


async def main():
    samples = [json.loads(line) for line in open("chat.jsonl") if line.strip()]
    out_rows, expected = [], []
    built = []
    for sample in samples:
        task, trace = rollout_trace(sample)
        built.append(trace.model_copy(deep=True))
        out_rows.append(sample)
        expected.append(await scored(task, trace))

    # saved traces: the first three as a live run recorded them (with the runtime
    # reward and stale values the replay must clear), and one failed rollout
    saved = []
    for n in (0, 1, 2):
        trace = built[n].model_copy(deep=True)
        trace.rewards = {"executes": vf.Reward(score=1.0, weight=1.0), "correct": vf.Reward(score=0.0, weight=9.0)}
        trace.metrics = {"turns": 99.0}
        saved.append((n, trace))
    failed = built[0].model_copy(deep=True)
    failed.rewards = {"correct": None, "brevity": None}
    failed.stop_condition = None  # a rollout that failed before its agent completed
    failed.record_error(vf.TaskError("task QATask scoring: RuntimeError: sandbox gone"))
    saved.append((0, failed))
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for _, trace in saved:
            write_episode(folder, Episode(env=EnvInfo(id="qa"), task=trace.task, traces=[trace], ok=trace.ok))
        lines = [json.loads(line) for line in (folder / "traces.jsonl").read_text().splitlines()]
        # vf-replay's rescore (cli/replay.py): read, rebuild the row, skip a failed
        # rollout, clear, score with no runtime
        task_cls = tasks.QATask
        data_cls = task_cls.data_type()
        episodes = read_episodes(folder, vf.Trace[WireTaskData, state_cls(task_cls), WireAgentConfig])
        for (n, _), line, episode in zip(saved, lines, episodes):
            row = dict(samples[n])
            row["trace"] = line["traces"][0]
            row["task_data"] = line["task"]["data"]
            out_rows.append(row)
            trace = episode.traces[0].model_copy(deep=True)
            data = data_cls.model_validate(trace.task.data.model_dump())
            if trace.has_error:
                expected.append({"skipped": True, "logged": float(trace.reward)})
                continue
            trace.info.pop("judge_calls", None)
            trace.rewards, trace.metrics, trace.extra_usage = {}, {}, []
            expected.append(await scored(task_cls(data, config=config), trace))

    with open("samples.jsonl", "w") as f:
        for row in out_rows:
            f.write(json.dumps(row) + "\n")
    for item in expected:
        print(json.dumps(item))


asyncio.run(main())
"#####;

/// The Python RWB_VERIFIERS_PYTHON names, checked to import verifiers 1.x; None
/// (the test is skipped, with a word) when it is not set.
fn verifiers_python() -> Option<String> {
    let Some(python) = std::env::var("RWB_VERIFIERS_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
    else {
        eprintln!(
            "skipped: set RWB_VERIFIERS_PYTHON to a Python with verifiers 0.4 (pip install verifiers==0.4.0) to run this test"
        );
        return None;
    };
    let check = Command::new(&python)
        .args([
            "-c",
            "import verifiers, verifiers.v1; print(verifiers.__version__)",
        ])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap_or_else(|e| panic!("RWB_VERIFIERS_PYTHON={python} does not run: {e}"));
    assert!(
        check.status.success(),
        "RWB_VERIFIERS_PYTHON={python} cannot import verifiers.v1:\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
    Some(python)
}

fn workspace() -> Ws {
    let toml = format!(
        "samples = [\"samples.jsonl\"]\n[evaluators.qa]\nfunction = \"tasks.py::QATask\"\ntrainer_args = {}\n",
        toml_inline(&serde_json::from_str(TRAINER_ARGS).unwrap())
    );
    Ws::new(&[
        ("tasks.py", TASKS),
        ("expected.py", EXPECTED),
        ("chat.jsonl", CHAT),
        ("rwb.toml", &toml),
    ])
}

/// A JSON object as a TOML inline table.
fn toml_inline(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k} = {}", toml_inline(v)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// What verifiers records for each line of samples.jsonl (which the script writes).
fn expected(ws: &Ws, python: &str) -> Vec<Value> {
    script_lines(ws, python, &["expected.py", TRAINER_ARGS])
}

/// The JSON lines a Python script of the workspace prints (run in the workspace).
fn script_lines(ws: &Ws, python: &str, args: &[&str]) -> Vec<Value> {
    let mut command = Command::new(python);
    command
        .args(args)
        .current_dir(ws.path())
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = output_within(&mut command, RUN_LIMIT);
    assert!(
        out.status.success(),
        "{} failed:\n{}",
        args[0],
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", args[0])))
        .collect()
}

#[test]
fn every_row_scores_what_verifiers_task_score_records() {
    let Some(python) = verifiers_python() else {
        return;
    };
    let ws = workspace();
    let want = expected(&ws, &python);
    let chat_count = CHAT.lines().count();
    assert_eq!(want.len(), chat_count + 4, "{want:?}");
    let run = ws.run(&["--no-cache", "--python", &python]);
    // the sample whose reward raises fails its row (and the failed rollout is not scored)
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let mut scored = 0;
    for (sample, want) in want.iter().enumerate() {
        let row = run.row(sample as u64, "qa");
        let shown = format!("sample {sample}: row {row}\nverifiers: {want}");
        if want.get("skipped").is_some() {
            // vf-replay skips a failed rollout: rwb reports it as not scored, with what it logged
            assert!(row["score"].is_null(), "{shown}");
            assert_eq!(row["error"]["type"], "NotScored", "{shown}");
            let message = row["error"]["message"].as_str().unwrap();
            assert!(message.contains("ok: false"), "{shown}");
            assert!(message.contains("stop_condition task_error"), "{shown}");
            assert!(
                message.contains(&format!(
                    "logged reward {}",
                    want["logged"].as_f64().unwrap()
                )),
                "{shown}"
            );
            continue;
        }
        if let Some(kind) = want.get("error") {
            assert!(row["score"].is_null(), "{shown}");
            assert_eq!(&row["error"]["type"], kind, "{shown}");
            assert_eq!(row["error"]["message"], want["message"], "{shown}");
            continue;
        }
        scored += 1;
        let names = assert_as_recorded(&row, want, &shown);
        // the reward that needs a runtime is skipped offline, with a word
        assert!(!names.contains(&"executes".to_string()), "{shown}");
        let reason = row["reason"].as_str().unwrap_or("");
        assert!(
            reason.contains("skipped offline, no runtime: executes"),
            "{shown}"
        );
    }
    // the chat samples but the raising one, and the three saved traces that did not fail
    assert_eq!(scored, chat_count - 1 + 3);
    // the raising reward: verifiers' TaskError naming the underlying exception
    let raised = run.row(3, "qa");
    assert_eq!(raised["error"]["type"], "TaskError");
    assert_eq!(
        raised["error"]["message"],
        "task QATask scoring: ValueError: cannot grade '41'"
    );
    // reasoning_content is not the reply: "41" is graded, not the reasoning's 42
    assert_eq!(run.row(1, "qa")["metrics"]["correct"]["score"], 0.0);
    // the config came from trainer_args (the expected values used it too): correct
    // weighs 3 instead of its decorator's 2
    let first = run.row(0, "qa");
    assert_eq!(first["metrics"]["correct"]["reason"], "reward, weight 3");
}

/// Checks that `row` (rwb's) is what verifiers recorded (`want`: its `reward`, then
/// `rewards` and `metrics` as `[name, value]` pairs): the score is the reward, and every
/// reward (unweighted) and metric is a component, in verifiers' order. Returns the names.
fn assert_as_recorded(row: &Value, want: &Value, shown: &str) -> Vec<String> {
    assert!(row["error"].is_null(), "{shown}");
    assert_eq!(row["score"].as_f64(), want["reward"].as_f64(), "{shown}");
    let mut names = Vec::new();
    for pair in want["rewards"]
        .as_array()
        .unwrap()
        .iter()
        .chain(want["metrics"].as_array().unwrap())
    {
        let name = pair[0].as_str().unwrap();
        names.push(name.to_string());
        assert_eq!(row["metrics"][name]["score"], pair[1], "{name}: {shown}");
        assert_eq!(
            row["metrics"][name]["is_score_valid"],
            !pair[1].is_null(),
            "{shown}"
        );
    }
    let got: Vec<String> = row["metrics"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(got, names, "{shown}");
    names
}

/// A task graded on every reply the model generated: `each_turn` the share of turns
/// whose reply is the one expected there, `final` whether the reply (`last_reply`: the
/// root agent's `root_reply` when the trace has one) is the last one expected.
const TURNS_TASK: &str = r#####"
import verifiers.v1 as vf


class TurnsData(vf.TaskData):
    answer: str
    """The reply expected at each turn, comma-separated."""


class TurnsTask(vf.Task[TurnsData]):
    @vf.reward
    async def each_turn(self, trace) -> float:
        want = self.data.answer.split(",")
        got = [(m.content or "").strip() for m in trace.assistant_messages]
        return sum(g == w for g, w in zip(got, want)) / len(want)

    @vf.reward
    async def final(self, trace) -> float:
        return float(trace.last_reply == self.data.answer.split(",")[-1])

    @vf.metric
    async def turns(self, trace) -> float:
        return trace.num_turns
"#####;

/// Records three rollouts of TurnsTask with verifiers' own code, the way a live run
/// records them, and writes them with verifiers' traces.jsonl writer: each model call is
/// what the interception server (`verifiers/v1/interception/server.py`) makes of it, the
/// harness's request parsed by the chat dialect, resolved against the message graph
/// (`graph.prepare_turn`) and the model's completion committed as a sampled node, the
/// call recorded; the finished rollout is scored with `Task.score` (the logged values).
/// Two answer over two user turns (right twice; right, then wrong); in the third the
/// root agent delegates a check to a subagent (its own branch, linked by a semantic
/// edge as the ACP harness links it) whose unfinished text is the last sampled message,
/// while the agent's reply is `root_reply`, as the ACP harness records it. Then reads
/// the file back and re-scores each trace as vf-replay's `rescore` does, printing what
/// it records, one line per trace.
const TURNS_TRACES: &str = r#####"
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, ".")

import verifiers.v1 as vf
from verifiers.v1 import graph
from verifiers.v1.configs.agent import WireAgentConfig
from verifiers.v1.dialects.chat import ChatDialect
from verifiers.v1.episode import EnvInfo, Episode
from verifiers.v1.state import state_cls
from verifiers.v1.task import WireTaskData
from verifiers.v1.utils.trace_store import read_episodes, write_episode

import tasks

CHAT = ChatDialect()


class Rollout:
    def __init__(self, prompt, answer):
        data = tasks.TurnsData(prompt=prompt, answer=answer)
        self.task = tasks.TurnsTask(data)
        self.trace = vf.Trace(
            task=vf.TraceTask(type="TurnsTask", data=data, key=self.task.key, hash=self.task.hash),
            state=state_cls(tasks.TurnsTask)(),
            agent=vf.AgentInfo(config=vf.AgentConfig(model="stand-in")),
        )

    def call(self, messages, content, tool_calls=None, request_id=None):
        """One model call: the request's messages, the model's reply; returns the reply
        as the harness appends it to its conversation."""
        request = CHAT.parse_request({"model": "stand-in", "messages": messages})
        turn = graph.prepare_turn(self.trace, request.messages, request.tools)
        message = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        raw = {
            "id": "chatcmpl-%d" % len(self.trace.calls),
            "object": "chat.completion",
            "created": 1800000000,
            "model": "stand-in",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        }
        response = CHAT.parse_response(CHAT.validate_response(raw))
        node = turn.commit(response)
        self.trace.calls.append(
            vf.ModelCall(
                node=node,
                model="stand-in",
                endpoint=CHAT.upstream_path,
                finish_reason=response.finish_reason,
                acp=None if request_id is None else vf.ACPInfo(request_id=request_id),
            )
        )
        return message

    async def finish(self):
        self.trace.stop("agent_completed")
        self.trace.ok = True
        await self.task.score(self.trace)
        return self.trace


async def two_turns(first, second):
    rollout = Rollout("What is 6*7?", "42,84")
    messages = [{"role": "user", "content": "What is 6*7?"}]
    messages.append(rollout.call(messages, first))
    messages.append({"role": "user", "content": "And twice that?"})
    rollout.call(messages, second)
    return await rollout.finish()


async def delegated():
    rollout = Rollout("What is 6*7*2?", "84")
    root = [
        {"role": "system", "content": "Have a subagent check your arithmetic."},
        {"role": "user", "content": "What is 6*7*2?"},
    ]
    spawn = {"id": "call_1", "type": "function", "function": {"name": "spawn_checker", "arguments": "{\"task\": \"Check 6*7*2\"}"}}
    root.append(rollout.call(root, "", tool_calls=[spawn], request_id="root-1"))
    root.append({"role": "tool", "tool_call_id": "call_1", "content": "checker started"})
    rollout.call(root, "84", request_id="root-2")
    checker = [{"role": "system", "content": "You check arithmetic."}, {"role": "user", "content": "Check 6*7*2"}]
    rollout.call(checker, "Checking: 6*7 = 42, and 42*2 ...", request_id="sub-1")
    edges = [vf.SemanticEdge(source_request_id="root-1", target_request_id="sub-1", type="subagent_call")]
    rollout.trace.add_semantic_edges(vf.SemanticEdgeSet(edges=edges))
    # what the ACP harness records as the agent's reply to the turn
    rollout.trace.root_reply = "84\n".strip()
    return await rollout.finish()


async def main():
    traces = [await two_turns("42", "84"), await two_turns("42", "85"), await delegated()]
    folder = Path(".")
    for trace in traces:
        write_episode(folder, Episode(env=EnvInfo(id="turns"), task=trace.task, traces=[trace], ok=trace.ok))
    data_cls = tasks.TurnsTask.data_type()
    episodes = read_episodes(folder, vf.Trace[WireTaskData, state_cls(tasks.TurnsTask), WireAgentConfig])
    for live, episode in zip(traces, episodes):
        trace = episode.traces[0].model_copy(deep=True)
        row = data_cls.model_validate(trace.task.data.model_dump())
        trace.info.pop("judge_calls", None)
        trace.rewards, trace.metrics, trace.extra_usage = {}, {}, []
        await tasks.TurnsTask(row).score(trace)
        print(json.dumps({
            "reward": float(trace.reward),
            "rewards": [[k, None if r is None else r.score] for k, r in trace.rewards.items()],
            "metrics": [[k, v] for k, v in trace.metrics.items()],
            "logged": float(live.reward),
            "last_reply": trace.last_reply,
        }))


asyncio.run(main())
"#####;

/// A row of traces.jsonl is scored on its trace as written (SPEC §3, "verifiers 1.x":
/// "the trace is the row's single trace as written in traces.jsonl"), not on the chat
/// made of its final branch: every turn the model generated counts (a reply before a
/// later user turn too), and a delegated agent's reply is its `root_reply`, not the last
/// sampled text. rwb's rows are what verifiers' own `Task.score` records for the traces
/// verifiers wrote, read straight from the file.
#[test]
fn a_traces_jsonl_row_is_scored_on_its_trace_as_written() {
    let Some(python) = verifiers_python() else {
        return;
    };
    let ws = Ws::new(&[
        ("tasks.py", TURNS_TASK),
        ("traces.py", TURNS_TRACES),
        (
            "rwb.toml",
            "samples = [\"traces.jsonl\"]\n[evaluators.vf]\nfunction = \"tasks.py::TurnsTask\"\nlogged = \"reward\"\n",
        ),
    ]);
    let want = script_lines(&ws, &python, &["traces.py"]);
    assert_eq!(want.len(), 3, "{want:?}");
    // the traces are what they are meant to be: two generated turns each, both graded;
    // a delegated reply that is the root agent's and not the last sampled message
    let turns = |w: &Value| w["metrics"][0].clone();
    assert_eq!(turns(&want[0]), serde_json::json!(["turns", 2.0]));
    assert_eq!(want[0]["reward"], 2.0);
    assert_eq!(want[1]["reward"], 0.5);
    assert_eq!(turns(&want[2]), serde_json::json!(["turns", 3.0]));
    assert_eq!(want[2]["last_reply"], "84");
    assert_eq!(want[2]["reward"], 1.0);
    let run = ws.run(&["--no-cache", "--python", &python]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // every row at once first (the chat of the final branch scores 1, 0 and 0 here)
    let scores: Vec<Value> = (0..want.len())
        .map(|n| run.row(n as u64, "vf")["score"].clone())
        .collect();
    let rewards: Vec<Value> = want.iter().map(|w| w["reward"].clone()).collect();
    assert_eq!(scores, rewards, "{}", run.stdout);
    for (sample, want) in want.iter().enumerate() {
        let row = run.row(sample as u64, "vf");
        let shown = format!("sample {sample}: row {row}\nverifiers: {want}");
        assert_as_recorded(&row, want, &shown);
        // and what the live run logged (no reward here needs a runtime)
        assert_eq!(row["logged_score"], want["logged"], "{shown}");
    }
    assert!(
        run.stderr
            .contains("\nvf (logged as reward): 0 of 3 rollouts score differently than logged; 0 flip across 0.5\n"),
        "{}",
        run.stderr
    );
}
