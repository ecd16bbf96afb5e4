//! Human labels on screen (issue 48), rendered into ratatui's TestBackend and
//! snapshotted with insta: a labelled sample's mark in the list (and on every line of
//! the same text, which shares the label), and the label with the lines sharing it in
//! the conversation, and beside the score in the breakdown.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use reward_workbench::model::{Outcome, SampleRef};
use reward_workbench::trust::agreement::Label;
use reward_workbench::ui::app::{
    App, EvaluatorInfo, MemoryLines, Msg, RunState, Sample, ScrollLimits,
};
use reward_workbench::ui::keymap::Keymap;
use reward_workbench::ui::theme::Theme;
use reward_workbench::ui::view::{buffer_text, draw, Ctx};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

/// Five samples, the second and the fourth the same text, scored by one evaluator.
fn app() -> App {
    let rows = [
        ("Is 7 prime?", "Yes, 7 is prime."),
        ("What is 6 times 7?", "42"),
        ("Name a colour.", "Blue."),
        ("What is 6 times 7?", "42"),
        ("Capital of France?", "Paris."),
    ];
    let mut memory = MemoryLines::default();
    let mut offset = 0u64;
    let samples: Vec<Sample> = rows
        .iter()
        .enumerate()
        .map(|(i, (q, a))| {
            let raw = json!({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}).to_string();
            let sample = Sample {
                at: SampleRef::first_file(i),
                hash: reward_workbench::workspace::hash_line(&raw),
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
        vec!["samples.jsonl".into()],
        Keymap::default(),
        Arc::new(memory),
    );
    app.update(Msg::Evaluators(vec![EvaluatorInfo {
        name: "judge".into(),
        source: PathBuf::from("/ws/metrics/judge/main.py"),
        style: Some(reward_workbench::model::Style::RewardKit),
        state: RunState::Idle,
        import_error: None,
        placement: None,
    }]));
    app.update(Msg::Samples(samples));
    for (i, s) in [0.9, 0.8, 0.3, 0.8, 0.6].iter().enumerate() {
        app.update(Msg::Results(vec![
            reward_workbench::runner::Event::Result {
                evaluator: 0,
                at: SampleRef::first_file(i),
                hash: [0; 16],
                outcome: Outcome {
                    reason: Some("judged".into()),
                    ..Outcome::scored(*s, Default::default())
                },
                cached: false,
            },
        ]));
    }
    app
}

fn render(app: &mut App, width: u16, height: u16) -> String {
    let theme = Theme::monochrome();
    app.update(Msg::Resized(width, height));
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let mut limits = ScrollLimits::default();
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
fn a_label_given_here_marks_every_line_of_its_text_and_the_panes_say_it() {
    let mut app = app();
    app.update(key('j'));
    app.update(key('-'));
    assert_eq!(
        app.notice.as_deref(),
        Some("line 2 labelled fail; the same text is on line 4, which shares the label (labels.jsonl)")
    );
    let screen = render(&mut app, 120, 24);
    let marked: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("- What is 6 times 7?"))
        .collect();
    assert_eq!(marked.len(), 2, "both lines of the text:\n{screen}");
    assert!(
        screen.contains("label fail (given here, kept in labels.jsonl)"),
        "{screen}"
    );
    assert!(
        screen.contains("the same text is on line 4, which shares this label"),
        "{screen}"
    );
    assert!(
        screen.contains("human label fail: this score disagrees (threshold 0.5)"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn labels_loaded_and_from_a_column_are_marked_and_said_with_where_they_come_from() {
    let mut app = app();
    let key_of = |i: usize| app.samples[i].hash;
    let (first, third, last) = (key_of(0), key_of(2), key_of(4));
    // as the live loop hands them over: given here, and a samples file's column
    app.update(Msg::Labels(
        [(first, Label::Pass(true))].into_iter().collect(),
    ));
    app.update(Msg::HumanColumn {
        labels: [(third, Label::Number(0.25)), (last, Label::Pass(false))]
            .into_iter()
            .collect(),
        names: vec!["verdict".into()],
    });
    for _ in 0..4 {
        app.update(key('j'));
    }
    let screen = render(&mut app, 120, 24);
    assert!(screen.contains("+ Is 7 prime?"), "{screen}");
    assert!(screen.contains("=0.25 Name a colour."), "{screen}");
    assert!(screen.contains("- Capital of France?"), "{screen}");
    assert!(
        screen.contains("label fail (from the column verdict)"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

/// The screen reads no files (issue 48): labels reach the app as data (`Msg::Labels`)
/// and leave it as an effect; the module that reads and writes `labels.jsonl` is the
/// live loop's to call, never the app's or the view's.
#[test]
fn the_app_and_the_view_reach_no_labels_file() {
    fn sources(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ui");
    let mut files = Vec::new();
    sources(&root.join("app"), &mut files);
    sources(&root.join("view"), &mut files);
    assert!(files.len() > 10, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for reach in ["trust::labels", "std::fs", "labels::load", "labels::save"] {
            assert!(
                !text.contains(reach),
                "{} reaches for files with `{reach}`",
                file.display()
            );
        }
    }
}
