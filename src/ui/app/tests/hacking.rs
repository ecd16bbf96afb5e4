//! SPEC §19 in the workbench: per step the proxy beside the held-out check, counted a
//! step at a time as steps land, the onset, and `/hacked` (newest step first).

use super::*;
use crate::insight::hacking::StepKey;
use crate::model::{Facts, Logged};

const PER_STEP: usize = 20;

/// Sample `i` of step `step`: the trainer logged `proxy` as its `score`.
fn step_sample(i: usize, step: i64, proxy: f64) -> Sample {
    let mut s = sample(i, &format!("s{i}"));
    s.at.facts = Some(Arc::new(Facts {
        step: Some(step),
        logged: vec![("score".into(), Logged::Score(Some(proxy)))],
        ..Facts::default()
    }));
    s
}

/// (proxy, held-out) of sample `k` of a step: from step 5 on, half of each step
/// passes the proxy and fails the held-out check.
fn sides(step: i64, k: usize) -> (f64, f64) {
    match (step >= 5, k % 2) {
        (true, 0) => (1.0, 0.0),
        (_, 0) => (1.0, 1.0),
        _ => (0.0, 0.0),
    }
}

/// Lands step `step`: its samples, then the held-out evaluator's results.
fn land(app: &mut App, step: i64) {
    let first = (step as usize - 1) * PER_STEP;
    let samples = (0..PER_STEP)
        .map(|k| step_sample(first + k, step, sides(step, k).0))
        .collect();
    app.update(Msg::MoreSamples(samples));
    for k in 0..PER_STEP {
        app.update(result(0, first + k, scored(sides(step, k).1)));
    }
}

fn hacking_app() -> App {
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["rollout/".into()],
        Keymap::default(),
        Arc::new(MemoryLines::default()),
    );
    app.update(Msg::Hacking(HackingSettings {
        heldout: vec!["strict".into()],
        params: Default::default(),
    }));
    app.update(Msg::Evaluators(vec![info("strict")]));
    app
}

#[test]
fn steps_landing_are_counted_one_step_each_and_the_onset_follows() {
    let mut app = hacking_app();
    for step in 1..=4 {
        land(&mut app, step);
    }
    app.update(key('v'));
    let report = app.hacking.report.clone().expect("a report once v opens");
    assert_eq!(report.steps.len(), 4);
    assert_eq!(report.proxy, "logged score (score)");
    assert_eq!(report.heldout, "evaluator strict");
    assert_eq!(report.onset_step(), None);
    for step in 5..=8 {
        let before = app.hacking.recounted.clone();
        land(&mut app, step);
        app.update(Msg::Refresh);
        let counted: Vec<StepKey> = app
            .hacking
            .recounted
            .iter()
            .filter(|(k, n)| before.get(k) != Some(n))
            .map(|(k, _)| *k)
            .collect();
        assert_eq!(
            counted,
            [StepKey::Step(step)],
            "only the step that landed is counted"
        );
    }
    let report = app.hacking.report.clone().unwrap();
    assert_eq!(report.steps.len(), 8);
    assert_eq!(report.baseline, Some(0.0));
    assert_eq!(report.onset_step(), Some(5));
    assert_eq!(report.steps[7].false_pass_rate, Some(0.5));
    // a result that changes one sample's verdict counts its step again, no other
    let before = app.hacking.recounted.clone();
    app.update(result(0, 0, scored(0.0)));
    app.update(Msg::Refresh);
    assert_eq!(
        app.hacking.recounted[&StepKey::Step(1)],
        before[&StepKey::Step(1)] + 1
    );
    assert_eq!(
        app.hacking.recounted[&StepKey::Step(2)],
        before[&StepKey::Step(2)]
    );
    assert_eq!(
        app.hacking.report.as_ref().unwrap().steps[0].false_pass_rate,
        Some(0.05)
    );
}

#[test]
fn the_hacked_filter_keeps_the_false_passes_newest_step_first() {
    let mut app = hacking_app();
    for step in 1..=6 {
        land(&mut app, step);
    }
    app.update(key('/'));
    for c in "hacked".chars() {
        app.update(key(c));
    }
    app.update(code(KeyCode::Enter));
    assert_eq!(app.filter_error, None);
    // steps 5 and 6: the even samples of each, step 6's first
    let mut want: Vec<usize> = (100..120).step_by(2).collect();
    want.extend((80..100).step_by(2));
    assert_eq!(app.view, want);
}
