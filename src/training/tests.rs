use super::*;
use crate::model::Trainer;

const NONE: f64 = f64::NAN;

/// Settings for `trainer` and `algorithm`, the rest at their defaults.
fn settings(trainer: Trainer, algorithm: Algorithm) -> Settings {
    Settings {
        trainer,
        algorithm,
        ..Settings::default()
    }
}

/// Groups from one label per sample (equal labels: one group; no steps).
fn grouping(labels: &[u8]) -> Grouping {
    let places: Vec<Place> = labels
        .iter()
        .map(|l| Place {
            key: Some([*l; 16]),
            step: None,
        })
        .collect();
    Grouping::new(&places)
}

/// The advantages of one evaluator's `scores` grouped by `labels`.
fn advantages(s: &Settings, scores: &[f64], labels: &[u8]) -> Vec<f64> {
    let g = grouping(labels);
    let scores = Scores {
        values: scores,
        evaluators: 1,
    };
    compute(s, &[1.0], scores, &g).advantage
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() < 1e-12 || (g.is_nan() && w.is_nan()),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn a_group_of_0_and_1_is_plus_minus_0_7071_in_trl_not_1() {
    // nanstd([0, 1]) = sqrt(0.5): unbiased, as torch computes it; rwb used to show ±1
    let a = advantages(&Settings::default(), &[0.0, 1.0], &[1, 1]);
    let x = 0.5 / (0.5f64.sqrt() + 1e-4);
    close(&a, &[-x, x]);
    assert!((x - 0.707_007).abs() < 1e-6, "{x}");
    // veRL divides by std + 1e-6
    let v = advantages(
        &settings(Trainer::Verl, Algorithm::Grpo),
        &[0.0, 1.0],
        &[1, 1],
    );
    let y = 0.5 / (0.5f64.sqrt() + 1e-6);
    close(&v, &[-y, y]);
}

#[test]
fn trl_skips_none_and_zeroes_a_group_with_one_scorable_member() {
    let s = Settings::default();
    let x = 0.5 / (0.5f64.sqrt() + 1e-4);
    // the None in the middle is left out of mean and std, and gets 0
    close(
        &advantages(&s, &[1.0, NONE, 0.0], &[1, 1, 1]),
        &[x, 0.0, -x],
    );
    // one scorable member: nanstd is NaN, so every member gets 0
    close(&advantages(&s, &[0.3, NONE], &[1, 1]), &[0.0, 0.0]);
    // equal rewards: no signal
    close(&advantages(&s, &[0.5, 0.5, 0.5], &[1, 1, 1]), &[0.0; 3]);
    // a group of one: 0
    close(&advantages(&s, &[0.9], &[1]), &[0.0]);
}

#[test]
fn trl_scale_rewards_none_and_batch() {
    let none = Settings {
        scale_rewards: ScaleRewards::None,
        ..Settings::default()
    };
    close(
        &advantages(&none, &[0.0, 1.0, 0.25], &[1, 1, 2]),
        &[-0.5, 0.5, 0.0],
    );
    // Dr.GRPO is scale_rewards = "none" in TRL
    let dr = settings(Trainer::Trl, Algorithm::DrGrpo);
    close(&advantages(&dr, &[0.0, 1.0], &[1, 1]), &[-0.5, 0.5]);
    // batch: the group's mean, the std of every sample (0, 1, 1, 1: std 0.5)
    let batch = Settings {
        scale_rewards: ScaleRewards::Batch,
        ..Settings::default()
    };
    let g = grouping(&[1, 1, 2, 2]);
    let scores = Scores {
        values: &[0.0, 1.0, 1.0, 1.0],
        evaluators: 1,
    };
    let signal = compute(&batch, &[1.0], scores, &g);
    // TRL's Bessel correction 4/3 is a float32 division: 1.3333333730697632
    let std = (0.75 / 4.0 * (4.0f32 / 3.0f32) as f64).sqrt();
    assert!(std > 0.5 && std - 0.5 < 1e-8, "{std}");
    let x = 0.5 / (std + 1e-4);
    close(&signal.advantage, &[-x, x, 0.0, 0.0]);
    assert_eq!(signal.zero_std, vec![false; 4], "the batch's std is 0.5");
}

#[test]
fn trl_weights_and_normalize_then_sum() {
    // two functions, weights 2 and 1; the second gives None on sample 1
    let values = [0.0, 1.0, 1.0, NONE, 0.5, 0.0];
    let scores = Scores {
        values: &values,
        evaluators: 2,
    };
    let g = grouping(&[1, 1, 1]);
    let sum = compute(&Settings::default(), &[2.0, 1.0], scores, &g);
    close(&sum.reward, &[1.0, 2.0, 1.0]);
    // rewards 1, 2, 1: mean 4/3, std sqrt((1/9 + 4/9 + 1/9) / 2) = sqrt(1/3)
    let std = (1.0f64 / 3.0).sqrt() + 1e-4;
    close(
        &sum.advantage,
        &[-1.0 / 3.0 / std, 2.0 / 3.0 / std, -1.0 / 3.0 / std],
    );
    let nts = Settings {
        aggregation: Aggregation::NormalizeThenSum,
        ..Settings::default()
    };
    let out = compute(&nts, &[2.0, 1.0], scores, &g);
    // function a: 0, 1, 0.5 (mean 0.5, std 0.5); b: 1, -, 0 (mean 0.5, std sqrt(0.5))
    let za = |x: f64| (x - 0.5) / (0.5 + 1e-4);
    let zb = |x: f64| (x - 0.5) / (0.5f64.sqrt() + 1e-4);
    let r = [
        2.0 * za(0.0) + zb(1.0),
        2.0 * za(1.0),
        2.0 * za(0.5) + zb(0.0),
    ];
    let mean = r.iter().sum::<f64>() / 3.0;
    let ss: f64 = r.iter().map(|x| (x - mean).powi(2)).sum();
    let std = (ss / 3.0 * 1.5).sqrt();
    let want: Vec<f64> = r.iter().map(|x| (x - mean) / (std + 1e-4)).collect();
    for (got, want) in out.advantage.iter().zip(&want) {
        assert!(
            (got - want).abs() < 1e-12,
            "{:?} vs {want:?}",
            out.advantage
        );
    }
    close(&out.reward, &[1.0, 2.0, 1.0]);
}

#[test]
fn an_all_none_sample_is_unscorable_in_trl_and_left_out_in_verl() {
    let values = [NONE, NONE, 1.0, 0.0, 0.0, 1.0];
    let scores = Scores {
        values: &values,
        evaluators: 2,
    };
    let g = grouping(&[1, 1, 1]);
    let trl = compute(&Settings::default(), &[1.0, 1.0], scores, &g);
    assert!(trl.reward[0].is_nan());
    close(&trl.advantage, &[0.0, 0.0, 0.0]);
    let verl = compute(
        &settings(Trainer::Verl, Algorithm::Grpo),
        &[1.0, 1.0],
        scores,
        &g,
    );
    assert!(verl.reward[0].is_nan() && verl.advantage[0].is_nan());
    close(&verl.advantage[1..], &[0.0, 0.0]);
}

#[test]
fn trl_rloo_is_the_leave_one_out_baseline() {
    let s = settings(Trainer::Trl, Algorithm::Rloo);
    close(
        &advantages(&s, &[0.0, 1.0, 1.0], &[1, 1, 1]),
        &[-1.0, 0.5, 0.5],
    );
    // the None is out of the baseline; one scorable member: 0
    close(
        &advantages(&s, &[0.0, NONE, 1.0, 0.7, NONE], &[1, 1, 1, 2, 2]),
        &[-1.0, 0.0, 1.0, 0.0, 0.0],
    );
}

#[test]
fn verl_groups_of_one_keep_their_score() {
    let grpo = settings(Trainer::Verl, Algorithm::Grpo);
    // veRL's std of a group of one is torch.tensor(1.0): float32, so is 1 + 1e-6
    let divisor = 1.000_000_953_674_316_4;
    close(&advantages(&grpo, &[0.8], &[1]), &[0.8 / divisor]);
    let dr = settings(Trainer::Verl, Algorithm::DrGrpo);
    close(
        &advantages(&dr, &[0.8, 0.0, 1.0], &[1, 2, 2]),
        &[0.8, -0.5, 0.5],
    );
    let not_normed = Settings {
        norm_adv_by_std: false,
        ..grpo.clone()
    };
    close(&advantages(&not_normed, &[0.0, 1.0], &[1, 1]), &[-0.5, 0.5]);
    let rloo = settings(Trainer::Verl, Algorithm::Rloo);
    close(
        &advantages(&rloo, &[0.8, 0.0, 1.0, 1.0], &[1, 2, 2, 2]),
        &[0.8, -1.0, 0.5, 0.5],
    );
}

#[test]
fn algorithm_none_gives_the_reward_and_no_advantage() {
    let s = settings(Trainer::Trl, Algorithm::None);
    let a = advantages(&s, &[0.0, 1.0], &[1, 1]);
    assert!(a.iter().all(|x| x.is_nan()));
}

#[test]
fn the_summary_counts_zero_std_and_zero_advantage() {
    let g = grouping(&[1, 1, 2, 2, 3]);
    let values = [0.0, 1.0, 0.5, 0.5, 0.9];
    let scores = Scores {
        values: &values,
        evaluators: 1,
    };
    let signal = compute(&Settings::default(), &[1.0], scores, &g);
    let summary = summarize(&signal, &g, true);
    // group 2 (equal rewards) and the group of one (std 0 in TRL) have zero std
    assert_eq!(summary.frac_reward_zero_std, Some(3.0 / 5.0));
    assert_eq!(summary.frac_zero_advantage, Some(3.0 / 5.0));
    assert_eq!((summary.groups, summary.groups_all_equal), (3, 1));
    assert_eq!(summary.unscorable, 0);
    assert!((summary.mean.unwrap() - 0.58).abs() < 1e-12);
}

#[test]
fn a_chat_sample_is_grouped_by_its_prompt_turns_and_step() {
    let by = GroupBy::Prompt;
    let chat = |prompt: &str, answer: &str| {
        format!(
            r#"{{"messages": [{{"role": "system", "content": "s"}}, {{"role": "user", "content": "{prompt}"}}, {{"role": "assistant", "content": "{answer}"}}]}}"#
        )
    };
    let a = place(&chat("2+2?", "4"), &by);
    assert_eq!(a, place(&chat("2+2?", "5"), &by));
    assert_ne!(a.key, place(&chat("3+3?", "6"), &by).key);
    assert_eq!(a.step, None);
    // an agent's completion: assistant, tool, assistant after the user turn
    let agent = |answer: &str| {
        format!(
            r#"{{"messages": [{{"role": "system", "content": "s"}}, {{"role": "user", "content": "2+2?"}}, {{"role": "assistant", "content": "call"}}, {{"role": "tool", "content": "{answer}"}}, {{"role": "assistant", "content": "done"}}]}}"#
        )
    };
    assert_eq!(place(&agent("4"), &by).key, a.key);
    assert_eq!(place(&agent("5"), &by).key, a.key);
    // a prompt/completion sample: its prompt (a chat sample's is not compared with it)
    let pc = |p: &str, c: &str| format!(r#"{{"prompt": "{p}", "completion": "{c}"}}"#);
    assert_eq!(place(&pc("q", "a"), &by).key, place(&pc("q", "b"), &by).key);
    assert_ne!(place(&pc("q", "a"), &by).key, place(&pc("r", "a"), &by).key);
    // the same prompt at another step is another group; its step places it in a batch
    let stepped = |step: u32| format!(r#"{{"prompt": "q", "completion": "a", "step": {step}}}"#);
    let (s1, s2) = (place(&stepped(1), &by), place(&stepped(2), &by));
    assert!(s1.step.is_some() && s1.step != s2.step);
    let g = Grouping::new(&[s1, s2, s1, place(&pc("q", "a"), &by)]);
    assert_eq!(g.of, vec![0, 1, 0, 2]);
    assert_eq!(
        (g.sizes.clone(), g.batch.clone(), g.batches),
        (vec![2, 1, 1], vec![0, 1, 2], 3)
    );
    // not a sample: no key, a group of its own
    assert_eq!(place("not json", &by), Place::default());
    assert_eq!(place(r#"{"messages": "x"}"#, &by).key, None);
}

#[test]
fn a_column_groups_by_its_value() {
    let by = GroupBy::parse("uid");
    assert_eq!(by, GroupBy::Column("uid".into()));
    let line = |uid: &str| format!(r#"{{"prompt": "p", "completion": "c", "uid": {uid}}}"#);
    assert_eq!(
        place(&line("\"a\""), &by).key,
        place(&line("\"a\""), &by).key
    );
    assert_ne!(
        place(&line("\"a\""), &by).key,
        place(&line("\"b\""), &by).key
    );
    assert_eq!(place(&line("null"), &by).key, None);
    assert_eq!(place(r#"{"prompt": "p"}"#, &by).key, None);
    // samples without a key are each a group of one, with no id
    let none = Place::default();
    let g = Grouping::new(&[none, none, place(&line("1"), &by)]);
    assert_eq!(
        (g.len(), g.id(0), g.id(2).map(|i| i.len())),
        (3, None, Some(12))
    );
}

#[test]
fn groups_of_another_size_are_named_in_one_warning() {
    let g = grouping(&[1, 1, 2, 3, 3, 3]);
    assert_eq!(grouping(&[1, 1, 2, 2]).size_warning(2), None);
    let w = g.size_warning(2).unwrap();
    let id = |l: u8| group_id(&[l; 16]);
    assert_eq!(
        w,
        format!(
            "[training] group_size = 2, but 2 of 3 groups differ: {} (1 samples), {} (3 samples)",
            id(2),
            id(3)
        )
    );
}

#[test]
fn each_group_walks_its_members_in_data_order_and_grows_with_the_list() {
    let labels = [1, 2, 1, 3, 2, 1];
    let g = grouping(&labels);
    let members: Vec<Vec<usize>> = (0..g.len()).map(|x| g.members(x).collect()).collect();
    assert_eq!(members, vec![vec![0, 2, 5], vec![1, 4], vec![3]]);
    assert_eq!(g.members(3).count(), 0, "no such group");
    // a list that grows: the same groups as placing every sample at once
    let mut grown = grouping(&labels[..2]);
    let more = grouping(&[1, 3, 2, 1, 4]);
    for place in (0..5).map(|i| Place {
        key: more.keys[more.of[i] as usize],
        step: None,
    }) {
        grown.push(place);
    }
    let whole = grouping(&[1, 2, 1, 3, 2, 1, 4]);
    assert_eq!(grown, whole);
    let members: Vec<Vec<usize>> = (0..grown.len())
        .map(|x| grown.members(x).collect())
        .collect();
    assert_eq!(members, vec![vec![0, 2, 5], vec![1, 4], vec![3], vec![6]]);
    // a sample without a key is a group of its own
    grown.push(Place::default());
    assert_eq!(
        (grown.len(), grown.members(4).collect::<Vec<_>>()),
        (5, vec![7])
    );
}

#[test]
fn a_sources_group_places_its_samples_as_run_and_workbench_both_do() {
    use crate::model::Facts;
    let by = GroupBy::Prompt;
    let line = |c: &str| format!(r#"{{"prompt": "2+2=", "completion": "{c}"}}"#);
    let trl = |group: &str, step: i64| Facts {
        group: Some(group.into()),
        step: Some(step),
        ..Facts::default()
    };
    // a TRL log's group (one prompt within one step) is read without the line
    let no_line = || -> String { panic!("the line is not needed") };
    let a = place_sample(Some(&trl("g2", 2)), &by, no_line);
    let b = place_sample(Some(&trl("g2", 2)), &by, no_line);
    let c = place_sample(Some(&trl("g4", 4)), &by, no_line);
    assert_eq!(a, b);
    assert!(a.key.is_some() && a.key != c.key && a.step != c.step);
    // the step is hashed as a line's `step` is
    let stepped = r#"{"prompt": "2+2=", "completion": "4", "step": 2}"#;
    assert_eq!(a.step, place(stepped, &by).step);
    // with two steps: two groups, each in its step's batch
    let g = Grouping::new(&[a, b, c, c]);
    assert_eq!((g.sizes.clone(), g.batch.clone()), (vec![2, 2], vec![0, 1]));
    // without a logged group: the line's prompt, within the source's step
    let stepped_only = |step| Facts {
        step: Some(step),
        ..Facts::default()
    };
    let at = |facts: Option<&Facts>, c: &str| place_sample(facts, &by, || line(c));
    let (s2, s2b) = (stepped_only(2), stepped_only(2));
    assert_eq!(at(Some(&s2), "4").key, at(Some(&s2b), "5").key);
    assert_ne!(at(Some(&s2), "4").key, at(Some(&stepped_only(4)), "4").key);
    assert_ne!(at(Some(&s2), "4").key, at(None, "4").key);
    // no facts, or facts that say nothing of groups: the line's place
    assert_eq!(at(None, "4"), place(&line("4"), &by));
    let split = Facts {
        split: Some("test".into()),
        ..Facts::default()
    };
    assert_eq!(at(Some(&split), "4"), place(&line("4"), &by));
    // grouped by a column, a logged group is not the column's: the line's column
    let uid = GroupBy::parse("uid");
    let with_uid = r#"{"prompt": "p", "uid": "u1"}"#;
    let placed = place_sample(Some(&trl("g2", 2)), &uid, || with_uid);
    let within = place_sample(Some(&stepped_only(2)), &uid, || with_uid);
    assert_eq!(placed, within);
    assert_ne!(placed.key, place(with_uid, &uid).key, "within step 2");
}

/// What the workbench patches while a run streams results: a few groups' numbers
/// computed alone equal the whole run's for those members, for every group-local
/// configuration, with interleaved groups, keyless samples, steps, `None` scores and
/// groups whose rewards are all equal; batch-wide configurations are not group-local.
#[test]
fn a_groups_numbers_computed_alone_equal_the_whole_runs() {
    let labels: Vec<Option<u8>> = (0..40u8)
        .map(|i| if i % 13 == 5 { None } else { Some(i % 6) })
        .collect();
    let places: Vec<Place> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| Place {
            key: l.map(|l| [l; 16]),
            step: Some((i / 20) as u64),
        })
        .collect();
    let g = Grouping::new(&places);
    let k = 2;
    // two evaluators; group 3 all equal; some scores missing
    let values: Vec<f64> = (0..labels.len() * k)
        .map(|i| match (labels[i / k], i % 7) {
            (Some(3), _) => 0.5,
            (_, 4) => NONE,
            _ => ((i * 37) % 11) as f64 / 10.0,
        })
        .collect();
    let weights = [1.0, 0.5];
    let scores = Scores {
        values: &values,
        evaluators: k,
    };
    let mut configurations = Vec::new();
    for trainer in [Trainer::Trl, Trainer::Verl] {
        for algorithm in [
            Algorithm::Grpo,
            Algorithm::DrGrpo,
            Algorithm::Rloo,
            Algorithm::None,
        ] {
            for scale_rewards in [ScaleRewards::Group, ScaleRewards::Batch, ScaleRewards::None] {
                for aggregation in [Aggregation::SumThenNormalize, Aggregation::NormalizeThenSum] {
                    for norm_adv_by_std in [true, false] {
                        configurations.push(Settings {
                            trainer,
                            algorithm,
                            scale_rewards,
                            aggregation,
                            norm_adv_by_std,
                            ..Settings::default()
                        });
                    }
                }
            }
        }
    }
    let mut local = 0;
    for s in &configurations {
        if !group_local(s) {
            assert!(
                s.trainer == Trainer::Trl
                    && (s.aggregation == Aggregation::NormalizeThenSum
                        || (s.algorithm == Algorithm::Grpo
                            && s.scale_rewards == ScaleRewards::Batch))
                    && matches!(s.algorithm, Algorithm::Grpo | Algorithm::DrGrpo),
                "{s:?}"
            );
            continue;
        }
        local += 1;
        let whole = compute(s, &weights, scores, &g);
        let mut wanted = vec![0usize, 3, g.of[5] as usize, g.of[39] as usize];
        wanted.sort_unstable();
        wanted.dedup();
        let (members, part) = compute_groups(
            s,
            &weights,
            |i, out| out.extend_from_slice(&values[i * k..(i + 1) * k]),
            &g,
            &wanted,
        );
        let mut expected: Vec<usize> = (0..labels.len())
            .filter(|&i| wanted.contains(&(g.of[i] as usize)))
            .collect();
        let mut got = members.clone();
        expected.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, expected, "{s:?}");
        for (j, &m) in members.iter().enumerate() {
            let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
            assert!(same(part.reward[j], whole.reward[m]), "{s:?} reward of {m}");
            assert!(
                same(part.advantage[j], whole.advantage[m]),
                "{s:?} advantage of {m}: {} vs {}",
                part.advantage[j],
                whole.advantage[m]
            );
            assert_eq!(part.zero_std[j], whole.zero_std[m], "{s:?} zero std of {m}");
        }
    }
    assert!(local > configurations.len() / 2, "{local}");
}
