//! A TRL completion log opened in the workbench (SPEC §13): its samples reach the list
//! and the runs with their source's facts (group, step, logged scores), through the
//! indexer, the samples index and the run that follows the indexer, and the list
//! compares the evaluator's scores with the logged ones.

use super::tests::{open, settle};
use super::*;
use crate::model::Logged;
use std::path::Path;

/// TRL's `accuracy_reward` as a user would write it for `GRPOTrainer`.
const ACCURACY: &str = "
def accuracy_reward(completions, golden_answer, **kwargs):
    return [1.0 if c == g else 0.0 for c, g in zip(completions, golden_answer)]
";

/// A workspace whose samples are TRL's completion logs of steps 2 and 4
/// (tests/fixtures/sources/trl, written by pandas as TRL's GRPOTrainer writes them),
/// with evaluator `acc` compared with the logged `accuracy_reward`.
fn trl_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sources/trl/completions"
    );
    std::fs::create_dir_all(dir.path().join("completions")).unwrap();
    for name in ["completions_00002.parquet", "completions_00004.parquet"] {
        let to = dir.path().join("completions").join(name);
        std::fs::copy(Path::new(fixtures).join(name), to).unwrap();
    }
    std::fs::write(dir.path().join("rewards.py"), ACCURACY).unwrap();
    let toml = "[evaluators.acc]\nfunction = \"rewards.py::accuracy_reward\"\nlogged = \"accuracy_reward\"\n";
    std::fs::write(dir.path().join("rwb.toml"), toml).unwrap();
    dir
}

/// Feeds the loop until the run in flight is done, collecting its results' samples.
async fn run_results(live: &mut Live) -> Vec<crate::model::SampleRef> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut at = Vec::new();
    while live.pending_run.is_some() || live.app.running {
        tokio::select! {
            Some((generation, indexed)) = live.index_rx.recv() => {
                if generation == live.index_generation {
                    live.on_indexed(indexed);
                    live.start_follow_later();
                }
            }
            Some((generation, msg)) = live.run_rx.recv() => {
                if let RunMsg::Results(events) = &msg {
                    for crate::runner::Event::Result { at: a, .. } in events {
                        at.push(a.clone());
                    }
                }
                live.on_run(generation, msg);
            }
            _ = tokio::time::sleep_until(deadline) => panic!("the run never ended"),
        }
    }
    at.sort_by_key(|a| a.index);
    at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trl_log_opens_with_its_facts_and_its_logged_scores_beside_the_new_ones() {
    let dir = trl_workspace();
    let mut live = open(dir.path());
    assert_eq!(settle(&mut live, |_| {}).await, 6);
    let app = &live.app;
    assert_eq!(app.samples.len(), 6);
    // the list's rows carry the source's facts: step, group and logged scores
    let facts: Vec<_> = app
        .samples
        .iter()
        .map(|s| s.at.facts.clone().expect("a TRL row has facts"))
        .collect();
    let steps: Vec<Option<i64>> = facts.iter().map(|f| f.step).collect();
    assert_eq!(steps, [2, 2, 2, 2, 4, 4].map(Some));
    assert_eq!(facts[0].group, facts[1].group, "one prompt within one step");
    assert_ne!(facts[1].group, facts[2].group);
    assert_ne!(
        facts[0].group, facts[4].group,
        "the same prompt at another step"
    );
    assert_eq!(
        facts[1].logged,
        vec![
            ("accuracy_reward".to_string(), Logged::Score(Some(0.0))),
            ("advantage".to_string(), Logged::Score(Some(-0.5))),
        ]
    );
    // and so does the index the next runs are fed from
    for (i, f) in facts.iter().enumerate() {
        assert_eq!(live.index.facts(i).as_deref(), Some(&**f), "sample {i}");
    }
    // scores now: 1, 0, 1, 0 | 1, 0; logged: 1, 0, 1, NaN | 1, 0
    let scores: Vec<Option<f64>> = app.samples.iter().map(|s| s.cells[0].score()).collect();
    assert_eq!(scores, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0].map(Some));
    assert_eq!(app.logged_pair(0), Some("accuracy_reward"));
    let nan = app.logged_cell(3, 0).unwrap();
    assert_eq!((nan.logged, nan.moved()), (None, true));
    assert!(!app.logged_cell(1, 0).unwrap().moved());

    // a rerun is fed from the index: its results carry the facts too
    live.rerun(None);
    let at = run_results(&mut live).await;
    assert_eq!(at.len(), 6);
    for a in &at {
        assert_eq!(
            a.facts.as_deref(),
            Some(&*facts[a.index]),
            "sample {}",
            a.index
        );
    }
    live.app.update(Msg::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('/'),
        crossterm::event::KeyModifiers::NONE,
    )));
    for c in "logged".chars() {
        live.app.update(Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(c),
            crossterm::event::KeyModifiers::NONE,
        )));
    }
    assert_eq!(
        live.app.view,
        vec![3],
        "only the NaN the trainer logged moved"
    );
}
