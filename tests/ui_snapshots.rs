//! The screen's layout, rendered into ratatui's TestBackend and snapshotted with insta
//! (snapshots are committed; insta writes none when CI is set). Keys go through
//! `App::update`, the same entry the live loop uses.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use reward_workbench::model::{EvalError, Outcome, SampleRef};
use reward_workbench::ui::app::{
    App, EvaluatorInfo, Lines, MemoryLines, Msg, RunState, Sample, ScrollLimits, Source,
};
use reward_workbench::ui::highlight::Highlighter;
use reward_workbench::ui::keymap::Keymap;
use reward_workbench::ui::theme::Theme;
use reward_workbench::ui::view::{buffer_text, draw, Ctx};
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const SOURCE: &str = "from reward_kit import reward_function, EvaluateResult\n\n@reward_function\ndef evaluate(messages, ground_truth=None, **kwargs):\n    answer = messages[-1][\"content\"]\n    total = int(answer.split()[-1])\n    return EvaluateResult(score=total / 10, reason=\"ok\")\n";

fn info(name: &str) -> EvaluatorInfo {
    EvaluatorInfo {
        name: name.into(),
        source: PathBuf::from(format!("/ws/metrics/{name}/main.py")),
        style: Some(reward_workbench::model::Style::RewardKit),
        state: RunState::Idle,
        import_error: None,
        placement: None,
    }
}

fn outcome(score: f64, reason: &str, metrics: serde_json::Value) -> Box<Outcome> {
    Box::new(Outcome {
        reason: Some(reason.into()),
        duration_ms: 1.25,
        ..Outcome::scored(score, metrics.as_object().cloned().unwrap_or_default())
    })
}

/// A result as the live loop hands it over: the runner's event, in a burst of one.
fn result(evaluator: usize, sample: usize, outcome: Box<Outcome>) -> Msg {
    Msg::Results(vec![reward_workbench::runner::Event::Result {
        evaluator,
        at: SampleRef::first_file(sample),
        hash: [0; 16],
        outcome: *outcome,
        cached: false,
    }])
}

fn app() -> App {
    let questions = [
        (
            "What causes the seasons on Earth?",
            "The tilt of Earth's axis, about 23.5 degrees, not the distance from the sun.",
        ),
        ("What is 6 times 7?", "6 times 7 is 42"),
        (
            "Name a prime number above 10.",
            "13 is prime, it has no divisors but 1 and itself.",
        ),
        (
            "How do I undo a git commit?",
            "Use git reset --soft HEAD~1 to undo the last commit and keep the changes.",
        ),
    ];
    let mut memory = MemoryLines::default();
    let mut offset = 0u64;
    let samples: Vec<Sample> = questions
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
                cells: Default::default(),
            };
            offset += raw.len() as u64 + 1;
            memory.0.insert((0, sample.offset), raw);
            sample
        })
        .collect();
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["conversations.jsonl".into()],
        Keymap::default(),
        Arc::new(memory),
    );
    app.update(Msg::Evaluators(vec![info("relevance"), info("math")]));
    app.update(Msg::Samples(samples));
    for i in 0..4 {
        let s = [0.875, 0.25, 0.5, 1.0][i];
        let metrics = json!({
            "keyword_coverage": {"score": s, "is_score_valid": true, "reason": format!("{} of 4 question words answered", (s * 4.0) as i32)},
            "direct_answer": {"score": 1.0, "is_score_valid": true, "reason": "answers in the first sentence"}
        });
        app.update(result(
            0,
            i,
            outcome(s, &format!("relevance {s:.2}"), metrics),
        ));
    }
    let mut error = EvalError::new(
        "ValueError",
        "invalid literal for int() with base 10: 'degrees'",
    );
    error.traceback = Some("Traceback (most recent call last):\n  File \"/ws/metrics/math/main.py\", line 6, in evaluate\n    total = int(answer.split()[-1])\nValueError: invalid literal for int() with base 10: 'degrees'\n".into());
    error.file = Some("metrics/math/main.py".into());
    error.line = Some(6);
    app.update(result(1, 0, Box::new(Outcome::failed(error))));
    app.update(result(1, 1, outcome(0.2, "42 matches", json!({}))));
    app
}

