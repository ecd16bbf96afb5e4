//! `[training]` in the workbench: the reward and advantage columns' numbers, sorting
//! and filtering by them, the selected sample's group, the zero-signal shares and the
//! sign changes since a pinned baseline. Expected values are TRL's GRPO arithmetic
//! (`trl/trainer/grpo_trainer.py` v1.8: unbiased std, epsilon 1e-4), worked by hand.

use super::*;
use crate::training::Settings as Training;

/// Six samples, two prompts of three rollouts each; evaluator `a` only.
fn grouped() -> App {
    let texts = ["p1", "p1", "p1", "p2", "p2", "p2"];
    let lines: Arc<dyn Lines> = Arc::new(MemoryLines(
        (0..6)
            .map(|i| ((0, i as u64 * 100), raw(texts[i])))
            .collect(),
    ));
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["s.jsonl".into()],
        Keymap::default(),
        lines,
    );
    app.update(Msg::Evaluators(vec![info("a")]));
    let samples = (0..6)
        .map(|i| {
            let mut s = sample(i, texts[i]);
            s.offset = i as u64 * 100;
            s.hash = [i as u8 + 1; 16]; // rollouts of one prompt are distinct lines
            s
        })
        .collect();
    app.update(Msg::Samples(samples));
    app.update(Msg::Training(Some(Training::default())));
    // p1: 0, 1, 1 (mean 2/3, std 1/sqrt(3)); p2: all 0.5 (no signal)
    for (i, x) in [0.0, 1.0, 1.0, 0.5, 0.5, 0.5].into_iter().enumerate() {
        app.update(result(0, i, scored(x)));
    }
    app
}

fn adv(app: &App, i: usize) -> f64 {
    app.signal_value(i, SignalColumn::Advantage).unwrap()
}

#[test]
fn advantages_follow_the_scores_in_the_same_update() {
    let mut app = grouped();
    let std = (1.0f64 / 3.0).sqrt();
    let low = -(2.0 / 3.0) / (std + 1e-4);
    let high = (1.0 / 3.0) / (std + 1e-4);
    assert!((adv(&app, 0) - low).abs() < 1e-12, "{}", adv(&app, 0));
    assert!((adv(&app, 1) - high).abs() < 1e-12);
    assert_eq!(adv(&app, 3), 0.0, "equal rewards: no signal");
    assert_eq!(app.signal_value(4, SignalColumn::Reward), Some(0.5));
    // a new score changes the advantage in the update that applies it
    app.update(result(0, 4, scored(1.0)));
    let std = (1.0f64 / 12.0).sqrt(); // 0.5, 1, 0.5
    assert!((adv(&app, 4) - (1.0 / 3.0) / (std + 1e-4)).abs() < 1e-12);
    let s = app.combined_signal().unwrap();
    assert_eq!(s.frac_reward_zero_std, Some(0.0));
    assert_eq!(s.groups, 2);
}

#[test]
fn the_list_sorts_and_filters_by_advantage_and_reward() {
    let mut app = grouped();
    // s: a ↓, a ↑, then advantage ↓
    app.update(key('s'));
    app.update(key('s'));
    app.update(key('s'));
    assert_eq!(app.sort, Some((SignalColumn::Advantage.sort_index(), true)));
    assert_eq!(app.view, vec![1, 2, 3, 4, 5, 0]);
    app.update(key('s'));
    assert_eq!(app.view, vec![0, 3, 4, 5, 1, 2]);
    app.update(key('s'));
    assert_eq!(app.sort, Some((SignalColumn::Reward.sort_index(), true)));
    app.update(key('s'));
    assert_eq!(app.sort, Some((SignalColumn::Reward.sort_index(), false)));
    app.update(key('s'));
    assert_eq!(app.sort, Some((time_sort_index(0), true)), "then by time");
    app.update(key('s'));
    assert_eq!(app.sort, None, "then unsorted");
    app.set_filter("adv<0".into());
    assert_eq!(app.view, vec![0]);
    app.set_filter("advantage>0.5".into());
    assert_eq!(app.view, vec![1, 2]);
    app.set_filter("reward>=0.5".into());
    assert_eq!(app.view, vec![1, 2, 3, 4, 5]);
    assert_eq!(
        parse_filter("adv<0", &[info("a")]),
        Ok(vec![Cond::Signal {
            column: SignalColumn::Advantage,
            op: Op::Lt,
            value: 0.0
        }])
    );
}

