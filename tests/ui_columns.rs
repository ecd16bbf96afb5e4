//! The list never hides a column without a sign (SPEC §8, issue 32): with two
//! evaluators that each have a logged score, `[training]` and a pinned baseline,
//! the columns that do not fit scroll sideways with `<`/`>`, the selected
//! evaluator's score, its Δ, its logged value, the reward and the advantages keep
//! their place, and `+N ▸` / `◂N` count the columns off screen. Rendered into
//! ratatui's TestBackend and snapshotted with insta at 60×15, 80×24, 160×45 and
//! 250×50 (snapshots committed; insta writes none when CI is set). Keys go through
//! `App::update`, the same entry the live loop uses.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use reward_workbench::model::{Facts, Logged, Outcome, SampleRef};
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
        source: PathBuf::from("/ws/rewards.py"),
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
        outcome: Outcome::scored(score, Default::default()),
        cached: false,
    }])
}

/// A TRL completions log: (prompt, completion, logged accuracy, logged format,
/// logged advantage); accuracy and format score 1, 0, 1, 1 and 1, 1, 0, 1 now.
const ROWS: [(&str, &str, f64, f64, f64); 4] = [
    ("What is 6 times 7?", "6 times 7 is 42.", 1.0, 1.0, 0.7),
    ("What is 6 times 7?", "It is 41.", 1.0, 1.0, -0.7),
    ("Name a prime above 10.", "13 is prime.", 1.0, 0.0, 0.7),
    (
        "Name a prime above 10.",
        "11, as 11 = 11 × 1.",
        1.0,
        1.0,
        -0.7,
    ),
];
const NOW: [(f64, f64); 4] = [(1.0, 1.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)];

