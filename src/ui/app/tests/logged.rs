//! Logged beside recomputed (SPEC §13) in the workbench: each evaluator paired with
//! its logged score (its own name, or `logged = "NAME"`), the row's logged value and
//! Δ, the `logged` filter, the |Δ| sort, the statistics' per-step means and counts,
//! the logged advantage, and groups and steps taken from the source.

use super::*;
use crate::model::{Facts, Logged};

/// A TRL-like sample's facts: its step and group, `acc` and `format_reward` as
/// logged, and the advantage the trainer logged.
fn facts(step: i64, group: &str, acc: Option<f64>, format: f64, advantage: f64) -> Arc<Facts> {
    Arc::new(Facts {
        group: Some(group.into()),
        step: Some(step),
        logged: vec![
            ("acc".into(), Logged::Score(acc)),
            ("format_reward".into(), Logged::Score(Some(format))),
            ("advantage".into(), Logged::Score(Some(advantage))),
        ],
        ..Facts::default()
    })
}

/// (step, group, logged acc, logged format, logged advantage) of six rollouts: two
/// groups at step 1, one at step 2.
const LOGGED: [(i64, &str, Option<f64>, f64, f64); 6] = [
    (1, "g1", Some(1.0), 1.0, 0.7),
    (1, "g1", Some(0.0), 1.0, -0.7),
    (1, "g2", Some(1.0), 1.0, 0.0),
    (2, "g3", None, 1.0, 0.0), // TRL's NaN: the function returned None
    (2, "g3", Some(0.5), 1.0, 0.0),
    (2, "g3", Some(0.25), 1.0, 0.0),
];

/// The scores now: `acc` moved on 1 (0 → 1, across 0.5) and 3 (NaN → 0), and 5 only
/// by float32's rounding (not moved); `fmt` moved on 4 (1 → 0).
const ACC: [f64; 6] = [1.0, 1.0, 1.0, 0.0, 0.5, 0.25 + 1e-8];
const FMT: [f64; 6] = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0];

/// Evaluators `acc` and `fmt` (logged as `format_reward`) on the six rollouts,
/// scored when `score`.
fn logged_app(score: bool) -> App {
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["completions_00001.parquet".into()],
        Keymap::default(),
        lines(),
    );
    app.update(Msg::Config(Settings {
        logged: [("fmt".to_string(), "format_reward".to_string())].into(),
        ..Settings::default()
    }));
    app.update(Msg::Evaluators(vec![info("acc"), info("fmt")]));
    let texts = ["alpha", "bravo", "charlie", "delta", "echo", "new first"];
    let samples = LOGGED
        .iter()
        .enumerate()
        .map(|(i, &(step, group, acc, format, advantage))| {
            let mut s = sample(i, texts[i]);
            s.at.facts = Some(facts(step, group, acc, format, advantage));
            s
        })
        .collect();
    app.update(Msg::Samples(samples));
    if score {
        for i in 0..6 {
            app.update(result(0, i, scored(ACC[i])));
            app.update(result(1, i, scored(FMT[i])));
        }
    }
    app
}

fn type_filter(app: &mut App, text: &str) {
    app.update(key('/'));
    for c in text.chars() {
        app.update(key(c));
    }
    app.update(code(KeyCode::Enter));
}

#[test]
fn each_evaluator_is_paired_with_its_logged_name_and_each_row_with_its_delta() {
    let mut app = logged_app(false);
    assert_eq!(app.logged_pair(0), Some("acc"));
    assert_eq!(app.logged_pair(1), Some("format_reward"), "logged = NAME");
    // not evaluated yet: the logged value, no Δ, nothing moved
    let before = app.logged_cell(1, 0).unwrap();
    assert_eq!((before.logged, before.score), (Some(0.0), None));
    assert!(!before.moved());
    for i in 0..6 {
        app.update(result(0, i, scored(ACC[i])));
        app.update(result(1, i, scored(FMT[i])));
    }
    let c = app.logged_cell(1, 0).unwrap();
    assert_eq!((c.delta(), c.moved(), c.flipped()), (Some(1.0), true, true));
    let nan = app.logged_cell(3, 0).unwrap();
    assert_eq!((nan.logged, nan.delta(), nan.moved()), (None, None, true));
    let rounded = app.logged_cell(5, 0).unwrap();
    assert!(!rounded.moved(), "within float32's 1e-6");
    let fmt = app.logged_cell(4, 1).unwrap();
    assert_eq!((fmt.delta(), fmt.moved()), (Some(-1.0), true));
    // without `logged = NAME`, fmt has no counterpart: no column, no cell
    app.update(Msg::Config(Settings::default()));
    assert_eq!(app.logged_pair(1), None);
    assert_eq!(app.logged_cell(4, 1), None);
    assert!(app.has_logged(), "acc still has one");
}

