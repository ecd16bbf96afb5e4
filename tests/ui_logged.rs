//! Logged beside recomputed on screen (SPEC §13): the logged value and Δ beside each
//! score with a logged counterpart, the `logged` filter's rows, the statistics'
//! per-step means, and the logged advantage beside the recomputed one in the list and
//! the group view (issue 21), rendered into ratatui's TestBackend and snapshotted
//! with insta (snapshots committed; insta writes none when CI is set). Keys go
//! through `App::update`, the same entry the live loop uses.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use reward_workbench::model::{Facts, Logged, Outcome, SampleRef};
use reward_workbench::ui::app::{App, EvaluatorInfo, MemoryLines, Msg, RunState, Sample, Settings};
use reward_workbench::ui::keymap::Keymap;
use reward_workbench::ui::theme::Theme;
use reward_workbench::ui::view::{buffer_text, draw, Ctx};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

fn info(name: &str) -> EvaluatorInfo {
    EvaluatorInfo {
        name: name.into(),
        source: PathBuf::from(format!("/ws/metrics/{name}/main.py")),
        style: None,
        state: RunState::Idle,
        import_error: None,
        placement: None,
    }
}

fn result(evaluator: usize, sample: usize, score: f64) -> Msg {
    Msg::Results(vec![reward_workbench::runner::Event::Result {
        evaluator,
        at: SampleRef::first_file(sample),
        hash: [0; 16],
        outcome: Outcome {
            reason: Some(format!("scored {score}").into()),
            ..Outcome::scored(score, Default::default())
        },
        cached: false,
    }])
}

/// A TRL completion-log row: (step, prompt, completion, logged accuracy_reward,
/// logged advantage, accuracy_reward now).
type Row = (i64, &'static str, &'static str, Option<f64>, f64, f64);

/// Step 2's rollouts of "2+2=" were scored 1, 0 and are now 1, 1 (the fix); "3*3="
/// logged NaN (None) and scores 0 now. The logged advantages are TRL's for rewards
/// 1 and 0: ±0.5 / (0.7071 + 1e-4).
const ROWS: [Row; 6] = [
    (2, "2+2=", "4", Some(1.0), 0.70701, 1.0),
    (2, "2+2=", "four", Some(0.0), -0.70701, 1.0),
    (2, "3*3=", "9", Some(1.0), 0.0, 1.0),
    (2, "3*3=", "", None, 0.0, 0.0),
    (4, "2+2=", "4", Some(1.0), 0.70701, 1.0),
    (4, "2+2=", "5", Some(0.0), -0.70701, 0.0),
];

fn app() -> App {
    let mut memory = MemoryLines::default();
    let mut offset = 0u64;
    let samples: Vec<Sample> = ROWS
        .iter()
        .enumerate()
        .map(|(i, &(step, prompt, completion, acc, advantage, _))| {
            let raw = json!({"prompt": prompt, "completion": completion}).to_string();
            let facts = Facts {
                group: Some(format!("{step}/{prompt}")),
                step: Some(step),
                logged: vec![
                    ("accuracy_reward".into(), Logged::Score(acc)),
                    ("advantage".into(), Logged::Score(Some(advantage))),
                ],
                ..Facts::default()
            };
            let sample = Sample {
                at: SampleRef {
                    index: i,
                    file: 0,
                    line: i + 1,
                    facts: Some(Arc::new(facts)),
                },
                hash: [i as u8 + 1; 16],
                offset,
                len: raw.len() as u32,
                bad: None,
                cells: Default::default(),
            };
            offset += raw.len() as u64 + 1;
            memory.0.insert((0, sample.offset), raw);
            sample
        })
        .collect();
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["completions_00002.parquet".into()],
        Keymap::default(),
        Arc::new(memory),
    );
    app.update(Msg::Config(Settings {
        threshold: 0.5,
        logged: [("acc".to_string(), "accuracy_reward".to_string())].into(),
        ..Settings::default()
    }));
    app.update(Msg::Evaluators(vec![info("acc")]));
    app.update(Msg::Samples(samples));
    for (i, row) in ROWS.iter().enumerate() {
        app.update(result(0, i, row.5));
    }
    app
}

