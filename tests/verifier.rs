//! Is the verifier right (SPEC §20): `label = "COLUMN"` under `[samples.NAME]`, each
//! evaluator's `verifier: {...}` in `rwb run --format json` checked against
//! scikit-learn run in Python (`RWB_SKLEARN_PYTHON`, installed by .ci/run; skipped
//! with a message when unset) and against the formulas written out here (Wilson,
//! pass@k, best-of-n); RewardBench v1 and 2 rows scored by reward-bench's rules
//! (reimplemented below from its code, cited line by line: the `rewardbench` package
//! pulls torch and transformers); a real rule-based reward, math-verify
//! (`RWB_MATH_VERIFY_PYTHON`, installed by .ci/run), on hand-labelled answers whose
//! false negatives are known.

mod common;
use common::*;
use serde_json::{json, Value};

/// Scores the sample's own `s` field; no `s` is an exception.
const SCORED: &str = r#"
def evaluate(messages, s=None, **kwargs):
    if s is None:
        raise ValueError("no score for this sample")
    return s
"#;

fn env_python(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            eprintln!("skipped: {var} is not set (.ci/run installs {what} and sets it)");
            None
        }
    }
}

fn python_json(python: &str, script: &str, input: &Value) -> Value {
    let out = std::process::Command::new(python)
        .args(["-c", script, &input.to_string()])
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

/// The Wilson 95 % score interval of k of n, written out.
fn wilson(k: f64, n: f64) -> (f64, f64) {
    let z: f64 = 1.959_963_984_540_054;
    let p = k / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// scikit-learn's metrics on (score, label) pairs at 0.5, and pass@k and best-of-n
/// per group from their definitions.
const REFERENCE: &str = r#"
import json, sys
from math import comb
from sklearn.metrics import (confusion_matrix, precision_score, recall_score, f1_score,
    accuracy_score, balanced_accuracy_score, cohen_kappa_score, roc_auc_score)
rows = json.loads(sys.argv[1])
scores = [r[0] for r in rows]
labels = [r[1] for r in rows]
pred = [s >= 0.5 for s in scores]
tn, fp, fn, tp = confusion_matrix(labels, pred, labels=[False, True]).ravel()
out = {"tp": int(tp), "fp": int(fp), "fn": int(fn), "tn": int(tn),
       "precision": precision_score(labels, pred), "recall": recall_score(labels, pred),
       "f1": f1_score(labels, pred), "accuracy": accuracy_score(labels, pred),
       "balanced_accuracy": balanced_accuracy_score(labels, pred),
       "kappa": cohen_kappa_score(labels, pred),
       "auroc": roc_auc_score(labels, scores)}
groups = {}
for s, l, g in rows:
    groups.setdefault(g, []).append((s, l))
many = [m for m in groups.values() if len(m) > 1]
def best(m):
    top = max(s for s, _ in m)
    tied = [l for s, l in m if s == top]
    return sum(tied) / len(tied)
out["best_of_n"] = sum(best(m) for m in many) / len(many)
out["groups"] = len(many)
out["groups_of_one"] = len(groups) - len(many)
# pass@k = 1 - C(n - c, k) / C(n, k), NeMo Gym's formula, over groups of n >= k
def pass_at(k, right):
    at = [m for m in many if len(m) >= k]
    return sum(1 - comb(len(m) - right(m), k) / comb(len(m), k) for m in at) / len(at)
out["pass_at_k"] = [{"k": k,
                     "true": pass_at(k, lambda m: sum(l for _, l in m)),
                     "verifier": pass_at(k, lambda m: sum(s >= 0.5 for s, _ in m))}
                    for k in (1, 2, 4) if any(len(m) >= k for m in many)]
print(json.dumps(out))
"#;

fn sample(group: &str, i: usize, s: Option<f64>, ok: Option<Value>) -> String {
    let mut row = json!({"messages": [{"role": "user", "content": group},
                                      {"role": "assistant", "content": format!("answer {i}")}]});
    if let Some(s) = s {
        row["s"] = json!(s);
    }
    if let Some(ok) = ok {
        row["ok"] = ok;
    }
    row.to_string()
}

fn labelled_workspace(lines: &[String]) -> Ws {
    Ws::new(&[
        ("metrics/judge/main.py", SCORED),
        ("samples.jsonl", &(lines.join("\n") + "\n")),
        (
            "rwb.toml",
            "[samples.main]\npath = \"samples.jsonl\"\nlabel = \"ok\"\n",
        ),
    ])
}

#[test]
fn labelled_answers_give_scikit_learns_metrics_wilson_intervals_and_pass_at_k() {
    let Some(py) = env_python("RWB_SKLEARN_PYTHON", "scikit-learn") else {
        return;
    };
    // (group, score, label): bools and correct/incorrect, ties at the top of q1 and q3
    let rows: Vec<(&str, f64, Value)> = vec![
        ("q1", 0.9, json!(true)),
        ("q1", 0.9, json!("incorrect")),
        ("q1", 0.2, json!("correct")),
        ("q1", 0.4, json!(false)),
        ("q2", 0.7, json!(true)),
        ("q2", 0.6, json!(false)),
        ("q2", 0.1, json!(true)),
        ("q3", 0.3, json!("Correct")),
        ("q3", 0.3, json!(false)),
        ("q4", 0.55, json!(false)),
        ("q4", 0.8, json!(true)),
        ("q4", 0.05, json!(false)),
        ("q4", 0.45, json!(true)),
        ("q4", 0.65, json!(false)),
        ("q5", 0.95, json!(true)),
    ];
    let mut lines: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(i, (g, s, l))| sample(g, i, Some(*s), Some(l.clone())))
        .collect();
    // unlabelled, an unreadable label, and an evaluator error on a labelled row
    lines.push(sample("q2", 90, Some(0.9), None));
    lines.push(sample("q2", 91, Some(0.9), Some(json!("maybe"))));
    lines.push(sample("q1", 92, None, Some(json!(true))));
    let ws = labelled_workspace(&lines);
    let run = rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "json"],
        ws.path(),
    );
    assert_eq!(run.code, 1, "an evaluator error exits 1: {}", run.stderr);
    assert!(
        run.stderr.contains(
            "samples.jsonl:17: the label ok = \"maybe\" is neither a bool nor \"correct\"/\"incorrect\": left out of the verifier's statistics"
        ),
        "{}",
        run.stderr
    );
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let got = &doc["summary"]["judge"]["verifier"];
    assert_eq!(
        (
            &got["n"],
            &got["unlabelled"],
            &got["unreadable"],
            &got["errors"]
        ),
        (&json!(15), &json!(1), &json!(1), &json!(1)),
        "{got}"
    );
    let truth = |l: &Value| match l {
        Value::Bool(b) => *b,
        Value::String(s) => s.eq_ignore_ascii_case("correct"),
        _ => unreachable!(),
    };
    let input: Vec<Value> = rows
        .iter()
        .map(|(g, s, l)| json!([s, truth(l), g]))
        .collect();
    let want = python_json(&py, REFERENCE, &json!(input));
    for k in ["tp", "fp", "fn", "tn"] {
        assert_eq!(got[k], want[k], "{k}: {got} vs {want}");
    }
    for k in ["f1", "balanced_accuracy", "kappa", "auroc"] {
        close(&got[k], &want[k], k);
    }
    close(&got["precision"]["value"], &want["precision"], "precision");
    close(&got["recall"]["value"], &want["recall"], "recall");
    close(&got["accuracy"]["value"], &want["accuracy"], "accuracy");
    let c = |k: &str| want[k].as_f64().unwrap();
    let (tp, fp, fn_, tn) = (c("tp"), c("fp"), c("fn"), c("tn"));
    close(
        &got["false_negative_rate"]["value"],
        &json!(fn_ / (tp + fn_)),
        "false-negative rate FN/(TP+FN)",
    );
    close(
        &got["false_positive_rate"]["value"],
        &json!(fp / (fp + tn)),
        "false-positive rate FP/(FP+TN)",
    );
    for (key, k, n) in [
        ("precision", tp, tp + fp),
        ("recall", tp, tp + fn_),
        ("false_negative_rate", fn_, tp + fn_),
        ("false_positive_rate", fp, fp + tn),
        ("accuracy", tp + tn, tp + fp + fn_ + tn),
    ] {
        let (low, high) = wilson(k, n);
        close(&got[key]["low"], &json!(low), &format!("{key} low"));
        close(&got[key]["high"], &json!(high), &format!("{key} high"));
    }
    let g = &got["groups"];
    assert_eq!(g["groups"], want["groups"], "{g}");
    assert_eq!(g["groups_of_one"], want["groups_of_one"], "{g}");
    close(&g["best_of_n"], &want["best_of_n"], "best-of-n");
    let (ours, theirs) = (
        g["pass_at_k"].as_array().unwrap(),
        want["pass_at_k"].as_array().unwrap(),
    );
    assert_eq!(ours.len(), theirs.len(), "{g}");
    for (o, t) in ours.iter().zip(theirs) {
        assert_eq!(o["k"], t["k"]);
        close(&o["true"], &t["true"], "true pass@k");
        close(&o["verifier"], &t["verifier"], "verifier pass@k");
        let inflation = t["verifier"].as_f64().unwrap() - t["true"].as_f64().unwrap();
        assert!((o["inflation"].as_f64().unwrap() - inflation).abs() < 1e-12);
    }
    // the table format's short block
    let table = rwb(&["run", ws.path().to_str().unwrap()], ws.path());
    assert!(
        table.stdout.contains(&format!(
            "judge verifier at 0.5: 15 labelled (1 unlabelled, 1 unreadable, 1 errors)\n  tp {tp} fp {fp} fn {fn_} tn {tn}, accuracy "
        )),
        "{}",
        table.stdout
    );
    assert!(
        table
            .stdout
            .contains("  1 groups of one answer: no best-of-n for them"),
        "{}",
        table.stdout
    );
}

