//! veRL's arithmetic, read from volcengine/verl at
//! b178a3cd56f58b2d502255daba591e92833930a7: `verl/trainer/ppo/core_algos.py`,
//! `compute_grpo_outcome_advantage` (epsilon 1e-6, `torch.std`: unbiased;
//! `norm_adv_by_std_in_grpo = False` is Dr.GRPO) and `compute_rloo_outcome_advantage`.
//!
//! - A group of one: GRPO takes mean 0 and std 1, so its advantage is
//!   score / (1 + 1e-6) (Dr.GRPO: the score); RLOO leaves the score as it is. That
//!   std is `torch.tensor(1.0)`, a float32 tensor, so 1 + 1e-6 is rounded to float32
//!   (1.00000095367431640625) whatever the scores' dtype.
//! - RLOO for a group of n > 1: `score · n / (n − 1) − mean · n / (n − 1)`.
//! - veRL has one reward function; several evaluators here are summed with their
//!   weights. A reward function there must return a number: a sample with a missing
//!   score (an error, or `None`) has no reward here, no advantage, and is left out of
//!   its group, as if the trainer never saw it.

use super::{is_zero_std, Algorithm, Grouping, Scores, Settings, Signal};

/// veRL's epsilon in GRPO's division by the std.
pub const EPSILON: f64 = 1e-6;

/// What a group of one's score is divided by: veRL's float32 `1.0 + 1e-6`.
pub const ALONE_DIVISOR: f64 = (1.0f32 + EPSILON as f32) as f64;

/// The weighted sum of the scores; NaN when any is missing.
pub fn combined(weights: &[f64], row: &[f64]) -> f64 {
    weights.iter().zip(row).map(|(w, x)| w * x).sum()
}

pub fn compute(
    settings: &Settings,
    weights: &[f64],
    scores: Scores,
    grouping: &Grouping,
) -> Signal {
    let n = scores.samples();
    let reward: Vec<f64> = (0..n).map(|s| combined(weights, scores.row(s))).collect();
    let groups = grouping.len();
    let of = |s: usize| grouping.of[s] as usize;
    let mut count = vec![0.0f64; groups];
    let mut sum = vec![0.0f64; groups];
    for (s, r) in reward.iter().enumerate() {
        if !r.is_nan() {
            count[of(s)] += 1.0;
            sum[of(s)] += r;
        }
    }
    let mean: Vec<f64> = sum.iter().zip(&count).map(|(s, c)| s / c).collect();
    let mut squares = vec![0.0f64; groups];
    for (s, r) in reward.iter().enumerate() {
        if !r.is_nan() {
            let d = r - mean[of(s)];
            squares[of(s)] += d * d;
        }
    }
    // torch.std of a group of two or more; veRL's 1 for a group of one
    let std: Vec<f64> = squares
        .iter()
        .zip(&count)
        .map(|(ss, &c)| {
            if c > 1.0 {
                (ss / (c - 1.0)).sqrt()
            } else {
                1.0
            }
        })
        .collect();
    let grpo_norm = settings.algorithm == Algorithm::Grpo && settings.norm_adv_by_std;
    let mut advantage = Vec::with_capacity(n);
    let mut zero_std = Vec::with_capacity(n);
    for (s, &r) in reward.iter().enumerate() {
        let g = of(s);
        let alone = count[g] <= 1.0;
        zero_std.push(!r.is_nan() && !alone && is_zero_std(std[g]));
        if r.is_nan() {
            advantage.push(f64::NAN);
            continue;
        }
        let (m, divisor) = if alone {
            (0.0, ALONE_DIVISOR)
        } else {
            (mean[g], std[g] + EPSILON)
        };
        advantage.push(match settings.algorithm {
            Algorithm::None => f64::NAN,
            Algorithm::Rloo if alone => r,
            Algorithm::Rloo => {
                let k = count[g];
                r * k / (k - 1.0) - m * k / (k - 1.0)
            }
            _ if grpo_norm => (r - m) / divisor,
            _ => r - m,
        });
    }
    Signal {
        reward,
        advantage,
        zero_std,
    }
}