fn render(app: &mut App, width: u16, height: u16) -> String {
    let theme = Theme::monochrome();
    app.update(Msg::Resized(width, height));
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let mut limits = Default::default();
    terminal
        .draw(|f| limits = draw(f, app, &Ctx { theme: &theme }))
        .unwrap();
    app.update(Msg::Drawn(limits));
    buffer_text(terminal.backend().buffer())
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn down() -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE))
}

/// The list's row of sample `index` (its number first), trimmed.
fn row_of(screen: &str, index: usize) -> String {
    screen
        .lines()
        .map(|l| l.trim_start_matches(['┃', '│', ' ']))
        .find(|l| l.starts_with(&format!("{index} ")))
        .unwrap_or_else(|| panic!("no row {index}:\n{screen}"))
        .split(['┃', '│'])
        .next()
        .unwrap()
        .trim_end()
        .to_string()
}

#[test]
fn the_list_shows_the_logged_score_and_its_delta() {
    let mut app = app();
    app.update(down());
    let screen = render(&mut app, 120, 30);
    assert!(screen.contains("acc logged   Δlog"), "{screen}");
    // moved: 0 logged, 1 now
    assert!(
        row_of(&screen, 1).ends_with("1.000  0.000 +1.000"),
        "{screen}"
    );
    // as logged
    assert!(
        row_of(&screen, 0).ends_with("1.000  1.000      ·"),
        "{screen}"
    );
    // a logged NaN (None) scored now: moved, no number to subtract
    assert!(
        row_of(&screen, 3).ends_with("0.000   none      ≠"),
        "{screen}"
    );
    // the breakdown says it of the selected sample
    assert!(
        screen.contains("logged (accuracy_reward) 0.000 → now 1.000 (Δ +1.000), crosses"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn the_logged_filter_keeps_the_rows_that_moved() {
    let mut app = app();
    app.update(key('/'));
    let hint = render(&mut app, 120, 30);
    assert!(hint.contains("adv<0, logged (moved vs the log)"), "{hint}");
    for c in "logged".chars() {
        app.update(key(c));
    }
    app.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    let screen = render(&mut app, 120, 30);
    assert!(screen.contains("Samples 2/6"), "{screen}");
    assert_eq!(app.view, vec![1, 3]);
    insta::assert_snapshot!(screen);
}

#[test]
fn the_statistics_show_logged_and_current_means_per_step() {
    let mut app = app();
    app.update(key('v'));
    let screen = render(&mut app, 120, 34);
    // step 2: logged 1, 0, 1 (the NaN left out) → now 1, 1, 1; step 4: 0.5 → 0.5
    assert!(screen.contains("     2    0.667 → 1.000"), "{screen}");
    assert!(screen.contains("     4    0.500 → 0.500"), "{screen}");
    assert!(screen.contains("   all    0.600 → 0.800"), "{screen}");
    assert!(
        screen.contains("acc (logged as accuracy_reward): 2 of 6 rollouts score differently than logged; 1 flip"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn the_logged_advantage_shows_beside_the_recomputed_one_and_in_the_group() {
    let mut app = app();
    app.update(Msg::Training(Some(
        reward_workbench::training::Settings::default(),
    )));
    app.update(down());
    let screen = render(&mut app, 160, 30);
    assert!(screen.contains("reward      adv adv(log)"), "{screen}");
    // step 2's "2+2=" group now scores 1, 1: no signal where the trainer had ±0.707
    assert!(row_of(&screen, 1).ends_with("+0.000   -0.707"), "{screen}");
    assert!(
        screen.contains("reward     adv adv(log)"),
        "the group view:\n{screen}"
    );
    insta::assert_snapshot!(screen);
}
