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

/// A judge that answers each sample from a fixed sequence, whatever the order its
/// calls come in (the n-th call of a sample, counted under a lock in `calls_dir`):
/// three calls per round, the second and third rounds all 1.0.
const SEQUENCED: &str = r#"
import fcntl, os

ROUND_1 = {"a0": [0.2, 0.2, 0.2], "a1": [0.3, 1.0, 1.0], "b0": [0.4, 0.6, 0.8], "b1": [0.5, 0.5, 0.5]}

def evaluate(messages, calls_dir, **kwargs):
    sample = messages[-1]["content"]
    with open(os.path.join(calls_dir, sample), "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = len(f.read().splitlines())
        f.write("call\n")
    return ROUND_1[sample][n] if n < 3 else 1.0
"#;

fn calls(dir: &std::path::Path, sample: &str) -> usize {
    std::fs::read_to_string(dir.join(sample))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// `repeat = 3` in the workbench (SPEC §16): three calls per sample, the rows show
/// the mean, `v` the spread (mean std, unequal, flip, advantage sign change) and
/// `r` asks again; a restart reads all three from the cache.
#[test]
fn the_workbench_asks_a_repeated_judge_k_times_shows_the_mean_and_the_spread_and_r_asks_again() {
    let calls_dir = tempfile::tempdir().unwrap();
    let samples: String = [("a0", "a"), ("a1", "a"), ("b0", "b"), ("b1", "b")]
        .iter()
        .map(|(s, uid)| {
            json!({"messages": [{"role": "user", "content": format!("question {uid}")},
                                {"role": "assistant", "content": s}],
                   "uid": uid})
            .to_string()
                + "\n"
        })
        .collect();
    let ws = Ws::new(&[
        ("judge/main.py", SEQUENCED),
        ("samples.jsonl", &samples),
        (
            "rwb.toml",
            &format!(
                "samples = [\"samples.jsonl\"]\n\
                 [evaluators.judge]\nfunction = \"judge/main.py::evaluate\"\nrepeat = 3\n\
                 kwargs = {{ calls_dir = \"{}\" }}\n\
                 [sandbox]\nwritable = [\"{}\"]\n\
                 [training]\ngroup = \"uid\"\n",
                calls_dir.path().display(),
                calls_dir.path().display()
            ),
        ),
    ]);
    let tmux = Tmux::start(&ws, 160, 40, RWB);
    // the means: 0.2, (0.3 + 1 + 1) / 3, 0.6, 0.5
    tmux.wait_for("the means of three calls", |s| {
        s.contains("0.200") && s.contains("0.767") && s.contains("0.600") && s.contains("0.500")
    });
    for s in ["a0", "a1", "b0", "b1"] {
        assert_eq!(calls(calls_dir.path(), s), 3, "three calls of {s}");
    }
    tmux.key("v");
    // stds 0, 0.330, 0.163, 0 (mean 0.123); a1 and b0 unequal and flipping; the
    // advantages of b0 and b1 change sign with b0's score (0.4, then 0.6 or 0.8)
    tmux.wait_for("the spread", |s| {
        s.contains(
            "repeat 3: mean std 0.123, unequal 0.500, flip 0.500, advantage sign change 0.500",
        )
    });
    tmux.key("Escape");
    tmux.key("r");
    tmux.wait_for("the second round", |s| {
        s.matches("1.000").count() >= 4 && !s.contains("0.767")
    });
    for s in ["a0", "a1", "b0", "b1"] {
        assert_eq!(
            calls(calls_dir.path(), s),
            6,
            "r asked {s} three times again"
        );
    }
    tmux.key("v");
    tmux.wait_for("no spread left", |s| {
        s.contains(
            "repeat 3: mean std 0.000, unequal 0.000, flip 0.000, advantage sign change 0.000",
        )
    });
    tmux.key("Escape");
    tmux.key("q");
    drop(tmux);
    // a restart reads the three repeats from the cache: no call
    let tmux = Tmux::start(&ws, 160, 40, RWB);
    tmux.wait_for("the cached means", |s| {
        s.contains("Samples 4/4") && s.matches("1.000").count() >= 4
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    for s in ["a0", "a1", "b0", "b1"] {
        assert_eq!(calls(calls_dir.path(), s), 6, "{s} came from the cache");
    }
}

/// Swallows the ValueError of an answer that is not a number: those samples score 0.
const SWALLOW: &str = r#"
def parse(text):
    return float(text)

def evaluate(messages, **kwargs):
    try:
        return 1.0 if parse(messages[-1]["content"]) > 0 else 0.5
    except ValueError:
        return 0.0
"#;

/// The same as a TRL batch reward.
const SWALLOW_BATCH: &str = r#"
def parse(text):
    return float(text)

def reward(prompts, completions, **kwargs):
    out = []
    for c in completions:
        try:
            out.append(1.0 if parse(c[-1]["content"]) > 0 else 0.5)
        except ValueError:
            out.append(0.0)
    return out
"#;

/// `R` in the workbench watches every call for exceptions swallowed in the
/// project's files (SPEC §16): `v` counts them with type, file:line and score after
/// `R`, never before (a normal run is not watched), and `r` on one evaluator runs it
/// unwatched again.
#[test]
fn after_shift_r_the_statistics_count_the_exceptions_a_reward_swallowed() {
    let samples: String = ["1", "x", "2", "y"]
        .iter()
        .map(|a| {
            json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": a}]})
                .to_string()
                + "\n"
        })
        .collect();
    let ws = Ws::new(&[
        ("metrics/swallow/main.py", SWALLOW),
        ("metrics/batched/main.py", SWALLOW_BATCH),
        ("samples.jsonl", &samples),
        (
            "rwb.toml",
            "[evaluators.swallow]\nfunction = \"metrics/swallow/main.py::evaluate\"\n\
             [evaluators.batched]\nfunction = \"metrics/batched/main.py::reward\"\nbatch_size = 2\n",
        ),
    ]);
    let tmux = Tmux::start(&ws, 160, 40, RWB);
    tmux.wait_for("the scores", |s| {
        s.contains("Samples 4/4") && s.matches("0.000").count() >= 4
    });
    tmux.key("v");
    let before = tmux.wait_for("the statistics", |s| s.contains("Statistics"));
    assert!(
        !before.contains("caught at") && !before.contains("no exception swallowed"),
        "a normal run is not watched:\n{before}"
    );
    tmux.key("Escape");
    tmux.key("R");
    tmux.key("v");
    let swallow =
        "⚠ 2 samples scored 0.0 after a ValueError caught at metrics/swallow/main.py:7 (R)";
    let batched =
        "⚠ 2 samples scored 0.0 after a ValueError caught at metrics/batched/main.py:9 (R)";
    tmux.wait_for("the swallowed exceptions", |s| {
        s.contains(swallow) && s.contains(batched)
    });
    tmux.key("Escape");
    // r reruns the selected evaluator (batched, the first) unwatched: its count is
    // gone, swallow's stays
    tmux.key("r");
    tmux.key("v");
    let after = tmux.wait_for("batched unwatched again", |s| {
        s.contains(swallow) && !s.contains("metrics/batched/main.py")
    });
    assert!(after.contains("Statistics"), "{after}");
    tmux.key("Escape");
    tmux.key("q");
}

/// Labels from a `human = "COLUMN"` column in the workbench (SPEC §16): counted in
/// `v` with where they come from; a label given with `+`/`-` replaces the column's
/// for its sample; a value neither bool nor number is named and left unlabelled.
#[test]
fn the_workbench_reads_the_human_column_and_labels_given_here_override_it() {
    let rows = [
        (0.9, json!(true)),
        (0.1, json!(true)),
        (0.8, json!(false)),
        (0.2, Value::Null),
        (0.7, json!("maybe")),
    ];
    let lines: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(i, (s, verdict))| {
            let mut row = json!({"messages": [{"role": "user", "content": format!("question {i}")},
                                              {"role": "assistant", "content": format!("answer {i}")}],
                                 "s": s});
            if !verdict.is_null() {
                row["verdict"] = verdict.clone();
            }
            row.to_string()
        })
        .collect();
    let ws = Ws::new(&[
        ("metrics/judge/main.py", SCORED),
        ("samples.jsonl", &(lines.join("\n") + "\n")),
        (
            "rwb.toml",
            "[samples.main]\npath = \"samples.jsonl\"\nhuman = \"verdict\"\n",
        ),
    ]);
    let tmux = Tmux::start(&ws, 200, 40, RWB);
    tmux.wait_for("the scores and the bad label named", |s| {
        s.contains("Samples 5/5")
            && s.contains("0.700")
            && s.contains("samples.jsonl:5: the human label verdict = \"maybe\" is neither a bool nor a number")
    });
    tmux.key("v");
    // 0.9 true (tp), 0.1 true (fn), 0.8 false (fp); line 4 has none, line 5 a bad one
    tmux.wait_for("the column's labels", |s| {
        s.contains("human labels: 3 from column verdict · 0 given here (labels.jsonl)")
            && s.contains("agreement with 3 human labels (2 unlabelled): tp 1 fp 1 fn 1 tn 0")
    });
    tmux.key("Escape");
    tmux.key("j");
    tmux.key("-"); // line 2 (0.1): fail here, true in the column: now a tn
    tmux.key("j");
    tmux.key("j");
    tmux.key("+"); // line 4 (0.2): pass, no column label: a fn
    tmux.wait_for("the second label", |s| s.contains("line 4 labelled pass"));
    tmux.key("v");
    tmux.wait_for("labels given here over the column", |s| {
        s.contains("human labels: 2 from column verdict · 2 given here, 1 over the column's (labels.jsonl)")
            && s.contains("agreement with 4 human labels (1 unlabelled): tp 1 fp 1 fn 1 tn 1")
    });
    tmux.key("Escape");
    tmux.key("/");
    tmux.keys(&["-l", "disagree"]);
    tmux.key("Enter");
    // line 3 (0.8, false in the column) and line 4 (0.2, pass given here)
    let shown = tmux.wait_for("the disagreeing samples", |s| s.contains("Samples 2/5"));
    assert!(
        shown.contains("0.800") && shown.contains("0.200") && !shown.contains("0.100"),
        "{shown}"
    );
    tmux.key("Escape");
    tmux.key("q");
    // rwb run gives the same labels the same precedence
    let run = rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "json"],
        ws.path(),
    );
    let doc: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stderr));
    let a = &doc["summary"]["judge"]["agreement"];
    assert_eq!(
        [&a["n"], &a["tp"], &a["fp"], &a["fn"], &a["tn"]],
        [&json!(4), &json!(1), &json!(1), &json!(1), &json!(1)],
        "{a}"
    );
}

