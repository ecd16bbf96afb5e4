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
use reward_workbench::ui::app::{
    App, EvaluatorInfo, MemoryLines, Msg, RunState, Sample, SignalColumn,
};
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
                cells: Default::default(),
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

/// Many rollouts of a TRL log: sample `i`'s prompt and step, its source's group
/// (one prompt within one step, as the TRL reader names it), and its score.
const MANY: usize = 100_000;
const PROMPTS: usize = 6_000;

fn prompt_of(i: usize) -> usize {
    (i * 7919) % PROMPTS
}

/// The first half of the log is step 0, the rest step 1 (and the rows appended later).
fn step_of(i: usize) -> i64 {
    (i * 2 / MANY).min(1) as i64
}

fn score_of(i: usize, rerun: bool) -> f64 {
    let x = ((i * 31) % 7) as f64 / 6.0;
    if rerun && i.is_multiple_of(3) {
        1.0 - x
    } else {
        x
    }
}

fn many_sample(i: usize) -> Sample {
    use reward_workbench::model::Facts;
    let mut hash = [0u8; 16];
    hash[..8].copy_from_slice(&(i as u64).to_le_bytes());
    let facts = Facts {
        group: Some(format!("{}/{}", step_of(i), prompt_of(i))),
        step: Some(step_of(i)),
        ..Facts::default()
    };
    Sample {
        at: SampleRef {
            index: i,
            file: 0,
            line: i + 1,
            facts: Some(Arc::new(facts)),
        },
        hash,
        offset: i as u64,
        len: 0,
        bad: None,
        cells: Default::default(),
    }
}

fn results_of(samples: impl IntoIterator<Item = usize>, rerun: bool) -> Msg {
    let events = samples
        .into_iter()
        .map(|i| reward_workbench::runner::Event::Result {
            evaluator: 0,
            at: many_sample(i).at,
            hash: [0; 16],
            outcome: Outcome::scored(score_of(i, rerun), Default::default()),
            cached: false,
        })
        .collect();
    Msg::Results(events)
}

/// What the group view must list for `sample` among the first `n` samples: its
/// group's members (same prompt, same step), by TRL's advantage (the reward minus
/// the group mean over the unbiased std + 1e-4), best first, ties in data order.
/// TRL's `nanstd` takes the mean square over n and corrects it by `n / (n - 1)`, a
/// division of integer tensors torch does in float32 (trl/trainer/utils.py, v1.8).
fn expected_group(sample: usize, n: usize, rerun: bool) -> Vec<(usize, f64)> {
    let place = |i: usize| (prompt_of(i), step_of(i));
    let members: Vec<usize> = (0..n).filter(|&i| place(i) == place(sample)).collect();
    let rewards: Vec<f64> = members.iter().map(|&i| score_of(i, rerun)).collect();
    let k = rewards.len() as f64;
    let mean = rewards.iter().sum::<f64>() / k;
    let correction = (k as f32 / (k - 1.0) as f32) as f64;
    let square = rewards.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / k;
    let std = (square * correction).sqrt();
    let mut group: Vec<(usize, f64)> = members
        .iter()
        .zip(&rewards)
        .map(|(&i, r)| (i, (r - mean) / (std + 1e-4)))
        .collect();
    group.sort_by(|a, b| b.1.total_cmp(&a.1));
    group
}

fn assert_group(app: &App, sample: usize, n: usize, rerun: bool) {
    let want = expected_group(sample, n, rerun);
    let got: Vec<(usize, f64)> = app
        .group_members(sample)
        .iter()
        .map(|m| (m.sample, m.advantage))
        .collect();
    assert_eq!(
        got.len(),
        want.len(),
        "sample {sample}: {got:?} vs {want:?}"
    );
    for ((g, a), (w, b)) in got.iter().zip(&want) {
        assert!(
            g == w && (a - b).abs() < 1e-12,
            "sample {sample}: {got:?} vs {want:?}"
        );
    }
}

#[test]
fn the_group_view_lists_the_right_members_of_many_rows_after_scores_change() {
    let mut app = many_rows(Settings::default());
    let picks = [0, 1, 4_242, 77_777, MANY - 1];
    for s in picks {
        assert_group(&app, s, MANY, false);
    }
    // the groups are the source's: a prompt at another step is another group
    let groups = app.groups().unwrap();
    let places: std::collections::HashSet<(usize, i64)> =
        (0..MANY).map(|i| (prompt_of(i), step_of(i))).collect();
    assert_eq!(groups.len(), places.len());
    assert!(groups.len() > PROMPTS, "prompts asked at both steps");
    assert_eq!(groups.batches, 2);

    // an edit: a rerun changes a third of the scores; the group view follows
    app.update(Msg::RunStarted {
        evaluators: vec![0],
        stale: vec![0],
    });
    app.update(results_of(0..MANY, true));
    app.update(Msg::RunFinished);
    for s in picks {
        assert_group(&app, s, MANY, true);
    }
    // on screen: the selected sample's group, best advantage first
    app.cursor = 77_777;
    let screen = render(&mut app, 140, 60);
    let want = expected_group(77_777, MANY, true);
    assert!(
        screen.contains(&format!("group of {} · trl grpo", want.len())),
        "{screen}"
    );
    // each member's row (index, reward, advantage), in the order of its advantage
    let row = |i: usize, adv: f64| {
        let reward = format!("{:.3}", score_of(i, true));
        format!("{i:>5} {reward:>7} {:>7}", format!("{adv:+.3}"))
    };
    let at: Vec<usize> = want
        .iter()
        .map(|&(i, adv)| {
            let found = screen.lines().position(|l| l.contains(&row(i, adv)));
            found.unwrap_or_else(|| panic!("no row {:?}:\n{screen}", row(i, adv)))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[1] == w[0] + 1), "{at:?}\n{screen}");

    // the list grows (a first load goes on): new rollouts join their groups
    let more = 1_000;
    app.update(Msg::MoreSamples(
        (MANY..MANY + more).map(many_sample).collect(),
    ));
    app.update(results_of(MANY..MANY + more, true));
    app.update(Msg::Refresh);
    for s in [0, 77_777, MANY + 10] {
        assert_group(&app, s, MANY + more, true);
    }

    // without [training]: the breakdown's group line walks the same group
    app.update(Msg::Training(None));
    let (n, mean, _, adv) = app.group_of(4_242, 0).unwrap();
    let want = expected_group(4_242, MANY + more, true);
    let me = want.iter().find(|(i, _)| *i == 4_242).unwrap().1;
    assert_eq!(n, want.len());
    assert!((adv - me).abs() < 1e-12, "{adv} vs {me}");
    let rewards: Vec<f64> = want.iter().map(|(i, _)| score_of(*i, true)).collect();
    assert!((mean - rewards.iter().sum::<f64>() / n as f64).abs() < 1e-12);
}

