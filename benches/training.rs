//! Issue 21's speed target: advantages for 1,000,000 samples in under 0.2 s. Times
//! grouping the samples (from their keys) and each trainer's arithmetic, and prints
//! the ratio to a floor measured in the same process: one plain pass that sums each
//! group's rewards and squares (a mean and a std per group, nothing else).
//!
//! cargo bench --bench training

use reward_workbench::model::Trainer;
use reward_workbench::training::{
    compute, Aggregation, Algorithm, Grouping, Place, ScaleRewards, Scores, Settings,
};
use std::time::{Duration, Instant};

const SAMPLES: usize = 1_000_000;
const GROUP: usize = 8;
const EVALUATORS: usize = 2;
const ROUNDS: usize = 5;

/// The best of `ROUNDS` timings of `f` (the machine is shared: the best is the cost).
fn best<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut out = None;
    let mut fastest = Duration::MAX;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let value = f();
        fastest = fastest.min(start.elapsed());
        out = Some(value);
    }
    (fastest, out.expect("at least one round"))
}

/// The floor: per-group mean and std of the first evaluator's scores, groups given.
fn floor(values: &[f64], of: &[u32], groups: usize) -> Vec<f64> {
    let mut sum = vec![0.0; groups];
    let mut squares = vec![0.0; groups];
    let mut count = vec![0.0; groups];
    for (s, &g) in of.iter().enumerate() {
        let x = values[s * EVALUATORS];
        sum[g as usize] += x;
        squares[g as usize] += x * x;
        count[g as usize] += 1.0;
    }
    (0..groups)
        .map(|g| {
            let mean = sum[g] / count[g];
            let var = squares[g] / count[g] - mean * mean;
            var.max(0.0).sqrt()
        })
        .collect()
}

fn main() {
    // groups of 8 in order (keys as a hash gives them), some scores None
    let places: Vec<Place> = (0..SAMPLES)
        .map(|i| {
            let h = blake3::hash(&((i / GROUP) as u64).to_le_bytes());
            let mut key = [0u8; 16];
            key.copy_from_slice(&h.as_bytes()[..16]);
            Place {
                key: Some(key),
                step: Some((i / 4096) as u64),
            }
        })
        .collect();
    let values: Vec<f64> = (0..SAMPLES * EVALUATORS)
        .map(|i| {
            if i % 97 == 0 {
                f64::NAN
            } else {
                ((i * 7919) % 1000) as f64 / 1000.0
            }
        })
        .collect();
    let scores = Scores {
        values: &values,
        evaluators: EVALUATORS,
    };
    let weights = [1.0, 0.5];
    let (grouping_time, grouping) = best(|| Grouping::new(&places));
    let (floor_time, _) = best(|| floor(&values, &grouping.of, grouping.len()));
    println!(
        "{SAMPLES} samples in {} groups of {GROUP}, {EVALUATORS} evaluators",
        grouping.len()
    );
    println!(
        "  grouping (from keys)                {:>8.1} ms",
        grouping_time.as_secs_f64() * 1e3
    );
    println!(
        "  floor: a mean and std per group      {:>8.1} ms",
        floor_time.as_secs_f64() * 1e3
    );
    let configs = [
        (
            "TRL grpo, scale group",
            Trainer::Trl,
            Algorithm::Grpo,
            ScaleRewards::Group,
            Aggregation::SumThenNormalize,
        ),
        (
            "TRL grpo, scale batch",
            Trainer::Trl,
            Algorithm::Grpo,
            ScaleRewards::Batch,
            Aggregation::SumThenNormalize,
        ),
        (
            "TRL grpo, normalize_then_sum",
            Trainer::Trl,
            Algorithm::Grpo,
            ScaleRewards::Group,
            Aggregation::NormalizeThenSum,
        ),
        (
            "TRL rloo",
            Trainer::Trl,
            Algorithm::Rloo,
            ScaleRewards::Group,
            Aggregation::SumThenNormalize,
        ),
        (
            "veRL grpo",
            Trainer::Verl,
            Algorithm::Grpo,
            ScaleRewards::Group,
            Aggregation::SumThenNormalize,
        ),
        (
            "veRL rloo",
            Trainer::Verl,
            Algorithm::Rloo,
            ScaleRewards::Group,
            Aggregation::SumThenNormalize,
        ),
    ];
    let mut worst = Duration::ZERO;
    for (name, trainer, algorithm, scale_rewards, aggregation) in configs {
        let settings = Settings {
            trainer,
            algorithm,
            scale_rewards,
            aggregation,
            ..Settings::default()
        };
        let (t, signal) = best(|| compute(&settings, &weights, scores, &grouping));
        assert_eq!(signal.advantage.len(), SAMPLES);
        let total = t + grouping_time;
        worst = worst.max(total);
        println!(
            "  {name:<35} {:>8.1} ms  (+ grouping {:>6.1} ms; {:.1}x the floor)",
            t.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3,
            t.as_secs_f64() / floor_time.as_secs_f64()
        );
    }
    println!(
        "slowest, grouping included: {:.1} ms (target < 200 ms): {}",
        worst.as_secs_f64() * 1e3,
        if worst < Duration::from_millis(200) {
            "met"
        } else {
            "MISSED"
        }
    );
}
