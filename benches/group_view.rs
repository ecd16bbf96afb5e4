//! Issue 21's group view at 1,000,000 rollouts: a frame that shows the selected
//! sample's rollout group must cost about what a frame without it costs (the app
//! indexes each group's members when the groups change, so a frame walks one group
//! instead of every row). Prints the milliseconds per frame of the group view with
//! `[training]` (the members by advantage), of the group line without it (mean, std,
//! advantage), and of the same frame with no groups at all, with their ratios, all
//! measured in this run; and, for scale, what one walk over every row's group (the
//! work a frame did before the index) costs.
//!
//! cargo bench --bench group_view                (`--profile dev`: the debug build's)

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use reward_workbench::model::{Facts, Outcome, SampleRef};
use reward_workbench::runner::Event;
use reward_workbench::training::Settings;
use reward_workbench::ui::app::{App, EvaluatorInfo, MemoryLines, Msg, RunState, Sample};
use reward_workbench::ui::keymap::Keymap;
use reward_workbench::ui::theme::Theme;
use reward_workbench::ui::view::{draw, Ctx};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SAMPLES: usize = 1_000_000;
/// Rollouts per prompt and step (a TRL log's `num_generations`).
const GROUP: usize = 8;
const FRAMES: usize = 40;

/// A TRL log's rollout: its source's group (one prompt within one step) and step.
fn sample(i: usize, facts: &[Arc<Facts>]) -> Sample {
    let mut hash = [0u8; 16];
    hash[..8].copy_from_slice(&(i as u64).to_le_bytes());
    Sample {
        at: SampleRef {
            index: i,
            file: 0,
            line: i + 1,
            facts: Some(facts[i / GROUP].clone()),
        },
        hash,
        offset: i as u64,
        len: 0,
        bad: None,
        cells: Default::default(),
    }
}

fn app() -> App {
    let mut app = App::new(
        PathBuf::from("."),
        vec!["completions".into()],
        Keymap::default(),
        Arc::new(MemoryLines::default()),
    );
    app.update(Msg::Evaluators(vec![EvaluatorInfo {
        name: "accuracy".into(),
        source: PathBuf::from("rewards.py"),
        style: None,
        state: RunState::Idle,
        import_error: None,
        placement: None,
    }]));
    let facts: Vec<Arc<Facts>> = (0..SAMPLES.div_ceil(GROUP))
        .map(|g| {
            let step = (g * GROUP / 4096) as i64;
            Arc::new(Facts {
                group: Some(format!("{step}/prompt {g}")),
                step: Some(step),
                ..Facts::default()
            })
        })
        .collect();
    app.update(Msg::Training(Some(Settings::default())));
    app.update(Msg::Samples(
        (0..SAMPLES).map(|i| sample(i, &facts)).collect(),
    ));
    let events = (0..SAMPLES)
        .map(|i| Event::Result {
            evaluator: 0,
            at: SampleRef::first_file(i),
            hash: [0; 16],
            outcome: Outcome::scored(((i * 7919) % 1000) as f64 / 1000.0, Default::default()),
            cached: false,
        })
        .collect();
    app.update(Msg::Results(events));
    // a sample in the middle of the list, selected
    app.cursor = SAMPLES / 2 + 3;
    app.update(Msg::Refresh);
    app
}

/// The median time of drawing `FRAMES` frames of `app` (as the live loop draws one).
fn frame_time(app: &mut App, terminal: &mut Terminal<TestBackend>) -> Duration {
    let theme = Theme::monochrome();
    let ctx = Ctx { theme: &theme };
    let mut times = Vec::with_capacity(FRAMES);
    for _ in 0..FRAMES {
        let start = Instant::now();
        let mut limits = Default::default();
        terminal
            .draw(|f| limits = draw(f, app, &ctx))
            .expect("draws");
        app.update(Msg::Drawn(limits));
        times.push(start.elapsed());
    }
    times.sort();
    times[FRAMES / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let started = Instant::now();
    let mut app = app();
    let (width, height) = (160, 50);
    app.update(Msg::Resized(width, height));
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("a terminal");
    println!(
        "{SAMPLES} rollouts in groups of {GROUP} (a TRL log's groups), {width}x{height} frames; set up in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let selected = app.selected().expect("a selection");
    let members = app.group_members(selected).len();
    assert_eq!(members, GROUP, "the selected sample's group");

    // with [training]: the group by advantage, each member's reward and scores
    let training = frame_time(&mut app, &mut terminal);
    // without: the group line (its size, mean, std and the sample's advantage)
    app.update(Msg::Training(None));
    assert!(app.group_of(selected, 0).is_some(), "the group line shows");
    let line = frame_time(&mut app, &mut terminal);
    // what a frame did before the index: walk every row's group to find the members
    let groups = app.groups().expect("grouped");
    let group = groups.of[selected];
    let walk_start = Instant::now();
    let found = groups.of.iter().filter(|g| **g == group).count();
    let walk = walk_start.elapsed();
    assert_eq!(found, GROUP);
    // no groups at all: the same frame without the group view
    app.set_groups(None);
    app.update(Msg::Refresh);
    assert!(app.group_of(selected, 0).is_none(), "no group line");
    let plain = frame_time(&mut app, &mut terminal);

    let ratio = |d: Duration| ms(d) / ms(plain).max(1e-9);
    println!(
        "  frame with the group view ([training], members by advantage) {:>7.3} ms  ({:.2}x the plain frame)",
        ms(training),
        ratio(training)
    );
    println!(
        "  frame with the group line (no [training])                    {:>7.3} ms  ({:.2}x)",
        ms(line),
        ratio(line)
    );
    println!(
        "  frame without a group view (baseline)                        {:>7.3} ms",
        ms(plain)
    );
    println!(
        "  for scale: one walk over every row's group (a frame's work before the index) {:.3} ms",
        ms(walk)
    );
}