/// Draws a frame as the live loop does: the app learns the screen's size, the
/// source beside an error is read (here: SOURCE) and highlighted for it once, then
/// drawing reads only the app, and the app learns how far the panes scroll.
fn frame(app: &mut App, width: u16, height: u16, theme: &Theme) -> Terminal<TestBackend> {
    app.update(Msg::Resized(width, height));
    if let Some((path, line)) = app.wanted_source() {
        let code = Some(Highlighter::new().python(SOURCE, theme, line));
        app.update(Msg::Source(Source { path, line, code }));
    }
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let mut limits = ScrollLimits::default();
    terminal
        .draw(|f| limits = draw(f, app, &Ctx { theme }))
        .unwrap();
    app.update(Msg::Drawn(limits));
    terminal
}

fn render(app: &mut App, width: u16, height: u16) -> String {
    let theme = Theme::monochrome();
    let terminal = frame(app, width, height, &theme);
    buffer_text(terminal.backend().buffer())
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

#[test]
fn without_colour_the_selected_row_is_reversed() {
    // NO_COLOR: every colour is the terminal's own, so the selection must not rely on
    // a background colour to be seen
    let mut app = app();
    app.update(key('j'));
    let theme = Theme::monochrome();
    let terminal = frame(&mut app, 100, 30, &theme);
    let buffer = terminal.backend().buffer();
    let row = |y: u16| -> (String, bool) {
        let text = (1..40).map(|x| buffer[(x, y)].symbol()).collect();
        let reversed = (1..40).all(|x| {
            buffer[(x, y)]
                .modifier
                .contains(ratatui::style::Modifier::REVERSED)
        });
        (text, reversed)
    };
    // rows 2..6 of the list are samples 0..3; sample 1 is selected
    let marked: Vec<(String, bool)> = (2..6).map(row).collect();
    assert!(
        marked[1].0.starts_with("1 What is 6 times 7?"),
        "{marked:?}"
    );
    assert_eq!(
        marked.iter().map(|(_, r)| *r).collect::<Vec<_>>(),
        [false, true, false, false],
        "{marked:?}"
    );
}

#[test]
fn layout_100x30_scores_and_breakdown() {
    let mut app = app();
    insta::assert_snapshot!(render(&mut app, 100, 30));
}

#[test]
fn layout_200x60_uses_three_columns() {
    let mut app = app();
    app.update(key('j'));
    insta::assert_snapshot!(render(&mut app, 200, 60));
}

#[test]
fn an_error_shows_traceback_beside_the_source() {
    let mut app = app();
    app.update(key('l')); // the math evaluator, which failed on sample 0
    let screen = render(&mut app, 140, 36);
    assert!(
        screen.contains("ValueError: invalid literal for int()"),
        "{screen}"
    );
    assert!(
        screen.contains("▶6     total = int("),
        "the failing line is marked:\n{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn help_lists_the_live_bindings() {
    let table: toml::Table = toml::from_str("rerun = \"F5\"").unwrap();
    let mut app = app();
    app.keymap = Keymap::with_overrides(&table).unwrap();
    app.update(key('?'));
    let screen = render(&mut app, 100, 32);
    assert!(screen.contains("F5  rerun the evaluator"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn stats_show_distribution_and_warnings() {
    let mut app = app();
    app.update(key('v'));
    let screen = render(&mut app, 100, 30);
    assert!(
        screen.contains("component 'direct_answer' never varies (always 1)"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn the_filter_line_and_baseline_delta() {
    let mut app = app();
    app.update(key('b'));
    app.update(result(0, 1, outcome(0.75, "better", json!({}))));
    app.update(key('/'));
    for c in "score>0.6".chars() {
        app.update(key(c));
    }
    let screen = render(&mut app, 100, 30);
    assert!(screen.contains("+0.50"), "{screen}");
    assert!(screen.contains("/score>0.6"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn a_pinned_baseline_shows_what_moved_and_the_old_reason_beside_the_new() {
    let mut app = app();
    app.weights = Some(vec![1.0, 0.5]);
    app.update(key('b'));
    let metrics = json!({
        "keyword_coverage": {"score": 0.5, "is_score_valid": true, "reason": "2 of 4 question words answered"},
        "direct_answer": {"score": 1.0, "is_score_valid": true, "reason": "answers in the first sentence"}
    });
    app.update(result(0, 0, outcome(0.4, "stricter now", metrics)));
    app.update(Msg::RunFinished);
    app.update(key('k')); // any key clears the "baseline pinned" notice
    let screen = render(&mut app, 140, 36);
    assert!(
        screen.contains("vs baseline: 0.875 → 0.400 (Δ -0.475), crosses 0.5"),
        "{screen}"
    );
    assert!(
        screen.contains("keyword_coverage: 0.875 → 0.500"),
        "{screen}"
    );
    assert!(screen.contains("rank 2 → 3 of 4"), "{screen}");
    assert!(
        screen.contains("was: relevance 0.88") && screen.contains("now: stricter now"),
        "{screen}"
    );
    assert!(screen.contains("vs baseline · relevance: 1 sample changed (0 up, 1 down, 1 flipped), 1 through `keyword_coverage`"), "{screen}");
    assert!(
        screen.contains("combined"),
        "the weighted column shows: {screen}"
    );
}

#[test]
fn history_lists_versions_and_diffs_the_selected_one_with_the_one_before() {
    use reward_workbench::model::Version;
    let mut app = app();
    let version = |t: f64, mean: f64, line: &str| Version {
        first_seen: t,
        last_seen: t,
        count: 4,
        mean: Some(mean),
        errors: 0,
        sources: vec![(
            "/ws/metrics/relevance/main.py".into(),
            format!("def evaluate(messages, **kwargs):\n    {line}\n"),
        )],
    };
    let history = reward_workbench::ui::app::History {
        evaluator: "relevance".into(),
        versions: vec![
            version(300.0, 0.5, "return 0.5"),
            version(200.0, 0.25, "return 0.25"),
            version(100.0, 0.1, "return 0.1"),
        ],
        cursor: 0,
        marked: None,
    };
    app.update(Msg::History(history));
    let screen = render(&mut app, 120, 30);
    assert!(screen.contains("History of relevance"), "{screen}");
    assert!(
        screen.contains("mean  0.500") && screen.contains("mean  0.250"),
        "{screen}"
    );
    assert!(
        screen.contains("-    return 0.25") && screen.contains("+    return 0.5"),
        "{screen}"
    );
    app.update(key('j'));
    let screen = render(&mut app, 120, 30);
    assert!(
        screen.contains("-    return 0.1") && screen.contains("+    return 0.25"),
        "j selects the older version: {screen}"
    );
    // Space marks a version: the diff is then between any two
    app.update(key('k'));
    app.update(key(' '));
    app.update(key('j'));
    app.update(key('j'));
    let screen = render(&mut app, 120, 30);
    assert!(
        screen.contains("-    return 0.1") && screen.contains("+    return 0.5"),
        "marked newest vs selected oldest: {screen}"
    );
    assert!(screen.contains("changes from version 1 to 3"), "{screen}");
    app.update(key('q'));
}

#[test]
fn any_terminal_size_renders_exactly_its_size() {
    let sizes = [
        (1, 1),
        (2, 2),
        (5, 3),
        (10, 4),
        (20, 6),
        (40, 10),
        (60, 15),
        (80, 24),
        (159, 40),
        (160, 40),
        (300, 100),
    ];
    let fits = |screen: &str, (w, h): (u16, u16)| {
        use unicode_width::UnicodeWidthStr;
        assert_eq!(screen.lines().count(), h as usize, "{w}x{h}:\n{screen}");
        let widest = screen.lines().map(|l| l.width()).max().unwrap_or(0);
        assert!(
            widest <= w as usize,
            "{w}x{h}: a line {widest} wide:\n{screen}"
        );
    };
    for (w, h) in sizes {
        for (overlay, name) in [('?', "help"), ('v', "stats"), ('j', "next_row")] {
            let mut app = app();
            app.update(key('l'));
            app.update(key(overlay));
            let screen = render(&mut app, w, h);
            fits(&screen, (w, h));
            if (w, h) == (80, 24) {
                insta::assert_snapshot!(format!("80x24_math_{name}"), screen);
            }
        }
        let mut detail = app();
        detail.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        let screen = render(&mut detail, w, h);
        fits(&screen, (w, h));
        if (w, h) == (80, 24) {
            insta::assert_snapshot!("80x24_detail", screen);
        }
    }
}

/// The status line says where each evaluator runs beside its progress: local workers
/// with their concurrency, an endpoint (cut to its host on a narrow screen), Ray.
#[test]
fn the_status_line_says_where_each_evaluator_runs() {
    use reward_workbench::model::Placement;
    let mut app = app();
    let placed = |name, placement| EvaluatorInfo {
        placement: Some(placement),
        ..info(name)
    };
    app.update(Msg::Evaluators(vec![
        placed(
            "relevance",
            Placement::Local {
                workers: 2,
                concurrency: 8,
                contained: Some(true),
            },
        ),
        placed(
            "math",
            Placement::Remote {
                url: "https://judge.example.com/evaluate".into(),
            },
        ),
        placed("big", Placement::Ray { nodes: 3 }),
    ]));
    app.update(Msg::RunStarted {
        evaluators: vec![1],
        stale: vec![],
    });
    app.update(result(1, 0, outcome(0.5, "remote", json!({}))));
    let wide = render(&mut app, 200, 12);
    let narrow = render(&mut app, 100, 12);
    let status = |screen: &str| {
        screen
            .lines()
            .rev()
            .find(|l| l.contains("relevance"))
            .unwrap()
            .trim_end()
            .to_string()
    };
    insta::assert_snapshot!(format!("{}\n{}", status(&wide), status(&narrow)));
}

/// Counts the sample lines read through it.
struct Counting {
    inner: Arc<dyn Lines>,
    reads: Arc<AtomicUsize>,
}

impl Lines for Counting {
    fn line(&self, file: usize, offset: u64, len: u32) -> Option<String> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.line(file, offset, len)
    }
}

#[test]
fn frames_read_no_sample_line_and_a_new_selection_reads_its_own_once() {
    let mut app = app();
    let reads = Arc::new(AtomicUsize::new(0));
    let inner = app.lines.clone();
    app.update(Msg::Lines {
        lines: Arc::new(Counting {
            inner,
            reads: reads.clone(),
        }),
        labels: vec!["conversations.jsonl".into()],
    });
    // read again from the new source: the titles of the 4 rows, the selected line
    assert_eq!(reads.load(Ordering::SeqCst), 5);
    let first = render(&mut app, 100, 30);
    assert!(first.contains("0 What causes the season…"), "{first}");
    for _ in 0..3 {
        assert_eq!(render(&mut app, 100, 30), first);
    }
    assert_eq!(reads.load(Ordering::SeqCst), 5, "frames read no line");
    app.update(key('j'));
    assert_eq!(reads.load(Ordering::SeqCst), 6, "the new selection's line");
    let moved = render(&mut app, 100, 30);
    assert!(moved.contains("6 times 7 is 42"), "{moved}");
    assert_eq!(reads.load(Ordering::SeqCst), 6);
}

#[test]
fn the_source_beside_an_error_is_wanted_once_per_file_and_failing_line() {
    let mut app = app();
    assert_eq!(app.wanted_source(), None, "relevance did not fail");
    app.update(key('l')); // the math evaluator, which failed on sample 0 at line 6
    let path = PathBuf::from("/ws/metrics/math/main.py");
    assert_eq!(app.wanted_source(), Some((path.clone(), Some(6))));
    let screen = render(&mut app, 140, 36); // answers it with Msg::Source
    assert!(screen.contains("▶6     total = int("), "{screen}");
    assert_eq!(app.wanted_source(), None, "held: not read again per frame");
    assert_eq!(render(&mut app, 140, 36), screen);
    // the same file failing at another line is highlighted again for that line
    let mut error = EvalError::new("KeyError", "'content'");
    error.file = Some("metrics/math/main.py".into());
    error.line = Some(5);
    app.update(result(1, 0, Box::new(Outcome::failed(error))));
    assert_eq!(app.wanted_source(), Some((path, Some(5))));
    let screen = render(&mut app, 140, 36);
    assert!(screen.contains("▶5     answer = messages"), "{screen}");
}

#[test]
fn a_pane_scrolled_past_its_end_stops_there_and_scrolls_back_at_once() {
    let mut app = app();
    app.update(Msg::Key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE)));
    app.update(Msg::Key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE)));
    assert_eq!(app.conversation_scroll, u16::MAX / 2);
    let bottom = render(&mut app, 60, 14);
    // the frame's conversation pane ends there: the app keeps the deepest scroll
    // 9 lines (two turns, the answer wrapped to three) in a pane 4 high: 5
    assert_eq!(app.conversation_scroll, 5, "{bottom}");
    assert!(bottom.contains("distance from the sun."), "{bottom}");
    app.update(key('k'));
    assert_eq!(app.conversation_scroll, 4);
}
