//! Can this reward be trusted (SPEC §16), through the real binary and real workers:
//! a judge asked again (`repeat = K`) against a stand-in LLM judge on 127.0.0.1, and
//! slow samples (`seconds`, percentiles, the five slowest, timeouts apart).

mod common;
use common::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the stand-in judge answers to the i-th call for each sample, whatever the
/// order the calls come in (`None`: HTTP 500).
fn sequences() -> Vec<(&'static str, Vec<Option<f64>>)> {
    vec![
        ("s0", vec![Some(0.5), Some(0.5), Some(0.5)]),
        ("s1", vec![Some(0.0), Some(1.0), Some(1.0)]),
        ("s2", vec![Some(0.5), None, Some(0.7)]),
        ("s3", vec![Some(0.2), Some(0.2), Some(0.4)]),
        ("s4", vec![None, None, None]),
        ("s5", vec![Some(0.9), Some(0.1), Some(0.5)]),
    ]
}

/// Groups of two: s0 s1, s2 s3, s4 s5.
const UIDS: [&str; 6] = ["a", "a", "b", "b", "c", "c"];

/// A stand-in LLM judge: `POST /judge {"sample": "s1"}` answers the sample's next
/// score from its sequence (or 500), sample s5 after 300 ms; counts the calls.
fn judge() -> (Loopback, Arc<Mutex<HashMap<String, usize>>>) {
    let calls: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let seen = calls.clone();
    let seqs: HashMap<&'static str, Vec<Option<f64>>> = sequences().into_iter().collect();
    let app = axum::Router::new().route(
        "/judge",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let seen = seen.clone();
            let seqs = seqs.clone();
            async move {
                let sample = body["sample"].as_str().unwrap_or("?").to_string();
                let i = {
                    let mut calls = seen.lock().unwrap();
                    let n = calls.entry(sample.clone()).or_insert(0);
                    *n += 1;
                    *n - 1
                };
                if sample == "s5" {
                    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                }
                let answer = seqs
                    .get(sample.as_str())
                    .and_then(|s| s.get(i).copied().flatten());
                match answer {
                    Some(score) => (
                        axum::http::StatusCode::OK,
                        axum::Json(json!({"score": score})),
                    ),
                    None => (
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        axum::Json(json!({"error": "overloaded"})),
                    ),
                }
            }
        }),
    );
    (Loopback::serve(app), calls)
}

const JUDGE: &str = r#"
import json, os, urllib.request

def evaluate(messages, judge_url, **kwargs):
    sample = messages[-1]["content"]
    request = urllib.request.Request(
        judge_url, data=json.dumps({"sample": sample}).encode(),
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return {"score": json.load(answer)["score"], "reason": "judged"}
    except urllib.error.HTTPError as e:
        raise RuntimeError("the judge answered %d" % e.code)
"#;

const HANG: &str = r#"
import time

def evaluate(messages, **kwargs):
    if messages[-1]["content"] == "s3":
        time.sleep(30)
    return 1.0
"#;

fn workspace(judge_url: &str) -> Ws {
    let samples: String = UIDS
        .iter()
        .enumerate()
        .map(|(i, uid)| {
            format!(
                "{}\n",
                json!({"messages": [{"role": "user", "content": "same question"},
                                    {"role": "assistant", "content": format!("s{i}")}],
                       "uid": uid})
            )
        })
        .collect();
    let ws = Ws::new(&[
        ("judge/main.py", JUDGE),
        ("hang/main.py", HANG),
        ("samples.jsonl", &samples),
        (
            "rwb.toml",
            &format!(
            "samples = [\"samples.jsonl\"]\n\
             [evaluators.judge]\nfunction = \"judge/main.py::evaluate\"\nrepeat = 3\nconcurrency = 4\nkwargs = {{ judge_url = \"{judge_url}/judge\" }}\n\
             [evaluators.hang]\nfunction = \"hang/main.py::evaluate\"\ntimeout = 2\n\
             [training]\ngroup = \"uid\"\n"
            ),
        ),
    ]);
    ws
}

fn population_std(xs: &[f64]) -> f64 {
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64).sqrt()
}

