//! `[training]` on screen: the reward and advantage columns, the selected sample's
//! group sorted by advantage, the statistics' zero-signal share and the sign changes
//! after an edit, rendered into ratatui's TestBackend and snapshotted with insta
//! (snapshots committed; insta writes none when CI is set). Keys go through
//! `App::update`, the same entry the live loop uses.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use reward_workbench::model::{Outcome, SampleRef};
use reward_workbench::training::Settings;
use reward_workbench::ui::app::{App, EvaluatorInfo, MemoryLines, Msg, RunState, Sample};
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
        at: SampleRef {
            index: sample,
            file: 0,
            line: sample + 1,
            facts: None,
        },
        hash: [0; 16],
        outcome: Outcome {
            reason: Some(format!("scored {score}")),
            ..Outcome::scored(score, Default::default())
        },
        cached: false,
    }])
}

/// Two prompts, three rollouts each; `correct` and `format` scores.
const SCORES: [(f64, f64); 6] = [
    (1.0, 1.0),
    (0.0, 1.0),
    (1.0, 0.0),
    (1.0, 1.0),
    (1.0, 1.0),
    (1.0, 1.0),
];

fn app() -> App {
    let rollouts = [
        ("What is 6 times 7?", "42"),
        ("What is 6 times 7?", "41"),
        ("What is 6 times 7?", "It is 42"),
        ("Name a prime above 10.", "13"),
        ("Name a prime above 10.", "11"),
        ("Name a prime above 10.", "17"),
    ];
    let mut memory = MemoryLines::default();
    let mut offset = 0u64;
    let samples: Vec<Sample> = rollouts
        .iter()
        .enumerate()
        .map(|(i, (q, a))| {
            let raw = json!({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}).to_string();
            let sample = Sample {
                at: SampleRef { index: i, file: 0, line: i + 1, facts: None },
                hash: reward_workbench::workspace::hash_line(&raw),
                offset,
                len: raw.len() as u32,
                bad: None,
                cells: Vec::new(),
            };
            offset += raw.len() as u64 + 1;
            memory.0.insert((0, sample.offset), raw);
            sample
        })
        .collect();
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["rollouts.jsonl".into()],
        Keymap::default(),
        Arc::new(memory),
    );
    app.update(Msg::Evaluators(vec![info("correct"), info("format")]));
    app.update(Msg::Samples(samples));
    app.update(Msg::Training(Some(Settings::default())));
    for (i, (c, f)) in SCORES.into_iter().enumerate() {
        app.update(result(0, i, c));
        app.update(result(1, i, f));
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

#[test]
fn the_list_shows_reward_and_advantage_and_the_group_by_advantage() {
    let mut app = app();
    app.update(Msg::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE)));
    let screen = render(&mut app, 120, 30);
    // sample 1: reward 1 in a group of 2, 1, 1 → -(1/3) / (sqrt(1/3) + 1e-4) = -0.577
    assert!(screen.contains("reward      adv"), "{screen}");
    assert!(screen.contains("-0.577"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn statistics_show_the_zero_signal_share() {
    let mut app = app();
    app.update(key('v'));
    let screen = render(&mut app, 120, 30);
    assert!(screen.contains("zero signal: 50.0% of samples"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn an_edit_after_a_baseline_counts_the_sign_changes() {
    let mut app = app();
    app.update(key('b'));
    app.notice = None;
    app.update(Msg::RunStarted {
        evaluators: vec![0],
        stale: vec![0],
    });
    // the fix: "42" bare is wrong, "41" right: rewards 2, 1, 1 become 1, 2, 1
    app.update(result(0, 0, 0.0));
    app.update(result(0, 1, 1.0));
    app.update(result(0, 2, 1.0));
    app.update(Msg::RunFinished);
    let screen = render(&mut app, 220, 30);
    assert!(
        screen.contains("your fix turned 1 rollout from reinforced to penalised and 1 from penalised to reinforced"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}
