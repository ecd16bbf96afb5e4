//! Keys, the selection, focus and overlays: what a key press does to the app.

use super::*;

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
    app.update(code(KeyCode::Home));
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
    assert_eq!(app.sort, Some((time_sort_index(0), true)), "then by time");
    app.update(key('s'));
    assert_eq!(app.sort, None);
}

#[test]
fn the_time_sort_puts_the_slowest_sample_and_a_timeout_first() {
    let mut app = app();
    let took = |ms: f64| {
        let mut o = scored(0.5);
        o.duration_ms = ms;
        o
    };
    for (i, ms) in [(0, 5.0), (1, 300.0), (2, 1.0), (3, 40.0)] {
        app.update(result(0, i, took(ms)));
    }
    let mut timeout = Outcome::failed(EvalError::new(crate::model::kinds::TIMEOUT, "30 s"));
    timeout.duration_ms = 30000.0;
    app.update(result(0, 4, Box::new(timeout)));
    app.sort = Some((time_sort_index(0), true));
    app.refresh_view();
    assert_eq!(app.view, vec![4, 1, 3, 0, 2]);
    let s = app.seconds_summary(0);
    assert_eq!(s.timeouts, 1);
    assert_eq!((s.p50, s.p95, s.max), (Some(0.005), Some(0.3), Some(0.3)));
    let slowest: Vec<usize> = s.slowest.iter().map(|x| x.sample).collect();
    assert_eq!(slowest, vec![1, 3, 0, 2]);
    app.update(key('v'));
    let stats = &app.stats_report.as_ref().expect("computed when v opens")[0];
    assert_eq!(stats.seconds, s);
}

#[test]
fn overlays_open_and_any_key_closes_them() {
    let mut app = app();
    app.update(key('?'));
    assert_eq!(app.overlay, Overlay::Help);
    // moving keys scroll the help (the frame stops them at its end)
    app.update(key('j'));
    assert_eq!(app.overlay, Overlay::Help);
    assert_eq!(app.overlay_scroll, 1);
    assert_eq!(app.selected(), Some(0), "the list stays");
    assert_eq!(
        app.update(key('x')),
        vec![],
        "the closing key does nothing else"
    );
    assert_eq!(app.overlay, Overlay::None);
    app.update(key('v'));
    assert_eq!(app.overlay, Overlay::Stats);
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
