//! Is the verifier right, in the workbench under tmux (SPEC §20): a `label` column's
//! correctness read as the samples are indexed, the filters `/false-negative` and
//! `/false-positive` for the selected evaluator, and the verifier's statistics in `v`.

mod common;
use common::*;
use serde_json::{json, Value};

const SCORED: &str = r#"
def evaluate(messages, s, **kwargs):
    return s
"#;

#[test]
fn false_negatives_and_false_positives_are_filters_and_v_shows_the_verifier() {
    // (score, label): 0.15 and 0.35 are right answers failed (false negatives), 0.85
    // a wrong one passed (false positive); two prompts of three answers each
    let rows: [(f64, Value); 6] = [
        (0.95, json!(true)),
        (0.15, json!("correct")),
        (0.85, json!("incorrect")),
        (0.35, json!(true)),
        (0.25, json!(false)),
        (0.75, json!(true)),
    ];
    let lines: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(i, (s, ok))| {
            json!({"messages": [{"role": "user", "content": format!("question {}", i / 3)},
                                {"role": "assistant", "content": format!("answer {i}")}],
                   "s": s, "ok": ok})
            .to_string()
        })
        .collect();
    let ws = Ws::new(&[
        ("metrics/judge/main.py", SCORED),
        ("samples.jsonl", &(lines.join("\n") + "\n")),
        (
            "rwb.toml",
            "[samples.main]\npath = \"samples.jsonl\"\nlabel = \"ok\"\n",
        ),
    ]);
    let tmux = Tmux::start(&ws, 200, 44, RWB);
    tmux.wait_for("the scores", |s| {
        s.contains("Samples 6/6") && s.contains("0.250")
    });
    tmux.key("/");
    tmux.keys(&["-l", "false-negative"]);
    tmux.key("Enter");
    let shown = tmux.wait_for("the false negatives", |s| s.contains("Samples 2/6"));
    assert!(
        shown.contains("0.150") && shown.contains("0.350") && !shown.contains("0.850"),
        "{shown}"
    );
    tmux.key("Escape");
    tmux.wait_for("the whole list", |s| s.contains("Samples 6/6"));
    tmux.key("/");
    tmux.keys(&["-l", "false-positive"]);
    tmux.key("Enter");
    let shown = tmux.wait_for("the false positive", |s| s.contains("Samples 1/6"));
    assert!(
        shown.contains("0.850") && !shown.contains("0.150"),
        "{shown}"
    );
    tmux.key("Escape");
    tmux.key("v");
    // tp 0.95, 0.75; fn 0.15, 0.35; fp 0.85; tn 0.25
    tmux.wait_for("the verifier's statistics", |s| {
        s.contains("verifier at 0.5: 6 labelled (0 unlabelled, 0 unreadable, 0 errors)")
            && s.contains("tp 2 fp 1 fn 2 tn 1, accuracy 0.500 [")
            && s.contains("false negatives 0.500 [")
            && s.contains("2 groups: best-of-n 1.000")
    });
    tmux.key("Escape");
    tmux.key("q");
}
