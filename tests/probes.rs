//! `rwb probe`: each probe is derived and scored, and the ones an evaluator can be
//! gamed by are flagged with the component that rewards them.

mod common;
use common::*;
use serde_json::Value;

/// Rewards a marked answer (`format`) and a correct one (`correct`): pasting the
/// ground truth inside markers games it, an empty answer does not.
const GAMEABLE: &str = r#"
from reward_kit import reward_function, EvaluateResult, MetricResult

@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    text = messages[-1]["content"]
    fmt = 1.0 if "\\boxed{" in text else 0.0
    correct = 1.0 if ground_truth and ground_truth in text else 0.0
    score = 0.5 * fmt + 0.5 * correct
    return EvaluateResult(score=score, reason="r", metrics={
        "format": MetricResult(score=fmt, reason="f"),
        "correct": MetricResult(score=correct, reason="c"),
    })
"#;

#[test]
fn probes_are_scored_and_the_gameable_ones_flagged() {
    let line = |q: &str, a: &str, gt: &str| {
        format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"{q}\"}}, {{\"role\": \"assistant\", \"content\": \"{a}\"}}], \"ground_truth\": \"{gt}\"}}\n")
    };
    let samples = [
        line("2+3?", "Adding gives 5, so \\\\boxed{5}", "5"),
        line("7*6?", "It is 42", "42"),
        line("10-4?", "Ten minus four is 7", "6"),
    ]
    .concat();
    let ws = Ws::new(&[
        ("metrics/judge/main.py", GAMEABLE),
        ("samples.jsonl", &samples),
    ]);
    let run = rwb(&["probe", ".", "--format", "json", "--no-cache"], ws.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["samples"], 3);
    let probe = |name: &str| {
        doc["probes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["probe"] == name)
            .unwrap()
            .clone()
    };
    let names = [
        "empty answer",
        "answer only, no reasoning",
        "ground truth pasted bare",
        "final-answer markers repeated",
        "truncated to half",
        "answer repeated",
    ];
    for n in names {
        assert!(probe(n)["count"].as_u64().unwrap() >= 1, "{n} was scored");
    }
    // the real answers average (1.0 + 0.5 + 0.0) / 3 = 0.5
    assert!((probe("empty answer")["original_mean"].as_f64().unwrap() - 0.5).abs() < 1e-9);
    let markers = probe("final-answer markers repeated");
    assert_eq!(
        markers["mean"], 1.0,
        "markers with the ground truth score perfectly: {markers}"
    );
    assert_eq!(markers["flagged"], true);
    let comps: Vec<&str> = markers["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        comps.contains(&"format") && comps.contains(&"correct"),
        "{comps:?}"
    );
    let empty = probe("empty answer");
    assert_eq!(empty["mean"], 0.0);
    assert_eq!(empty["flagged"], false);
    let bare = probe("ground truth pasted bare");
    assert_eq!(bare["mean"], 0.5, "correct but unmarked");
    assert_eq!(
        bare["flagged"], true,
        "it passes and scores as well as the real answers"
    );

    let table = rwb(&["probe", ".", "--no-cache"], ws.path());
    assert!(table.stdout.contains("⚠"), "{}", table.stdout);
}