fn many_rows(settings: Settings) -> App {
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["completions".into()],
        Keymap::default(),
        Arc::new(MemoryLines::default()),
    );
    app.update(Msg::Evaluators(vec![info("acc")]));
    app.update(Msg::Training(Some(settings)));
    app.update(Msg::Samples((0..MANY).map(many_sample).collect()));
    app.update(results_of(0..MANY, false));
    app
}

/// A run streaming results into many rows (past the size at which the whole signal
/// waits for `Msg::Refresh`): the groups a burst completes show their new advantages
/// in the update that brings the scores (the frame they are drawn in), while groups
/// no result reached keep theirs; with TRL's batch-wide std, which every result
/// moves, the advantages wait for the refresh, as the whole signal does.
#[test]
fn a_burst_of_results_moves_its_groups_advantages_with_its_scores() {
    // a group's members are 6,000 apart, so every member of these two groups is a
    // multiple of 3: the rerun changes each one's score
    let (s, other) = (77_778, 4_242);
    let place = |i: usize| (prompt_of(i), step_of(i));
    assert_ne!(place(s), place(other));
    let old = expected_group(s, MANY, false);
    let new = expected_group(s, MANY, true);
    assert!(old.iter().zip(&new).all(|(a, b)| a != b), "{old:?} {new:?}");
    let members: Vec<usize> = (0..MANY).filter(|&i| place(i) == place(s)).collect();
    let mut app = many_rows(Settings::default());
    app.update(Msg::RunStarted {
        evaluators: vec![0],
        stale: vec![0],
    });
    let before = app.signal_value(other, SignalColumn::Advantage);
    app.update(results_of(members.iter().copied(), true));
    assert!(app.running && app.deferred(), "the whole signal waits");
    assert_group(&app, s, MANY, true);
    assert_eq!(app.signal_value(other, SignalColumn::Advantage), before);
    assert_group(&app, other, MANY, false);
    // the rest of the run, then the refresh: every group as the trainer computes it
    app.update(results_of((0..MANY).filter(|i| !members.contains(i)), true));
    app.update(Msg::Refresh);
    assert_group(&app, other, MANY, true);
    assert_group(&app, s, MANY, true);

    // batch-wide: nothing moves before the refresh
    let batch = Settings {
        scale_rewards: reward_workbench::training::ScaleRewards::Batch,
        ..Settings::default()
    };
    let mut app = many_rows(batch);
    app.update(Msg::RunStarted {
        evaluators: vec![0],
        stale: vec![0],
    });
    let before = app.signal_value(s, SignalColumn::Advantage);
    app.update(results_of(members.iter().copied(), true));
    assert_eq!(app.signal_value(s, SignalColumn::Advantage), before);
    app.update(Msg::Refresh);
    assert_ne!(app.signal_value(s, SignalColumn::Advantage), before);
}

#[test]
fn statistics_say_how_many_samples_are_alone_in_their_group() {
    let mut app = app();
    // the last prompt's third rollout is asked of another prompt: alone in its group
    let raw = json!({"messages": [{"role": "user", "content": "A prompt of its own"}, {"role": "assistant", "content": "17"}]}).to_string();
    let mut samples = app.samples.clone();
    let last = samples.last_mut().unwrap();
    last.hash = reward_workbench::workspace::hash_line(&raw);
    let mut memory = MemoryLines::default();
    for s in &app.samples[..5] {
        memory.0.insert((0, s.offset), app.text(s));
    }
    memory.0.insert((0, last.offset), raw);
    last.len = memory.0[&(0, last.offset)].len() as u32;
    app.update(Msg::Lines {
        lines: Arc::new(memory),
        labels: vec!["rollouts.jsonl".into()],
    });
    app.update(Msg::Samples(samples));
    for (i, (c, f)) in SCORES.into_iter().enumerate() {
        app.update(result(0, i, c));
        app.update(result(1, i, f));
    }
    app.update(key('v'));
    let screen = render(&mut app, 160, 45);
    let flat = screen
        .replace(['│', '┃'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains("rollout groups: 2 of 2 or more samples, 1 with identical rewards (zero signal: 50.0% of samples, 1 of them alone)"),
        "{screen}"
    );
    assert!(
        flat.contains("1 sample is alone in its group (no other rollout of its prompt): advantage 0 whatever it may score"),
        "{screen}"
    );
    assert!(flat.contains("(1 of 2 groups of 2 or more)"), "{screen}");
}