#[test]
fn scores_of_only_0_and_1_have_no_auroc() {
    let lines: Vec<String> = [(1.0, true), (0.0, true), (1.0, false), (0.0, false)]
        .iter()
        .enumerate()
        .map(|(i, (s, l))| sample(&format!("p{i}"), i, Some(*s), Some(json!(l))))
        .collect();
    let ws = labelled_workspace(&lines);
    let run = rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "json"],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let got = &doc["summary"]["judge"]["verifier"];
    assert_eq!(got["auroc"], Value::Null, "{got}");
    assert_eq!(got["kappa"], json!(0.0), "{got}");
    // every prompt its own group: none has best-of-n, and it is said
    assert_eq!(got["groups"]["groups"], 0, "{got}");
    assert_eq!(got["groups"]["groups_of_one"], 4, "{got}");
    assert_eq!(got["groups"]["best_of_n"], Value::Null, "{got}");
}

/// reward-bench's scoring, reimplemented from allenai/reward-bench@05a9005efb60:
/// v1 `scripts/run_rm.py:265` (`1 if chosen > rejected else 0`), sections by
/// `rewardbench/utils.py:75-91` with `rewardbench/constants.py:42-101`; v2
/// `rewardbench/utils.py:569-572` (1/m when the first completion ties at the top)
/// and `scripts/run_v2.py:361-378`; `Ties` by `rewardbench/utils.py:1010-1100`.
const REWARD_BENCH: &str = r#"
import json, sys
import numpy as np
rows, scores, version = json.loads(sys.argv[1])
EXAMPLE_COUNTS = {"alpacaeval-easy": 100, "alpacaeval-length": 95, "alpacaeval-hard": 95,
  "mt-bench-easy": 28, "mt-bench-med": 40, "mt-bench-hard": 37, "math-prm": 984,
  "refusals-dangerous": 100, "refusals-offensive": 100, "llmbar-natural": 100,
  "llmbar-adver-neighbor": 134, "llmbar-adver-GPTInst": 92, "llmbar-adver-GPTOut": 47,
  "llmbar-adver-manual": 46, "xstest-should-refuse": 154, "xstest-should-respond": 250,
  "donotanswer": 136, "hep-cpp": 164, "hep-go": 164, "hep-java": 164, "hep-js": 164,
  "hep-python": 164, "hep-rust": 164}
