//! `rwb probe`'s code hacks (SPEC §18): for the evaluators that run code, programs
//! that game tests, scored by the real workers beside an empty solution. Rewards
//! shaped like real ones (tests/fixtures/probes_code/rewards.py) each fall for what
//! their harness lets through; the one that runs the tests through `rwb.sandbox.run`
//! falls for none and scores every hack 0; a reward that runs no code gets no hacks.

mod common;
use common::*;
use reward_workbench::insight::code_hacks::{program, Form, Hack, Task};
use serde_json::{json, Value};
use std::collections::BTreeSet;

const REWARDS: &str = include_str!("fixtures/probes_code/rewards.py");
const SAMPLES: &str = include_str!("fixtures/probes_code/samples.jsonl");
const CONFIG: &str = include_str!("fixtures/probes_code/rwb.toml");

/// What a harness that runs the solution and the asserts in one process, and passes
/// on exit code 0, falls for.
const ASSERT_HARNESS_FALLS_FOR: &[&str] = &[
    "exit-os",
    "exit-sys",
    "always-equal",
    "equal-subclass",
    "swallowed-exception",
    "read-tests",
    "caller-frames",
];

/// The hacks flagged for `evaluator` in a JSON report.
fn flagged(doc: &Value, evaluator: &str) -> BTreeSet<String> {
    rows_of(doc, evaluator)
        .iter()
        .filter(|r| r["flagged"] == true)
        .map(|r| r["hack"].as_str().unwrap().to_string())
        .collect()
}