#[test]
fn the_group_of_the_selected_sample_is_sorted_by_advantage() {
    let app = grouped();
    let members = app.group_members(0);
    let order: Vec<usize> = members.iter().map(|m| m.sample).collect();
    assert_eq!(order, vec![1, 2, 0]);
    assert_eq!(members[2].scores, vec![0.0]);
    assert_eq!(members[2].reward, 0.0);
}

#[test]
fn statistics_count_the_groups_without_signal() {
    let mut app = grouped();
    app.update(key('v'));
    let stats = app.stats_report.as_ref().unwrap();
    assert_eq!(stats[0].groups, Some((2, 1)));
    assert_eq!(stats[0].zero_std, Some(0.5), "three of six samples");
    let s = app.combined_signal().unwrap();
    assert_eq!(s.frac_reward_zero_std, Some(0.5));
    assert_eq!(s.frac_zero_advantage, Some(0.5));
}

#[test]
fn a_baseline_counts_the_advantages_that_changed_sign() {
    let mut app = grouped();
    app.update(key('b'));
    assert_eq!(
        app.sign_changes().as_deref(),
        Some("your fix turned 0 rollouts from reinforced to penalised and 0 from penalised to reinforced")
    );
    // the edit: p1 becomes 1, 0, 1 (sample 1 reinforced → penalised, 0 the reverse)
    app.update(Msg::RunStarted {
        evaluators: vec![0],
        stale: vec![0],
    });
    app.update(result(0, 0, scored(1.0)));
    app.update(result(0, 1, scored(0.0)));
    app.update(Msg::RunFinished);
    let view = app.training_view.as_ref().unwrap();
    assert_eq!((view.to_penalised, view.to_reinforced), (1, 1));
    assert!(app.pinned_advantage(1).unwrap() > 0.0 && adv(&app, 1) < 0.0);
    assert_eq!(
        app.sign_changes().as_deref(),
        Some("your fix turned 1 rollout from reinforced to penalised and 1 from penalised to reinforced")
    );
}

#[test]
fn without_training_there_is_no_signal_column() {
    let mut app = grouped();
    app.update(key('s'));
    app.update(key('s'));
    app.update(key('s'));
    app.update(Msg::Training(None));
    assert_eq!(app.training_view, None);
    assert_eq!(
        app.sort, None,
        "a sort by the advantage goes with [training]"
    );
}

#[test]
fn a_group_of_another_size_than_group_size_is_said_in_the_workbench() {
    let mut app = grouped();
    assert_eq!(app.notice, None, "no group_size: nothing to say");
    let settings = Training {
        group_size: Some(4),
        ..Training::default()
    };
    app.update(Msg::Training(Some(settings)));
    let warning = app.training_view.as_ref().unwrap().group_warning.clone();
    let warning = warning.expect("both groups hold 3");
    assert!(
        warning.starts_with("[training] group_size = 4, but 2 of 2 groups differ: "),
        "{warning}"
    );
    assert_eq!(app.notice, Some(format!("⚠ {warning} (v shows it again)")));
    // said once: a key clears it, new scores do not bring it back
    app.update(key('j'));
    app.update(result(0, 1, scored(0.0)));
    assert_eq!(app.notice, None);
    // groups of the size given: nothing to say
    let settings = Training {
        group_size: Some(3),
        ..Training::default()
    };
    app.update(Msg::Training(Some(settings)));
    assert_eq!(app.training_view.as_ref().unwrap().group_warning, None);
    assert_eq!(app.notice, None);
}