#[test]
fn a_judge_asked_three_times_gives_the_mean_the_spread_and_the_flips_and_a_rerun_is_free() {
    let (server, calls) = judge();
    let ws = workspace(&server.base());
    let run = ws.run(&[]);
    assert_eq!(
        run.code, 1,
        "two samples have a failed repeat\n{}",
        run.stderr
    );
    let expected: HashMap<&str, Vec<Option<f64>>> = sequences().into_iter().collect();
    let mut stds = Vec::new();
    for i in 0..6u64 {
        let row = run.row(i, "judge");
        let want = &expected[format!("s{i}").as_str()];
        // the order of the K calls is the scheduler's: compare as sorted lists
        let mut got: Vec<Option<f64>> = row["scores"]
            .as_array()
            .unwrap_or_else(|| panic!("no scores in {row}"))
            .iter()
            .map(Value::as_f64)
            .collect();
        let mut want = want.clone();
        got.sort_by(|a, b| a.partial_cmp(b).unwrap());
        want.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(got, want, "sample {i}: {row}");
        let ok: Vec<f64> = want.iter().flatten().copied().collect();
        if ok.is_empty() {
            assert_eq!(
                (row["score"].clone(), row["score_std"].clone()),
                (Value::Null, Value::Null)
            );
        } else {
            let mean = ok.iter().sum::<f64>() / ok.len() as f64;
            assert!(
                (row["score"].as_f64().unwrap() - mean).abs() < 1e-12,
                "{row}"
            );
            let std = population_std(&ok);
            assert!(
                (row["score_std"].as_f64().unwrap() - std).abs() < 1e-12,
                "{row}"
            );
            stds.push(std);
        }
        let flips = ok.iter().any(|&x| x >= 0.5) && ok.iter().any(|&x| x < 0.5);
        assert_eq!(row["flips"], flips, "sample {i}: {row}");
        let failed = want.iter().any(Option::is_none);
        assert_eq!(
            row["error"]["type"].as_str(),
            failed.then_some("RuntimeError"),
            "sample {i}: a failed repeat is the row's error, never a 0"
        );
        assert!(row["seconds"].as_f64().unwrap() >= 0.0);
    }
    // s1 and s5 flip; s1, s2, s3, s5 are unequal
    assert_eq!(run.row(1, "judge")["flips"], true);
    assert_eq!(run.row(2, "judge")["score"].as_f64(), Some(0.6));
    assert_eq!(
        calls.lock().unwrap().values().sum::<usize>(),
        18,
        "K calls a sample, no more"
    );

    // the summary, from --format json on the cached run
    let again = rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "json"],
        ws.path(),
    );
    assert_eq!(
        calls.lock().unwrap().values().sum::<usize>(),
        18,
        "a rerun is free"
    );
    let doc: Value =
        serde_json::from_str(&again.stdout).unwrap_or_else(|e| panic!("{e}: {}", again.stderr));
    let repeat = &doc["summary"]["judge"]["repeat"];
    assert_eq!(repeat["k"], 3);
    assert_eq!(repeat["share_unequal"].as_f64(), Some(4.0 / 6.0));
    assert_eq!(repeat["share_flip"].as_f64(), Some(2.0 / 6.0));
    let mean_std = stds.iter().sum::<f64>() / stds.len() as f64;
    assert!(
        (repeat["mean_std"].as_f64().unwrap() - mean_std).abs() < 1e-12,
        "{repeat}"
    );
    // group a: s0 is 0.5 in every repeat and s1 is 0 in one and 1 in another, so both
    // advantages change sign; in b, s3 never beats s2 (and s2's failed repeat leaves
    // one scorable member: advantage 0); in c, s4 never scores: s5's advantage is 0
    assert_eq!(
        repeat["share_advantage_sign_change"].as_f64(),
        Some(2.0 / 6.0),
        "{repeat}"
    );
    assert_eq!(doc["summary"]["judge"]["errors"], 2);
    assert!(doc["summary"]["hang"].get("repeat").is_none());
    for r in doc["results"].as_array().unwrap() {
        if r["evaluator"] == "judge" {
            let first = run.row(r["sample"].as_u64().unwrap(), "judge");
            assert_eq!(
                r["scores"], first["scores"],
                "the cached repeats, in repeat order"
            );
        }
    }

    // slow samples: s5's judge calls wait 300 ms; hang's s3 times out and is apart
    let seconds = &doc["summary"]["judge"]["seconds"];
    assert_eq!(seconds["slowest"][0]["sample"], 5, "{seconds}");
    assert_eq!(seconds["slowest"][0]["line"], 6);
    assert_eq!(seconds["slowest"].as_array().unwrap().len(), 5);
    assert!(seconds["max"].as_f64().unwrap() >= 0.3);
    assert_eq!(seconds["timeouts"], 0);
    let hang = &doc["summary"]["hang"]["seconds"];
    assert_eq!(hang["timeouts"], 1, "{hang}");
    let listed: Vec<u64> = hang["slowest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sample"].as_u64().unwrap())
        .collect();
    assert!(
        !listed.contains(&3),
        "a timeout is not among the slowest: {listed:?}"
    );
    assert_eq!(listed.len(), 5);
    assert!(hang["max"].as_f64().unwrap() < 2.0, "{hang}");
    // the percentiles are the nearest-rank ones of the rows' seconds
    let mut times: Vec<f64> = (0..6)
        .map(|i| run.row(i, "judge")["seconds"].as_f64().unwrap())
        .collect();
    times.sort_by(f64::total_cmp);
    assert_eq!(seconds["p50"].as_f64(), Some(times[2]));
    assert_eq!(seconds["p95"].as_f64(), Some(times[5]));
}