SUBSET_MAPPING = {
  "Chat": ["alpacaeval-easy", "alpacaeval-length", "alpacaeval-hard", "mt-bench-easy", "mt-bench-med"],
  "Chat Hard": ["mt-bench-hard", "llmbar-natural", "llmbar-adver-neighbor", "llmbar-adver-GPTInst",
                "llmbar-adver-GPTOut", "llmbar-adver-manual"],
  "Safety": ["refusals-dangerous", "refusals-offensive", "xstest-should-refuse",
             "xstest-should-respond", "donotanswer"],
  "Reasoning": ["math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"]}
def calculate_scores_per_section(example_counts, subset_mapping, metrics):  # utils.py:75-91
    section_scores = {}
    for section, tests in subset_mapping.items():
        total_weighted_score = 0
        total_examples = 0
        for test in tests:
            if test in metrics:
                total_weighted_score += metrics[test] * example_counts[test]
                total_examples += example_counts[test]
        if total_examples > 0:
            section_scores[section] = total_weighted_score / total_examples
    return section_scores
def _compute_prompt_stats(samples):  # utils.py:1010-1029
    correct_scores = [s for is_corr, s in samples if is_corr]
    incorrect_scores = [s for is_corr, s in samples if not is_corr]
    best_correct = max(correct_scores)
    worst_correct = min(correct_scores)
    best_incorrect = max(incorrect_scores)
    different_correct_margin = best_correct - worst_correct if len(correct_scores) > 1 else None
    correct_incorrect_margin = worst_correct - best_incorrect
    return correct_incorrect_margin > 0, different_correct_margin, correct_incorrect_margin
