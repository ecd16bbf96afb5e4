//! What the trainer will see (SPEC §14): turning evaluator scores into a combined
//! reward and each rollout's advantage within its group, as the user's trainer does
//! it (TRL's `GRPOTrainer`/`RLOOTrainer`, veRL's `core_algos`), in float64.
//!
//! Owns the `[training]` settings' meaning, rollout groups ([`group`]) and the
//! arithmetic ([`trl`], [`verl`]). Pure functions over numbers and group keys: no
//! files, no processes, no screen (callers read the samples and print the rows).

pub mod group;
pub mod trl;
pub mod verl;

pub use group::{
    group_id, in_groups, place, place_of, place_sample, prompt_cut, quick_key, Fields, GroupBy,
    GroupKey, Grouping, Place,
};

use crate::model::Trainer;
use serde::Deserialize;

/// How rewards become advantages (`[training] algorithm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Group-relative: reward minus the group mean, over the group's std.
    #[default]
    Grpo,
    /// Dr.GRPO: reward minus the group mean, not divided.
    DrGrpo,
    /// REINFORCE leave-one-out: reward minus the mean of the other members.
    Rloo,
    /// The combined reward only, no advantage.
    None,
}

impl Algorithm {
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Grpo => "grpo",
            Algorithm::DrGrpo => "dr-grpo",
            Algorithm::Rloo => "rloo",
            Algorithm::None => "none",
        }
    }
}

/// TRL's `scale_rewards`: what the reward minus its group mean is divided by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScaleRewards {
    /// The group's std.
    #[default]
    Group,
    /// The std of the whole batch (the run, or its step).
    Batch,
    /// Nothing.
    None,
}

/// TRL's `multi_objective_aggregation`: how several reward functions combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// Weighted sum of the functions' rewards, then normalised.
    #[default]
    SumThenNormalize,
    /// Each function normalised within its group, then the weighted sum normalised
    /// over the batch.
    NormalizeThenSum,
}

/// `[training]` as the arithmetic needs it (checked and defaulted by the workspace).
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Whose arithmetic: [`Trainer::Trl`] or [`Trainer::Verl`].
    pub trainer: Trainer,
    pub algorithm: Algorithm,
    /// TRL only.
    pub scale_rewards: ScaleRewards,
    /// veRL only: GRPO divides by the group's std (false: Dr.GRPO).
    pub norm_adv_by_std: bool,
    /// TRL only.
    pub aggregation: Aggregation,
    pub group: GroupBy,
    /// The group size the user expects (a warning names groups of another size).
    pub group_size: Option<usize>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            trainer: Trainer::Trl,
            algorithm: Algorithm::Grpo,
            scale_rewards: ScaleRewards::Group,
            norm_adv_by_std: true,
            aggregation: Aggregation::SumThenNormalize,
            group: GroupBy::Prompt,
            group_size: None,
        }
    }
}

impl Settings {
    /// "TRL grpo (scale_rewards = group, sum_then_normalize)": what the numbers follow.
    pub fn describe(&self) -> String {
        let how = match (self.trainer, self.algorithm) {
            (_, Algorithm::None) => String::new(),
            (Trainer::Verl, Algorithm::Grpo) => {
                format!(" (norm_adv_by_std_in_grpo = {})", self.norm_adv_by_std)
            }
            (Trainer::Verl, _) | (_, Algorithm::Rloo) => String::new(),
            _ => format!(
                " (scale_rewards = {}, {})",
                match self.scale_rewards {
                    ScaleRewards::Group => "group",
                    ScaleRewards::Batch => "batch",
                    ScaleRewards::None => "none",
                },
                match self.aggregation {
                    Aggregation::SumThenNormalize => "sum_then_normalize",
                    Aggregation::NormalizeThenSum => "normalize_then_sum",
                }
            ),
        };
        format!(
            "{} {}{how}, grouped by {}",
            self.trainer,
            self.algorithm.as_str(),
            self.group.describe()
        )
    }
}

/// Scores of a run laid out for the arithmetic: `values[sample * evaluators + e]`,
/// NaN where the evaluator gave no score (`None`, or an error).
#[derive(Clone, Copy, Debug)]
pub struct Scores<'a> {
    pub values: &'a [f64],
    pub evaluators: usize,
}

impl Scores<'_> {
    pub fn samples(&self) -> usize {
        self.values.len().checked_div(self.evaluators).unwrap_or(0)
    }

    fn row(&self, sample: usize) -> &[f64] {
        &self.values[sample * self.evaluators..(sample + 1) * self.evaluators]
    }
}

/// What the trainer sees of each sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Signal {
    /// The combined reward (NaN: the sample has none).
    pub reward: Vec<f64>,
    /// The advantage (NaN: none, with `algorithm = "none"` or for a sample veRL could
    /// not train on).
    pub advantage: Vec<f64>,
    /// The std the trainer divides by is 0 (within 1e-8) for this sample, as TRL's
    /// `frac_reward_zero_std` counts.
    pub zero_std: Vec<bool>,
}

/// A sample's std is zero as TRL's `torch.isclose(std, 0)` finds it (atol 1e-8); a
/// NaN std is not.
pub(crate) fn is_zero_std(std: f64) -> bool {
    std.abs() <= 1e-8
}

/// One sample's combined reward as `trainer` combines its evaluators' `row` of
/// scores (NaN: no score) with `weights`: TRL's weighted `nansum` (NaN when every
/// score is missing), or veRL's weighted sum (NaN when any is).
pub fn combined(trainer: Trainer, weights: &[f64], row: &[f64]) -> f64 {
    match trainer {
        Trainer::Verl => verl::combined(weights, row),
        _ => trl::combined(weights, row),
    }
}

