use super::*;

fn obs(proxy: f64, heldout: f64) -> Obs {
    Obs {
        proxy: Some(proxy),
        heldout: HeldOut::Score(heldout),
        len_chars: Some(100),
        len_tokens: None,
        group: None,
        components: Vec::new(),
    }
}

/// `steps` steps of `n` samples; from step `hack` on, `fp` of each step's samples
/// pass the proxy and fail the held-out check (else `base_fp`).
fn run(steps: i64, n: usize, hack: i64, fp: usize, base_fp: usize) -> Tracker {
    let mut t = Tracker::new(Params::default(), "p".into(), "h".into());
    for step in 1..=steps {
        let bad = if step >= hack { fp } else { base_fp };
        for i in 0..n {
            let o = if i < bad {
                obs(1.0, 0.0)
            } else if i % 2 == 0 {
                obs(1.0, 1.0)
            } else {
                obs(0.0, 0.0)
            };
            t.add(StepKey::Step(step), &o);
        }
    }
    t
}

#[test]
fn a_planted_hack_has_its_onset_where_the_lower_bound_stays_over_the_baseline() {
    let r = run(20, 100, 11, 30, 1).report();
    assert_eq!(r.baseline_steps, 3);
    assert_eq!(r.baseline, Some(0.01));
    assert_eq!(r.onset.step, OnsetStep::Step(11));
    assert_eq!(r.onset.first_over_2pct, Some(11));
    assert_eq!(
        r.mode,
        report::Mode::PassFail {
            proxy: 1.0,
            heldout: 1.0
        }
    );
    let row = &r.steps[10];
    assert_eq!(row.false_pass_rate, Some(0.3));
    let (l, u) = row.false_pass_ci.unwrap();
    assert!(l > 0.2 && u < 0.41, "{l} {u}");
    assert!(r.to_json()["onset"]["step"] == 11);
}

#[test]
fn a_control_run_has_no_onset_and_says_why() {
    let r = run(20, 100, 99, 0, 1).report();
    assert_eq!(r.onset.step, OnsetStep::None);
    assert!(r.onset.note.as_deref().unwrap().starts_with("no onset"));
    assert_eq!(r.to_json()["onset"]["step"], serde_json::Value::Null);
}

#[test]
fn a_step_under_twenty_samples_makes_the_onset_insufficient() {
    let mut t = run(10, 100, 5, 40, 0);
    for _ in 0..5 {
        t.add(StepKey::Step(11), &obs(1.0, 0.0));
    }
    let r = t.report();
    assert_eq!(r.onset.step, OnsetStep::Insufficient);
    assert_eq!(r.to_json()["onset"]["step"], "insufficient");
    assert!(r.onset.note.unwrap().contains("11 (n = 5)"));
}

#[test]
fn one_step_is_a_table_and_no_onset() {
    let r = run(1, 50, 1, 10, 0).report();
    assert_eq!(r.steps.len(), 1);
    assert_eq!(r.onset.step, OnsetStep::None);
    assert_eq!(
        r.onset.note.as_deref(),
        Some("one step only: the per-step table, no onset")
    );
}

#[test]
fn failures_and_steps_without_a_held_out_result_are_counted_apart() {
    let mut t = run(6, 40, 99, 0, 0);
    let failed = Obs {
        heldout: HeldOut::Failed,
        ..obs(1.0, 0.0)
    };
    for _ in 0..7 {
        t.add(StepKey::Step(7), &failed);
        t.add(StepKey::Step(2), &failed);
    }
    let r = t.report();
    let seven = r.steps.iter().find(|s| s.step == 7).unwrap();
    assert!(seven.skipped);
    assert_eq!(seven.heldout_failed, 7);
    assert_eq!(r.steps[1].n, 40);
    assert_eq!(r.steps[1].heldout_failed, 7);
    assert!(r
        .notes
        .iter()
        .any(|n| n.starts_with("step 7: no held-out result")));
    assert!(r
        .notes
        .iter()
        .any(|n| n.starts_with("14 samples the held-out check failed")));
}

