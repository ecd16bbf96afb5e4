//! What a newcomer meets in the first hour (issue 32), through the real binary with
//! real workers: each message says what happened, where, and what to type next.

mod common;

use common::*;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sources")
        .join(rel)
}

/// A TRL reward function with a bug: every call raises a TypeError.
const BROKEN_TRL: &str = r#"
def accuracy_reward(completions, golden_answer, **kwargs):
    return [c + 1 for c in completions]
"#;

#[test]
fn rows_that_raised_are_not_counted_as_scoring_differently_than_logged() {
    let ws = Ws::new(&[("rewards.py", BROKEN_TRL)]);
    let f = fixture("trl/completions/completions_00002.parquet");
    let run = ws.run(&[
        "-s",
        f.to_str().unwrap(),
        "--function",
        "accuracy_reward=rewards.py::accuracy_reward",
        "--no-cache",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.rows().iter().all(|r| r["error"]["type"] == "TypeError"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains(
            "\naccuracy_reward: 4 failed and are not compared with the log (their errors are on their rows)\n"
        ),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("differently than logged"),
        "{}",
        run.stderr
    );
}