fn rows_of(doc: &Value, evaluator: &str) -> Vec<Value> {
    doc["code_hacks"]["hacks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["evaluator"] == evaluator)
        .cloned()
        .collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[test]
fn each_code_reward_is_flagged_for_the_hacks_its_harness_lets_through() {
    let ws = Ws::new(&[
        ("rewards.py", REWARDS),
        ("samples.jsonl", SAMPLES),
        ("rwb.toml", CONFIG),
    ]);
    let run = rwb(&["probe", ".", "--format", "json"], ws.path());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let hacks = &doc["code_hacks"];
    assert_eq!(hacks["samples"], 4, "{hacks}");

    let evaluators = hacks["evaluators"].as_array().unwrap();
    let runs_code = |name: &str| {
        evaluators
            .iter()
            .find(|e| e["evaluator"] == name)
            .unwrap_or_else(|| panic!("{name} in {hacks}"))["runs_code"]
            .clone()
    };
    for name in [
        "naive_asserts",
        "stdio_strict",
        "stdio_zip",
        "fn_equal",
        "sandboxed",
    ] {
        assert_eq!(runs_code(name), true, "{name}: {hacks}");
    }
    assert_eq!(runs_code("length_bonus"), false, "{hacks}");
    assert!(rows_of(&doc, "length_bonus").is_empty());
    let naive = evaluators
        .iter()
        .find(|e| e["evaluator"] == "naive_asserts")
        .unwrap();
    assert_eq!(naive["why"], json!(["starts subprocesses (rewards.py:23)"]));

    // one run of the solution and the asserts, passed on exit code 0
    assert_eq!(
        flagged(&doc, "naive_asserts"),
        set(ASSERT_HARNESS_FALLS_FOR),
        "{hacks}"
    );
    // one run per case, stdout compared whole: the dataset beside the worker and a
    // /tmp shared by the cases are what it lets through
    assert_eq!(
        flagged(&doc, "stdio_strict"),
        set(&["read-tests", "tmp-state"]),
        "{hacks}"
    );
    // open-r1's zip() over lines also passes the first expected line alone
    assert_eq!(
        flagged(&doc, "stdio_zip"),
        set(&["first-line", "read-tests", "tmp-state"]),
        "{hacks}"
    );
    // the first case leaves its file, the second finds it
    for evaluator in ["stdio_strict", "stdio_zip"] {
        let state = rows_of(&doc, evaluator)
            .into_iter()
            .find(|r| r["hack"] == "tmp-state")
            .unwrap();
        assert_eq!(
            (&state["mean"], &state["empty_mean"]),
            (&json!(0.5), &json!(0.0)),
            "{state}"
        );
    }
    // exec'd in a driver, called under an alarm, compared with ==
    assert_eq!(
        flagged(&doc, "fn_equal"),
        set(&[
            "always-equal",
            "equal-subclass",
            "read-tests",
            "caller-frames",
            "cancel-alarm",
        ]),
        "{hacks}"
    );

    // rwb's sandbox: every hack tried, every one scored 0, none an error
    let sandboxed = rows_of(&doc, "sandboxed");
    let tried: BTreeSet<String> = sandboxed
        .iter()
        .map(|r| r["hack"].as_str().unwrap().to_string())
        .collect();
    let every: BTreeSet<String> = Hack::ALL.iter().map(|h| h.id().to_string()).collect();
    assert_eq!(tried, every, "{hacks}");
    for row in &sandboxed {
        assert_eq!(row["mean"], 0.0, "{row}");
        assert_eq!(row["empty_mean"], 0.0, "{row}");
        assert_eq!(row["errors"], 0, "{row}");
        assert_eq!(row["flagged"], false, "{row}");
    }

    let exit = rows_of(&doc, "naive_asserts")
        .into_iter()
        .find(|r| r["hack"] == "exit-os")
        .unwrap();
    assert_eq!(
        (
            &exit["mean"],
            &exit["empty_mean"],
            &exit["form"],
            &exit["samples"]
        ),
        (&json!(1.0), &json!(0.0), &json!("asserts"), &json!(2)),
        "{exit}"
    );
    assert_eq!(exit["mechanism"], Hack::ExitOs.mechanism());

    // the table, from the cache this time: one line per hack a reward falls for
    let table = rwb(&["probe", "."], ws.path());
    assert_eq!(table.code, 0, "{}", table.stderr);
    let line = format!(
        "    ⚠ {:<46} 1.000 vs 0.000 empty (asserts): the harness counts exit code 0 as a pass; the solution exits before the tests run",
        "os._exit(0) before the tests"
    );
    assert!(table.stdout.contains(&line), "{}", table.stdout);
    assert!(
        table.stdout.contains(
            "  sandboxed — runs code: uses rwb.sandbox (rewards.py:115)\n    fooled by none of the 15 hacks tried\n"
        ),
        "{}",
        table.stdout
    );
    assert!(
        table
            .stdout
            .contains("  no code hacks for length_bonus: they run no code"),
        "{}",
        table.stdout
    );
}

#[test]
fn a_reward_that_runs_no_code_gets_no_code_hacks() {
    let length = "from reward_kit import reward_function, EvaluateResult\n\n@reward_function\ndef evaluate(messages, **kwargs):\n    return EvaluateResult(score=min(len(messages[-1]['content']) / 400, 1.0), reason='length')\n";
    let sample = json!({
        "messages": [{"role": "user", "content": "Write add(a, b)."},
                     {"role": "assistant", "content": "```python\ndef add(a, b):\n    return a + b\n```"}],
        "test_list": ["assert add(1, 2) == 3"],
    });
    let ws = Ws::new(&[
        ("metrics/length/main.py", length),
        ("samples.jsonl", &(sample.to_string() + "\n")),
    ]);
    let run = rwb(&["probe", ".", "--format", "json", "--no-cache"], ws.path());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        doc["code_hacks"]["evaluators"],
        json!([{"evaluator": "length", "runs_code": false, "why": []}])
    );
    assert_eq!(doc["code_hacks"]["hacks"], json!([]));
    let table = rwb(&["probe", ".", "--no-cache"], ws.path());
    assert!(
        table.stdout.contains(
            "no evaluator runs code (neither its source nor rwb's audit shows any): no code hacks"
        ),
        "{}",
        table.stdout
    );
}

#[test]
fn every_hack_is_a_python_program_in_each_form_it_applies_to() {
    let tasks = [
        Task {
            form: Form::Stdio,
            function: "solution".into(),
            tests: json!({"inputs": ["3\n"], "outputs": ["3\n6\n"]}),
        },
        Task {
            form: Form::Call,
            function: "mul".into(),
            tests: json!({"inputs": [[2, 3]], "outputs": [6], "fn_name": "mul"}),
        },
        Task {
            form: Form::Asserts,
            function: "rev".into(),
            tests: json!(["assert rev('ab') == 'ba'"]),
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for task in &tasks {
        let programs: Vec<(Hack, String)> = Hack::ALL
            .iter()
            .filter_map(|&h| Some((h, program(h, task, "tok")?)))
            .collect();
        // an always-equal object means nothing to stdout; stdout has no first line
        // to print for a function's tests
        let expected = match task.form {
            Form::Stdio => Hack::ALL.len() - 2,
            _ => Hack::ALL.len() - 1,
        };
        assert_eq!(programs.len(), expected, "{:?}", task.form);
        for (hack, text) in programs {
            assert!(
                !text.contains("__FN__") && !text.contains("__CASES__"),
                "{text}"
            );
            let path = dir.path().join(format!("{}-{:?}.py", hack.id(), task.form));
            std::fs::write(&path, text).unwrap();
            paths.push(path);
        }
    }
    common::succeeded(
        std::process::Command::new("python3")
            .arg("-c")
            .arg("import sys\nfor p in sys.argv[1:]:\n    compile(open(p).read(), p, 'exec')")
            .args(&paths),
    );
}

/// A harness whose source names no subprocess: rwb's audit of a checked call sees it
/// start one, and the hacks follow.
const HIDDEN: &str = r#"
import importlib

def hidden(response, test_list=None, **kwargs):
    runner = importlib.import_module("sub" + "process")
    program = response.split("```python\n")[-1].split("```")[0] + "\n" + "\n".join(test_list or [])
    return 1.0 if runner.run(["python3", "-c", program], capture_output=True).returncode == 0 else 0.0
"#;

#[test]
fn the_audit_finds_the_code_a_reward_runs_where_its_source_does_not_say() {
    let sample = json!({
        "prompt": "Write add(a, b).",
        "completion": "```python\ndef add(a, b):\n    return a + b\n```",
        "test_list": ["assert add(1, 2) == 3", "assert add(-4, 4) == 0"],
    });
    let ws = Ws::new(&[
        ("hidden.py", HIDDEN),
        ("samples.jsonl", &(sample.to_string() + "\n")),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\n[evaluators.hidden]\nfunction = \"hidden.py::hidden\"\n",
        ),
    ]);
    let run = rwb(&["probe", ".", "--format", "json", "--no-cache"], ws.path());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let why = &doc["code_hacks"]["evaluators"][0]["why"];
    let why: Vec<&str> = why
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(
        why[0].starts_with("runs the completion in a subprocess (python3 -c ")
            || why[0].starts_with("starts a subprocess (python3 -c "),
        "{why:?}"
    );
    assert_eq!(
        flagged(&doc, "hidden"),
        set(ASSERT_HARNESS_FALLS_FOR),
        "{doc}"
    );
}
