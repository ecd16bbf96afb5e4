//! Baselines, statistics, groups, probes and checks as the panels show them.

use super::*;

#[test]
fn statistics_are_computed_when_they_open_and_on_refresh_while_a_run_streams() {
    let mut app = app();
    assert_eq!(app.stats_report, None, "nothing is computed while closed");
    app.update(key('v'));
    let report = app.stats_report.clone().expect("computed on opening");
    let a = &report[0];
    assert_eq!((a.summary.count, a.summary.errors, a.scored), (5, 0, 5));
    assert!((a.summary.mean.unwrap() - 0.2).abs() < 1e-12);
    assert_eq!((a.summary.min, a.summary.max), (Some(0.0), Some(0.4)));
    // a = 0.0 0.1 0.2 0.3 0.4; b = 1.0 0.9 0.8 0.7 0.6 (1.0 is in the last tenth)
    assert_eq!(a.bins, [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]);
    assert_eq!(report[1].bins, [0, 0, 0, 0, 0, 0, 1, 1, 1, 2]);
    assert!(!a.all_zero && !a.all_one);
    app.update(Msg::RunStarted {
        evaluators: vec![0],
        stale: vec![],
    });
    app.update(key('v')); // a key closes the overlay
    assert_eq!(app.stats_report, None, "forgotten when it closes");
    app.update(key('v'));
    for i in 0..5 {
        app.update(result(0, i, scored(1.0)));
    }
    assert_eq!(
        app.stats_report.as_ref().unwrap()[0].bins,
        [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
        "bursts of a run in flight do not walk every sample"
    );
    assert!(app.deferred());
    app.update(Msg::Refresh);
    let a = &app.stats_report.as_ref().unwrap()[0];
    assert_eq!(a.bins, [0, 0, 0, 0, 0, 0, 0, 0, 0, 5]);
    assert!(a.all_one && !a.all_zero);
    assert_eq!(a.summary.mean, Some(1.0));
    assert!(!app.deferred());
}

#[test]
fn baseline_deltas_and_changed_only() {
    let mut app = app();
    app.update(key('b'));
    assert_eq!(app.delta(&app.samples[2].clone(), 0), Some(0.0));
    app.update(result(0, 2, scored(0.9)));
    let d = app.delta(&app.samples[2].clone(), 0).unwrap();
    assert!((d - 0.7).abs() < 1e-12);
    app.update(key('c'));
    assert_eq!(app.view, vec![2]);
    app.update(key('c'));
    assert_eq!(app.view.len(), 5);
}

#[test]
fn a_pinned_baseline_attributes_changes_to_the_component_that_moved() {
    let mut app = app();
    let with = |score: f64, len: f64| {
        let mut o = *scored(score);
        o.metrics.insert(
            "len".into(),
            serde_json::json!({"score": len, "is_score_valid": true, "reason": "r"}),
        );
        o.metrics.insert(
            "fmt".into(),
            serde_json::json!({"score": 1.0, "is_score_valid": true, "reason": "r"}),
        );
        Box::new(o)
    };
    for i in 0..5 {
        app.update(result(0, i, with(0.4, 0.4)));
    }
    app.update(key('b'));
    app.update(Msg::RunStarted {
        evaluators: vec![0],
        stale: vec![0],
    });
    app.update(result(0, 3, with(0.6, 0.6)));
    app.update(Msg::RunFinished);
    let b = app.baseline.as_ref().unwrap();
    assert_eq!(
        b.attribution[0],
        "a: 1 sample changed (1 up, 0 down, 1 flipped), 1 through `len`"
    );
    // the message shows it at once, below the pin's notice no key has cleared
    assert_eq!(
        app.message_text().unwrap(),
        "baseline pinned: 5 samples; Δ shows the change from here\nvs baseline · a: 1 sample changed (1 up, 0 down, 1 flipped), 1 through `len`"
    );
}

#[test]
fn stats_find_groups_with_identical_rewards() {
    let mut app = app();
    // every sample here has its own prompt: no groups
    app.update(key('v'));
    assert_eq!(app.group_summary(0), Some((0, 0)));
    // samples 1 and 2 share a prompt (scores 0.1, 0.2); 3 and 4 share one and score the same
    app.update(result(0, 4, scored(0.3)));
    let (g1, g2) = (Some([1u8; 16]), Some([2u8; 16]));
    let place = |key| crate::training::Place { key, step: None };
    let groups = crate::training::Grouping::new(&[None, g1, g1, g2, g2].map(place));
    app.set_groups(Some(groups));
    assert_eq!(
        app.group_summary(0),
        Some((2, 1)),
        "one of two groups has no signal"
    );
    assert_eq!(
        app.group_summary(1),
        Some((2, 0)),
        "on b the rewards differ in both groups"
    );
}

#[test]
fn the_combined_reward_is_the_weighted_sum_of_scores() {
    let mut app = app();
    assert_eq!(
        app.combined(&app.samples[2].clone()),
        None,
        "no weights configured"
    );
    app.weights = Some(vec![2.0, 1.0]);
    // a = 0.2, b = 0.8 for sample 2
    let c = app.combined(&app.samples[2].clone()).unwrap();
    assert!((c - (2.0 * 0.2 + 0.8)).abs() < 1e-12);
    app.update(result(
        1,
        2,
        Box::new(Outcome::failed(EvalError::new("X", "y"))),
    ));
    assert_eq!(
        app.combined(&app.samples[2].clone()),
        None,
        "a failed evaluator leaves no combined reward"
    );
}

#[test]
fn ranks_against_the_baseline_and_the_rollout_group_of_a_sample() {
    let mut app = app();
    app.update(key('b'));
    // sample 0 goes from last (0.0) to first (0.95) on evaluator a
    app.update(result(0, 0, scored(0.95)));
    app.update(Msg::RunFinished);
    assert_eq!(app.rank_change(0, 0), Some((5, 1)));
    assert_eq!(app.rank_change(4, 0), Some((1, 2)));
    app.update(result(0, 0, scored(0.05)));
    assert_eq!(
        app.rank_change(0, 0),
        Some((5, 5)),
        "a new result refreshes the remembered rank"
    );
    // two samples sharing a prompt form a group (keys as the stats compute them)
    let mut places = vec![crate::training::Place::default(); 5];
    places[1].key = Some([1u8; 16]);
    places[2].key = Some([1u8; 16]);
    app.set_groups(Some(crate::training::Grouping::new(&places)));
    let (n, mean, std, adv) = app.group_of(1, 0).unwrap();
    assert_eq!(n, 2);
    // TRL's unbiased std: 0.05 * sqrt(2) = 0.0707107, and advantage
    // -0.05 / (0.0707107 + 1e-4) = -0.7061082 (not the population std's -0.05/0.0501)
    assert!((mean - 0.15).abs() < 1e-12 && (std - 0.070_710_678_118_654_77).abs() < 1e-12);
    assert!((adv - (-0.706_108_193_402_934_2)).abs() < 1e-9, "{adv}");
    assert_eq!(app.group_of(3, 0), None, "a sample alone has no group");
}

#[test]
fn probes_and_check_run_from_keys_and_report_in_a_panel() {
    let mut app = app();
    assert_eq!(app.update(key('P')), vec![Effect::Probes]);
    assert_eq!(app.overlay, Overlay::Report);
    app.update(Msg::Report(
        "Probes".into(),
        vec!["ground truth pasted bare  ⚠".into()],
    ));
    assert_eq!(
        app.report.as_ref().unwrap().1[0],
        "ground truth pasted bare  ⚠"
    );
    app.update(key('x'));
    assert_eq!(app.overlay, Overlay::None);
    assert_eq!(app.update(key('C')), vec![Effect::Check]);
    assert_eq!(app.report.as_ref().unwrap().0, "Contract check");
}

#[test]
fn constant_metrics_are_found() {
    let mut app = app();
    let mut o = *scored(0.5);
    o.metrics.insert(
        "fmt".into(),
        serde_json::json!({"score": 1.0, "is_score_valid": true, "reason": "ok"}),
    );
    for i in 0..5 {
        let mut o = o.clone();
        o.metrics.insert(
            "len".into(),
            serde_json::json!({"score": i as f64 / 5.0, "is_score_valid": true, "reason": "ok"}),
        );
        app.update(result(0, i, Box::new(o)));
    }
    assert_eq!(app.constant_metrics(0), vec![("fmt".to_string(), 1.0)]);
}

#[test]
fn a_baseline_pinned_before_the_run_is_done_says_which_samples_get_no_delta() {
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["s.jsonl".into()],
        Keymap::default(),
        lines(),
    );
    app.update(Msg::Evaluators(vec![info("a")]));
    let texts = ["alpha", "bravo", "charlie"];
    app.update(Msg::Samples(
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| sample(i, t))
            .collect(),
    ));
    app.update(result(0, 0, scored(0.5)));
    app.update(key('b'));
    assert_eq!(
        app.notice.as_deref(),
        Some("baseline pinned: 3 samples; Δ shows the change from here (2 not scored yet get no Δ: press b again when the run is done)")
    );
    app.update(result(0, 1, scored(0.5)));
    app.update(result(0, 2, scored(0.5)));
    app.update(key('b'));
    assert_eq!(
        app.notice.as_deref(),
        Some("baseline pinned: 3 samples; Δ shows the change from here")
    );
}

