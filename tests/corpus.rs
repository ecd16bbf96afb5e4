//! The corpus: evaluators shaped like the ones people publish (TRL batch functions with
//! batch-relative scores, a callable reward object, a function inside a package, veRL
//! `compute_score` old and new, a reward-kit decorated evaluator, a lazy import, verifiers
//! Rubric functions, async and plain), scored
//! by rwb and by `tests/corpus/direct.py`, which calls each the way its trainer does.
//! Every score must agree number for number: cold, cached, with any `--jobs`, and after
//! an edit to a sample or to a lazily imported helper.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (sample, evaluator) → score (`None`: no score).
type Scores = BTreeMap<(u64, String), Option<f64>>;

const EVALUATORS: usize = 11;
const LINES: u64 = 42;
/// The line of samples.jsonl that is not a sample (no `messages`).
const NOT_A_SAMPLE: u64 = 20;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A fresh copy of tests/corpus, and the interpreter both sides use: the real
/// reward-kit's when the CI venv is there, else python3 with rwb's bundled module.
struct Corpus {
    ws: Ws,
    python: String,
    bundled: Option<PathBuf>,
}

impl Corpus {
    fn new() -> Corpus {
        let ws = Ws::new(&[]);
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
        copy_dir(&source, ws.path());
        let (python, bundled) = match std::env::var("RWB_REAL_REWARD_KIT_PYTHON") {
            Ok(p) if !p.is_empty() => (p, None),
            _ => (
                "python3".to_string(),
                Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/python")),
            ),
        };
        Corpus {
            ws,
            python,
            bundled,
        }
    }

    /// What calling every evaluator directly gives.
    fn direct(&self) -> Scores {
        let mut command = Command::new(&self.python);
        command
            .arg(self.ws.file("direct.py"))
            .arg(self.ws.path())
            .current_dir(self.ws.path())
            .env("PYTHONDONTWRITEBYTECODE", "1");
        if let Some(dir) = &self.bundled {
            command.env("PYTHONPATH", dir);
        }
        let out = command.output().expect("python runs");
        assert!(
            out.status.success(),
            "direct.py failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut scores = Scores::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let row: Value = serde_json::from_str(line).unwrap();
            scores.insert(
                (
                    row["sample"].as_u64().unwrap(),
                    row["evaluator"].as_str().unwrap().to_string(),
                ),
                row["score"].as_f64(),
            );
        }
        assert_eq!(scores.len(), (LINES as usize - 1) * EVALUATORS);
        scores
    }

    /// rwb's rows; every (line, evaluator) has exactly one, and the line that is not a
    /// sample is a BadSample row for every evaluator.
    fn rwb(&self, args: &[&str]) -> (Scores, Run) {
        let mut all = vec!["--python", self.python.as_str()];
        all.extend_from_slice(args);
        let run = self.ws.run(&all);
        assert!(run.code <= 1, "rwb failed: {}", run.stderr);
        let mut scores = Scores::new();
        for row in run.rows() {
            let sample = row["sample"].as_u64().unwrap();
            let evaluator = row["evaluator"].as_str().unwrap().to_string();
            if sample == NOT_A_SAMPLE {
                assert_eq!(row["error"]["type"], "BadSample", "{row}");
                continue;
            }
            assert!(
                row["error"].is_null(),
                "{evaluator} failed on sample {sample}: {}",
                row["error"]
            );
            let old = scores.insert((sample, evaluator), row["score"].as_f64());
            assert!(old.is_none(), "two rows for one pair: {row}");
        }
        assert_eq!(
            run.rows().len(),
            LINES as usize * EVALUATORS,
            "one row per pair"
        );
        (scores, run)
    }
}

fn assert_same(what: &str, rwb: &Scores, direct: &Scores) {
    let differing: Vec<String> = direct
        .iter()
        .filter(|(k, v)| rwb.get(*k) != Some(*v))
        .map(|((s, e), v)| {
            format!(
                "{e} sample {s}: direct {v:?}, rwb {:?}",
                rwb.get(&(*s, e.clone()))
            )
        })
        .collect();
    assert!(
        differing.is_empty() && rwb.len() == direct.len(),
        "{what}: {} of {} scores differ:\n{}",
        differing.len(),
        direct.len(),
        differing.join("\n")
    );
}

#[test]
fn every_score_is_the_one_each_trainer_computes() {
    let corpus = Corpus::new();
    let direct = corpus.direct();
    // the corpus is not trivial: batch-relative scores differ across the file and the
    // old-veRL scorer finds the assistant turn in prompt+response
    let distinct = |name: &str| {
        let mut v: Vec<String> = direct
            .iter()
            .filter(|((_, e), _)| e == name)
            .map(|(_, s)| format!("{s:?}"))
            .collect();
        v.sort();
        v.dedup();
        v.len()
    };
    assert!(distinct("len") > 10 && distinct("countdown") == 3);

    let (cold, run) = corpus.rwb(&["--jobs", "1"]);
    assert_same("cold run, --jobs 1", &cold, &direct);
    assert_eq!(run.evaluated("len"), (LINES - 1) as usize);

    let (two_jobs, _) = corpus.rwb(&["--jobs", "2", "--no-cache"]);
    assert_same("--jobs 2 --no-cache", &two_jobs, &direct);

    let (warm, run) = corpus.rwb(&["--jobs", "2"]);
    assert_same("cached run", &warm, &direct);
    for name in ["len", "countdown", "lazy", "pkg_accuracy"] {
        assert_eq!(run.evaluated(name), 0, "{name} was fully cached");
    }
}

#[test]
fn after_an_edit_the_cached_run_still_agrees() {
    let corpus = Corpus::new();
    corpus.rwb(&[]);

    // one sample's answer gets much longer: its whole TRL batch is rescored
    let text = std::fs::read_to_string(corpus.ws.file("samples.jsonl")).unwrap();
    let edited = text.replacen(
        "I am not sure. ",
        "I am not sure at all, honestly, not even a little. ",
        1,
    );
    assert_ne!(text, edited);
    corpus.ws.write("samples.jsonl", &edited);
    // the helper that evaluate() imports lazily changes its weight
    let helper = std::fs::read_to_string(corpus.ws.file("metrics/lazy/lazy_helper.py")).unwrap();
    corpus.ws.write(
        "metrics/lazy/lazy_helper.py",
        &helper.replace("WEIGHT = 0.01", "WEIGHT = 0.02"),
    );

    let direct = corpus.direct();
    let (cached, _) = corpus.rwb(&[]);
    assert_same("cached run after the edits", &cached, &direct);
    let (fresh, _) = corpus.rwb(&["--no-cache"]);
    assert_same("--no-cache after the edits", &fresh, &direct);
}
