//! Every message can be read whole (SPEC §8, issue 32 item 2): the message line
//! wraps, a message longer than its rows says which key shows it all, the help
//! shows the whole message, the status in full and every binding unclipped, and
//! scrolls when taller than the screen. Rendered into ratatui's TestBackend; keys go
//! through `App::update`, the same entry the live loop uses.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use reward_workbench::model::{Outcome, SampleRef};
use reward_workbench::ui::app::{App, EvaluatorInfo, MemoryLines, Msg, Overlay, RunState, Sample};
use reward_workbench::ui::keymap::{Action, Keymap};
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

fn app() -> App {
    let mut memory = MemoryLines::default();
    let raw = json!({"messages": [{"role": "user", "content": "What is 6 times 7?"}, {"role": "assistant", "content": "42"}]}).to_string();
    let sample = Sample {
        at: SampleRef {
            index: 0,
            file: 0,
            line: 1,
            facts: None,
        },
        hash: reward_workbench::workspace::hash_line(&raw),
        offset: 0,
        len: raw.len() as u32,
        bad: None,
        cells: Default::default(),
    };
    memory.0.insert((0, 0), raw);
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["samples.jsonl".into()],
        Keymap::default(),
        Arc::new(memory),
    );
    app.update(Msg::Evaluators(vec![
        info("accuracy_reward"),
        info("format_reward"),
    ]));
    app.update(Msg::Samples(vec![sample]));
    app.update(Msg::Results(vec![
        reward_workbench::runner::Event::Result {
            evaluator: 0,
            at: SampleRef {
                index: 0,
                file: 0,
                line: 1,
                facts: None,
            },
            hash: [0; 16],
            outcome: Outcome::scored(1.0, Default::default()),
            cached: false,
        },
    ]));
    app.update(Msg::Watching(vec![
        "metrics/".into(),
        "samples.jsonl".into(),
        "rwb.toml".into(),
    ]));
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

fn press(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// A screen's text with the box drawing taken out and every run of spaces one
/// space: wrapped text reads as one line again.
fn flat(screen: &str) -> String {
    let cleaned: String = screen
        .chars()
        .map(|c| {
            if "│┃╭╮╰╯┏┓┗┛─━".contains(c) {
                ' '
            } else {
                c
            }
        })
        .collect();
    cleaned.split_whitespace().collect::<Vec<_>>().join(" ")
}

const LONG_ERROR: &str = "rwb.toml line 14: evaluators.accuracy.timeot: unknown field `timeot`, did you mean `timeout`? (fields: path, function, style, timeout, kwargs, weight, logged, url, api_key_env, fireworks, concurrency, repeat, threshold, grader, call, trainer, chat_template, trainer_args)";

#[test]
fn a_long_message_wraps_and_says_which_key_shows_it_all() {
    let mut app = app();
    app.update(Msg::ConfigError(Some(LONG_ERROR.into())));
    // 160 columns: the message wraps onto a second row and reads whole there
    let screen = render(&mut app, 160, 45);
    assert!(flat(&screen).contains(LONG_ERROR), "{screen}");
    // 60x15: three rows hold part of it, and the last says `?` shows it all
    let screen = render(&mut app, 60, 15);
    assert!(screen.contains("… ? shows it all"), "{screen}");
    assert!(!flat(&screen).contains(LONG_ERROR), "{screen}");
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('?'),
        KeyModifiers::NONE,
    )));
    assert_eq!(app.overlay, Overlay::Help);
    let mut seen = String::new();
    for _ in 0..60 {
        seen.push_str(&render(&mut app, 60, 15));
        app.update(press(KeyCode::Down));
    }
    let message = format!("rwb.toml: {LONG_ERROR} (keeping the last good configuration)");
    assert!(
        flat(&seen).contains(&message),
        "the help shows the message whole: {seen}"
    );
}

#[test]
fn the_help_lists_every_binding_unclipped_and_scrolls() {
    for (width, height) in [(60, 15), (80, 24), (160, 45)] {
        let mut app = app();
        app.update(Msg::Key(KeyEvent::new(
            KeyCode::Char('?'),
            KeyModifiers::NONE,
        )));
        let first = render(&mut app, width, height);
        let mut seen = first.clone();
        for _ in 0..120 {
            app.update(press(KeyCode::Down));
            seen.push_str(&render(&mut app, width, height));
        }
        assert_eq!(app.overlay, Overlay::Help, "↓ scrolls, it does not close");
        let text = flat(&seen);
        for action in Action::ALL {
            let desc = action
                .describe()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            assert!(
                text.contains(&desc),
                "{width}x{height}: {:?} is not whole in the help: {desc}\n{first}",
                action
            );
        }
        // the status line below may be cut; the help above it is not
        let popup: Vec<&str> = first.lines().collect();
        assert!(
            !popup[..popup.len() - 1].concat().contains('…'),
            "{width}x{height}: nothing clipped\n{first}"
        );
        // the status in full (the status line may cut it)
        assert!(
            text.contains("watching metrics/, samples.jsonl, rwb.toml"),
            "{width}x{height}: {text}"
        );
        // any other key closes it
        app.update(Msg::Key(KeyEvent::new(
            KeyCode::Char('x'),
            KeyModifiers::NONE,
        )));
        assert_eq!(app.overlay, Overlay::None);
    }
}

#[test]
fn the_status_line_keeps_the_help_key_when_it_is_cut() {
    let mut app = app();
    let screen = render(&mut app, 60, 15);
    let status = screen.lines().last().unwrap().trim_end();
    assert!(status.ends_with(" ? help"), "{screen}");
    assert!(status.contains('…'), "cut with a sign: {status}");
    let screen = render(&mut app, 160, 45);
    let status = screen.lines().last().unwrap().trim_end();
    assert!(
        status.ends_with("? help  / filter  r rerun  e edit  q/Ctrl-c quit"),
        "{status}"
    );
    assert!(
        status.contains("watching metrics/, samples.jsonl, rwb.toml"),
        "{status}"
    );
}

#[test]
fn a_long_report_scrolls() {
    let mut app = app();
    let lines: Vec<String> = (1..=40).map(|i| format!("finding {i}")).collect();
    app.update(Msg::Report("Contract check".into(), lines));
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("lines 1-"), "{screen}");
    assert!(!screen.contains("finding 40"), "{screen}");
    app.update(press(KeyCode::End));
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("finding 40"), "{screen}");
    assert_eq!(app.overlay, Overlay::Report);
}

#[test]
fn an_active_filter_shows_in_the_lists_title() {
    let mut app = app();
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('/'),
        KeyModifiers::NONE,
    )));
    for c in "score>0.5".chars() {
        app.update(Msg::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )));
    }
    app.update(press(KeyCode::Enter));
    // a notice takes the message line: the title still says the list is filtered
    app.update(Msg::Notice("exported 2 rows".into()));
    let screen = render(&mut app, 100, 30);
    let title = screen.lines().next().unwrap();
    assert!(
        title.starts_with("┏ Samples 1/1 filter: score>0.5 ━"),
        "{screen}"
    );
    app.update(press(KeyCode::Esc));
    let screen = render(&mut app, 100, 30);
    assert!(
        !screen.lines().next().unwrap().contains("filter"),
        "{screen}"
    );
}
