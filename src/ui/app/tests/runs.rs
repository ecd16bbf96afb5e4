//! Runs streaming in and files reloading: results, loads, stale scores, settings.

use super::*;

#[test]
fn results_of_a_run_in_flight_resort_the_list_on_refresh_not_per_burst() {
    let mut app = app();
    app.update(key('s')); // a descending: 4 3 2 1 0
    assert_eq!(app.view, vec![4, 3, 2, 1, 0]);
    app.update(Msg::RunStarted {
        evaluators: vec![0],
        stale: vec![],
    });
    app.update(result(0, 0, scored(0.9)));
    assert_eq!(
        app.view,
        vec![4, 3, 2, 1, 0],
        "a burst of a run in flight leaves the order for later"
    );
    assert!(app.deferred(), "the live loop is asked for a refresh");
    app.update(Msg::Refresh);
    assert_eq!(app.view, vec![0, 4, 3, 2, 1]);
    assert!(!app.deferred());
    app.update(result(0, 1, scored(0.95)));
    app.update(Msg::RunFinished);
    assert_eq!(
        app.view,
        vec![1, 0, 4, 3, 2],
        "the end of the run sorts too"
    );
    // without a run in flight a result sorts at once, as before
    app.update(result(0, 2, scored(1.0)));
    assert_eq!(app.view, vec![2, 1, 0, 4, 3]);
}

#[test]
fn a_first_load_grows_the_list_and_the_run_in_flight_counts_it_in() {
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["s.jsonl".into()],
        Keymap::default(),
        lines(),
    );
    app.update(Msg::Evaluators(vec![info("a")]));
    app.update(Msg::RunStarted {
        evaluators: vec![0],
        stale: vec![],
    });
    let texts = ["alpha", "bravo", "charlie", "delta", "echo"];
    let chunk = |range: std::ops::Range<usize>| {
        Msg::MoreSamples(range.map(|i| sample(i, texts[i])).collect())
    };
    app.update(chunk(0..2));
    assert_eq!((app.samples.len(), app.view.clone()), (2, vec![0, 1]));
    assert_eq!(app.samples[1].cells.len(), 1, "a cell per evaluator");
    assert!(
        app.samples.iter().all(|s| !s.cells.spilled()),
        "one evaluator's cell is held in the sample: a million samples, no allocation each"
    );
    app.update(result(0, 0, scored(0.1)));
    app.update(result(0, 1, scored(0.2)));
    assert_eq!(
        app.evaluators[0].state,
        RunState::Running { done: 2, total: 2 },
        "caught up with the samples read so far, not done"
    );
    app.update(chunk(2..5));
    assert_eq!(app.view, vec![0, 1, 2, 3, 4]);
    assert_eq!(
        app.evaluators[0].state,
        RunState::Running { done: 2, total: 5 }
    );
    for i in 2..5 {
        app.update(result(0, i, scored(0.3)));
    }
    app.update(Msg::Loaded);
    assert_eq!(app.evaluators[0].state, RunState::Idle);
    assert_eq!(app.samples[4].cells[0].score(), Some(0.3));
}

#[test]
fn a_code_change_marks_old_scores_stale_until_they_are_rerun() {
    let mut app = app();
    app.update(Msg::RunStarted {
        evaluators: vec![0],
        stale: vec![0],
    });
    assert!(app
        .samples
        .iter()
        .all(|s| s.cells[0].stale && !s.cells[1].stale));
    assert_eq!(
        app.evaluators[0].state,
        RunState::Running { done: 0, total: 5 }
    );
    assert_eq!(
        app.samples[0].cells[0].score(),
        Some(0.0),
        "the old score stays visible"
    );
    app.update(result(0, 0, scored(0.5)));
    assert!(!app.samples[0].cells[0].stale);
    assert!(app.samples[1].cells[0].stale);
    assert_eq!(
        app.evaluators[0].state,
        RunState::Running { done: 1, total: 5 }
    );
}

#[test]
fn reloaded_samples_keep_outcomes_and_the_selection_by_content() {
    let mut app = app();
    app.update(key('j'));
    app.update(key('j')); // "charlie"
                          // a line inserted before it, one removed after it
    let texts = ["new first", "alpha", "bravo", "charlie", "echo"];
    app.update(Msg::Samples(
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| sample(i, t))
            .collect(),
    ));
    assert_eq!(app.selected(), Some(3));
    assert!(app.text(&app.samples[3]).contains("charlie"));
    assert_eq!(
        app.samples[3].cells[0].score(),
        Some(0.2),
        "scores moved with the line"
    );
    assert!(
        app.samples[0].cells[0].outcome.is_none(),
        "the new line has no score yet"
    );
}

#[test]
fn evaluators_reloaded_by_name_keep_their_cells() {
    let mut app = app();
    app.update(key('l')); // select b
    app.components[1] = vec!["from_b".into()];
    app.update(Msg::Evaluators(vec![info("b"), info("c")]));
    assert_eq!(app.evaluator, 0, "b is still selected");
    assert_eq!(
        app.components,
        vec![vec!["from_b".to_string()], vec![]],
        "component names move with b"
    );
    assert_eq!(app.samples[0].cells[0].score(), Some(1.0));
    assert!(app.samples[0].cells[1].outcome.is_none());
}

#[test]
fn settings_arrive_as_a_message_and_a_new_group_by_forgets_the_groups() {
    let mut app = app();
    assert!(app.groups().is_some(), "few samples: grouped at once");
    let settings = Settings {
        threshold: 0.7,
        weights: Some(vec![2.0, 1.0]),
        group_by: None,
        deploy_id: "my-rewards".into(),
        store_details: true,
        logged: Default::default(),
        sandbox_unsafe: true,
    };
    app.update(Msg::Config(settings.clone()));
    assert_eq!(app.threshold, 0.7);
    assert_eq!(app.weights, Some(vec![2.0, 1.0]));
    assert_eq!(app.ship.default_id, "my-rewards");
    assert!(app.store_details);
    assert!(app.sandbox_unsafe);
    assert!(app.groups().is_some(), "the same grouping keeps its groups");
    let combined = app.combined(&app.samples[1]).unwrap();
    assert!((combined - (2.0 * 0.1 + 0.9)).abs() < 1e-12, "{combined}");
    app.update(Msg::Config(Settings {
        group_by: Some("prompt_id".into()),
        ..settings
    }));
    assert_eq!(app.group_by.as_deref(), Some("prompt_id"));
    assert_eq!(app.groups(), None, "found again with the new key");
}
