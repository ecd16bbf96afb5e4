//! Issue 5's speed target: after a rerun finishes, the baseline comparison
//! (attribution per evaluator) and the group statistics over 100,000 samples x 3
//! evaluators must recompute in <= 100 ms. Prints the time and its ratio to a floor
//! measured in the same process: one pass that only reads every cell's score.
//!
//! cargo bench --bench insight

use reward_workbench::model::{Outcome, SampleRef};
use reward_workbench::runner::Event;
use reward_workbench::ui::app::{App, EvaluatorInfo, MemoryLines, Msg, RunState, Sample};
use reward_workbench::ui::keymap::Keymap;
use serde_json::{json, Map};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

const SAMPLES: usize = 100_000;
const EVALUATORS: usize = 3;
const GROUP: usize = 8; // rollouts per prompt

fn outcome(score: f64, fmt: f64) -> Box<Outcome> {
    let mut metrics = Map::new();
    metrics.insert(
        "format".into(),
        json!({"score": fmt, "is_score_valid": true, "reason": "f"}),
    );
    metrics.insert(
        "length".into(),
        json!({"score": score, "is_score_valid": true, "reason": "l"}),
    );
    metrics.insert(
        "fixed".into(),
        json!({"score": 1.0, "is_score_valid": true, "reason": "c"}),
    );
    Box::new(Outcome {
        reason: Some("r".into()),
        duration_ms: 0.1,
        ..Outcome::scored(score, metrics)
    })
}

/// A result as the runner reports it (the live loop hands them to the app in bursts).
fn result(evaluator: usize, sample: usize, outcome: Box<Outcome>) -> Event {
    Event::Result {
        evaluator,
        at: SampleRef::first_file(sample),
        hash: [0; 16],
        outcome: *outcome,
        cached: false,
    }
}

fn main() {
    let mut app = App::new(
        PathBuf::from("."),
        vec!["s.jsonl".into()],
        Keymap::default(),
        Arc::new(MemoryLines::default()),
    );
    let infos = (0..EVALUATORS)
        .map(|e| EvaluatorInfo {
            name: format!("e{e}"),
            source: PathBuf::from("main.py"),
            style: None,
            state: RunState::Idle,
            import_error: None,
            placement: None,
        })
        .collect();
    app.update(Msg::Evaluators(infos));
    let samples = (0..SAMPLES)
        .map(|i| {
            let mut hash = [0u8; 16];
            hash[..8].copy_from_slice(&(i as u64).to_le_bytes());
            Sample {
                at: SampleRef::first_file(i),
                offset: 0,
                len: 0,
                hash,
                bad: None,
                cells: Default::default(),
            }
        })
        .collect();
    app.update(Msg::Samples(samples));
    let score = |i: usize, e: usize| ((i * 7 + e * 13) % 100) as f64 / 100.0;
    let mut burst = Vec::new();
    for i in 0..SAMPLES {
        for e in 0..EVALUATORS {
            burst.push(result(e, i, outcome(score(i, e), 1.0)));
        }
    }
    app.update(Msg::Results(burst));
    app.update(Msg::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('b'),
        crossterm::event::KeyModifiers::NONE,
    )));
    // a rerun that changed `format` on every tenth sample of the first evaluator
    let burst = (0..SAMPLES)
        .step_by(10)
        .map(|i| result(0, i, outcome(score(i, 0) * 0.5, 0.0)))
        .collect();
    app.update(Msg::Results(burst));
    let mut places = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&((i / GROUP) as u64).to_le_bytes());
        places.push(reward_workbench::training::Place {
            key: Some(k),
            step: None,
        });
    }
    app.set_groups(Some(reward_workbench::training::Grouping::new(&places)));

    let mut times = Vec::new();
    let mut floors = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut sum = 0.0;
        for s in &app.samples {
            for c in &s.cells {
                sum += c.score().unwrap_or(0.0);
            }
        }
        std::hint::black_box(sum);
        floors.push(t.elapsed().as_secs_f64() * 1000.0);

        let t = Instant::now();
        app.update(Msg::RunFinished); // recomputes the attribution
        let mut flat = 0;
        for e in 0..EVALUATORS {
            flat += app.group_summary(e).map(|g| g.1).unwrap_or(0);
            std::hint::black_box(app.variance_shares(e));
        }
        std::hint::black_box(flat);
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    floors.sort_by(f64::total_cmp);
    let (ms, floor) = (times[2], floors[2]);
    let line = &app.baseline.as_ref().unwrap().attribution[0];
    println!("{SAMPLES} samples x {EVALUATORS} evaluators, groups of {GROUP}");
    println!("  attribution: {line}");
    println!("  recompute (attribution + groups + variance shares), median of 5: {ms:.1} ms (target <= 100 ms: {})", if ms <= 100.0 { "PASS" } else { "FAIL" });
    println!(
        "  floor (read every score once): {floor:.2} ms; ratio {:.1}x the floor",
        ms / floor.max(1e-6)
    );
}
