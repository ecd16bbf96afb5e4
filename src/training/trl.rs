//! TRL's arithmetic, read from huggingface/trl v1.8.0
//! (95809b942eb5d11d0b06d749510d88be99230b73) and main at
//! f2cd57710ae345ea6428ae95363267fcf38a3dc8 (1.10.0.dev0), whose lines are the same:
//! `trl/trainer/grpo_trainer.py` (`_calculate_rewards`,
//! `_generate_and_score_completions`), `trl/trainer/utils.py` (`nanstd`) and
//! `trl/trainer/rloo_trainer.py`.
//!
//! - A reward function's `None` is NaN. The combined reward is the weighted `nansum`
//!   over functions (weights in float32); a sample whose every function gave `None`
//!   is NaN (unscorable).
//! - `nanstd` is unbiased: `nanmean((x - nanmean(x))²) · count / (count − 1)` (that
//!   ratio in float32), NaN when fewer than two values are not NaN. A group of one (TRL's
//!   `num_generations == 1`) has std 0.
//! - GRPO, `sum_then_normalize`: reward minus the group's `nanmean`, divided by
//!   (std + 1e-4) where std is the group's (`scale_rewards = "group"`), the batch's
//!   (`"batch"`), or not divided (`"none"`, which Dr.GRPO is in TRL).
//! - GRPO, `normalize_then_sum`: each function's scores normalised within the group
//!   ((x − mean) / (std + 1e-4)), their weighted `nansum`, then normalised over the
//!   batch.
//! - RLOO (`RLOOTrainer`, `normalize_advantages = False`, no KL in the reward): reward
//!   minus the mean of the group's other scorable members.
//! - Finally `nan_to_num(advantages, nan=0.0)`: an unscorable sample, or every member
//!   of a group with one scorable member, gets 0.
//!
//! rwb's groups may differ in size (TRL's are all `num_generations`): each group is
//! normalised as TRL normalises one group of its own size; a batch is the run, or one
//! `step` of it.

use super::{
    is_zero_std, Aggregation, Algorithm, Grouping, ScaleRewards, Scores, Settings, Signal,
};

/// TRL's epsilon in every division by a std.
pub const EPSILON: f64 = 1e-4;

/// `nansum` of the scores weighted as TRL weighs them ([`trl_weights`]); NaN when
/// every score is NaN.
pub fn combined(weights: &[f64], row: &[f64]) -> f64 {
    let mut total = 0.0;
    let mut any = false;
    for (&w, x) in weights.iter().zip(row) {
        any |= !x.is_nan();
        let v = (w as f32 as f64) * x;
        if !v.is_nan() {
            total += v;
        }
    }
    if any {
        total
    } else {
        f64::NAN
    }
}

/// TRL's Bessel correction `count / (count - 1)`: a division of integer tensors, which
/// torch computes in its default float32 whatever the rewards' dtype (count 4 gives
/// 1.3333333730697632, not 4/3).
fn bessel(count: f64) -> f64 {
    (count as f32 / (count - 1.0) as f32) as f64
}

/// TRL keeps `reward_weights` in float32 (`torch.tensor(..., dtype=torch.float32)`),
/// whatever the rewards' dtype: a weight of 0.3 weighs 0.30000001192092896.
pub fn trl_weights(weights: &[f64]) -> Vec<f64> {
    weights.iter().map(|&w| w as f32 as f64).collect()
}

/// `nanmean` and TRL's `nanstd` of `value(i)` for `i < n`, per bucket `bucket(i)`.
pub(crate) fn nan_moments(
    n: usize,
    buckets: usize,
    value: impl Fn(usize) -> f64,
    bucket: impl Fn(usize) -> usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut count = vec![0.0f64; buckets];
    let mut sum = vec![0.0f64; buckets];
    for i in 0..n {
        let x = value(i);
        if !x.is_nan() {
            let b = bucket(i);
            count[b] += 1.0;
            sum[b] += x;
        }
    }
    let mean: Vec<f64> = sum.iter().zip(&count).map(|(s, c)| s / c).collect();
    let mut squares = vec![0.0f64; buckets];
    for i in 0..n {
        let x = value(i);
        if !x.is_nan() {
            let b = bucket(i);
            let d = x - mean[b];
            squares[b] += d * d;
        }
    }
    let std = squares
        .iter()
        .zip(&count)
        .map(|(ss, &c)| {
            if c > 1.0 {
                ((ss / c) * bessel(c)).sqrt()
            } else {
                f64::NAN
            }
        })
        .collect();
    (mean, std)
}

/// `torch.nan_to_num(x, nan=0.0)` on float64.
pub fn nan_to_num(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else if x.is_infinite() {
        if x > 0.0 {
            f64::MAX
        } else {
            f64::MIN
        }
    } else {
        x
    }
}

/// A group's std as TRL uses it: `nanstd` for a group of two or more, else 0.
fn group_std(std: Vec<f64>, grouping: &Grouping) -> Vec<f64> {
    std.into_iter()
        .zip(&grouping.sizes)
        .map(|(s, &size)| if size > 1 { s } else { 0.0 })
        .collect()
}

/// Samples per batch (TRL's `rewards.numel()`).
fn batch_sizes(grouping: &Grouping) -> Vec<u32> {
    let mut sizes = vec![0u32; grouping.batches];
    for (g, &b) in grouping.batch.iter().enumerate() {
        sizes[b as usize] += grouping.sizes[g];
    }
    sizes
}