#[test]
fn the_logged_filter_keeps_the_rows_that_moved_from_the_log() {
    let mut app = logged_app(true);
    type_filter(&mut app, "logged");
    assert_eq!(app.view, vec![1, 3, 4], "any evaluator's score moved");
    app.update(code(KeyCode::Esc));
    type_filter(&mut app, "logged:acc");
    assert_eq!(app.view, vec![1, 3]);
    app.set_filter("logged:fmt".into());
    assert_eq!(app.view, vec![4]);
    app.set_filter("logged:nope".into());
    assert_eq!(
        app.filter_error.as_deref(),
        Some("'logged:nope': no evaluator named 'nope' (the evaluators: acc, fmt)")
    );
    // a new score that agrees with the log leaves the filtered list
    app.set_filter("logged".into());
    app.update(result(1, 4, scored(1.0)));
    assert_eq!(app.view, vec![1, 3]);
}

#[test]
fn the_sort_cycle_orders_by_the_distance_from_the_log() {
    let mut app = logged_app(true);
    app.update(key('s'));
    app.update(key('s'));
    app.update(key('s'));
    assert_eq!(app.sort, Some((logged_sort_index(0), true)));
    // NaN → 0 moved by more than any number, then 1.0, then float32's 1e-8, then 0s
    assert_eq!(app.view, vec![3, 1, 5, 0, 2, 4]);
    // the evaluators come again (rwb.toml saved): the sort follows acc by name
    app.update(Msg::Evaluators(vec![info("fmt"), info("acc")]));
    assert_eq!(app.sort, Some((logged_sort_index(1), true)));
    assert_eq!(app.view, vec![3, 1, 5, 0, 2, 4]);
    app.update(key('s'));
    assert_eq!(app.sort, Some((time_sort_index(1), true)), "then by time");
    app.update(key('s'));
    assert_eq!(app.sort, None, "then off (no [training])");
    // an evaluator without a counterpart has no |Δ| step in the cycle
    app.update(Msg::Config(Settings::default()));
    app.evaluator = 0; // fmt
    let order: Vec<_> = (0..4)
        .map(|_| {
            app.update(key('s'));
            app.sort
        })
        .collect();
    assert_eq!(
        order,
        vec![
            Some((0, true)),
            Some((0, false)),
            Some((time_sort_index(0), true)),
            None
        ]
    );
}

#[test]
fn the_statistics_compare_logged_and_current_means_per_step() {
    let mut app = logged_app(true);
    assert_eq!(app.logged_report, None, "computed when the statistics open");
    app.update(key('v'));
    let report = app.logged_report.clone().expect("computed");
    assert_eq!(report.evaluators, vec![0, 1]);
    assert_eq!(report.names, vec!["acc", "format_reward"]);
    let steps: Vec<Option<i64>> = report.steps.iter().map(|s| s.step).collect();
    assert_eq!(steps, vec![Some(1), Some(2)]);
    let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
    // acc at step 1: logged 1, 0, 1; now 1, 1, 1
    let (logged, now) = report.steps[0].means[0];
    assert!(
        close(logged, 2.0 / 3.0) && close(now, 1.0),
        "{logged:?} {now:?}"
    );
    // at step 2 the logged NaN is left out of both means: 0.5, 0.25
    let (logged, now) = report.steps[1].means[0];
    assert!(close(logged, 0.375) && close(now, 0.375 + 0.5e-8));
    // fmt at step 2: logged 1, 1, 1; now 1, 0, 1
    let (logged, now) = report.steps[1].means[1];
    assert!(close(logged, 1.0) && close(now, 2.0 / 3.0));
    let (logged, now) = report.all.means[0];
    assert!(close(logged, 2.75 / 5.0) && close(now, (3.75 + 1e-8) / 5.0));
    assert_eq!(
        report.lines,
        vec![
            "acc: 2 of 6 rollouts score differently than logged; 1 flip across 0.5",
            "fmt (logged as format_reward): 1 of 6 rollouts score differently than logged; 1 flip across 0.5",
        ]
    );
    // a result while the statistics are open: computed again
    app.update(result(0, 1, scored(0.0)));
    let report = app.logged_report.clone().unwrap();
    assert_eq!(
        report.lines[0],
        "acc: 1 of 6 rollouts score differently than logged; 0 flip across 0.5"
    );
    app.update(key('v')); // closes
    assert_eq!(app.logged_report, None);
}

