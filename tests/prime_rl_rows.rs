//! Where the samples of a prime-rl (verifiers 1.x) `traces.jsonl` are shown (SPEC §13:
//! a sample's place is FILE:LINE of its source): each trace at its episode's line, a
//! failed episode (no trace: prime-rl keeps episode-level failures in `all`) giving no
//! sample, moving no episode after it, and counted and named as skipped (not a bad
//! row), with the real `rwb` run on a workspace.

mod common;

use common::{rwb, Run, Ws};
use serde_json::{json, Value};

/// An exact-answer evaluator: the last reply against the task's answer.
const EXACT: &str = r#"
def evaluate(messages, answer=None, **kwargs):
    return {"score": float(messages[-1]["content"].strip() == str(answer))}
"#;

/// A trace of `agent`: the user's question and the model's reply.
fn trace(agent: &str, question: &str, reply: &str, reward: f64) -> Value {
    let node = |parent: Value, role: &str, content: &str, sampled: bool| {
        json!({"parent": parent, "message": {"role": role, "content": content}, "sampled": sampled,
               "timestamp": 1.0, "token_ids": [], "mask": []})
    };
    json!({"version": 1, "id": format!("t-{agent}"),
           "agent": {"config": {}, "name": agent, "trainable": true},
           "nodes": [node(Value::Null, "user", question, false), node(json!(0), "assistant", reply, true)],
           "rewards": {"correct": {"score": reward, "weight": 1.0}}, "metrics": {}, "errors": [],
           "stop_condition": "done", "ok": true})
}

/// An episode as prime-rl writes it (`Episode.to_record()`): failed, with its errors,
/// when it has no trace.
fn episode(n: usize, answer: &str, traces: Vec<Value>) -> String {
    let errors = match traces.is_empty() {
        true => json!([{"type": "SandboxError", "message": "sandbox creation failed"},
                       {"type": "SandboxError", "message": "no box"}]),
        false => json!([]),
    };
    json!({"id": format!("e{n}"), "env": {"id": "math"},
           "task": {"type": "MathTask", "data": {"question": "q", "answer": answer}, "key": format!("k{n}")},
           "group": {"id": format!("g{n}")},
           "run": {"type": "train", "id": "r", "name": "n", "work": {"type": "train", "step": 4, "policy": {"start": 3, "end": 3}}},
           "ok": !traces.is_empty(), "errors": errors, "traces": traces})
    .to_string()
}

fn lines(episodes: &[String]) -> String {
    episodes.iter().map(|e| format!("{e}\n")).collect()
}

/// `rwb run WS -s SOURCE --format json` (with the cache: a second run reads the row
/// file), its results' (file, line, score) in sample order.
fn placed(ws: &Ws, source: &str) -> (Run, Vec<(String, u64, Value)>) {
    let dir = ws.path().to_str().unwrap();
    let run = rwb(&["run", dir, "-s", source, "--format", "json"], ws.path());
    let out: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", run.stdout, run.stderr));
    let results = out["results"].as_array().expect("results");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["sample"], i as u64, "{r}");
    }
    let placed = results
        .iter()
        .map(|r| {
            let file = r["file"].as_str().unwrap().to_string();
            (file, r["line"].as_u64().unwrap(), r["score"].clone())
        })
        .collect();
    (run, placed)
}

fn at(file: &str, line: u64, score: f64) -> (String, u64, Value) {
    (file.to_string(), line, json!(score))
}

