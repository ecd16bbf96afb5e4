//! verifiers' saved evaluations: `results.jsonl` (beside a `metadata.json`), and the
//! newer `traces.jsonl` of verifiers' v1 runs.
//!
//! `results.jsonl`: facts from `make_dataset` and `save_to_disk` in verifiers 0.1.9's
//! `verifiers/utils/eval_utils.py` (the wheel on PyPI): a Hugging Face
//! `Dataset.to_json` of the columns `example_id`, `prompt` and `completion`
//! (message lists, or text for completion environments), `task`, `reward`, `error`,
//! `generation_ms`, `scoring_ms`, `total_ms`, then `info` and `answer` only when
//! some row has one, then one column per reward function and metric (the rubric's
//! `metrics`), then any state columns asked for. A row is already a prompt and
//! completion sample (a chat one, `messages`, when both are message lists, with
//! `prompt` and `completion` kept as columns); `reward` and the metric columns are what was logged, and the
//! rollouts of one example (`example_id`) are a group.
//!
//! `traces.jsonl`: one v1 `Episode` per line, appended as each finishes with
//! `type_adapter(type(episode)).dump_json(episode, exclude_none=True)` (`write_episode`,
//! `verifiers/v1/cli/output.py` at PrimeIntellect-ai/verifiers a60a606e;
//! `verifiers/v1/utils/trace_store.py` in the 0.4.0 wheel; models in
//! `verifiers/v1/episode.py`, `trace.py`, `graph.py`). An episode holds its `task`
//! (`type`, the taskset's row as `data`, a stable `key`), an optional `group` and `run`
//! (a training run's `work.step`), `errors`, and `traces`: one per agent, each with
//! `nodes` (messages in a graph: each names its `parent`; `sampled` marks what the model
//! generated), `rewards` (`{name: {score, weight}}`), `metrics` (`{name: number}`) and
//! its own `errors`. Each trace is a sample (an episode of several agents is several
//! rows, each placed at the episode's line as far as rows' increasing numbers allow:
//! see `at_line`): the final branch's messages (the last leaf's path,
//! as `Trace.messages` takes it) up to its last sampled message (the completion) in
//! chat form, `prompt` and `completion` (before it, and it) kept as columns, the turns
//! after it (a tool result a `@stop` ended on) as `observations`, `answer` and `info`
//! from the task's data and the whole data as `task_data`, and the trace itself as
//! written as `trace` (what a verifiers Task scores: every generated turn, `root_reply`,
//! the whole graph); the reward (`Trace.reward`: the weighted sum of the rewards), each
//! reward's score and each metric are logged; the group is the episode's group, else
//! the task's key. An episode with no trace (a failed rollout) holds no sample and gives
//! no row; its line stays unused, so the episodes after it keep theirs.
//!
//! prime-rl writes the same records: `{output_dir}/rollouts/step_{N}/{train|eval}/
//! {all|effective}/traces.jsonl` (PrimeIntellect-ai/prime-rl@559b4477
//! `src/prime_rl/monitors/file.py:43-57`: `FileMonitor.log_episodes`, one
//! `orjson.dumps(episode.to_record())` a line, appended; `all` as each episode
//! arrives, failures included, `effective` the trained-on subset at batch end;
//! `Episode.to_record` is `model_dump(mode="json", exclude_none=True)`,
//! PrimeIntellect-ai/verifiers@a60a606e `verifiers/v1/episode.py:149-155`). The step is
//! `run.work.step` (the step it was dispatched at: off-policy rollouts land in a later
//! `step_{N}` folder), the split `run.work.type`, and `run.work.policy` a column.

use super::{dotted, json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{Map, Value};
use std::path::Path;

/// Numeric columns that are timings and counts, not scores.
const NOT_SCORES: &[&str] = &[
    "example_id",
    "generation_ms",
    "scoring_ms",
    "total_ms",
    "num_turns",
];

pub struct Verifiers;

impl Format for Verifiers {
    fn name(&self) -> &'static str {
        "verifiers results"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl
            && peek.has_all(&["prompt", "completion", "reward"])
            && (peek.has("example_id") || peek.file_name() == "results.jsonl")
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let paths = options.logged_paths.clone();
        json_rows::map_lines(path, move |line, object| row(line, object, &paths))
    }
}

