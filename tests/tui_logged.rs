//! Last night's TRL run in a real terminal (SPEC §13, "Logged beside recomputed"):
//! tmux runs the real binary on a workspace whose samples are a TRL completion log
//! written by pandas and pyarrow (`RWB_DATA_PYTHON`, which `.ci/run` sets; skipped
//! with a reason without it), the evaluator named like the logged column is edited as
//! a user would, and the screen shows the logged value, the new Δ, and `/logged`
//! narrows the list to the rollouts that score differently now.

mod common;
use common::*;

/// Writes a TRL completion log as `GRPOTrainer` does at a logging step: a pandas
/// DataFrame of `step, prompt, completion, <reward columns>, <log_extra columns>,
/// advantage` written with `to_parquet` (huggingface/trl trl/trainer/grpo_trainer.py
/// at d2b69d769dab; the rewards are float columns, NaN for a function's None).
const WRITE_TRL_LOG: &str = r#"
import sys
import pandas as pd
rows = [("2+2=", "4", "4", 1.0, 0.7), ("2+2=", "5", "4", 0.0, -0.7),
        ("3*3=", "9", "9", 1.0, 0.7), ("3*3=", "nine", "9", 0.0, -0.7)]
pd.DataFrame({
    "step": [3] * len(rows),
    "prompt": [r[0] for r in rows],
    "completion": [r[1] for r in rows],
    "accuracy_reward": [r[3] for r in rows],
    "golden_answer": [r[2] for r in rows],
    "advantage": [r[4] for r in rows],
}).to_parquet(sys.argv[1])
"#;

/// The reward as it was in training: the exact answer.
const EXACT: &str = "
def accuracy_reward(completions, golden_answer, **kwargs):
    return [1.0 if c == g else 0.0 for c, g in zip(completions, golden_answer)]
";

/// The fix: a number written out in words counts too.
const FIXED: &str = "
WORDS = {'four': '4', 'nine': '9'}

def accuracy_reward(completions, golden_answer, **kwargs):
    return [1.0 if WORDS.get(c, c) == g else 0.0 for c, g in zip(completions, golden_answer)]
";

#[test]
fn an_edit_shows_which_of_last_nights_rollouts_score_differently_than_logged() {
    let Some(python) = std::env::var_os("RWB_DATA_PYTHON") else {
        eprintln!("skipped: RWB_DATA_PYTHON is not set (.ci/run sets it: a virtualenv with pyarrow and pandas)");
        return;
    };
    let ws = Ws::new(&[
        ("rewards.py", EXACT),
        (
            "rwb.toml",
            "[evaluators.accuracy_reward]\nfunction = \"rewards.py::accuracy_reward\"\n",
        ),
        ("write_log.py", WRITE_TRL_LOG),
    ]);
    let log = ws.file("completions/completions_00003.parquet");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let written = std::process::Command::new(python)
        .arg(ws.file("write_log.py"))
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let tmux = Tmux::start(&ws, 120, 35, RWB);
    // as in training: every score as logged
    tmux.wait_for("the logged column, every score as logged", |s| {
        s.contains("Samples 4/4")
            && s.contains("logged   Δlog")
            && s.contains("as logged: 1.000")
            && s.matches("1.000  1.000      ·").count() == 2
            && s.matches("0.000  0.000      ·").count() == 2
    });
    ws.write("rewards.py", FIXED);
    let screen = tmux.wait_for("the new score beside the logged one", |s| {
        s.contains("1.000  0.000 +1.000") && s.matches("0.000  0.000      ·").count() == 1
    });
    assert!(screen.contains("3*3= ▸ nine"), "{screen}");
    tmux.keys(&["/"]);
    tmux.keys(&["logged"]);
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the rollouts that moved", |s| s.contains("Samples 1/4"));
    assert!(screen.contains("3*3= ▸ nine"), "{screen}");
    assert!(!screen.contains("2+2= ▸ 5"), "{screen}");
    tmux.keys(&["q"]);
}

/// Training still running: the workbench is open on a TRL run's `completions/` folder
/// (one source) when the trainer writes the next step's file; its rows are read and
/// scored as it lands, beside what was logged.
#[test]
fn a_step_file_landing_in_the_folder_is_read_and_scored_as_it_lands() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sources/trl/completions");
    let ws = Ws::new(&[
        ("rewards.py", EXACT),
        (
            "rwb.toml",
            "[evaluators.accuracy_reward]\nfunction = \"rewards.py::accuracy_reward\"\n",
        ),
    ]);
    std::fs::create_dir_all(ws.file("completions")).unwrap();
    std::fs::copy(
        fixtures.join("completions_00002.parquet"),
        ws.file("completions/completions_00002.parquet"),
    )
    .unwrap();
    let tmux = Tmux::start(&ws, 160, 35, RWB);
    tmux.wait_for("step 2's four rollouts scored", |s| {
        s.contains("Samples 4/4") && !s.contains("evaluating")
    });
    // the trainer's next logging step: written elsewhere, then moved in (as a save)
    let part = ws.file("completions_00004.parquet.part");
    std::fs::copy(fixtures.join("completions_00004.parquet"), &part).unwrap();
    std::fs::rename(&part, ws.file("completions/completions_00004.parquet")).unwrap();
    let screen = tmux.wait_for("step 4's rollouts read and scored", |s| {
        s.contains("Samples 6/6") && !s.contains("evaluating")
    });
    // step 4's "4" and "four" scored beside what was logged, step 2's kept
    assert!(screen.contains("5 2+2= ▸ four"), "{screen}");
    assert_eq!(screen.matches("1.000  1.000      ·").count(), 3, "{screen}");
    assert_eq!(screen.matches("0.000  0.000      ·").count(), 2, "{screen}");
}