/// The std of each batch's `values` as TRL's `"batch"` scaling takes it: `nanstd` of
/// every sample, 0 for a batch of one.
fn batch_std(values: &[f64], grouping: &Grouping) -> Vec<f64> {
    let (_, std) = nan_moments(
        values.len(),
        grouping.batches,
        |i| values[i],
        |i| grouping.batch[grouping.of[i] as usize] as usize,
    );
    let sizes = batch_sizes(grouping);
    std.into_iter()
        .zip(&sizes)
        .map(|(s, &n)| if n > 1 { s } else { 0.0 })
        .collect()
}

pub fn compute(
    settings: &Settings,
    weights: &[f64],
    scores: Scores,
    grouping: &Grouping,
) -> Signal {
    let weights = &trl_weights(weights)[..];
    let n = scores.samples();
    let reward: Vec<f64> = (0..n).map(|s| combined(weights, scores.row(s))).collect();
    let of = |s: usize| grouping.of[s] as usize;
    match (settings.algorithm, settings.aggregation) {
        (Algorithm::Rloo, _) => rloo(reward, grouping),
        (Algorithm::None, _) => {
            let (_, std) = nan_moments(n, grouping.len(), |s| reward[s], of);
            let std = group_std(std, grouping);
            Signal {
                zero_std: (0..n).map(|s| is_zero_std(std[of(s)])).collect(),
                advantage: vec![f64::NAN; n],
                reward,
            }
        }
        (algorithm, Aggregation::SumThenNormalize) => {
            let scale = if algorithm == Algorithm::DrGrpo {
                ScaleRewards::None
            } else {
                settings.scale_rewards
            };
            sum_then_normalize(reward, scale, grouping)
        }
        (_, Aggregation::NormalizeThenSum) => normalize_then_sum(reward, weights, scores, grouping),
    }
}

fn sum_then_normalize(reward: Vec<f64>, scale: ScaleRewards, grouping: &Grouping) -> Signal {
    let n = reward.len();
    let of = |s: usize| grouping.of[s] as usize;
    let (mean, std) = nan_moments(n, grouping.len(), |s| reward[s], of);
    let std_of: Box<dyn Fn(usize) -> f64> = match scale {
        ScaleRewards::Group | ScaleRewards::None => {
            let std = group_std(std, grouping);
            Box::new(move |s| std[of(s)])
        }
        ScaleRewards::Batch => {
            let std = batch_std(&reward, grouping);
            Box::new(move |s| std[grouping.batch[of(s)] as usize])
        }
    };
    let mut advantage = Vec::with_capacity(n);
    let mut zero_std = Vec::with_capacity(n);
    for (s, r) in reward.iter().enumerate() {
        let std = std_of(s);
        let mut a = r - mean[of(s)];
        if scale != ScaleRewards::None {
            a /= std + EPSILON;
        }
        advantage.push(nan_to_num(a));
        zero_std.push(is_zero_std(std));
    }
    Signal {
        reward,
        advantage,
        zero_std,
    }
}

fn normalize_then_sum(
    reward: Vec<f64>,
    weights: &[f64],
    scores: Scores,
    grouping: &Grouping,
) -> Signal {
    let n = reward.len();
    let k = scores.evaluators;
    let groups = grouping.len();
    let of = |s: usize| grouping.of[s] as usize;
    // each function's scores normalised within the group: buckets (group, function)
    let (mean, std) = nan_moments(
        n * k,
        groups * k,
        |i| scores.values[i],
        |i| of(i / k) * k + i % k,
    );
    let std: Vec<f64> = std
        .into_iter()
        .enumerate()
        .map(|(b, s)| if grouping.sizes[b / k] > 1 { s } else { 0.0 })
        .collect();
    let normalized: Vec<f64> = (0..n)
        .map(|s| {
            if reward[s].is_nan() {
                return f64::NAN; // unscorable: every function gave None
            }
            let mut total = 0.0;
            for (e, w) in weights.iter().enumerate() {
                let b = of(s) * k + e;
                let v = w * ((scores.values[s * k + e] - mean[b]) / (std[b] + EPSILON));
                if !v.is_nan() {
                    total += v;
                }
            }
            total
        })
        .collect();
    let batch = |s: usize| grouping.batch[of(s)] as usize;
    let (batch_mean, _) = nan_moments(n, grouping.batches, |s| normalized[s], batch);
    let batch_std = batch_std(&normalized, grouping);
    let mut advantage = Vec::with_capacity(n);
    let mut zero_std = Vec::with_capacity(n);
    for (s, x) in normalized.iter().enumerate() {
        let std = batch_std[batch(s)];
        advantage.push(nan_to_num((x - batch_mean[batch(s)]) / (std + EPSILON)));
        zero_std.push(is_zero_std(std));
    }
    Signal {
        reward,
        advantage,
        zero_std,
    }
}

fn rloo(reward: Vec<f64>, grouping: &Grouping) -> Signal {
    let n = reward.len();
    let of = |s: usize| grouping.of[s] as usize;
    let mut count = vec![0.0f64; grouping.len()];
    let mut sum = vec![0.0f64; grouping.len()];
    for (s, r) in reward.iter().enumerate() {
        if !r.is_nan() {
            count[of(s)] += 1.0;
            sum[of(s)] += r;
        }
    }
    let (_, std) = nan_moments(n, grouping.len(), |s| reward[s], of);
    let std = group_std(std, grouping);
    let mut advantage = Vec::with_capacity(n);
    let mut zero_std = Vec::with_capacity(n);
    for (s, r) in reward.iter().enumerate() {
        let g = of(s);
        let a = if grouping.sizes[g] > 1 {
            let baseline = (sum[g] - r) / (count[g] - 1.0);
            r - baseline
        } else {
            0.0
        };
        advantage.push(nan_to_num(a));
        zero_std.push(is_zero_std(std[g]));
    }
    Signal {
        reward,
        advantage,
        zero_std,
    }
}