/// verifiers v1's `traces.jsonl`.
pub struct VerifiersTraces;

impl Format for VerifiersTraces {
    fn name(&self) -> &'static str {
        "verifiers traces"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl && peek.has_all(&["traces", "task", "env"])
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let paths = options.logged_paths.clone();
        let shown = path.display().to_string();
        let lines = json_rows::JsonLines::open(path)?;
        // each row is placed at its episode's line (see [`at_line`])
        let mut number = 0;
        Ok(Box::new(lines.flat_map(move |line| {
            let (n, rows) = match line {
                Ok((n, Ok(episode))) => (n, episode_rows(n, &Value::Object(episode), &paths)),
                Ok((n, Err(why))) => (n, vec![json_rows::bad_row(0, &format!("line {n}: {why}"))]),
                Err(e) => return vec![Err(format!("cannot read {shown}: {e}"))],
            };
            at_line(rows, n, &mut number)
        })))
    }
}

/// The rows of the episode on line `line`, numbered: each at the episode's line, or
/// the next number free when a row before it holds that one (a second trace of the
/// episode, or a row after such a trace). Rows must be numbered in increasing order
/// (row N is line N of the row file), so a second trace cannot share its episode's
/// line: it names it in what it says when it is no sample ([`episode_rows`]). An
/// episode of one trace is at its own line unless an episode of several before it
/// still holds that number; a failed episode (no row) or a blank line leaves its
/// number unused (a blank line of the row file), so a failed episode moves none after
/// it. The numbers depend only on the lines before: appending episodes moves none.
fn at_line(rows: Vec<Row>, line: usize, last: &mut usize) -> Vec<Result<Row, String>> {
    rows.into_iter()
        .map(|mut row| {
            // a skipped episode (no row of the row file) takes no number
            if row.facts.skipped.is_none() {
                *last = line.max(*last + 1);
            }
            row.line = line.max(*last);
            Ok(row)
        })
        .collect()
}

/// The rows of the episode on line `line`: one per trace; an episode that ended
/// before any trace (a failed rollout: prime-rl keeps episode-level failures in
/// `all`) holds no sample and gives none (SPEC §13: skipped, not a bad row). A trace
/// that is no sample names the episode's line (its row's number may be later, after
/// an episode of several traces) and, of several, which trace it is.
fn episode_rows(line: usize, episode: &Value, paths: &[String]) -> Vec<Row> {
    let traces = episode["traces"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if traces.is_empty() {
        // skipped, with why (the episode's last error, when it kept one)
        let why = match last_error(episode) {
            Some(e) => format!("line {line}: a failed episode, no trace ({e})"),
            None => format!("line {line}: an episode with no trace"),
        };
        let facts = Facts {
            skipped: Some(why),
            ..Default::default()
        };
        return vec![Row {
            line,
            sample: String::new(),
            facts,
            bad: None,
        }];
    }
    let several = traces.len() > 1;
    traces
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut row = trace_row(episode, t, paths);
            if let Some(why) = &mut row.bad {
                *why = match several {
                    true => format!("line {line}, trace {} of {}: {why}", i + 1, traces.len()),
                    false => format!("line {line}: {why}"),
                };
            }
            row
        })
        .collect()
}

/// `type: message` of the last of a trace's or episode's `errors`.
fn last_error(of: &Value) -> Option<String> {
    let e = of["errors"].as_array()?.last()?;
    Some(format!(
        "{}: {}",
        e["type"].as_str().unwrap_or("Error"),
        e["message"].as_str().unwrap_or("")
    ))
}

/// The messages of a trace's final branch (the path from the root to its last leaf,
/// as verifiers' `Trace.messages`), and where its last sampled one is (the
/// completion: the turns after it, such as a tool result a `@stop` ended on, are
/// observations).
fn final_branch(nodes: &[Value]) -> (Vec<Value>, usize) {
    let parent = |i: usize| nodes[i]["parent"].as_u64().map(|p| p as usize);
    let has_child: std::collections::HashSet<usize> = (0..nodes.len()).filter_map(parent).collect();
    let Some(leaf) = (0..nodes.len()).rev().find(|i| !has_child.contains(i)) else {
        return (Vec::new(), 0);
    };
    let mut path = vec![leaf];
    let mut at = leaf;
    // a parent out of range or a cycle ends the walk
    while let Some(p) = parent(at).filter(|&p| p < nodes.len() && path.len() <= nodes.len()) {
        path.push(p);
        at = p;
    }
    path.reverse();
    let last_sampled = path
        .iter()
        .rposition(|&i| nodes[i]["sampled"] == Value::Bool(true))
        .unwrap_or(path.len());
    let messages = path.iter().map(|&i| nodes[i]["message"].clone()).collect();
    (messages, last_sampled)
}