/// Labels are seen and their sharing said (issue 48): `+`/`-` mark the sample in the
/// list and say the label in the conversation and the breakdown; a label given on a
/// line whose text is on another line says it applies there too; `labels.jsonl`
/// records where it was given (file, line, the row's id) beside the content key; and
/// `rwb run --format jsonl` rows carry the label, only on labelled rows.
#[test]
fn a_label_shows_in_the_list_and_the_panes_and_says_which_lines_share_it() {
    let row = |i: usize, s: f64| {
        json!({"id": format!("row-{i}"),
               "messages": [{"role": "user", "content": format!("question {i}")},
                            {"role": "assistant", "content": format!("answer {i}")}],
               "s": s})
        .to_string()
    };
    let twin = json!({"id": "twin",
                      "messages": [{"role": "user", "content": "question twin"},
                                   {"role": "assistant", "content": "answer twin"}],
                      "s": 0.9})
    .to_string();
    // lines 5 and 7 are the same text
    let lines = [
        row(1, 0.1),
        row(2, 0.2),
        row(3, 0.3),
        row(4, 0.4),
        twin.clone(),
        row(6, 0.6),
        twin,
    ];
    let ws = Ws::new(&[
        ("metrics/judge/main.py", SCORED),
        ("samples.jsonl", &(lines.join("\n") + "\n")),
    ]);
    let tmux = Tmux::start(&ws, 200, 40, RWB);
    tmux.wait_for("the scores", |s| {
        s.contains("Samples 7/7") && s.matches("0.900").count() >= 2
    });
    for _ in 0..4 {
        tmux.key("j");
    }
    tmux.key("+");
    tmux.wait_for("the label on line 5, shared with line 7", |s| {
        s.contains("line 5 labelled pass; the same text is on line 7, which shares the label")
    });
    // both lines of the text carry the mark; no other line does
    let screen = tmux.wait_for("the marks", |s| {
        s.lines().filter(|l| l.contains("+ question twin")).count() == 2
    });
    assert!(!screen.contains("+ question 4"), "{screen}");
    tmux.key("j");
    tmux.key("j");
    tmux.key("-");
    let screen = tmux.wait_for("the label on line 7 replacing line 5's", |s| {
        s.contains("line 7 labelled fail; the same text is on line 5, which shares the label")
    });
    let screen = if screen
        .lines()
        .filter(|l| l.contains("- question twin"))
        .count()
        == 2
    {
        screen
    } else {
        tmux.wait_for("the fail marks", |s| {
            s.lines().filter(|l| l.contains("- question twin")).count() == 2
        })
    };
    // the conversation says the label and its twin, the breakdown how it compares
    assert!(
        screen.contains("label fail (given here, kept in labels.jsonl)"),
        "{screen}"
    );
    assert!(
        screen.contains("the same text is on line 5, which shares this label"),
        "{screen}"
    );
    assert!(
        screen.contains("human label fail: this score disagrees (threshold 0.5)"),
        "{screen}"
    );
    tmux.key("q");
    drop(tmux);
    let kept: Vec<Value> = std::fs::read_to_string(ws.file("labels.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let places: Vec<(Value, Value, Value, Value)> = kept
        .iter()
        .map(|v| {
            assert_eq!(v["key"], json!(key(&lines[4])), "{v}");
            (
                v["label"].clone(),
                v["file"].clone(),
                v["line"].clone(),
                v["id"].clone(),
            )
        })
        .collect();
    assert_eq!(
        places,
        vec![
            (json!(true), json!("samples.jsonl"), json!(5), json!("twin")),
            (
                json!(false),
                json!("samples.jsonl"),
                json!(7),
                json!("twin")
            ),
        ]
    );
    // rwb run's rows carry the label on both lines of the text, and on no other
    let run = ws.run(&[]);
    let labels: Vec<Option<Value>> = run.rows().iter().map(|r| r.get("label").cloned()).collect();
    assert_eq!(
        labels,
        [
            None,
            None,
            None,
            None,
            Some(json!("fail")),
            None,
            Some(json!("fail"))
        ],
        "{}",
        run.stdout
    );
    assert_eq!(run.row(4, "judge")["disagrees"], json!(true));
}