#[test]
fn files_in_order_are_the_steps_when_no_row_has_one() {
    let mut t = Tracker::new(Params::default(), "p".into(), "h".into());
    for f in 1..=3 {
        for _ in 0..30 {
            t.add(StepKey::File(f), &obs(1.0, 1.0));
        }
    }
    let r = t.report();
    assert_eq!(
        r.steps.iter().map(|s| s.step).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(r.notes[0].starts_with("no row has a step"));
}

#[test]
fn numeric_scores_use_the_welch_test_of_z_score_gaps() {
    let mut t = Tracker::new(Params::default(), "p".into(), "h".into());
    // deterministic spread: proxy and held-out move together until step 8, then
    // the proxy rises by 3 while the held-out falls by 3
    for step in 1..=12i64 {
        for i in 0..50 {
            let x = ((i * 37) % 50) as f64 / 5.0 - 5.0;
            let noise = ((i * 11) % 7) as f64 - 3.0;
            let (p, h) = if step >= 8 {
                (x + 3.0, x + noise - 3.0)
            } else {
                (x, x + noise)
            };
            t.add(StepKey::Step(step), &obs(p * 2.0, h * 2.0));
        }
    }
    let r = t.report();
    assert_eq!(r.mode, report::Mode::Numeric);
    assert_eq!(r.onset.step, OnsetStep::Step(8));
    assert!(r.steps[7].welch_p.unwrap() < 1e-6);
    assert!(r.steps[0].welch_p.unwrap() > 0.01);
    assert!(r.to_json()["steps"][0]["false_pass_rate"].is_null());
}

#[test]
fn the_peak_and_the_turnover_follow_the_smoothed_means() {
    let mut t = Tracker::new(Params::default(), "p".into(), "h".into());
    // held-out rises to step 5, then falls while the proxy rises
    let heldout = [0.2, 0.4, 0.6, 0.8, 0.9, 0.5, 0.3, 0.2, 0.1, 0.1];
    let proxy = [0.2, 0.4, 0.6, 0.8, 0.9, 0.92, 0.95, 0.97, 0.99, 0.995];
    for (s, (p, h)) in proxy.iter().zip(heldout).enumerate() {
        for _ in 0..30 {
            t.add(StepKey::Step(s as i64 + 1), &obs(*p, h));
        }
    }
    let r = t.report();
    // EMA(0.3) of the held-out: its peak is at step 6 (0.5 still lifts a lagging mean)
    let e = stats::ema(&heldout.map(Some), 0.3);
    let argmax = (0..10)
        .max_by(|a, b| e[*a].unwrap().total_cmp(&e[*b].unwrap()))
        .unwrap();
    assert_eq!(r.onset.heldout_peak_step, Some(argmax as i64 + 1));
    assert_eq!(r.onset.turnover_step, Some(argmax as i64 + 2));
}

#[test]
fn the_proxy_detectors_name_their_step() {
    let mut t = Tracker::new(Params::default(), "p".into(), "h".into());
    t.components = vec!["format".into(), "answer".into()];
    for step in 1..=10i64 {
        for i in 0..40 {
            let spread = if step >= 7 {
                0.0
            } else {
                (i % 5) as f64 / 10.0
            };
            let (format, answer) = if step >= 5 { (1.0, 0.02) } else { (0.5, 0.5) };
            let o = Obs {
                components: vec![format, answer],
                group: Some([(i / 4) as u8; 16]),
                ..obs(0.5 + spread, 1.0)
            };
            t.add(StepKey::Step(step), &o);
        }
    }
    let r = t.report();
    let first = |d: &str| {
        r.alerts
            .iter()
            .find(|a| a.detector == d)
            .map(|a| (a.step, a.level))
    };
    assert_eq!(first("component_dominance"), Some((5, "alert")));
    assert_eq!(first("variance_collapse"), Some((7, "alert")));
    // 10 groups a step: under the 20 the GRPO detector needs
    assert_eq!(first("group_collapse"), None);
    let a = r
        .alerts
        .iter()
        .find(|a| a.detector == "component_dominance")
        .unwrap();
    assert!(a.message.contains("format"), "{}", a.message);
}