#[test]
fn the_table_summary_names_the_slowest_samples_and_the_spread() {
    let (server, _) = judge();
    let ws = workspace(&server.base());
    let run = rwb(&["run", ws.path().to_str().unwrap()], ws.path());
    let line = |start: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line {start}:\n{}", run.stdout))
            .to_string()
    };
    assert!(line("judge seconds: p50 ").contains("slowest: sample 5 (line 6) "));
    assert!(line("hang seconds: ").ends_with("; 1 timeout"));
    assert!(line("judge repeat 3: mean std ")
        .contains("unequal 0.667, flip 0.333, advantage sign change 0.333"));
}

#[test]
fn repeat_must_be_a_whole_number_of_calls() {
    for (value, says) in [
        ("0", "line 3: [evaluators.judge] repeat = 0: give the number of calls per sample, a whole number from 1 to 1000 (1: once)"),
        ("2.5", "line 3: [evaluators.judge] repeat: invalid type: floating point `2.5`, expected i64"),
        ("\"3\"", "line 3: [evaluators.judge] repeat: invalid type: string \"3\", expected i64"),
    ] {
        let ws = Ws::new(&[
            ("judge/main.py", HANG),
            ("samples.jsonl", &samples(2)),
            (
                "rwb.toml",
                &format!("[evaluators.judge]\nfunction = \"judge/main.py::evaluate\"\nrepeat = {value}\n"),
            ),
        ]);
        let run = ws.run(&[]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains(says), "{value}: {}", run.stderr);
    }
    let ws = Ws::new(&[("judge/main.py", HANG), ("samples.jsonl", &samples(2))]);
    let run = ws.run(&[
        "--function",
        "judge=judge/main.py::evaluate",
        "--repeat",
        "0",
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("--repeat <K>") && run.stderr.contains("a whole number from 1 to 1000"),
        "{}",
        run.stderr
    );
}

const RANDOM: &str = r#"
import random

def evaluate(messages, **kwargs):
    return random.random()
"#;

const WRITER: &str = r#"
import json, os

def evaluate(messages, out_dir, **kwargs):
    with open(os.path.join(out_dir, "judged.json"), "a") as f:
        json.dump(messages, f)
    with open(os.path.join(out_dir, "read-only.txt")) as f:
        f.read()
    return 1.0
"#;

/// Swallows the ValueError of an answer that is not a number: those samples score 0.
const SWALLOW: &str = r#"
def parse(text):
    return float(text)

def evaluate(messages, **kwargs):
    text = messages[-1]["content"]
    try:
        value = parse(text)
    except ValueError:
        return 0.0
    try:
        return {"a": 1.0}[text]
    except KeyError:
        pass
    return 1.0 if value > 0 else 0.5
"#;

/// Calls the stand-in judge (and a subprocess) on every sample.
const NETWORK: &str = r#"
import json, subprocess, sys, urllib.request

def evaluate(messages, judge_url, **kwargs):
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    request = urllib.request.Request(judge_url, data=json.dumps({"sample": "s0"}).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)["score"]
    except urllib.error.HTTPError:
        return 0.5
"#;

/// `rwb check --format json` on evaluators that are random, write a file, swallow
/// ValueErrors on known samples and call the network, with `python`.
fn check_findings(python: &str) {
    let (server, _) = judge();
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_str().unwrap();
    std::fs::write(out.path().join("read-only.txt"), "x").unwrap();
    let answers = ["1", "x", "2", "y", "-1", "a"];
    let samples: String = answers
        .iter()
        .map(|a| {
            format!(
                "{}\n",
                json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": a}]})
            )
        })
        .collect();
    let ws = Ws::new(&[
        ("metrics/random/main.py", RANDOM),
        ("metrics/writer/main.py", WRITER),
        ("metrics/swallow/main.py", SWALLOW),
        ("metrics/network/main.py", NETWORK),
        ("samples.jsonl", &samples),
        (
            "rwb.toml",
            // the writer's folder made writable in rwb's box (it lay in /tmp before)
            &format!(
                "[sandbox]\nwritable = [\"{out_dir}\"]\n\
                 [evaluators.writer]\nkwargs = {{ out_dir = \"{out_dir}\" }}\n\
                 [evaluators.network]\nkwargs = {{ judge_url = \"{}/judge\" }}\n",
                server.base()
            ),
        ),
    ]);
    let run = rwb(
        &[
            "check",
            ws.path().to_str().unwrap(),
            "--format",
            "json",
            "--python",
            python,
        ],
        ws.path(),
    );
    assert_eq!(run.code, 1, "the random evaluator breaks\n{}", run.stderr);
    let doc: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    let of = |name: &str| -> Value {
        doc["evaluators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["evaluator"] == name)
            .unwrap_or_else(|| panic!("no {name} in {doc}"))
            .clone()
    };
    // same input, same score? the random one differs on every sample, in another worker
    let random = of("random");
    let differs = random["differs"].as_array().unwrap();
    let at: Vec<&str> = differs
        .iter()
        .map(|d| d["sample"].as_str().unwrap())
        .collect();
    assert_eq!(
        at,
        (1..=6)
            .map(|l| format!("samples.jsonl:{l}"))
            .collect::<Vec<_>>()
    );
    for d in differs {
        assert_ne!(d["first"], d["second"]);
        assert!(
            d["first"].as_f64().is_some() && d["second"].as_f64().is_some(),
            "{d}"
        );
    }
    for name in ["writer", "swallow", "network"] {
        assert_eq!(of(name)["differs"], json!([]), "{name}");
    }
    // what each reaches
    let writer = of("writer");
    let judged = format!("writes {}", out.path().join("judged.json").display());
    assert_eq!(
        writer["reaches"],
        json!([{"what": judged, "samples": (1..=6).map(|l| format!("samples.jsonl:{l}")).collect::<Vec<_>>()}]),
        "reading is not reaching"
    );
    let network = of("network");
    let reached: Vec<&str> = network["reaches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["what"].as_str().unwrap())
        .collect();
    let python_path = reached
        .iter()
        .find(|r| r.starts_with("runs a subprocess: "))
        .copied();
    assert!(
        python_path.is_some_and(|r| r.ends_with(" -c pass")),
        "{reached:?}"
    );
    assert!(
        reached.contains(&format!("calls the network: {}", server.addr).as_str()),
        "{reached:?}"
    );
    assert_eq!(of("random")["reaches"], json!([]));
    assert_eq!(of("swallow")["reaches"], json!([]));
    // swallowed: x, y and a (no numbers) scored 0.0 after the ValueError caught on
    // the line calling parse (line 8); the KeyError of 1, 2 and -1 on line 12
    let swallow = of("swallow");
    assert_eq!(
        swallow["swallowed"],
        json!([
            {"type": "ValueError", "at": "metrics/swallow/main.py:8", "score": 0.0, "count": 3,
             "samples": ["samples.jsonl:2", "samples.jsonl:4", "samples.jsonl:6"]},
            {"type": "KeyError", "at": "metrics/swallow/main.py:12", "score": 1.0, "count": 2,
             "samples": ["samples.jsonl:1", "samples.jsonl:3"]},
            {"type": "KeyError", "at": "metrics/swallow/main.py:12", "score": 0.5, "count": 1,
             "samples": ["samples.jsonl:5"]},
        ])
    );
    for name in ["random", "writer"] {
        assert_eq!(
            of(name)["swallowed"],
            json!([]),
            "{name}: nothing of the libraries it calls"
        );
    }
    // the text report says the same
    let text = rwb(
        &["check", ws.path().to_str().unwrap(), "--python", python],
        ws.path(),
    );
    assert!(
        text.stdout.contains("  ⚠ 3 samples scored 0.0 after a ValueError caught at metrics/swallow/main.py:8 — samples.jsonl:2, samples.jsonl:4, samples.jsonl:6"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .lines()
            .any(|l| l == format!("    {judged} — 6 samples: samples.jsonl:1, samples.jsonl:2, …")),
        "{}",
        text.stdout
    );
    // the random one's second worker process: one line, its numbers rounded
    let line = text
        .stdout
        .lines()
        .find(|l| l.contains("scored differently in another worker process"))
        .unwrap_or_else(|| panic!("{}", text.stdout));
    assert!(
        line.starts_with(
            "  ✗ scored differently in another worker process on 6 of 6 samples (by up to "
        ) && line.ends_with(" — samples.jsonl:1, samples.jsonl:2, …"),
        "{line}"
    );
    assert_eq!(text.code, 1);
}

#[test]
fn check_names_differing_scores_what_a_reward_reaches_and_what_it_swallows_on_python3() {
    check_findings("python3");
}

/// The same on Python 3.12 or later (`sys.monitoring`), from pyenv when it has one.
/// A Python 3.12 or later (`sys.monitoring`) from pyenv, when it has one.
fn python_3_12() -> Option<std::path::PathBuf> {
    let root = std::process::Command::new("pyenv").arg("root").output();
    root.ok().and_then(|o| {
        let root = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let mut versions: Vec<_> = std::fs::read_dir(format!("{root}/versions"))
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                let minor = name
                    .strip_prefix("3.")
                    .and_then(|r| r.split('.').next()?.parse::<u32>().ok());
                minor.is_some_and(|m| m >= 12) && p.join("bin/python").exists()
            })
            .collect();
        versions.sort();
        versions.first().map(|p| p.join("bin/python"))
    })
}

#[test]
fn check_finds_the_same_with_sys_monitoring_on_python_3_12() {
    let Some(python) = python_3_12() else {
        eprintln!("skipped: no Python 3.12+ under `pyenv root`/versions (sys.monitoring is checked there)");
        return;
    };
    check_findings(python.to_str().unwrap());
}

/// A TRL batch reward that gives every sample the same number, drawn when its module
/// is imported: two calls in one worker agree, a second worker process draws anew.
const SEEDED_BATCH: &str = r#"
import random

SEED = random.random()

def reward(prompts, completions, **kwargs):
    return [SEED for _ in completions]
"#;

/// A TRL batch reward that swallows the ValueError of an answer that is not a number
/// (those samples score 0), and a KeyError only a batch of more than two raises.
const SWALLOW_BATCH: &str = r#"
def parse(text):
    return float(text)

def text_of(completion):
    return completion if isinstance(completion, str) else completion[-1]["content"]

def reward(prompts, completions, **kwargs):
    out = []
    for c in completions:
        try:
            out.append(1.0 if parse(text_of(c)) > 0 else 0.5)
        except ValueError:
            out.append(0.0)
    try:
        {False: 0}[len(completions) > 2]
    except KeyError:
        pass
    return out
"#;

/// `rwb check` on batched styles (SPEC §16): a second worker's scores compared and
/// the swallowed exceptions counted per sample, as for per-sample styles.
fn check_batched_findings(python: &str) {
    let answers = ["1", "x", "2", "y", "-1"];
    let samples: String = answers
        .iter()
        .map(|a| {
            format!(
                "{}\n",
                json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": a}]})
            )
        })
        .collect();
    let ws = Ws::new(&[
        ("metrics/seeded/main.py", SEEDED_BATCH),
        ("metrics/swallow/main.py", SWALLOW_BATCH),
        ("samples.jsonl", &samples),
        (
            "rwb.toml",
            "[evaluators.seeded]\nfunction = \"metrics/seeded/main.py::reward\"\nbatch_size = 3\n\
             [evaluators.swallow]\nfunction = \"metrics/swallow/main.py::reward\"\nbatch_size = 3\n",
        ),
    ]);
    let run = rwb(
        &[
            "check",
            ws.path().to_str().unwrap(),
            "--format",
            "json",
            "--python",
            python,
        ],
        ws.path(),
    );
    let doc: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stderr));
    let of = |name: &str| -> Value {
        doc["evaluators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["evaluator"] == name)
            .unwrap_or_else(|| panic!("no {name} in {doc}"))
            .clone()
    };
    let seeded = of("seeded");
    assert_eq!(seeded["style"], "trl", "{seeded}");
    assert_eq!(
        seeded["breaks"],
        json!([]),
        "two calls in one worker agree: only the second worker differs"
    );
    let differs = seeded["differs"].as_array().unwrap();
    let at: Vec<&str> = differs
        .iter()
        .map(|d| d["sample"].as_str().unwrap())
        .collect();
    assert_eq!(
        at,
        (1..=5)
            .map(|l| format!("samples.jsonl:{l}"))
            .collect::<Vec<_>>(),
        "{seeded}"
    );
    let first = differs[0]["first"].as_f64().unwrap();
    let second = differs[0]["second"].as_f64().unwrap();
    assert_ne!(first, second);
    for d in differs {
        assert_eq!(
            (d["first"].as_f64(), d["second"].as_f64()),
            (Some(first), Some(second)),
            "one draw per worker process: {d}"
        );
    }
    assert_eq!(seeded["swallowed"], json!([]));
    let swallow = of("swallow");
    assert_eq!(swallow["differs"], json!([]), "{swallow}");
    // batches of three (lines 1-3, 4-5): x (line 2) and y (line 4) raise the
    // ValueError caught at line 12 when called alone too; the KeyError of line 16
    // needs the whole first batch, so each of its samples carries it
    assert_eq!(
        swallow["swallowed"],
        json!([
            {"type": "KeyError", "at": "metrics/swallow/main.py:16", "score": 1.0, "count": 2,
             "samples": ["samples.jsonl:1", "samples.jsonl:3"]},
            {"type": "ValueError", "at": "metrics/swallow/main.py:12", "score": 0.0, "count": 2,
             "samples": ["samples.jsonl:2", "samples.jsonl:4"]},
            {"type": "KeyError", "at": "metrics/swallow/main.py:16", "score": 0.0, "count": 1,
             "samples": ["samples.jsonl:2"]},
        ]),
        "{swallow}"
    );
    let text = rwb(
        &["check", ws.path().to_str().unwrap(), "--python", python],
        ws.path(),
    );
    assert!(
        text.stdout.contains("  ⚠ 2 samples scored 0.0 after a ValueError caught at metrics/swallow/main.py:12 — samples.jsonl:2, samples.jsonl:4"),
        "{}",
        text.stdout
    );
}

#[test]
fn check_compares_a_second_worker_and_counts_swallowed_exceptions_for_batched_styles() {
    check_batched_findings("python3");
}

#[test]
fn check_of_batched_styles_finds_the_same_with_sys_monitoring_on_python_3_12() {
    let Some(python) = python_3_12() else {
        eprintln!("skipped: no Python 3.12+ under `pyenv root`/versions (sys.monitoring is checked there)");
        return;
    };
    check_batched_findings(python.to_str().unwrap());
}
