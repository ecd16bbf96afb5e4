//! App state driven through `update`, the same entry the live loop uses.

use super::*;
use crate::model::{EvalError, Outcome, SampleRef, Style};
use serde_json::Map;

/// A result as the live loop hands it over: the runner's event, in a burst of one.
fn result(evaluator: usize, sample: usize, outcome: Box<Outcome>) -> Msg {
    Msg::Results(vec![crate::runner::Event::Result {
        evaluator,
        at: SampleRef {
            index: sample,
            file: 0,
            line: sample + 1,
            facts: None,
        },
        hash: [0; 16],
        outcome: *outcome,
        cached: false,
    }])
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn code(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn info(name: &str) -> EvaluatorInfo {
    EvaluatorInfo {
        name: name.into(),
        source: PathBuf::from(format!("metrics/{name}/main.py")),
        style: None,
        state: RunState::Idle,
        import_error: None,
        placement: None,
    }
}

fn raw(text: &str) -> String {
    format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"{text}\"}}]}}")
}

/// Where a text's line lives: the same text keeps its line wherever it moves.
fn offset_of(text: &str) -> u64 {
    text.bytes().map(u64::from).sum::<u64>() * 7 + text.len() as u64
}

fn lines() -> Arc<dyn Lines> {
    let texts = ["alpha", "bravo", "charlie", "delta", "echo", "new first"];
    Arc::new(MemoryLines(
        texts.iter().map(|t| ((0, offset_of(t)), raw(t))).collect(),
    ))
}

fn sample(i: usize, text: &str) -> Sample {
    let raw = raw(text);
    Sample {
        at: SampleRef {
            index: i,
            file: 0,
            line: i + 1,
            facts: None,
        },
        hash: crate::workspace::hash_line(&raw),
        offset: offset_of(text),
        len: raw.len() as u32,
        bad: None,
        cells: Vec::new(),
    }
}

fn scored(x: f64) -> Box<Outcome> {
    Box::new(Outcome {
        reason: Some(format!("r{x}")),
        duration_ms: 0.1,
        ..Outcome::scored(x, Map::new())
    })
}

/// Two evaluators, five samples, all scored: a = i/10, b = 1 - i/10.
fn app() -> App {
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["s.jsonl".into()],
        Keymap::default(),
        lines(),
    );
    app.update(Msg::Evaluators(vec![info("a"), info("b")]));
    let texts = ["alpha", "bravo", "charlie", "delta", "echo"];
    app.update(Msg::Samples(
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| sample(i, t))
            .collect(),
    ));
    for i in 0..5 {
        app.update(result(0, i, scored(i as f64 / 10.0)));
        app.update(result(1, i, scored(1.0 - i as f64 / 10.0)));
    }
    app
}

#[test]
fn keys_move_the_selection_within_bounds() {
    let mut app = app();
    assert_eq!(app.selected(), Some(0));
    app.update(key('j'));
    app.update(code(KeyCode::Down));
    assert_eq!(app.selected(), Some(2));
    app.update(key('G'));
    assert_eq!(app.selected(), Some(4));
    app.update(key('j'));
    assert_eq!(app.selected(), Some(4), "stays on the last sample");
    app.update(key('g'));
    app.update(key('k'));
    assert_eq!(app.selected(), Some(0));
}

#[test]
fn quit_rerun_edit_and_export_are_effects() {
    let mut app = app();
    assert_eq!(app.update(key('q')), vec![Effect::Quit]);
    assert_eq!(
        app.update(key('r')),
        vec![Effect::Rerun { evaluator: Some(0) }]
    );
    app.update(key('l'));
    assert_eq!(
        app.update(key('r')),
        vec![Effect::Rerun { evaluator: Some(1) }]
    );
    assert_eq!(
        app.update(key('R')),
        vec![Effect::Rerun { evaluator: None }]
    );
    assert_eq!(app.update(key('x')), vec![Effect::Export]);
    assert_eq!(
        app.update(key('e')),
        vec![Effect::Edit {
            file: PathBuf::from("metrics/b/main.py"),
            line: None
        }]
    );
}

#[test]
fn edit_opens_the_failing_line_of_the_selected_sample() {
    let mut app = app();
    let mut error = EvalError::new("KeyError", "'x'");
    error.file = Some("metrics/a/main.py".into());
    error.line = Some(12);
    app.update(result(0, 0, Box::new(Outcome::failed(error))));
    assert_eq!(
        app.update(key('e')),
        vec![Effect::Edit {
            file: PathBuf::from("/ws/metrics/a/main.py"),
            line: Some(12)
        }]
    );
}

