//! Human labels given in the workbench under tmux (SPEC §16): `+`, `-` and `0` on the
//! selected sample, kept in `labels.jsonl` by content key, the `disagree` filter,
//! the agreement in `v`, and `rwb run` reading the same labels.

mod common;
use common::*;
use serde_json::{json, Value};

const SCORED: &str = r#"
def evaluate(messages, s, **kwargs):
    return s
"#;

fn lines() -> Vec<String> {
    [0.9, 0.1, 0.8, 0.2]
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({"messages": [{"role": "user", "content": format!("question {i}")},
                                {"role": "assistant", "content": format!("answer {i}")}],
                   "s": s})
            .to_string()
        })
        .collect()
}

fn key(line: &str) -> String {
    reward_workbench::workspace::hash_line(line)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn labels_given_with_plus_minus_and_zero_are_kept_filtered_and_counted() {
    let lines = lines();
    let ws = Ws::new(&[
        ("metrics/judge/main.py", SCORED),
        ("samples.jsonl", &(lines.join("\n") + "\n")),
    ]);
    let tmux = Tmux::start(&ws, 140, 36, RWB);
    tmux.wait_for("the scores", |s| {
        s.contains("Samples 4/4") && s.contains("0.200")
    });
    tmux.key("+"); // sample 0 (0.9): pass, agrees
    tmux.key("j");
    tmux.key("+"); // sample 1 (0.1): pass, disagrees
    tmux.key("j");
    tmux.key("-"); // sample 2 (0.8): fail, disagrees
    tmux.key("j");
    tmux.key("+");
    tmux.wait_for("the fourth label", |s| s.contains("line 4 labelled pass"));
    tmux.key("0"); // sample 3: cleared again
    tmux.wait_for("the label cleared", |s| s.contains("line 4: label cleared"));
    let kept: Vec<Value> = std::fs::read_to_string(ws.file("labels.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let pairs: Vec<(String, Value)> = kept
        .iter()
        .map(|v| (v["key"].as_str().unwrap().to_string(), v["label"].clone()))
        .collect();
    assert_eq!(
        pairs,
        vec![
            (key(&lines[0]), json!(true)),
            (key(&lines[1]), json!(true)),
            (key(&lines[2]), json!(false)),
        ],
        "the clear rewrote the file without sample 3"
    );
    assert!(kept
        .iter()
        .all(|v| v["time"].as_f64().is_some_and(|t| t > 1.7e9)));
    tmux.key("/");
    tmux.keys(&["-l", "disagree"]);
    tmux.key("Enter");
    tmux.wait_for("the disagreeing samples", |s| s.contains("Samples 2/4"));
    tmux.key("v");
    tmux.wait_for("the agreement", |s| {
        s.contains("agreement with 3 human labels (1 unlabelled): tp 1 fp 1 fn 1 tn 0")
    });
    tmux.key("Escape");
    tmux.key("q");
    // rwb run reads the same labels
    let run = rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "json"],
        ws.path(),
    );
    let doc: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stderr));
    let a = &doc["summary"]["judge"]["agreement"];
    assert_eq!(
        (
            a["n"].clone(),
            a["unlabelled"].clone(),
            a["tp"].clone(),
            a["fp"].clone(),
            a["fn"].clone(),
            a["tn"].clone()
        ),
        (json!(3), json!(1), json!(1), json!(1), json!(1), json!(0)),
        "{a}"
    );
    assert!(
        doc["results"].as_array().unwrap().len() == 4,
        "labels.jsonl is no samples file"
    );
}