#[test]
fn a_sample_after_a_failed_episode_is_shown_at_its_own_line() {
    let ws = Ws::new(&[("metrics/exact/main.py", EXACT)]);
    ws.write(
        "traces.jsonl",
        &lines(&[
            episode(1, "4", vec![trace("solver", "2+2?", "4", 1.0)]),
            episode(2, "6", vec![]),
            episode(3, "9", vec![trace("solver", "3*3?", "8", 0.0)]),
        ]),
    );
    let want = [at("traces.jsonl", 1, 1.0), at("traces.jsonl", 3, 0.0)];
    // a cold run (the row file written), a warm one (read from it): the same places,
    // and the failed episode counted and named, as no bad row (exit 0)
    let failed = "traces.jsonl: line 2: a failed episode, no trace (SandboxError: no box)";
    for pass in ["cold", "warm"] {
        let (run, got) = placed(&ws, "traces.jsonl");
        assert_eq!(run.code, 0, "{pass}: {}", run.stderr);
        assert_eq!(got, want, "{pass}: {}", run.stderr);
        assert!(
            run.stderr.contains("rwb: 1 row skipped: no sample in them")
                && run.stderr.contains(&format!("  {failed}\n")),
            "{pass}: {}",
            run.stderr
        );
    }
    // prime-rl appends: the episodes already there keep their places
    let mut more = std::fs::read_to_string(ws.file("traces.jsonl")).unwrap();
    more += &lines(&[
        episode(4, "1", vec![]),
        episode(5, "2", vec![trace("solver", "1+1?", "2", 1.0)]),
    ]);
    ws.write("traces.jsonl", &more);
    let (run, got) = placed(&ws, "traces.jsonl");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        got,
        [
            at("traces.jsonl", 1, 1.0),
            at("traces.jsonl", 3, 0.0),
            at("traces.jsonl", 5, 1.0)
        ]
    );
    assert!(
        run.stderr.contains("rwb: 2 rows skipped")
            && run.stderr.contains(failed)
            && run
                .stderr
                .contains("traces.jsonl: line 4: a failed episode"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_traces_of_one_episode_are_distinct_samples_and_later_episodes_stay_in_order() {
    let ws = Ws::new(&[("metrics/exact/main.py", EXACT)]);
    ws.write(
        "traces.jsonl",
        &lines(&[
            // two agents: two samples of one episode, the first at the episode's line
            episode(
                1,
                "4",
                vec![
                    trace("solver", "2+2?", "4", 1.0),
                    trace("checker", "2+2?", "5", 0.0),
                ],
            ),
            episode(2, "6", vec![]),
            episode(3, "9", vec![trace("solver", "3*3?", "8", 0.0)]),
        ]),
    );
    for pass in ["cold", "warm"] {
        let (run, got) = placed(&ws, "traces.jsonl");
        assert_eq!(run.code, 0, "{pass}: {}", run.stderr);
        // rows are numbered in increasing order: the second trace takes the number
        // after its episode's, which the failed episode on line 2 leaves free, so the
        // episode on line 3 is still at line 3
        assert_eq!(
            got,
            [
                at("traces.jsonl", 1, 1.0),
                at("traces.jsonl", 2, 0.0),
                at("traces.jsonl", 3, 0.0)
            ],
            "{pass}: {}",
            run.stderr
        );
    }
}

#[test]
fn in_a_prime_rl_rollouts_folder_each_file_s_samples_keep_their_lines() {
    let ws = Ws::new(&[("metrics/exact/main.py", EXACT)]);
    for step in [1, 2] {
        ws.write(
            &format!("rollouts/step_{step}/train/all/traces.jsonl"),
            &lines(&[
                episode(1, "6", vec![]),
                episode(2, "4", vec![trace("solver", "2+2?", "4", 1.0)]),
                episode(3, "6", vec![]),
                episode(4, "9", vec![trace("solver", "3*3?", "8", 0.0)]),
            ]),
        );
    }
    for pass in ["cold", "warm"] {
        let (run, got) = placed(&ws, "rollouts/");
        assert_eq!(run.code, 0, "{pass}: {}", run.stderr);
        let one = "rollouts/step_1/train/all/traces.jsonl";
        let two = "rollouts/step_2/train/all/traces.jsonl";
        assert_eq!(
            got,
            [
                at(one, 2, 1.0),
                at(one, 4, 0.0),
                at(two, 2, 1.0),
                at(two, 4, 0.0)
            ],
            "{pass}: {}",
            run.stderr
        );
        // each failed episode named by its own file and line
        assert!(
            run.stderr.contains("rwb: 4 rows skipped"),
            "{pass}: {}",
            run.stderr
        );
        for (file, line) in [(one, 1), (one, 3), (two, 1), (two, 3)] {
            let named = format!("  {file}: line {line}: a failed episode, no trace");
            assert!(
                run.stderr.contains(&named),
                "{pass}: {named}\n{}",
                run.stderr
            );
        }
    }
}

#[test]
fn a_trace_that_is_no_sample_names_its_episode_s_line_and_which_trace_it_is() {
    let ws = Ws::new(&[("metrics/exact/main.py", EXACT)]);
    let mut empty = trace("checker", "", "", 0.0);
    empty["nodes"] = json!([]);
    empty["errors"] = json!([{"type": "ProviderError", "message": "upstream down"}]);
    empty["ok"] = json!(false);
    let text = lines(&[
        episode(1, "4", vec![trace("solver", "2+2?", "4", 1.0), empty]),
        episode(2, "9", vec![trace("solver", "3*3?", "9", 1.0)]),
    ]);
    ws.write("traces.jsonl", &text);
    ws.write("rollouts/step_1/train/all/traces.jsonl", &text);
    let why = "line 1, trace 2 of 2: the trace has no messages: ProviderError: upstream down";
    // `rwb run` puts the row's place first; a folder's reader adds its file
    for (source, label, message) in [
        (
            "traces.jsonl",
            "traces.jsonl",
            format!("traces.jsonl:2: {why}"),
        ),
        (
            "rollouts/",
            "rollouts/step_1/train/all/traces.jsonl",
            format!(
                "rollouts/step_1/train/all/traces.jsonl:2: step_1/train/all/traces.jsonl {why}"
            ),
        ),
    ] {
        let dir = ws.path().to_str().unwrap();
        let run = rwb(
            &["run", dir, "-s", source, "--format", "json", "--no-cache"],
            ws.path(),
        );
        assert_eq!(run.code, 1, "{}", run.stderr); // a bad row is an error row
        let out: Value = serde_json::from_str(&run.stdout).unwrap();
        let results = out["results"].as_array().unwrap();
        let placed: Vec<(u64, &Value)> = results
            .iter()
            .map(|r| (r["line"].as_u64().unwrap(), &r["score"]))
            .collect();
        assert_eq!(
            placed,
            [(1, &json!(1.0)), (2, &Value::Null), (3, &json!(1.0))],
            "{source}"
        );
        let bad = &results[1];
        assert_eq!(
            (&bad["file"], &bad["error"]["type"]),
            (&json!(label), &json!("BadSample"))
        );
        // it names the episode's line (its row is the number after it), once
        assert_eq!(bad["error"]["message"], json!(message), "{source}");
    }
}