#[test]
fn filter_by_text_score_and_error() {
    let mut app = app();
    app.update(key('/'));
    for c in "a>=0.3".chars() {
        app.update(key(c));
    }
    assert_eq!(app.view, vec![3, 4], "live while typing");
    app.update(code(KeyCode::Enter));
    assert_eq!(app.filter_input, None);
    app.update(key('/'));
    for _ in 0..6 {
        app.update(code(KeyCode::Backspace));
    }
    for c in "charlie".chars() {
        app.update(key(c));
    }
    app.update(code(KeyCode::Enter));
    assert_eq!(app.view, vec![2]);
    app.update(code(KeyCode::Esc));
    assert_eq!(app.view.len(), 5, "Esc clears the filter");
    app.update(result(
        1,
        3,
        Box::new(Outcome::failed(EvalError::new("ValueError", "x"))),
    ));
    assert_eq!(
        app.error_counts,
        vec![0, 1],
        "the status line's counts follow results"
    );
    app.update(result(1, 3, scored(0.5)));
    assert_eq!(app.error_counts, vec![0, 0]);
    app.update(result(
        1,
        3,
        Box::new(Outcome::failed(EvalError::new("ValueError", "x"))),
    ));
    app.set_filter("error".into());
    assert_eq!(app.view, vec![3]);
    app.set_filter("score<0.2".into());
    assert_eq!(app.view, vec![0, 1], "score means the selected evaluator");
    app.set_filter("nope<0.2".into());
    assert_eq!(
        app.filter_error.as_deref(),
        Some("'nope<0.2': no evaluator named 'nope'")
    );
}

#[test]
fn sort_cycles_descending_ascending_off_and_keeps_the_selection() {
    let mut app = app();
    app.update(key('j'));
    assert_eq!(app.selected(), Some(1));
    app.update(key('s'));
    assert_eq!(app.view, vec![4, 3, 2, 1, 0]);
    assert_eq!(app.selected(), Some(1), "the same sample stays selected");
    app.update(key('s'));
    assert_eq!(app.view, vec![0, 1, 2, 3, 4]);
    app.update(key('s'));
    assert_eq!(app.sort, None);
}

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
fn overlays_open_and_any_key_closes_them() {
    let mut app = app();
    app.update(key('?'));
    assert_eq!(app.overlay, Overlay::Help);
    app.update(key('j'));
    assert_eq!(app.overlay, Overlay::None);
    assert_eq!(app.selected(), Some(0), "the closing key does nothing else");
    app.update(key('v'));
    assert_eq!(app.overlay, Overlay::Stats);
}

#[test]
fn the_deploy_dialog_edits_and_confirms_and_ship_keys_work_in_the_ship_panel() {
    let mut app = app();
    app.ship.default_id = "proposed".into();
    app.update(key('d'));
    assert!(matches!(&app.overlay, Overlay::Deploy(f) if f.id == "proposed"));
    for _ in 0.."proposed".len() {
        app.update(code(KeyCode::Backspace));
    }
    for c in "mine".chars() {
        app.update(key(c));
    }
    app.update(code(KeyCode::Tab));
    for c in "My Judge".chars() {
        app.update(key(c));
    }
    app.update(code(KeyCode::Tab));
    app.update(key(' '));
    let effects = app.update(code(KeyCode::Enter));
    assert_eq!(
        effects,
        vec![Effect::Deploy {
            id: "mine".into(),
            display_name: "My Judge".into(),
            force: true
        }]
    );
    assert_eq!(
        app.overlay,
        Overlay::Ship,
        "progress shows in the ship panel"
    );
    assert_eq!(
        app.update(key('p')),
        vec![Effect::CompareRemote],
        "ship keys act inside the panel"
    );
    assert_eq!(app.overlay, Overlay::Ship);
    app.update(key('j'));
    assert_eq!(app.overlay, Overlay::None, "other keys close it");
    app.update(key('d'));
    app.update(code(KeyCode::Esc));
    assert_eq!(app.overlay, Overlay::None, "Esc cancels the dialog");
}

#[test]
fn copy_takes_the_tunnel_url_with_its_generated_key() {
    let mut app = app();
    app.update(Msg::Ship(ShipMsg::Serving(Some(
        "http://127.0.0.1:8001".into(),
    ))));
    assert_eq!(
        app.update(key('y')),
        vec![Effect::Copy("http://127.0.0.1:8001".into())]
    );
    app.update(Msg::Ship(ShipMsg::Tunnel(Some(
        "https://a.serveo.net".into(),
    ))));
    app.update(Msg::Ship(ShipMsg::TunnelKey(Some(TunnelKey::Generated(
        "k3y".into(),
    )))));
    assert_eq!(
        app.update(key('y')),
        vec![Effect::Copy("https://a.serveo.net\nX-Api-Key: k3y".into())]
    );
    assert_eq!(
        app.notice.as_deref(),
        Some("copied https://a.serveo.net and its key")
    );
    // a key from the environment is the user's own: not copied
    app.update(Msg::Ship(ShipMsg::TunnelKey(Some(TunnelKey::FromEnv))));
    assert_eq!(
        app.update(key('y')),
        vec![Effect::Copy("https://a.serveo.net".into())]
    );
}

