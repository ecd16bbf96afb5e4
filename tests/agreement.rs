//! Against human judgement (SPEC §16): labels from a `human = "COLUMN"` and from
//! `labels.jsonl`, each evaluator's agreement in `rwb run --format json`, checked
//! against scikit-learn and scipy run in Python (`RWB_SKLEARN_PYTHON`, installed by
//! .ci/run; skipped with a message when unset), `disagrees` on the rows and
//! `--min-agreement`.

mod common;
use common::*;
use serde_json::{json, Value};

/// Scores the sample's own `s` field: a reward whose every score is known.
const SCORED: &str = r#"
def evaluate(messages, s, **kwargs):
    return s
"#;

fn line(i: usize, s: f64, human: Option<Value>) -> String {
    let mut row = json!({"messages": [{"role": "user", "content": format!("q{i}")},
                                      {"role": "assistant", "content": format!("a{i}")}],
                         "s": s});
    if let Some(h) = human {
        row["verdict"] = h;
    }
    row.to_string()
}

fn python() -> Option<String> {
    match std::env::var("RWB_SKLEARN_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            eprintln!("skipped: RWB_SKLEARN_PYTHON is not set (.ci/run installs scikit-learn and scipy and sets it)");
            None
        }
    }
}

/// What scikit-learn and scipy say of these (score, label) pairs at 0.5.
fn reference(python: &str, pairs: &[(f64, Value)], numeric: bool) -> Value {
    let script = r#"
import json, sys
from sklearn.metrics import confusion_matrix, precision_score, recall_score, f1_score, accuracy_score, cohen_kappa_score
from scipy.stats import pearsonr, spearmanr
pairs, numeric = json.loads(sys.argv[1]), sys.argv[2] == "1"
scores = [p[0] for p in pairs]
labels = [p[1] for p in pairs]
if numeric:
    y = [float(l) for l in labels]
    print(json.dumps({"pearson": float(pearsonr(scores, y)[0]), "spearman": float(spearmanr(scores, y)[0]),
                      "mae": sum(abs(a - b) for a, b in zip(scores, y)) / len(y)}))
else:
    pred = [s >= 0.5 for s in scores]
    tn, fp, fn, tp = confusion_matrix(labels, pred, labels=[False, True]).ravel()
    print(json.dumps({"tp": int(tp), "fp": int(fp), "fn": int(fn), "tn": int(tn),
                      "precision": precision_score(labels, pred), "recall": recall_score(labels, pred),
                      "f1": f1_score(labels, pred), "accuracy": accuracy_score(labels, pred),
                      "kappa": cohen_kappa_score(labels, pred)}))
"#;
    let out = std::process::Command::new(python)
        .args([
            "-c",
            script,
            &json!(pairs).to_string(),
            if numeric { "1" } else { "0" },
        ])
        .output()
        .expect("the reference interpreter runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn close(got: &Value, want: &Value, what: &str) {
    let (g, w) = (got.as_f64(), want.as_f64());
    assert!(
        matches!((g, w), (Some(g), Some(w)) if (g - w).abs() < 1e-12),
        "{what}: rwb {got}, reference {want}"
    );
}

fn workspace(lines: &[String]) -> Ws {
    Ws::new(&[
        ("metrics/judge/main.py", SCORED),
        ("samples.jsonl", &(lines.join("\n") + "\n")),
        (
            "rwb.toml",
            "[samples.main]\npath = \"samples.jsonl\"\nhuman = \"verdict\"\n",
        ),
    ])
}

#[test]
fn pass_fail_labels_give_the_confusion_matrix_f1_and_kappa_of_scikit_learn() {
    let Some(py) = python() else { return };
    let scores = [
        0.9, 0.8, 0.2, 0.6, 0.1, 0.5, 0.3, 0.7, 0.95, 0.4, 0.05, 0.65,
    ];
    let human = [
        true, true, false, false, false, true, true, true, true, false, false, false,
    ];
    let mut lines: Vec<String> = scores
        .iter()
        .zip(human)
        .enumerate()
        .map(|(i, (s, h))| line(i, *s, Some(json!(h))))
        .collect();
    // two unlabelled rows: no column, and a value that is no label
    lines.push(line(12, 0.9, None));
    lines.push(line(13, 0.1, Some(json!("yes"))));
    let ws = workspace(&lines);
    // labels.jsonl: the workbench's label wins over the column's (sample 2 marked
    // pass), and a damaged line is named and skipped
    let key = |raw: &str| -> String {
        reward_workbench::workspace::hash_line(raw)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let rows_file = rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "json"],
        ws.path(),
    );
    assert_eq!(rows_file.code, 0, "{}", rows_file.stderr);
    // the content key is that of the sample as rwb reads it: the mapped row
    let row_text = std::fs::read_dir(ws.file(".rwb/rows"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .next()
        .expect("a row file for the mapped samples");
    // a row file line is the sample's text, then (after a record separator) its
    // facts, then (after a unit separator) what rwb saw of it
    let third = row_text
        .lines()
        .nth(2)
        .unwrap()
        .split(['\x1e', '\x1f'])
        .next()
        .unwrap();
    ws.write(
        "labels.jsonl",
        &format!(
            "{{\"key\": \"{}\", \"label\": true, \"time\": 1}}\n{{\"key\": 7}}\n",
            key(third)
        ),
    );
    let run = rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "json"],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("labels.jsonl:2: not a {\"key\", \"label\", \"time\"} line: skipped"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "samples.jsonl:14: the human label verdict = \"yes\" is neither a bool nor a number"
        ),
        "{}",
        run.stderr
    );
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let got = &doc["summary"]["judge"]["agreement"];
    let mut effective: Vec<(f64, Value)> = scores
        .iter()
        .zip(human)
        .map(|(s, h)| (*s, json!(h)))
        .collect();
    effective[2].1 = json!(true);
    let want = reference(&py, &effective, false);
    assert_eq!(got["n"], 12, "{got}");
    assert_eq!(got["unlabelled"], 2);
    for k in ["tp", "fp", "fn", "tn"] {
        assert_eq!(got[k], want[k], "{k}: {got} vs {want}");
    }
    for k in ["precision", "recall", "f1", "accuracy", "kappa"] {
        close(&got[k], &want[k], k);
    }
    // disagrees: score and label on either side of 0.5
    for r in doc["results"].as_array().unwrap() {
        let i = r["sample"].as_u64().unwrap() as usize;
        let expected = effective
            .get(i)
            .map(|(s, l)| json!((*s >= 0.5) != l.as_bool().unwrap()));
        assert_eq!(r.get("disagrees").cloned(), expected, "sample {i}: {r}");
    }
    // --format csv carries each sample's label too (empty for the unlabelled)
    let csv = rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "csv"],
        ws.path(),
    );
    let mut lines = csv.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header
        .iter()
        .position(|h| *h == "label")
        .expect("a label column");
    let mut seen = 0;
    for line in lines.filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split(',').collect();
        let i: usize = fields[0].parse().unwrap();
        let want = effective.get(i).map_or(
            "",
            |(_, l)| {
                if l.as_bool().unwrap() {
                    "pass"
                } else {
                    "fail"
                }
            },
        );
        assert_eq!(fields[at], want, "sample {i}: {line}");
        seen += 1;
    }
    assert!(seen >= effective.len(), "{}", csv.stdout);
    let kappa = want["kappa"].as_f64().unwrap();
    let above = format!("{}", kappa + 0.01);
    let fails = rwb(
        &[
            "run",
            ws.path().to_str().unwrap(),
            "--min-agreement",
            &above,
        ],
        ws.path(),
    );
    assert_eq!(fails.code, 1);
    assert!(fails.stderr.contains(&format!("rwb: judge: agreement with the human labels (kappa {kappa:.4}) is under --min-agreement {above}")), "{}", fails.stderr);
    let below = format!("{}", kappa - 0.01);
    let passes = rwb(
        &[
            "run",
            ws.path().to_str().unwrap(),
            "--min-agreement",
            &below,
        ],
        ws.path(),
    );
    assert_eq!(passes.code, 0, "{}", passes.stderr);
    assert!(
        passes
            .stdout
            .contains("judge agreement with 12 human labels (2 unlabelled): tp "),
        "{}",
        passes.stdout
    );
}