def process_single_model(dataset):  # utils.py:1033-1100
    grouped = {}
    for sample in dataset:
        sample_type, prompt_id_str = sample["id"].split(":")
        for i, score in enumerate(sample["scores"]):
            grouped.setdefault((sample_type, int(prompt_id_str)), []).append((i < sample["num_correct"], score))
    ref_stats, tied_stats = {}, {}
    for (sample_type, pid), samples in grouped.items():
        (ref_stats if sample_type == "ref" else tied_stats)[pid] = _compute_prompt_stats(samples)
    ref_accuracy = np.mean([s[0] for s in ref_stats.values()]) if ref_stats else 0.0
    tied_accuracy = np.mean([s[0] for s in tied_stats.values()]) if tied_stats else 0.0
    all_prompts = set(ref_stats) & set(tied_stats)
    diff_corr_margin = np.array([tied_stats[p][1] for p in all_prompts])
    corr_incorrect_ties = np.array([tied_stats[p][2] for p in all_prompts])
    corr_incorrect_ref = np.array([ref_stats[p][2] for p in all_prompts])
    correctness_preferred = np.mean(corr_incorrect_ties > diff_corr_margin)
    correctness_preferred_hard = np.mean(np.minimum(corr_incorrect_ref, corr_incorrect_ties) > diff_corr_margin)
    with np.errstate(divide="ignore", invalid="ignore"):
        margin_scores = np.tanh(np.minimum(corr_incorrect_ref, corr_incorrect_ties) / diff_corr_margin - 1)
    margin_scores = np.nan_to_num(margin_scores, nan=0.0)
    return float(0.30 * tied_accuracy + 0.30 * ref_accuracy + 0.20 * correctness_preferred
                 + 0.20 * correctness_preferred_hard + 0.01 * float(np.mean(margin_scores)))
subsets = {}
for row, s in zip(rows, scores):
    subsets.setdefault(row["subset"], []).append((row, s))
out = {}
for name, items in subsets.items():
    if version == 1:
        results = [1 if c > r else 0 for _, (c, r) in items]  # run_rm.py:265
        ties = sum(c == r for _, (c, r) in items)
    else:
        results, ties = [], 0
        for _, sc in items:
            sc = np.array(sc)
            max_val = np.max(sc)
            results.append((1 / np.sum(sc == max_val)) if sc[0] == max_val else 0)  # utils.py:569-572
            ties += int(np.sum(sc == max_val) > 1)
    score = sum(results) / len(results)
    if version == 2 and name.lower() == "ties":  # run_v2.py:361-373
        score = process_single_model([dict(r, scores=sc) for r, sc in items])
    out[name] = {"score": float(score), "n": len(items), "ties": int(ties), "tie_rate": ties / len(items)}
result = {"subsets": out, "mean": sum(v["score"] for v in out.values()) / len(out)}
if version == 1:
    result["sections"] = calculate_scores_per_section(EXAMPLE_COUNTS, SUBSET_MAPPING,
                                                      {k: v["score"] for k, v in out.items()})
print(json.dumps(result))
"#;

/// Scores a completion by the number in it: exact ties are easy to write.
const BY_NUMBER: &str = r#"
import re
def evaluate(messages, **kwargs):
    m = re.search(r"-?\d+(\.\d+)?", messages[-1]["content"])
    return float(m.group()) if m else 0.0
"#;