#[test]
fn remote_scores_mark_differences_and_filter() {
    let mut app = app();
    let scores = app
        .samples
        .iter()
        .map(|s| {
            (
                s.hash,
                "a".to_string(),
                Some(if s.at.index == 2 {
                    0.9
                } else {
                    s.at.index as f64 / 10.0
                }),
            )
        })
        .collect();
    app.update(Msg::Ship(ShipMsg::Remote {
        source: "http://x".into(),
        scores,
    }));
    assert_eq!(app.remote_differs(&app.samples[2].clone(), 0), Some(true));
    assert_eq!(app.remote_differs(&app.samples[1].clone(), 0), Some(false));
    assert_eq!(
        app.remote_differs(&app.samples[1].clone(), 1),
        None,
        "no remote score for b"
    );
    assert!(app
        .ship
        .log
        .last()
        .unwrap()
        .contains("1 of 5 samples differ"));
    app.set_filter("remote".into());
    assert_eq!(app.view, vec![2]);
}

#[test]
fn tab_moves_focus_and_keys_then_scroll_that_pane() {
    let mut app = app();
    app.update(code(KeyCode::Tab));
    assert_eq!(app.focus, Focus::Conversation);
    app.update(key('j'));
    app.update(key('j'));
    assert_eq!(app.conversation_scroll, 2);
    assert_eq!(app.selected(), Some(0));
    app.update(code(KeyCode::Esc));
    assert_eq!(app.focus, Focus::List);
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
    app.group_keys = Some(vec![None, g1, g1, g2, g2]);
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
    let mut keys = vec![None; 5];
    keys[1] = Some([1u8; 16]);
    keys[2] = Some([1u8; 16]);
    app.group_keys = Some(keys);
    let (n, mean, std, adv) = app.group_of(1, 0).unwrap();
    assert_eq!(n, 2);
    assert!((mean - 0.15).abs() < 1e-12 && (std - 0.05).abs() < 1e-12);
    assert!((adv - (-0.05 / 0.0501)).abs() < 1e-9);
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
    app.update(key('j'));
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

#[test]
fn the_deploy_dialog_chooses_cloud_run_or_kubernetes_with_the_arrows() {
    use crate::ui::deploy_target::{Target, TargetRequest};
    let mut app = app();
    app.ship.default_id = "svc".into();
    app.update(key('d'));
    app.update(code(KeyCode::Right));
    assert!(matches!(&app.overlay, Overlay::Deploy(f) if f.targets.target == Target::CloudRun));
    // Enter without a project stays in the dialog and says what is missing
    assert_eq!(app.update(code(KeyCode::Enter)), vec![]);
    assert!(
        matches!(&app.overlay, Overlay::Deploy(f) if f.targets.problem.as_deref() == Some("give the GCP project"))
    );
    app.update(code(KeyCode::Tab));
    for c in "proj-1".chars() {
        app.update(key(c));
    }
    app.update(code(KeyCode::Tab));
    app.update(code(KeyCode::Tab));
    app.update(key(' '));
    let cloud_run = TargetRequest {
        target: Target::CloudRun,
        id: "svc".into(),
        gcp_project: "proj-1".into(),
        gcp_region: "us-central1".into(),
        register: true,
        namespace: "default".into(),
        image: None,
        apply: false,
    };
    assert_eq!(
        app.update(code(KeyCode::Enter)),
        vec![Effect::DeployTarget(cloud_run)]
    );
    assert_eq!(
        app.overlay,
        Overlay::Ship,
        "progress shows in the ship panel"
    );

    app.update(key('d'));
    app.update(code(KeyCode::Left));
    assert!(matches!(&app.overlay, Overlay::Deploy(f) if f.targets.target == Target::K8s));
    for _ in 0..3 {
        app.update(code(KeyCode::Tab));
    }
    app.update(key(' '));
    let Some(Effect::DeployTarget(request)) = app.update(code(KeyCode::Enter)).pop() else {
        panic!("Enter deploys to Kubernetes");
    };
    assert_eq!(
        (
            request.target,
            request.namespace.as_str(),
            request.image,
            request.apply
        ),
        (Target::K8s, "default", None, true)
    );
}

#[test]
fn a_remote_evaluator_has_no_file_to_edit_and_keeps_its_outcomes_whole() {
    use crate::model::Placement;
    let mut app = app();
    app.store_details = true;
    let placed = |name, placement| EvaluatorInfo {
        style: Some(Style::RewardKit),
        placement: Some(placement),
        ..info(name)
    };
    let url = "http://127.0.0.1:8001/evaluate";
    app.update(Msg::Evaluators(vec![
        placed(
            "a",
            Placement::Local {
                workers: 2,
                concurrency: 1,
            },
        ),
        placed("b", Placement::Remote { url: url.into() }),
    ]));
    for evaluator in 0..2 {
        app.update(result(
            evaluator,
            3,
            Box::new(Outcome::scored(0.5, Map::new())),
        ));
    }
    let whole = |app: &App, e: usize| {
        app.samples[3].cells[e]
            .outcome
            .as_ref()
            .unwrap()
            .full
            .is_some()
    };
    // a local result is read back from the store on selection; a remote one never is
    assert_eq!((whole(&app, 0), whole(&app, 1)), (false, true));

    app.update(key('l'));
    assert_eq!(app.update(key('e')), vec![]);
    assert_eq!(
        app.notice.as_deref(),
        Some("b runs at http://127.0.0.1:8001/evaluate: there is no file to edit here (edit it where it is deployed)")
    );
    app.update(key('h'));
    assert_eq!(
        app.update(key('e')),
        vec![Effect::Edit {
            file: PathBuf::from("metrics/a/main.py"),
            line: None
        }]
    );
}

#[test]
fn settings_arrive_as_a_message_and_a_new_group_by_forgets_the_groups() {
    let mut app = app();
    assert!(app.group_keys.is_some(), "few samples: grouped at once");
    let settings = Settings {
        threshold: 0.7,
        weights: Some(vec![2.0, 1.0]),
        group_by: None,
        deploy_id: "my-rewards".into(),
        store_details: true,
    };
    app.update(Msg::Config(settings.clone()));
    assert_eq!(app.threshold, 0.7);
    assert_eq!(app.weights, Some(vec![2.0, 1.0]));
    assert_eq!(app.ship.default_id, "my-rewards");
    assert!(app.store_details);
    assert!(
        app.group_keys.is_some(),
        "the same grouping keeps its groups"
    );
    let combined = app.combined(&app.samples[1]).unwrap();
    assert!((combined - (2.0 * 0.1 + 0.9)).abs() < 1e-12, "{combined}");
    app.update(Msg::Config(Settings {
        group_by: Some("prompt_id".into()),
        ..settings
    }));
    assert_eq!(app.group_by.as_deref(), Some("prompt_id"));
    assert_eq!(app.group_keys, None, "found again with the new key");
}

/// Lines in memory that count how many are read.
struct CountedLines(MemoryLines, std::sync::atomic::AtomicUsize);

impl Lines for CountedLines {
    fn line(&self, file: usize, offset: u64, len: u32) -> Option<String> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.0.line(file, offset, len)
    }
}