/// The `trace` column: the trace as the file holds it, every node of its message graph
/// (all branches, `sampled` flags, semantic links), `root_reply` and the rest, so that
/// a verifiers Task scores the trace itself, as `vf-replay` does, and not the chat made
/// of its final branch (SPEC §3, "verifiers 1.x"). A trace written without its own
/// `task` takes the episode's.
fn trace_as_written(episode: &Value, trace: &Value) -> Value {
    let mut whole = trace.clone();
    if let (Value::Object(fields), Some(task)) = (&mut whole, episode.get("task")) {
        if fields.get("task").is_none_or(Value::is_null) {
            fields.insert("task".into(), task.clone());
        }
    }
    whole
}

fn trace_row(episode: &Value, trace: &Value, paths: &[String]) -> Row {
    let mut facts = Facts::default();
    json_rows::add_logged_paths(trace, paths, &mut facts);
    let nodes = trace["nodes"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let (messages, cut) = final_branch(nodes);
    if messages.is_empty() {
        let why = match last_error(trace).or_else(|| last_error(episode)) {
            Some(e) => format!("the trace has no messages: {e}"),
            None => "the trace has no messages".to_string(),
        };
        return json_rows::bad_row(0, &why);
    }
    let data = &trace["task"]["data"];
    let data = if data.is_object() {
        data
    } else {
        &episode["task"]["data"]
    };
    let end = (cut + 1).min(messages.len());
    let mut sample = Map::new();
    sample.insert("messages".into(), Value::Array(messages[..end].to_vec()));
    sample.insert(
        "prompt".into(),
        Value::Array(messages[..cut.min(end)].to_vec()),
    );
    sample.insert(
        "completion".into(),
        Value::Array(messages[cut.min(end)..end].to_vec()),
    );
    if end < messages.len() {
        sample.insert(
            "observations".into(),
            Value::Array(messages[end..].to_vec()),
        );
    }
    for key in ["answer", "info"] {
        if let Some(v) = data.get(key) {
            sample.insert(key.into(), v.clone());
        }
    }
    if data.is_object() {
        sample.insert("task_data".into(), data.clone());
    }
    if let Some(name) = trace["agent"]["name"].as_str() {
        sample.insert("agent".into(), Value::String(name.into()));
    }
    for key in ["stop_condition"] {
        if let Some(v) = trace.get(key) {
            sample.insert(key.into(), v.clone());
        }
    }
    if let Some(policy) = dotted(episode, "run.work.policy") {
        sample.insert("policy".into(), policy.clone()); // prime-rl: the versions that sampled it
    }
    sample.insert(
        "error".into(),
        last_error(trace).map_or(Value::Null, Value::String),
    );
    sample.insert("trace".into(), trace_as_written(episode, trace));
    // the logged scores: the reward as verifiers sums it, then each reward and metric
    let rewards = trace["rewards"].as_object();
    let reward: f64 = rewards
        .into_iter()
        .flatten()
        .filter_map(|(_, r)| {
            let score = r["score"].as_f64()?;
            Some(score * r["weight"].as_f64().unwrap_or(1.0))
        })
        .sum();
    facts
        .logged
        .push(("reward".into(), Logged::Score(Some(reward))));
    for (name, r) in rewards.into_iter().flatten() {
        let score = if r.is_null() {
            &Value::Null
        } else {
            &r["score"]
        };
        facts.logged.push((name.clone(), Logged::of_json(score)));
    }
    for (name, m) in trace["metrics"].as_object().into_iter().flatten() {
        if facts.logged(name).is_none() {
            facts.logged.push((name.clone(), Logged::of_json(m)));
        }
    }
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    facts.group = dotted(episode, "group.id")
        .or_else(|| episode["task"].get("key"))
        .or_else(|| data.get("idx"))
        .filter(|v| !v.is_null())
        .map(text);
    facts.step = dotted(episode, "run.work.step").and_then(Value::as_i64);
    facts.split = dotted(episode, "run.work.type")
        .or_else(|| dotted(episode, "run.type"))
        .and_then(Value::as_str)
        .map(str::to_string);
    json_rows::row(0, sample, facts, &Default::default())
}

fn row(line: usize, object: Map<String, Value>, paths: &[String]) -> Row {
    let mut facts = Facts::default();
    json_rows::add_logged_paths(&Value::Object(object.clone()), paths, &mut facts);
    let mut sample = Map::new();
    // a chat rollout is in chat form (SPEC §3): the prompt's turns then the
    // completion's, with `prompt` and `completion` kept as columns
    if let (Some(Value::Array(p)), Some(Value::Array(c))) =
        (object.get("prompt"), object.get("completion"))
    {
        let turns: Vec<Value> = p.iter().chain(c).cloned().collect();
        sample.insert("messages".into(), Value::Array(turns));
    }
    for (key, value) in object {
        let score = !NOT_SCORES.contains(&key.as_str())
            && (value.is_number() || (key == "reward" && value.is_null()));
        if key == "example_id" {
            facts.group = Some(match &value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        }
        if score {
            facts.logged.push((key, Logged::of_json(&value)));
        } else {
            sample.insert(key, value);
        }
    }
    json_rows::row(line, sample, facts, &Default::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_keeps_its_conversation_and_logs_reward_and_metrics() {
        let text = r#"{"example_id": 2, "prompt": [{"role": "user", "content": "2+2?"}], "completion": [{"role": "assistant", "content": "4"}], "task": "default", "reward": 1.0, "error": null, "generation_ms": 5.0, "scoring_ms": 1.0, "total_ms": 6.0, "answer": "4", "correct_answer_reward_func": 1.0, "num_turns": 1}"#;
        let Value::Object(object) = json_rows::parse(text).unwrap() else {
            panic!()
        };
        let row = row(1, object, &[]);
        assert_eq!(
            row.sample,
            r#"{"messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"4"}],"example_id":2,"prompt":[{"role":"user","content":"2+2?"}],"completion":[{"role":"assistant","content":"4"}],"task":"default","error":null,"generation_ms":5.0,"scoring_ms":1.0,"total_ms":6.0,"answer":"4","num_turns":1}"#
        );
        assert_eq!(row.facts.group.as_deref(), Some("2"));
        assert_eq!(
            row.facts.logged,
            vec![
                ("reward".to_string(), Logged::Score(Some(1.0))),
                (
                    "correct_answer_reward_func".to_string(),
                    Logged::Score(Some(1.0))
                ),
            ]
        );
    }

    #[test]
    fn a_trace_row_carries_its_trace_as_written() {
        // two user turns, each answered; a root reply; a trace without its own task
        let node = |parent: Value, role: &str, content: &str, sampled: bool| {
            let message = serde_json::json!({"role": role, "content": content});
            serde_json::json!({"parent": parent, "message": message, "sampled": sampled})
        };
        let trace = serde_json::json!({
            "agent": {"config": {}, "name": "agent"},
            "nodes": [
                node(Value::Null, "user", "6*7?", false),
                node(0.into(), "assistant", "42", true),
                node(1.into(), "user", "twice?", false),
                node(2.into(), "assistant", "84", true),
            ],
            "root_reply": "84",
            "rewards": {},
            "ok": true
        });
        let task = serde_json::json!({"type": "T", "data": {"answer": "84"}, "key": "k"});
        let episode = serde_json::json!({"env": {"id": "e"}, "task": task, "traces": [trace]});
        let rows = episode_rows(1, &episode, &[]);
        let sample: Value = serde_json::from_str(&rows[0].sample).unwrap();
        // the chat form keeps only the last reply as the completion ...
        assert_eq!(
            sample["completion"],
            serde_json::json!([{"role": "assistant", "content": "84"}])
        );
        // ... the trace column is the whole trace, the episode's task filled in
        let mut whole = trace.clone();
        whole["task"] = task;
        assert_eq!(sample["trace"], whole);
    }

    /// An episode line of `traces` traces (each one user turn and a sampled reply;
    /// `empty` ones have no messages), failed (with an error) when it has none.
    fn episode_line(n: usize, traces: usize, empty: usize) -> String {
        let node = |parent: Value, role: &str, content: String, sampled: bool| serde_json::json!({"parent": parent, "message": {"role": role, "content": content}, "sampled": sampled});
        let trace = |t: usize| {
            let nodes = match t < traces - empty {
                true => vec![
                    node(Value::Null, "user", format!("q{n}"), false),
                    node(0.into(), "assistant", format!("a{n}.{t}"), true),
                ],
                false => vec![],
            };
            serde_json::json!({"nodes": nodes, "rewards": {}, "errors": [{"type": "ProviderError", "message": "down"}]})
        };
        let errors = match traces {
            0 => serde_json::json!([{"type": "SandboxError", "message": "no box"}]),
            _ => serde_json::json!([]),
        };
        serde_json::json!({"env": {"id": "e"}, "task": {"type": "T", "data": {}, "key": format!("k{n}")},
                           "errors": errors, "traces": (0..traces).map(trace).collect::<Vec<_>>()})
        .to_string()
    }

    /// The rows of a traces file of `lines`, and why each skipped episode was.
    fn rows_and_skipped(lines: &[String]) -> (Vec<Row>, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("traces.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let (skipped, rows): (Vec<Row>, Vec<Row>) = VerifiersTraces
            .open(&path, &Options::default())
            .unwrap()
            .map(Result::unwrap)
            .partition(|r| r.facts.skipped.is_some());
        let why = skipped
            .into_iter()
            .filter_map(|r| r.facts.skipped)
            .collect();
        (rows, why)
    }

    fn rows_of(lines: &[String]) -> Vec<Row> {
        rows_and_skipped(lines).0
    }

    #[test]
    fn an_episode_after_a_failed_one_or_a_blank_line_keeps_its_line() {
        let lines = [
            episode_line(1, 1, 0),
            episode_line(2, 0, 0), // failed: no trace, no row
            episode_line(3, 1, 0),
            String::new(),
            episode_line(5, 1, 0),
        ];
        let (rows, skipped) = rows_and_skipped(&lines);
        assert_eq!(rows.iter().map(|r| r.line).collect::<Vec<_>>(), [1, 3, 5]);
        assert!(rows.iter().all(|r| r.bad.is_none()), "{rows:?}");
        // the failed one is skipped, with its line and its error: no sample, no bad row
        assert_eq!(
            skipped,
            ["line 2: a failed episode, no trace (SandboxError: no box)"]
        );
    }

    #[test]
    fn the_traces_of_an_episode_take_its_line_and_the_numbers_after_it() {
        // two traces on line 1 need two numbers: the second takes 2, and the episode
        // on line 2 the next free; the failed one on line 3 gives the numbers back
        let lines = [
            episode_line(1, 2, 0),
            episode_line(2, 1, 0),
            episode_line(3, 0, 0),
            episode_line(4, 1, 0),
            "not json".to_string(),
            episode_line(6, 2, 1),
        ];
        let rows = rows_of(&lines);
        let lines: Vec<usize> = rows.iter().map(|r| r.line).collect();
        assert_eq!(lines, [1, 2, 3, 4, 5, 6, 7]);
        let completion = |r: &Row| {
            serde_json::from_str::<Value>(&r.sample).unwrap()["completion"][0]["content"].clone()
        };
        assert_eq!(completion(&rows[0]), "a1.0");
        assert_eq!(completion(&rows[1]), "a1.1");
        assert_eq!(completion(&rows[2]), "a2.0");
        assert_eq!(completion(&rows[3]), "a4.0");
        assert!(rows[4]
            .bad
            .as_deref()
            .unwrap()
            .starts_with("line 5: not JSON"));
        // a trace that is no sample names its episode's line, and which trace it is
        assert_eq!(completion(&rows[5]), "a6.0");
        assert_eq!(
            rows[6].bad.as_deref(),
            Some("line 6, trace 2 of 2: the trace has no messages: ProviderError: down")
        );
    }
}