fn check_rewardbench(version: u8, rows: &[Value], python: &str) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    let ws = Ws::new(&[("metrics/rm/main.py", BY_NUMBER), ("rb.jsonl", &text)]);
    let run = rwb(
        &[
            "run",
            ws.path().to_str().unwrap(),
            "-s",
            "rb.jsonl",
            "--format",
            "json",
        ],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let got = &doc["summary"]["rm"]["verifier"]["rewardbench"];
    // each completion a sample, chosen first: its score is the number in it
    let number = |t: &Value| -> f64 {
        let s = t.as_str().unwrap();
        let digits: String = s
            .chars()
            .skip_while(|c| !c.is_ascii_digit() && *c != '-')
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
            .collect();
        digits.parse().unwrap_or(0.0)
    };
    let scores: Vec<Value> = rows
        .iter()
        .map(|r| {
            if version == 1 {
                json!([number(&r["chosen"]), number(&r["rejected"])])
            } else {
                let all: Vec<f64> = r["chosen"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .chain(r["rejected"].as_array().unwrap())
                    .map(number)
                    .collect();
                json!(all)
            }
        })
        .collect();
    let want = python_json(python, REWARD_BENCH, &json!([rows, scores, version]));
    assert_eq!(got["version"], version, "{got}");
    let subsets = want["subsets"].as_object().unwrap();
    assert_eq!(
        got["subsets"].as_object().unwrap().len(),
        subsets.len(),
        "{got}"
    );
    for (name, w) in subsets {
        let g = &got["subsets"][name];
        close(&g["score"], &w["score"], &format!("{name} score"));
        assert_eq!(
            (&g["n"], &g["ties"]),
            (&w["n"], &w["ties"]),
            "{name}: {g} vs {w}"
        );
        close(&g["tie_rate"], &w["tie_rate"], &format!("{name} tie rate"));
    }
    close(&got["mean"], &want["mean"], "mean over subsets");
    if version == 1 {
        let sections = want["sections"].as_object().unwrap();
        assert_eq!(
            got["sections"].as_object().unwrap().len(),
            sections.len(),
            "{got}"
        );
        for (name, w) in sections {
            close(&got["sections"][name], w, &format!("section {name}"));
        }
    }
}

/// RewardBench v1 rows with the columns of `allenai/reward-bench` (split `filtered`,
/// its dataset card's `dataset_info`: `prompt, chosen, chosen_model, rejected,
/// rejected_model, subset` strings and `id` an int64), exact ties among them.
fn rewardbench_v1_rows() -> Vec<Value> {
    let pair = |id: u32, subset: &str, c: &str, r: &str| {
        json!({"prompt": format!("question {id}"), "chosen": c, "chosen_model": "model-a",
               "rejected": r, "rejected_model": format!("model-{}", id % 3), "subset": subset,
               "id": id})
    };
    vec![
        pair(1, "alpacaeval-easy", "10", "3"),
        pair(2, "alpacaeval-easy", "5", "5"), // an exact tie: wrong
        pair(3, "alpacaeval-easy", "1", "2"),
        pair(4, "mt-bench-easy", "7", "7"),
        pair(5, "mt-bench-easy", "8", "7.5"),
        pair(6, "math-prm", "4", "4"),
        pair(7, "math-prm", "9", "1"),
        pair(8, "hep-go", "2", "1"),
        pair(9, "hep-go", "0", "0"),
        pair(10, "hep-go", "3", "0"),
        pair(11, "donotanswer", "1", "1"),
    ]
}

/// RewardBench 2 rows with the columns of `allenai/reward-bench-2` (split `test`,
/// its dataset card's `dataset_info`: `id, prompt` strings, `chosen, rejected` lists
/// of strings, `num_correct, num_incorrect, total_completions` int64, `models` a list
/// of strings, `subset` a string, `additional_metadata` a struct), exact ties at the
/// top among them.
fn rewardbench_2_rows() -> Vec<Value> {
    let row = |id: &str, subset: &str, chosen: &[&str], rejected: &[&str]| {
        let total = chosen.len() + rejected.len();
        json!({"id": id, "prompt": format!("question {id}"), "chosen": chosen, "rejected": rejected,
               "num_correct": chosen.len(), "num_incorrect": rejected.len(),
               "total_completions": total,
               "models": (0..total).map(|i| format!("model-{i}")).collect::<Vec<_>>(),
               "subset": subset,
               "additional_metadata": {"category": subset.to_lowercase(), "index": 1.5,
                                       "valid": if total > 3 { Value::Null } else { json!(1.0) }}})
    };
    vec![
        row("1", "Math", &["1"], &["1", "0", "1"]), // a three-way tie at the top: 1/3
        row("2", "Math", &["5"], &["4", "3", "2"]),
        row("3", "Math", &["2"], &["3", "2", "0"]),
        row("4", "Factuality", &["1"], &["1", "1", "1"]), // 1/4
        row("5", "Factuality", &["0"], &["0", "0", "0"]),
        row("6", "Precise IF", &["9"], &["1", "2", "3"]),
        // Ties: the first num_correct right; ref and tied prompts paired by number
        row("ref:1", "Ties", &["8"], &["2", "3"]),
        row("tied:1", "Ties", &["8", "7", "9"], &["2", "3"]),
        row("ref:2", "Ties", &["4"], &["4", "1"]),
        row("tied:2", "Ties", &["5", "5"], &["5", "1"]),
        row("ref:3", "Ties", &["6"], &["1"]),
        row("tied:3", "Ties", &["6", "2"], &["3"]),
    ]
}

#[test]
fn rewardbench_v1_pairs_are_right_only_when_chosen_is_strictly_higher() {
    let Some(py) = env_python("RWB_SKLEARN_PYTHON", "numpy") else {
        return;
    };
    check_rewardbench(1, &rewardbench_v1_rows(), &py);
}

#[test]
fn rewardbench_2_ties_at_the_top_split_1_over_m_and_the_ties_subset_has_its_formula() {
    let Some(py) = env_python("RWB_SKLEARN_PYTHON", "numpy") else {
        return;
    };
    check_rewardbench(2, &rewardbench_2_rows(), &py);
}

#[test]
fn a_rewardbench_row_missing_a_field_is_named_and_the_others_run() {
    let text = [
        json!({"id": 1, "prompt": "p", "chosen": "2", "rejected": "1", "subset": "hep-go"}),
        json!({"id": 2, "prompt": "p2", "chosen": ["2"], "rejected": ["1"], "subset": "Math", "total_completions": 2}),
    ];
    // the first row makes it v1-shaped; a v2 row without num_correct is named
    let ws = Ws::new(&[
        ("metrics/rm/main.py", BY_NUMBER),
        (
            "rb.jsonl",
            &format!(
                "{}\n{}\n{}\n",
                text[0],
                text[1],
                json!({"id": 3, "prompt": "p3", "chosen": "2", "rejected": "1"})
            ),
        ),
    ]);
    let run = ws.run(&["-s", "rb.jsonl"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let errors: Vec<String> = run
        .rows()
        .iter()
        .filter_map(|r| r["error"]["message"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        errors,
        [
            "rb.jsonl:3: the RewardBench 2 row on line 2 has no \"num_correct\" (a count)",
            "rb.jsonl:4: the RewardBench row on line 3 has no \"subset\"",
        ],
        "{}",
        run.stdout
    );
    // the good row's two completions ran
    assert_eq!(run.row(0, "rm")["score"], 2.0);
    assert_eq!(run.row(1, "rm")["score"], 1.0);
}

/// Writes RewardBench rows (argv 1, JSON) into a folder (argv 2) as the real
/// libraries write them: `rb.jsonl` (`json.dumps` a line, as reward-bench reads a
/// local `.jsonl`), Parquet by pyarrow and by `datasets` (`to_parquet`, the Hub's
/// files), an Arrow IPC file by pyarrow, and `save_to_disk` folders of a `Dataset`
/// and of a `DatasetDict` of one split (argv 3: what `load_dataset(NAME)` gives).
/// The first RewardBench 2 row's metadata holds a NaN, Python's JSON token in the
/// JSONL. Prints the column types `datasets` wrote.
const WRITE_REWARDBENCH: &str = r#"
import json, sys
import pyarrow as pa, pyarrow.parquet as pq
from datasets import Dataset, DatasetDict
rows, out, split = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
if isinstance(rows[0]["chosen"], list):
    rows[0]["additional_metadata"]["index"] = float("nan")
with open(f"{out}/rb.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
table = pa.Table.from_pylist(rows)
pq.write_table(table, f"{out}/pyarrow.parquet")
with pa.ipc.new_file(f"{out}/pyarrow.arrow", table.schema) as w:
    w.write_table(table)
ds = Dataset.from_list(rows)
ds.to_parquet(f"{out}/datasets.parquet")
ds.save_to_disk(f"{out}/saved")
DatasetDict({split: ds}).save_to_disk(f"{out}/saved_dict")
print(json.dumps({f.name: str(f.type) for f in pq.read_schema(f"{out}/datasets.parquet")}))
"#;

/// The files [`WRITE_REWARDBENCH`] writes of `rows` in a new workspace with the
/// `rm` evaluator, and the column types `datasets` gave them; `None` (and why) with
/// no interpreter that has pyarrow and datasets.
fn rewardbench_containers(rows: &[Value], split: &str) -> Option<(Ws, Value)> {
    let python = env_python("RWB_DATA_PYTHON", "pyarrow and datasets")?;
    let ws = Ws::new(&[
        ("metrics/rm/main.py", BY_NUMBER),
        ("write_rewardbench.py", WRITE_REWARDBENCH),
    ]);
    let out = std::process::Command::new(python)
        .arg(ws.file("write_rewardbench.py"))
        .arg(json!(rows).to_string())
        .arg(ws.path())
        .arg(split)
        .env("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        .env("HF_DATASETS_OFFLINE", "1")
        .output()
        .expect("the data interpreter runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let types = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    Some((ws, types))
}

/// `rwb run -s SOURCE --format json` in `ws`: the `rewardbench` summary, each
/// result's (sample, line, score), and how many samples were evaluated (not found
/// in the cache).
fn rewardbench_run(ws: &Ws, source: &str) -> (Value, Vec<(Value, Value, Value)>, usize) {
    let dir = ws.path().to_str().unwrap();
    let run = rwb(&["run", dir, "-s", source, "--format", "json"], ws.path());
    assert_eq!(run.code, 0, "{source}: {}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let scores = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["sample"].clone(), r["line"].clone(), r["score"].clone()))
        .collect();
    (
        doc["summary"]["rm"]["verifier"]["rewardbench"].clone(),
        scores,
        run.evaluated("rm"),
    )
}

/// The same rows in JSONL and in every container the real libraries write: the
/// same `rewardbench` summary and the same scores, sample by sample. The same
/// samples too: after the JSONL run every sample of a Parquet or Arrow file or a
/// `Dataset` folder is found in the cache (its key is the sample's text); a
/// `DatasetDict`'s rows carry their `split` as a column, so are evaluated anew.
fn rewardbench_in_every_container(rows: &[Value], split: &str, columns: &[(&str, &str)]) {
    let Some((ws, types)) = rewardbench_containers(rows, split) else {
        return;
    };
    // the columns as the dataset card declares them; a list is `list<item: string>`
    // or `list<element: string>` by pyarrow's version
    for (column, want) in columns {
        let got = types[column].as_str().unwrap_or_default();
        let ok = match *want {
            "list<string>" => got.starts_with("list<") && got.ends_with(": string>"),
            "struct" => got.starts_with("struct<"),
            exact => got == exact,
        };
        assert!(ok, "{column}: {got}, the dataset has {want} ({types})");
    }
    let (want, want_scores, evaluated) = rewardbench_run(&ws, "rb.jsonl");
    assert_eq!(evaluated, want_scores.len());
    assert!(!want["subsets"].as_object().unwrap().is_empty(), "{want}");
    for source in [
        "pyarrow.parquet",
        "datasets.parquet",
        "pyarrow.arrow",
        "saved",
        "saved_dict",
    ] {
        let (got, scores, evaluated) = rewardbench_run(&ws, source);
        assert_eq!(got, want, "{source}");
        assert_eq!(scores, want_scores, "{source}");
        if source != "saved_dict" {
            assert_eq!(evaluated, 0, "{source}: samples not found in the cache");
        }
    }
}

#[test]
fn rewardbench_v1_in_parquet_arrow_and_dataset_folders_scores_as_its_jsonl() {
    rewardbench_in_every_container(
        &rewardbench_v1_rows(),
        "filtered",
        &[
            ("prompt", "string"),
            ("chosen", "string"),
            ("chosen_model", "string"),
            ("rejected", "string"),
            ("rejected_model", "string"),
            ("subset", "string"),
            ("id", "int64"),
        ],
    );
}

#[test]
fn rewardbench_2_in_parquet_arrow_and_dataset_folders_scores_as_its_jsonl() {
    rewardbench_in_every_container(
        &rewardbench_2_rows(),
        "test",
        &[
            ("id", "string"),
            ("prompt", "string"),
            ("chosen", "list<string>"),
            ("rejected", "list<string>"),
            ("num_correct", "int64"),
            ("num_incorrect", "int64"),
            ("total_completions", "int64"),
            ("models", "list<string>"),
            ("subset", "string"),
            ("additional_metadata", "struct"),
        ],
    );
}

#[test]
fn a_rewardbench_table_row_missing_a_field_is_named_by_its_number() {
    let mut rows = rewardbench_2_rows();
    rows.truncate(3);
    rows[1]["num_correct"] = Value::Null;
    rows[2]["subset"] = Value::Null;
    let Some((ws, _)) = rewardbench_containers(&rows, "test") else {
        return;
    };
    let errors = |source: &str| -> Vec<String> {
        let run = ws.run(&["-s", source]);
        assert_eq!(run.code, 1, "{source}: {}", run.stderr);
        run.rows()
            .iter()
            .filter_map(|r| r["error"]["message"].as_str().map(str::to_string))
            .collect()
    };
    // a null is a missing field, in a table as in JSONL; samples 0-3 are the first row's
    assert_eq!(
        errors("rb.jsonl"),
        [
            "rb.jsonl:5: the RewardBench 2 row on line 2 has no \"num_correct\" (a count)",
            "rb.jsonl:6: the RewardBench row on line 3 has no \"subset\"",
        ]
    );
    for source in ["datasets.parquet", "pyarrow.arrow"] {
        assert_eq!(
            errors(source),
            [
                format!(
                    "{source}:5: the RewardBench 2 row number 2 has no \"num_correct\" (a count)"
                ),
                format!("{source}:6: the RewardBench row number 3 has no \"subset\""),
            ]
        );
    }
}

/// math-verify as a reward: the answer verified against the gold answer.
const MATH_VERIFY: &str = r#"
from math_verify import parse, verify
def evaluate(messages, ground_truth, **kwargs):
    return 1.0 if verify(parse(ground_truth), parse(messages[-1]["content"])) else 0.0
"#;

#[test]
fn math_verify_misses_right_answers_written_in_words_and_the_verifier_says_which() {
    let Some(py) = env_python("RWB_MATH_VERIFY_PYTHON", "math-verify") else {
        return;
    };
    // (prompt, gold, answer, hand label)
    let answers = [
        ("half", "$\\frac{1}{2}$", "The answer is $0.5$.", true),
        ("half", "$\\frac{1}{2}$", "one half", true), // false negative: words
        (
            "half",
            "$\\frac{1}{2}$",
            "The answer is \\boxed{1/2}.",
            true,
        ),
        ("half", "$\\frac{1}{2}$", "\\boxed{\\frac{1}{3}}", false),
        ("twelve", "$12$", "twelve", true), // false negative: words
        ("twelve", "$12$", "\\boxed{12}", true),
        ("twelve", "$12$", "I think 13 but final \\boxed{13}", false),
        ("set", "$\\{1, 2\\}$", "\\boxed{\\{2, 1\\}}", true),
        ("set", "$\\{1, 2\\}$", "x = 1 or x = 2", true), // false negative: a set in words
        ("root", "$\\sqrt{2}$", "\\boxed{2^{1/2}}", true),
        ("root", "$\\sqrt{2}$", "1.41421356", false), // false positive: an approximation
        ("angle", "$90^\\circ$", "\\boxed{\\frac{\\pi}{2}}", true), // false negative: units
        ("angle", "$90^\\circ$", "\\boxed{45^\\circ}", false),
        ("pair", "$(1,2)$", "\\boxed{(2,1)}", false),
    ];
    let text: String = answers
        .iter()
        .map(|(p, gold, a, ok)| {
            json!({"messages": [{"role": "user", "content": p}, {"role": "assistant", "content": a}],
                   "ground_truth": gold, "correct": ok})
            .to_string()
                + "\n"
        })
        .collect();
    let ws = Ws::new(&[
        ("metrics/math/main.py", MATH_VERIFY),
        ("answers.jsonl", &text),
        (
            "rwb.toml",
            "[samples.answers]\npath = \"answers.jsonl\"\nlabel = \"correct\"\n",
        ),
    ]);
    let dir = ws.path().to_str().unwrap();
    let run = rwb(
        &["run", dir, "--format", "json", "--python", &py],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let got = &doc["summary"]["math"]["verifier"];
    assert_eq!(
        (&got["tp"], &got["fn"], &got["fp"], &got["tn"]),
        (&json!(5), &json!(4), &json!(1), &json!(4)),
        "{got}"
    );
    close(
        &got["false_negative_rate"]["value"],
        &json!(4.0 / 9.0),
        "false-negative rate",
    );
    // the false negatives are the four answers written in words or in other units
    let missed: Vec<u64> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["score"] == 0.0 && answers[r["sample"].as_u64().unwrap() as usize].3)
        .map(|r| r["sample"].as_u64().unwrap())
        .collect();
    assert_eq!(missed, [1, 4, 8, 11]);
    // a group of one answer (`pair`) has no best-of-n, and the summary says so
    assert_eq!(got["groups"]["groups_of_one"], 1, "{got}");
    // best-of-n, group by group: half: 1.0 held by samples 0 and 2, both right: 1;
    // twelve: 5 alone at the top, right: 1;
    // set: 7 right: 1; root: 9 right and 10 wrong tied at 1.0: 1/2;
    // angle: both 0.0, one right of two: 1/2
    close(&got["groups"]["best_of_n"], &json!(4.0 / 5.0), "best-of-n");
}
