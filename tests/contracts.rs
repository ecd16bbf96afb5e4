//! `rwb check`: each contract break is detected by an evaluator written to commit it,
//! and a clean evaluator passes.

mod common;
use common::*;
use serde_json::Value;

fn breaks(doc: &Value, evaluator: &str) -> Vec<String> {
    doc["evaluators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["evaluator"] == evaluator)
        .unwrap_or_else(|| panic!("no {evaluator} in {doc}"))["breaks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["issue"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_contract_break_is_detected() {
    let ws = Ws::new(&[
        (
            "rewards.py",
            r#"
import random

def clean(messages, **kwargs):
    return {"score": 0.5, "reason": "steady"}

def mutates(messages, **kwargs):
    messages.append({"role": "assistant", "content": "sneaky"})
    return 0.5

def flaky(messages, **kwargs):
    return random.random()

def gives_none(messages, **kwargs):
    return None

def gives_nan(messages, **kwargs):
    return float("nan")

def no_score_key(messages, **kwargs):
    return {"reward": 1.0}

def too_big(response, **kwargs):
    return 1.5

def trl_short(prompts, completions, **kwargs):
    return [1.0] * (len(completions) - 1)

def trl_nan(prompts, completions, **kwargs):
    return [float("nan") for _ in completions]

def verl_fine(data_source, solution_str, ground_truth, extra_info=None):
    return 7.0
"#,
        ),
        ("samples.jsonl", &samples(3)),
    ]);
    let names = [
        "clean",
        "mutates",
        "flaky",
        "gives_none",
        "gives_nan",
        "no_score_key",
        "too_big",
        "trl_short",
        "trl_nan",
        "verl_fine",
    ];
    let mut args = vec!["check", ".", "--format", "json"];
    let specs: Vec<String> = names
        .iter()
        .map(|n| format!("{n}=rewards.py::{n}"))
        .collect();
    for s in &specs {
        args.push("--function");
        args.push(s);
    }
    let run = rwb(&args, ws.path());
    assert_eq!(run.code, 1, "breaks exit 1: {}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let has = |evaluator: &str, needle: &str| {
        let found = breaks(&doc, evaluator);
        assert!(
            found.iter().any(|b| b.contains(needle)),
            "{evaluator}: expected '{needle}' in {found:?}"
        );
    };
    assert!(
        breaks(&doc, "clean").is_empty(),
        "{:?}",
        breaks(&doc, "clean")
    );
    assert!(
        breaks(&doc, "verl_fine").is_empty(),
        "veRL scores are not range-checked"
    );
    has("mutates", "mutated its input: messages");
    has(
        "flaky",
        "a second identical call returned a different result",
    );
    has("gives_none", "returned None");
    has("gives_nan", "nan");
    has("no_score_key", "without a 'score' key");
    has("too_big", "score 1.5 is outside [0, 1]");
    has("trl_short", "returned 2 scores for a batch of 3");
    has("trl_nan", "nan");
    let styles: Vec<&str> = doc["evaluators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["style"].as_str().unwrap())
        .collect();
    assert_eq!(
        styles,
        [
            "reward-kit",
            "reward-kit",
            "reward-kit",
            "reward-kit",
            "reward-kit",
            "reward-kit",
            "simple",
            "trl",
            "trl",
            "verl"
        ]
    );

    let table = rwb(
        &["check", ".", "--function", "mutates=rewards.py::mutates"],
        ws.path(),
    );
    assert!(
        table.stdout.contains(
            "✗ mutated its input: messages — 3 samples: samples.jsonl:1, samples.jsonl:2, samples.jsonl:3"
        ),
        "{}",
        table.stdout
    );
    let ok = rwb(
        &["check", ".", "--function", "clean=rewards.py::clean"],
        ws.path(),
    );
    assert_eq!(ok.code, 0, "{}", ok.stdout);
    assert!(
        ok.stdout
            .contains("clean (reward-kit): no contract break on 3 samples"),
        "{}",
        ok.stdout
    );
}