#[test]
fn a_text_filter_reads_each_line_once_per_filter_not_per_result() {
    let texts = ["alpha", "bravo", "charlie", "delta", "echo"];
    let counted = Arc::new(CountedLines(
        MemoryLines(texts.iter().map(|t| ((0, offset_of(t)), raw(t))).collect()),
        Default::default(),
    ));
    let reads = || counted.1.load(std::sync::atomic::Ordering::SeqCst);
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["s.jsonl".into()],
        Keymap::default(),
        counted.clone(),
    );
    app.update(Msg::Evaluators(vec![info("a")]));
    let samples = texts.iter().enumerate().map(|(i, t)| sample(i, t));
    app.update(Msg::Samples(samples.collect()));
    let before = reads();
    app.set_filter("HA".into()); // alpha, charlie
    assert_eq!(app.view, vec![0, 2]);
    assert_eq!(reads() - before, 5, "every line read once");
    for round in 0..20 {
        for i in 0..5 {
            app.update(result(0, i, scored(round as f64 / 100.0)));
        }
    }
    assert_eq!(app.view, vec![0, 2]);
    assert_eq!(reads() - before, 5, "results read no line again");
    app.set_filter("ha score>0.1".into()); // the same words: nothing read
    assert_eq!((app.view.clone(), reads() - before), (vec![0, 2], 5));
    app.set_filter("ha ar".into()); // new words: read once more
    assert_eq!((app.view.clone(), reads() - before), (vec![2], 10));
    // new samples (the file changed): matched again (3 reads), a list this short has
    // its rollout groups found at once (3 more), and the screen takes the title and
    // text of the one row it shows (2 more)
    let moved = ["charlie", "alpha", "echo"]
        .iter()
        .enumerate()
        .map(|(i, t)| sample(i, t));
    app.update(Msg::Samples(moved.collect()));
    assert_eq!((app.view.clone(), reads() - before), (vec![0], 18));
}