#[test]
fn numeric_labels_give_pearson_spearman_and_mae_of_scipy() {
    let Some(py) = python() else { return };
    let scores = [0.9, 0.8, 0.2, 0.6, 0.1, 0.5, 0.3, 0.7, 0.5, 0.4];
    let human = [1.0, 0.7, 0.1, 0.9, 0.0, 0.5, 0.5, 0.6, 0.2, 0.5];
    let mut lines: Vec<String> = scores
        .iter()
        .zip(human)
        .enumerate()
        .map(|(i, (s, h))| line(i, *s, Some(json!(h))))
        .collect();
    lines.push(line(10, 0.3, Some(Value::Null)));
    let ws = workspace(&lines);
    let run = rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "json"],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let got = &doc["summary"]["judge"]["agreement"];
    let pairs: Vec<(f64, Value)> = scores
        .iter()
        .zip(human)
        .map(|(s, h)| (*s, json!(h)))
        .collect();
    let want = reference(&py, &pairs, true);
    assert_eq!(
        (got["n"].clone(), got["unlabelled"].clone()),
        (json!(10), json!(1)),
        "{got}"
    );
    for k in ["pearson", "spearman", "mae"] {
        close(&got[k], &want[k], k);
    }
    assert!(got.get("kappa").is_none());
    let fails = rwb(
        &[
            "run",
            ws.path().to_str().unwrap(),
            "--min-agreement",
            "0.99",
        ],
        ws.path(),
    );
    assert_eq!(fails.code, 1);
    assert!(
        fails
            .stderr
            .contains("rwb: judge: agreement with the human labels (Spearman "),
        "{}",
        fails.stderr
    );
}

#[test]
fn without_labels_there_is_no_agreement_and_min_agreement_says_why() {
    let ws = Ws::new(&[
        ("metrics/judge/main.py", SCORED),
        ("samples.jsonl", &(line(0, 0.5, None) + "\n")),
    ]);
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.rows()[0].get("disagrees").is_none());
    let fails = ws.run(&["--min-agreement", "0.5"]);
    assert_eq!(fails.code, 1);
    assert!(
        fails.stderr.contains(
            "rwb: judge: no agreement with human labels to compare with --min-agreement 0.5"
        ),
        "{}",
        fails.stderr
    );
}
