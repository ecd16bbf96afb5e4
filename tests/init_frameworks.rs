//! `rwb init --trainer NAME` for the 2026 frameworks (issue 31): each writes a workspace
//! that runs at once, called as that framework calls its rewards, and `rwb check` says
//! which convention it followed.

mod common;

use common::rwb;

/// `rwb init DIR --trainer NAME`, then `rwb run DIR` and `rwb check DIR` on it.
fn init_and_run(trainer: &str) -> (tempfile::TempDir, common::Run, String) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let ws = ws.to_str().unwrap();
    let init = rwb(&["init", ws, "--trainer", trainer], dir.path());
    assert_eq!(init.code, 0, "{}", init.stderr);
    let run = rwb(&["run", ws, "--format", "jsonl", "--no-cache"], dir.path());
    assert_eq!(run.code, 0, "{trainer}: {}", run.stderr);
    let check = rwb(&["check", ws], dir.path());
    (dir, run, check.stdout + &check.stderr)
}

fn scores(run: &common::Run, evaluator: &str) -> Vec<f64> {
    run.rows()
        .iter()
        .filter(|r| r["evaluator"] == evaluator)
        .map(|r| r["score"].as_f64().unwrap())
        .collect()
}

/// The templates' rollouts: 4 prompts, each answered right, then wrong.
const RIGHT_THEN_WRONG: [f64; 8] = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0];

#[test]
fn each_frameworks_template_runs_as_its_trainer_calls_it() {
    let (_d, run, check) = init_and_run("areal");
    assert_eq!(scores(&run, "gsm8k"), RIGHT_THEN_WRONG);
    assert!(
        check.contains("gsm8k (areal): no contract break"),
        "{check}"
    );

    let (_d, run, check) = init_and_run("easyr1");
    // 0.9 × accuracy + 0.1 × format: the wrong answers still end "The answer is N."
    // but the last one, which has no answer at all
    assert_eq!(
        scores(&run, "math"),
        [1.0, 0.1, 1.0, 0.1, 1.0, 0.1, 1.0, 0.0]
    );
    let first = &run.rows()[0];
    assert_eq!(first["metrics"]["accuracy"]["score"], 1.0, "{first}");
    assert!(first["metrics"]["brevity"]["score"].as_f64().unwrap() > 0.0);
    assert!(
        check.contains("math (easyr1): no contract break"),
        "{check}"
    );
    assert!(check.contains("REWARD_TYPE = \"batch\""), "{check}");

    let (_d, run, check) = init_and_run("swift");
    assert_eq!(scores(&run, "accuracy"), RIGHT_THEN_WRONG);
    // brevity_max_words = 12 from trainer_args
    assert_eq!(
        scores(&run, "brevity"),
        [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    );
    assert!(check.contains("accuracy (swift)"), "{check}");

    let (_d, run, check) = init_and_run("slime");
    assert_eq!(scores(&run, "correct"), RIGHT_THEN_WRONG);
    assert_eq!(run.rows()[0]["metrics"]["formatted"]["score"], 1.0);
    assert!(check.contains("correct (slime)"), "{check}");

    let (_d, run, check) = init_and_run("skyrl");
    assert_eq!(scores(&run, "gsm8k"), RIGHT_THEN_WRONG);
    assert!(check.contains("gsm8k (skyrl)"), "{check}");
}