#[test]
fn statistics_show_what_the_sandbox_ran_per_evaluator() {
    let mut app = app();
    for (i, (runs, timeouts, pass)) in [(3u64, 0u64, 3u64), (3, 1, 1)].into_iter().enumerate() {
        let mut o = scored(pass as f64 / 3.0);
        let mut verdicts = std::collections::BTreeMap::new();
        verdicts.insert("pass".to_string(), pass);
        if runs - pass - timeouts > 0 {
            verdicts.insert("wrong".to_string(), runs - pass - timeouts);
        }
        if timeouts > 0 {
            verdicts.insert("timeout".to_string(), timeouts);
        }
        o.sandbox = Some(Box::new(crate::model::Sandboxed {
            runs,
            timeouts,
            seconds: vec![0.001 * (i + 1) as f64; runs as usize],
            verdicts,
            ..Default::default()
        }));
        app.update(result(0, i, o));
    }
    app.update(key('v'));
    let report = app.stats_report.clone().unwrap();
    let sandbox = report[0].sandbox.clone().expect("the sandbox's runs");
    assert_eq!((sandbox.samples, sandbox.runs, sandbox.timeouts), (2, 6, 1));
    assert_eq!((sandbox.p50, sandbox.p95), (Some(0.001), Some(0.002)));
    assert_eq!(
        sandbox.describe(),
        "sandbox: 6 run(s) on 2 sample(s), p50 1.0 ms, p95 2.0 ms, 1 timeout(s), 0 memory kill(s); verdicts 4 pass, 1 timeout, 1 wrong"
    );
    assert_eq!(
        report[1].sandbox, None,
        "an evaluator that ran nothing says nothing"
    );
}