fn app() -> App {
    let mut memory = MemoryLines::default();
    let mut offset = 0u64;
    let samples: Vec<Sample> = ROWS
        .iter()
        .enumerate()
        .map(|(i, &(prompt, completion, acc, format, advantage))| {
            let raw = json!({"step": 3, "prompt": prompt, "completion": completion}).to_string();
            let facts = Facts {
                group: Some(format!("3/{prompt}")),
                step: Some(3),
                logged: vec![
                    ("accuracy_reward".into(), Logged::Score(Some(acc))),
                    ("format_reward".into(), Logged::Score(Some(format))),
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
        vec!["completions_00003.parquet".into()],
        Keymap::default(),
        Arc::new(memory),
    );
    app.update(Msg::Evaluators(vec![
        info("accuracy_reward"),
        info("format_reward"),
    ]));
    app.update(Msg::Samples(samples));
    app.update(Msg::Training(Some(Settings::default())));
    for (i, (a, f)) in NOW.into_iter().enumerate() {
        app.update(result(0, i, a));
        app.update(result(1, i, f));
    }
    app.update(key('b'));
    // the edit after the pin: sample 0's accuracy falls
    app.update(result(0, 0, 0.0));
    app.update(Msg::RunFinished);
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

/// The list pane's header row (the first line inside its border), trimmed.
fn header(screen: &str) -> String {
    let line = screen.lines().nth(1).expect("a header row");
    let inside: String = line.chars().skip(1).collect();
    let end = inside.find(['┃', '│']).unwrap_or(inside.len());
    inside[..end].trim_end().to_string()
}

/// Every column the list can show, by its header word.
const COLUMNS: [&str; 8] = [
    "accuracy_reward",
    "Δ",
    "logged",
    "Δlog",
    "reward",
    "adv",
    "adv(log)",
    "format_reward",
];

/// The header's words after "sample" and the counts of the markers.
fn columns_of(header: &str) -> (Vec<String>, usize, usize) {
    let words: Vec<&str> = header.split_whitespace().collect();
    let mut shown = Vec::new();
    let (mut left, mut right) = (0, 0);
    // "#", then "sample" (clipped when the text is narrow)
    assert_eq!(words[0], "#", "{header}");
    let mut i = 2;
    while i < words.len() {
        match words[i] {
            w if w.starts_with('◂') => {
                left = w.trim_start_matches('◂').parse().unwrap();
                i += 1;
            }
            w if w.starts_with('+') && words.get(i + 1) == Some(&"▸") => {
                right = w[1..].parse().unwrap();
                i += 2;
            }
            // a name clipped to its column's width
            w if w.starts_with("accura") => {
                shown.push("accuracy_reward".to_string());
                i += 1;
            }
            w if w.starts_with("format") => {
                shown.push("format_reward".to_string());
                i += 1;
            }
            w => {
                shown.push(w.to_string());
                i += 1;
            }
        }
    }
    (shown, left, right)
}

#[test]
fn every_column_is_on_screen_or_counted_at_every_size() {
    // the columns: accuracy, Δ, logged, Δlog, reward, adv, adv(log), format,
    // logged, Δlog
    let total = 10;
    for (width, height) in [(60, 15), (80, 24), (100, 30), (160, 45), (250, 50)] {
        let mut app = app();
        let mut seen = std::collections::BTreeSet::new();
        let screen = render(&mut app, width, height);
        let (words, left, right) = columns_of(&header(&screen));
        assert_eq!(left, 0, "{width}x{height}: nothing scrolled yet\n{screen}");
        assert_eq!(
            words.len() + right,
            total,
            "{width}x{height}: shown {words:?} and +{right}\n{screen}"
        );
        assert!(
            words[0] == "accuracy_reward",
            "{width}x{height}: the selected evaluator's score comes first: {words:?}"
        );
        seen.extend(words.iter().cloned());
        // `>` until nothing is left on the right: every column shows on the way
        let mut steps = 0;
        let mut right = right;
        while right > 0 {
            app.update(key('>'));
            let screen = render(&mut app, width, height);
            let (words, l, r) = columns_of(&header(&screen));
            steps += 1;
            assert_eq!(l, steps, "{width}x{height}: ◂ counts the scroll\n{screen}");
            assert!(r <= right, "{width}x{height}: > moves on\n{screen}");
            seen.extend(words.iter().cloned());
            right = r;
            assert!(steps <= total, "{width}x{height}: > never ends\n{screen}");
        }
        for c in COLUMNS {
            assert!(
                seen.contains(c),
                "{width}x{height}: {c} never showed: {seen:?}"
            );
        }
        // one more `>` stays; `<` goes back to the start
        app.update(key('>'));
        let (_, l, _) = columns_of(&header(&render(&mut app, width, height)));
        assert_eq!(l, steps, "{width}x{height}: > stops at the last column");
        for _ in 0..steps + 2 {
            app.update(key('<'));
        }
        let (_, l, _) = columns_of(&header(&render(&mut app, width, height)));
        assert_eq!(l, 0, "{width}x{height}: < returns to the first column");
    }
}

#[test]
fn the_selected_evaluator_and_the_trainer_columns_stay_while_the_others_scroll() {
    let mut app = app();
    let screen = render(&mut app, 160, 45);
    let (words, _, right) = columns_of(&header(&screen));
    assert!(right > 0, "160 columns do not hold all of them: {screen}");
    app.update(key('>'));
    let screen = render(&mut app, 160, 45);
    let (after, left, _) = columns_of(&header(&screen));
    assert_eq!(left, 1, "{screen}");
    let pinned = [
        "accuracy_reward",
        "Δ",
        "logged",
        "Δlog",
        "reward",
        "adv",
        "adv(log)",
    ];
    assert_eq!(&words[..pinned.len()], &pinned, "{screen}");
    // those that fit beside a scrolled column stay; the others scroll with it
    assert_eq!(&after[..5], &pinned[..5], "kept in place: {screen}");
    assert_eq!(after[5], "adv(log)", "{screen}");
    // `l` selects format_reward: its columns come first now
    app.update(key('l'));
    let screen = render(&mut app, 160, 45);
    let (words, _, _) = columns_of(&header(&screen));
    assert_eq!(words[0], "format_reward", "{screen}");
}

#[test]
fn the_sample_text_keeps_room_when_columns_scroll() {
    for (width, height, least) in [(80, 24, 10), (160, 45, 18), (250, 50, 20)] {
        let mut app = app();
        let screen = render(&mut app, width, height);
        let row = screen.lines().nth(2).unwrap();
        // "0 What is 6 times 7? ▸ 6 t…": `least` characters of text, the last
        // one perhaps the clipping mark
        let title: String = row.chars().skip(3).take(least - 1).collect();
        assert!(
            !title.contains('…') && !title.ends_with("  "),
            "{width}x{height}: the sample's text is cut below {least}: {row}"
        );
    }
}

#[test]
fn list_60x15() {
    let mut app = app();
    insta::assert_snapshot!(render(&mut app, 60, 15));
    app.update(key('>'));
    insta::assert_snapshot!("list_60x15_scrolled", render(&mut app, 60, 15));
}

#[test]
fn list_80x24() {
    let mut app = app();
    insta::assert_snapshot!(render(&mut app, 80, 24));
    app.update(key('>'));
    insta::assert_snapshot!("list_80x24_scrolled", render(&mut app, 80, 24));
}

#[test]
fn list_160x45() {
    let mut app = app();
    insta::assert_snapshot!(render(&mut app, 160, 45));
    app.update(key('>'));
    insta::assert_snapshot!("list_160x45_scrolled", render(&mut app, 160, 45));
}

#[test]
fn list_250x50() {
    let mut app = app();
    insta::assert_snapshot!(render(&mut app, 250, 50));
}

#[test]
fn scrolled_columns_all_show_again_when_the_terminal_grows() {
    let mut app = app();
    render(&mut app, 80, 24);
    app.update(key('>'));
    let (_, left, _) = columns_of(&header(&render(&mut app, 80, 24)));
    assert_eq!(left, 1);
    let screen = render(&mut app, 250, 50);
    let (words, left, right) = columns_of(&header(&screen));
    assert_eq!((left, right, words.len()), (0, 0, 10), "{screen}");
    assert_eq!(app.list_hscroll, 0, "the scroll follows what was drawn");
}
