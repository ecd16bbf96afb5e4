//! Called exactly as every trainer calls it (issue 23, SPEC §3): each workspace of
//! tests/corpus_trainers/ holds evaluators shaped like one trainer's published reward
//! code (Tunix's demo and CLI files, OpenRLHF's reward files, TRL's text and
//! conversational functions and factory callables, Logic-RL's, Search-R1's and
//! DeepScaleR's veRL scorers; AReaL's rewards and countdown scorer, EasyR1's batch and
//! sequential reward files, ms-swift's ORM classes, slime's custom, group and rm_hub
//! rewards, a SkyRL gym env's `compute_score`; the long tail's calls, issue 46: an
//! open-instruct verifier class built with its config from `trainer_args` and awaited
//! through `async_call`, its `.score` read, and NeMo-RL's math and VLM verify calls,
//! the ground truth wrapped in `\boxed{}`, an exception scored 0), with `trainer`,
//! `style`, `call`, `trainer_args`, `kwargs` and `chat_template` as their users would
//! set them. rwb's rows must equal, number for number, what
//! tests/corpus_trainers/direct.py gets by calling each function the way its trainer's
//! code does (cited there and in tests/corpus/TRAINERS.md), templates rendered by
//! `transformers`; where the trainer logs more than a score (OpenRLHF's `extra_logs`,
//! TRL's `log_extra` and `log_metric`, EasyR1's score keys), the same metrics; and
//! where the trainer scores a call that raised (`call.on_error`), the row carries the
//! exception (its `result_error`) and the run's summary counts them.
//!
//! Needs `RWB_HF_PYTHON` (an interpreter with transformers, jinja2 and numpy; `.ci/run`
//! makes one); without it the test says why it does nothing.

mod common;

use common::{output_within, RUN_LIMIT, RWB};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (sample, evaluator) -> (score, metrics, whether the call raised and was scored
/// anyway: direct.py's `warned`, rwb's `result_error`).
type Rows = BTreeMap<(u64, String), (Option<f64>, Value, bool)>;

fn rows(stdout: &[u8]) -> Rows {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            let key = (
                v["sample"].as_u64().unwrap(),
                v["evaluator"].as_str().unwrap().to_string(),
            );
            let warned = v["warned"].as_bool().unwrap_or(false) || v["result_error"].is_string();
            (key, (v["score"].as_f64(), v["metrics"].clone(), warned))
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let name = entry.file_name();
        if name == ".rwb" || name == "__pycache__" {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).unwrap();
        }
    }
}

#[test]
fn every_trainers_functions_score_as_the_trainer_computes() {
    let Some(python) = std::env::var_os("RWB_HF_PYTHON").map(PathBuf::from) else {
        eprintln!("skipped: set RWB_HF_PYTHON to a Python with transformers, jinja2 and numpy (.ci/run makes one)");
        return;
    };
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus_trainers");
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().join("corpus_trainers");
    copy_dir(&source, &root); // templates are named as ../templates/X.json
    let mut workspaces: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("rwb.toml").is_file())
        .collect();
    workspaces.sort();
    assert!(workspaces.len() >= 16, "{workspaces:?}");
    let mut compared = 0;
    for ws in &workspaces {
        let name = ws.file_name().unwrap().to_string_lossy().into_owned();
        let direct = Command::new(&python)
            .arg(root.join("direct.py"))
            .arg(ws)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .unwrap();
        assert!(
            direct.status.success(),
            "{name}: direct.py failed:\n{}",
            String::from_utf8_lossy(&direct.stderr)
        );
        let expected = rows(&direct.stdout);
        let mut command = Command::new(RWB);
        command
            .args([
                "run",
                ws.to_str().unwrap(),
                "--format",
                "jsonl",
                "--no-cache",
                "--python",
            ])
            .arg(&python)
            .env_remove("VIRTUAL_ENV");
        let out = output_within(&mut command, RUN_LIMIT);
        let got = rows(&out.stdout);
        assert_eq!(
            got.len(),
            expected.len(),
            "{name}: rwb gave {} rows, the trainers {}\nstderr: {}",
            got.len(),
            expected.len(),
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let mut warned: BTreeMap<&str, usize> = BTreeMap::new();
        for (key, (score, metrics, raised)) in &expected {
            let (ours, our_metrics, our_warning) = got
                .get(key)
                .unwrap_or_else(|| panic!("{name}: rwb has no row for {key:?}"));
            assert_eq!(
                our_warning, raised,
                "{name} {key:?}: the trainer's call raised: {raised}, rwb's row carries it: {our_warning}"
            );
            *warned.entry(key.1.as_str()).or_default() += usize::from(*raised);
            match (score, ours) {
                (Some(a), Some(b)) => assert!(
                    (a - b).abs() <= 1e-12,
                    "{name} {key:?}: trainer {a}, rwb {b}"
                ),
                (a, b) => assert_eq!(a, b, "{name} {key:?}"),
            }
            if let Value::Object(m) = metrics {
                let names = |m: &serde_json::Map<String, Value>| {
                    m.keys().cloned().collect::<std::collections::BTreeSet<_>>()
                };
                assert_eq!(
                    our_metrics.as_object().map(names),
                    Some(names(m)),
                    "{name} {key:?}: metrics"
                );
                for (metric, value) in m {
                    let ours = &our_metrics[metric];
                    match value {
                        // a logged value that is no number (TRL's log_extra of text)
                        Value::String(text) => assert_eq!(
                            (&ours["score"], ours["reason"].as_str()),
                            (&Value::Null, Some(text.as_str())),
                            "{name} {key:?}: metric {metric}"
                        ),
                        _ => assert_eq!(
                            ours["score"].as_f64(),
                            value.as_f64(),
                            "{name} {key:?}: metric {metric}"
                        ),
                    }
                }
            }
            compared += 1;
        }
        // a score given despite an exception is never silent: the summary counts them
        for (evaluator, n) in warned.into_iter().filter(|&(_, n)| n > 0) {
            let said = format!("warning: {evaluator}: {n} of ");
            assert!(stderr.contains(&said), "{name}: no {said:?} in\n{stderr}");
        }
    }
    assert!(compared >= 800, "only {compared} rows compared");
}