/// Computes every sample's combined reward and advantage (see the module doc).
/// `weights` has one weight per evaluator; `grouping` one group per sample of `scores`.
pub fn compute(
    settings: &Settings,
    weights: &[f64],
    scores: Scores,
    grouping: &Grouping,
) -> Signal {
    debug_assert_eq!(weights.len(), scores.evaluators);
    debug_assert_eq!(grouping.of.len(), scores.samples());
    match settings.trainer {
        Trainer::Verl => verl::compute(settings, weights, scores, grouping),
        _ => trl::compute(settings, weights, scores, grouping),
    }
}

/// Whether a group's numbers follow from its own members' scores alone, so that
/// [`compute_groups`] gives what [`compute`] gives for them. Not so where a batch's
/// std or mean enters: TRL's `scale_rewards = "batch"` (GRPO), and
/// `normalize_then_sum`, whose sum is normalised over the batch.
pub fn group_local(settings: &Settings) -> bool {
    match (settings.trainer, settings.algorithm, settings.aggregation) {
        (Trainer::Verl, _, _) => true,
        (_, Algorithm::Rloo | Algorithm::None, _) => true,
        (_, _, Aggregation::NormalizeThenSum) => false,
        (_, Algorithm::DrGrpo, _) => true,
        (_, Algorithm::Grpo, _) => settings.scale_rewards != ScaleRewards::Batch,
    }
}

/// The numbers of the members of `groups` (distinct group indices) alone, as
/// [`compute`] gives them when [`group_local`] holds: each member's sample index,
/// and its reward, advantage and zero-std flag in `Signal`, in the same order.
/// `row(sample, out)` appends that sample's scores (one per weight, NaN: none).
/// O(the members).
pub fn compute_groups(
    settings: &Settings,
    weights: &[f64],
    mut row: impl FnMut(usize, &mut Vec<f64>),
    grouping: &Grouping,
    groups: &[usize],
) -> (Vec<usize>, Signal) {
    debug_assert!(group_local(settings));
    let mut members = Vec::new();
    let mut places = Vec::new();
    let mut values = Vec::new();
    for &g in groups {
        let Some(&key) = grouping.keys.get(g) else {
            continue;
        };
        for s in grouping.members(g) {
            members.push(s);
            // the group's own key gathers its members again (a keyless sample is
            // a group of one either way); batches do not enter group-local numbers
            places.push(Place { key, step: None });
            row(s, &mut values);
        }
    }
    let scores = Scores {
        values: &values,
        evaluators: weights.len(),
    };
    let signal = compute(settings, weights, scores, &Grouping::new(&places));
    (members, signal)
}

/// The learning signal of a run in a few figures (`rwb run`'s summary).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct SignalSummary {
    /// The share of samples whose std is 0 (TRL's `frac_reward_zero_std`).
    pub frac_reward_zero_std: Option<f64>,
    /// The share of samples whose advantage is 0 (within 1e-8).
    pub frac_zero_advantage: Option<f64>,
    pub samples: usize,
    pub groups: usize,
    /// Groups of two or more whose members' rewards are all equal (within 1e-8).
    pub groups_all_equal: usize,
    /// Samples with no combined reward.
    pub unscorable: usize,
    /// Mean and std (unbiased) of the combined reward over the samples that have one.
    pub mean: Option<f64>,
    pub std: Option<f64>,
}

/// Sums up a run's signal.
pub fn summarize(signal: &Signal, grouping: &Grouping, with_advantage: bool) -> SignalSummary {
    let n = signal.reward.len();
    let share = |count: usize| (n > 0).then(|| count as f64 / n as f64);
    let zero_std = signal.zero_std.iter().filter(|z| **z).count();
    let zero_adv = signal.advantage.iter().filter(|a| a.abs() <= 1e-8).count();
    let scored: Vec<f64> = signal
        .reward
        .iter()
        .copied()
        .filter(|r| !r.is_nan())
        .collect();
    let mean = (!scored.is_empty()).then(|| scored.iter().sum::<f64>() / scored.len() as f64);
    let std = mean.filter(|_| scored.len() > 1).map(|m| {
        let ss: f64 = scored.iter().map(|r| (r - m).powi(2)).sum();
        (ss / (scored.len() - 1) as f64).sqrt()
    });
    // the range of each group's rewards: all equal when it is (about) 0
    let mut low = vec![f64::INFINITY; grouping.len()];
    let mut high = vec![f64::NEG_INFINITY; grouping.len()];
    for (s, &g) in grouping.of.iter().enumerate() {
        let r = signal.reward[s];
        if !r.is_nan() {
            low[g as usize] = low[g as usize].min(r);
            high[g as usize] = high[g as usize].max(r);
        }
    }
    let groups_all_equal = (0..grouping.len())
        .filter(|&g| grouping.sizes[g] > 1 && high[g] >= low[g] && high[g] - low[g] <= 1e-8)
        .count();
    SignalSummary {
        frac_reward_zero_std: share(zero_std),
        frac_zero_advantage: if with_advantage {
            share(zero_adv)
        } else {
            None
        },
        samples: n,
        groups: grouping.len(),
        groups_all_equal,
        unscorable: n - scored.len(),
        mean,
        std,
    }
}

#[cfg(test)]
mod tests;