#[test]
fn cells_not_evaluated_yet_are_left_out_of_the_counts() {
    let mut app = logged_app(false);
    app.update(result(0, 1, scored(1.0)));
    app.update(key('v'));
    let report = app.logged_report.clone().unwrap();
    assert_eq!(
        report.lines,
        vec!["acc: 1 of 1 rollouts score differently than logged; 1 flip across 0.5"]
    );
    // only step 1 has an evaluated cell with a logged number
    assert_eq!(report.steps.len(), 1);
    assert_eq!(
        report.steps[0].means,
        vec![(Some(0.0), Some(1.0)), (None, None)]
    );
}

#[test]
fn the_logged_advantage_shows_beside_the_recomputed_one_with_training() {
    let mut app = logged_app(true);
    assert_eq!(app.logged_advantage(0), Some(0.7));
    assert!(
        !app.shows_logged_advantage(),
        "no [training]: no advantage column"
    );
    app.update(Msg::Training(Some(crate::training::Settings::default())));
    assert!(app.shows_logged_advantage());
    // the groups are the source's: g1 (0, 1) at step 1, g2 (2), g3 (3, 4, 5) at step 2
    let g = app.groups().unwrap();
    let keys: Vec<_> = g.of.iter().map(|&at| g.keys[at as usize]).collect();
    assert_eq!(keys[0], keys[1]);
    assert_ne!(keys[1], keys[2]);
    assert_eq!((keys[3], keys[4]), (keys[5], keys[5]));
    let batch = |i: usize| g.batch[g.of[i] as usize];
    assert_ne!(batch(0), batch(3), "steps 1 and 2 are batches of their own");
    let members: Vec<usize> = app.group_members(0).iter().map(|m| m.sample).collect();
    assert_eq!(
        members,
        vec![0, 1],
        "acc 1 and 1, fmt 1 and 1: equal rewards"
    );
    let members: Vec<usize> = app.group_members(3).iter().map(|m| m.sample).collect();
    assert_eq!(members.len(), 3);
}

#[test]
fn samples_without_facts_have_no_logged_column() {
    let app = app();
    assert!(!app.has_logged());
    assert_eq!(app.logged_cell(0, 0), None);
    let mut app = app;
    app.set_filter("logged".into());
    assert_eq!(app.view, Vec::<usize>::new(), "nothing moved from a log");
}

#[test]
fn a_prompt_and_completion_sample_is_titled_by_both() {
    use crate::ui::app::screen::sample_title;
    let s = sample(0, "alpha");
    let title = |raw: serde_json::Value| sample_title(&raw.to_string(), &s);
    assert_eq!(
        title(serde_json::json!({"prompt": "2+2=", "completion": "4"})),
        "2+2= ▸ 4"
    );
    // a templated prompt (TRL decodes it with the template's words): its end
    let templated =
        "system\nYou are a careful assistant who shows the work.\nuser\nWhat is 2+2?\nassistant\n";
    assert_eq!(
        title(serde_json::json!({"prompt": templated, "completion": "It is\n4"})),
        "…s the work. user What is 2+2? assistant ▸ It is 4"
    );
    let chat = serde_json::json!({
        "prompt": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}],
        "completion": [{"role": "assistant", "content": "4"}],
    });
    assert_eq!(title(chat), "2+2? ▸ 4");
    assert_eq!(
        title(serde_json::json!({"messages": [{"role": "user", "content": " a  b "}]})),
        "a b"
    );
}

#[test]
fn samples_that_log_a_score_no_evaluator_is_compared_with_say_how_to_pair_one() {
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["3.jsonl".into()],
        Keymap::default(),
        lines(),
    );
    app.update(Msg::Evaluators(vec![info("gsm")]));
    let logged = |i: usize| {
        let mut s = sample(i, ["alpha", "bravo"][i]);
        s.at.facts = Some(Arc::new(crate::model::Facts {
            logged: vec![("score".into(), crate::model::Logged::Score(Some(1.0)))],
            ..Default::default()
        }));
        s
    };
    app.update(Msg::Samples(vec![logged(0), logged(1)]));
    assert_eq!(
        app.notice.as_deref(),
        Some("the samples log a score no evaluator is compared with: score; to see the logged score beside the score now, write logged = \"score\" under [evaluators.gsm] in rwb.toml (or name the evaluator score)")
    );
    // said once; paired, nothing to say
    app.update(key('j'));
    app.update(Msg::Samples(vec![logged(0), logged(1)]));
    assert_eq!(app.notice, None);
    app.update(Msg::Config(Settings {
        logged: [("gsm".to_string(), "score".to_string())].into(),
        ..Settings::default()
    }));
    assert_eq!(app.unpaired_logged(), Vec::<String>::new());
    assert_eq!(app.logged_pair(0), Some("score"));
}
