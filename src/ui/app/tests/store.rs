//! The app as the workbench with a store holds it: what a cell keeps, what is read.

use super::*;

/// The app of `app()` as the workbench with a store holds it: evaluators of a known
/// pointwise style, so cells keep scores and the store keeps the rest.
fn stored_app() -> App {
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["s.jsonl".into()],
        Keymap::default(),
        lines(),
    );
    app.store_details = true;
    let pointwise = |name| EvaluatorInfo {
        style: Some(Style::RewardKit),
        ..info(name)
    };
    app.update(Msg::Evaluators(vec![pointwise("a"), pointwise("b")]));
    let texts = ["alpha", "bravo", "charlie", "delta", "echo"];
    let samples = texts.iter().enumerate().map(|(i, t)| sample(i, t));
    app.update(Msg::Samples(samples.collect()));
    app
}

#[test]
fn with_a_store_only_the_selected_cell_holds_its_reason_and_errors_are_shared() {
    let mut app = stored_app();
    for i in 0..5 {
        app.update(result(0, i, scored(i as f64 / 10.0)));
        let failed = Outcome::failed(EvalError::new("ImportFailed", "no module named x"));
        app.update(result(1, i, Box::new(failed)));
    }
    // every cell has its score; no cell keeps a reason, the selected one is the detail
    for (i, s) in app.samples.iter().enumerate() {
        assert_eq!(s.cells[0].score(), Some(i as f64 / 10.0));
        assert!(s.cells[0].full().is_none(), "sample {i} keeps its outcome");
    }
    let detail = app
        .selected_detail
        .as_ref()
        .expect("the selected cell's outcome");
    assert_eq!(detail.of, (app.samples[0].hash, "a".to_string()));
    assert_eq!(
        app.selected_outcome().unwrap().reason.as_deref(),
        Some("r0")
    );
    assert_eq!(
        app.wanted_detail(),
        None,
        "nothing to read for the selection"
    );
    // one error outcome for all five samples
    let first = app.samples[0].cells[1].full().unwrap().clone();
    assert!(app
        .samples
        .iter()
        .all(|s| Arc::ptr_eq(s.cells[1].full().unwrap(), &first)));
    assert_eq!(app.error_counts, vec![0, 5]);
    assert_eq!(app.fresh, 10);

    // moving down asks for the next sample's outcome; until it is read, the breakdown
    // has its score and no reason
    app.update(key('j'));
    assert_eq!(app.wanted_detail(), Some((1, 0)));
    let sketch = app.selected_outcome().unwrap();
    assert_eq!((sketch.score, sketch.reason.clone()), (Some(0.1), None));
    let read = Outcome {
        reason: Some("read from the store".into()),
        ..Outcome::scored(0.1, Map::new())
    };
    app.update(Msg::Detail(Detail {
        of: (app.samples[1].hash, "a".into()),
        outcome: Some(Arc::new(read.clone())),
        before: None,
    }));
    assert_eq!(app.wanted_detail(), None);
    assert_eq!(*app.selected_outcome().unwrap(), read);
    // the summary counts kept scores and shared errors as before
    let s = app.summary(0);
    assert_eq!(
        (s.count, s.errors, s.min, s.max),
        (5, 0, Some(0.0), Some(0.4))
    );
    assert_eq!((app.summary(1).count, app.summary(1).errors), (5, 5));
}

#[test]
fn with_a_store_the_baseline_reason_is_read_and_not_guessed() {
    let mut app = stored_app();
    app.code_keys.insert("a".into(), [7; 32]);
    for i in 0..5 {
        app.update(result(0, i, scored(0.5)));
    }
    app.update(key('j'));
    app.update(key('b'));
    assert_eq!(app.baseline.as_ref().unwrap().keys.get("a"), Some(&[7; 32]));
    app.update(result(0, 1, scored(0.75)));
    // the pinned reason is not kept: until it is read, the old outcome has the
    // pinned score and today's reason (no change of reason is shown)
    assert_eq!(app.wanted_detail(), Some((1, 0)));
    let now = app.selected_outcome().unwrap();
    assert_eq!(now.reason.as_deref(), Some("r0.75"));
    let before = app.baseline_outcome(1, 0, &now).unwrap();
    assert_eq!(
        (before.score, before.reason.as_deref()),
        (Some(0.5), Some("r0.75"))
    );
    app.update(Msg::Detail(Detail {
        of: (app.samples[1].hash, "a".into()),
        outcome: None,
        before: Some(Arc::new(*scored(0.5))),
    }));
    assert_eq!(app.wanted_detail(), None);
    let now = app.selected_outcome().unwrap();
    assert_eq!(now.reason.as_deref(), Some("r0.75"), "the result stays");
    let before = app.baseline_outcome(1, 0, &now).unwrap();
    assert_eq!(before.reason.as_deref(), Some("r0.5"));
}
