//! What the trainer will see in the workbench (SPEC §14): each sample's combined
//! reward and advantage as `[training]` says the trainer computes them
//! ([`crate::training::compute`]), the baseline's advantages and the samples whose
//! advantage changed sign since it was pinned, and the zero-signal shares of the
//! statistics view.
//!
//! Computed in the `update` that applies results (so the reward and advantage
//! columns change in the frame the scores do), or, for many samples while a run
//! streams results, at the next `Msg::Refresh`. Never while drawing: a frame's
//! group view walks the selected sample's group alone (the app's groups index their
//! members, see `stats.rs`). Owns no grouping of its own: the groups are the app's,
//! placed as `rwb run` places them ([`crate::training::place_sample`]).

use super::App;
use crate::training::{self, Grouping, Place, Scores, Settings, Signal};

/// A sample's value in `values` (NaN for a sample that joined the list after they
/// were computed).
fn at(values: &[f64], sample: usize) -> f64 {
    values.get(sample).copied().unwrap_or(f64::NAN)
}

/// Up to this many samples the signal is recomputed with every burst of results;
/// beyond, results streaming in leave it for `Msg::Refresh` (a few times a second).
pub(super) const EAGER_SIGNAL: usize = 20_000;

/// A column of the trainer's numbers (sorting and filtering by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalColumn {
    Reward,
    Advantage,
}

impl SignalColumn {
    /// Where `App::sort` keeps it: past any evaluator index.
    pub const fn sort_index(self) -> usize {
        match self {
            SignalColumn::Reward => usize::MAX - 1,
            SignalColumn::Advantage => usize::MAX,
        }
    }

    pub fn from_sort_index(index: usize) -> Option<SignalColumn> {
        [SignalColumn::Reward, SignalColumn::Advantage]
            .into_iter()
            .find(|c| c.sort_index() == index)
    }

    /// `reward`, or `adv`/`advantage`, as the filter names them.
    pub fn parse(name: &str) -> Option<SignalColumn> {
        match name {
            "reward" => Some(SignalColumn::Reward),
            "adv" | "advantage" => Some(SignalColumn::Advantage),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SignalColumn::Reward => "reward",
            SignalColumn::Advantage => "advantage",
        }
    }
}

/// The trainer's numbers for every sample, and what the baseline's were.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainingView {
    /// The revision of the app's groups the numbers were computed with.
    pub groups_revision: u64,
    pub signal: Signal,
    /// The advantages the pinned baseline's scores give (same samples, same groups).
    pub pinned: Option<Vec<f64>>,
    /// Samples whose advantage went from positive to negative since the baseline
    /// (reinforced → penalised), and from negative to positive.
    pub to_penalised: usize,
    pub to_reinforced: usize,
    /// The combined signal in a few figures (the statistics view's).
    pub summary: training::SignalSummary,
    /// Groups whose size is not `[training] group_size`, named (as `rwb run` warns).
    pub group_warning: Option<String>,
}

/// One member of the selected sample's group, for the breakdown.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// Index into `App::samples`.
    pub sample: usize,
    pub reward: f64,
    pub advantage: f64,
    /// Each evaluator's score (NaN: none).
    pub scores: Vec<f64>,
}

/// The sign of an advantage that teaches something (0 within 1e-8: nothing).
fn sign(a: f64) -> i8 {
    if a.is_nan() || a.abs() <= 1e-8 {
        0
    } else if a > 0.0 {
        1
    } else {
        -1
    }
}

impl App {
    /// The weight of each evaluator (1 where `rwb.toml` gives none).
    pub(super) fn training_weights(&self) -> Vec<f64> {
        (0..self.evaluators.len())
            .map(|e| {
                self.weights
                    .as_ref()
                    .and_then(|w| w.get(e).copied())
                    .unwrap_or(1.0)
            })
            .collect()
    }

    /// Every sample's scores in a row (NaN: no score, an error, not scored yet).
    fn score_matrix(&self) -> Vec<f64> {
        let n = self.evaluators.len();
        let mut values = Vec::with_capacity(self.samples.len() * n);
        for s in &self.samples {
            for e in 0..n {
                values.push(s.cells.get(e).and_then(|c| c.score()).unwrap_or(f64::NAN));
            }
        }
        values
    }

    /// The baseline's scores in the same layout (NaN where it had none).
    fn pinned_matrix(&self) -> Option<Vec<f64>> {
        let baseline = self.baseline.as_ref()?;
        let mut values = Vec::with_capacity(self.samples.len() * self.evaluators.len());
        for s in &self.samples {
            for info in &self.evaluators {
                values.push(baseline.score(s, &info.name).flatten().unwrap_or(f64::NAN));
            }
        }
        Some(values)
    }

    /// The samples' groups as the trainer forms them, once every sample is placed.
    pub(super) fn grouping(&self) -> Option<&Grouping> {
        self.groups
            .as_ref()
            .filter(|g| g.samples() == self.samples.len())
    }

    /// Recomputes the trainer's numbers when `[training]` is set and scores, samples,
    /// settings or the baseline changed since.
    pub(super) fn fill_signal(&mut self) {
        if !self.signal_stale {
            return;
        }
        self.signal_stale = false;
        let Some(settings) = self.training.clone() else {
            self.training_view = None;
            return;
        };
        self.compute_groups();
        // the baseline's advantages change only when it is pinned or samples change
        let revision = self.groups_revision;
        let reuse = !self.pinned_stale
            && (self.training_view.as_ref()).is_some_and(|v| v.groups_revision == revision);
        let kept = if reuse {
            self.training_view.take().and_then(|v| v.pinned)
        } else {
            None
        };
        let Some(grouping) = self.grouping() else {
            self.training_view = None;
            return;
        };
        let weights = self.training_weights();
        let evaluators = weights.len();
        let values = self.score_matrix();
        let signal = training::compute(
            &settings,
            &weights,
            Scores {
                values: &values,
                evaluators,
            },
            grouping,
        );
        let pinned = if reuse {
            kept
        } else {
            self.pinned_matrix().map(|values| {
                let scores = Scores {
                    values: &values,
                    evaluators,
                };
                training::compute(&settings, &weights, scores, grouping).advantage
            })
        };
        let (mut to_penalised, mut to_reinforced) = (0, 0);
        if let Some(pinned) = &pinned {
            for (before, now) in pinned.iter().zip(&signal.advantage) {
                match (sign(*before), sign(*now)) {
                    (1, -1) => to_penalised += 1,
                    (-1, 1) => to_reinforced += 1,
                    _ => {}
                }
            }
        }
        let with_advantage = settings.algorithm != training::Algorithm::None;
        let summary = training::summarize(&signal, grouping, with_advantage);
        let group_warning = settings.group_size.and_then(|g| grouping.size_warning(g));
        // said once when it appears or changes, after the samples are all read (a
        // group still loading is not one of another size); `v` keeps it
        if !self.loading && group_warning != self.group_warning_said {
            if let Some(w) = &group_warning {
                self.notice = Some(format!("⚠ {w} (v shows it again)"));
            }
            self.group_warning_said = group_warning.clone();
        }
        self.pinned_stale = false;
        self.training_view = Some(TrainingView {
            group_warning,
            summary,
            groups_revision: revision,
            signal,
            pinned,
            to_penalised,
            to_reinforced,
        });
    }

    /// Recomputes, in place, the numbers of the groups of `samples` (whose results just
    /// arrived) when each group's follow from its own members alone: what a run
    /// streaming results into many samples shows in the frame its scores change. The
    /// whole signal (its summary, the sign flips) still waits for `Msg::Refresh`.
    pub(super) fn patch_signal(&mut self, samples: &[usize]) {
        let Some(settings) = &self.training else {
            return;
        };
        if samples.is_empty() || !training::group_local(settings) {
            return;
        }
        let current = |v: &TrainingView| v.groups_revision == self.groups_revision;
        if !self.training_view.as_ref().is_some_and(current) {
            return;
        }
        let Some(grouping) = self.grouping() else {
            return;
        };
        let mut groups: Vec<usize> = samples
            .iter()
            .filter_map(|&s| grouping.of.get(s))
            .map(|&g| g as usize)
            .collect();
        groups.sort_unstable();
        groups.dedup();
        let weights = self.training_weights();
        let row = |s: usize, out: &mut Vec<f64>| {
            let cells = &self.samples[s].cells;
            out.extend(
                (0..weights.len())
                    .map(|e| cells.get(e).and_then(|c| c.score()).unwrap_or(f64::NAN)),
            );
        };
        let (members, part) = training::compute_groups(settings, &weights, row, grouping, &groups);
        let n = self.samples.len();
        let Some(view) = self.training_view.as_mut() else {
            return;
        };
        let signal = &mut view.signal;
        signal.reward.resize(n, f64::NAN);
        signal.advantage.resize(n, f64::NAN);
        signal.zero_std.resize(n, false);
        for (j, m) in members.into_iter().enumerate() {
            signal.reward[m] = part.reward[j];
            signal.advantage[m] = part.advantage[j];
            signal.zero_std[m] = part.zero_std[j];
        }
    }

    /// A sample's value in a signal column (`None`: no `[training]`, or no value).
    pub fn signal_value(&self, sample: usize, column: SignalColumn) -> Option<f64> {
        let signal = &self.training_view.as_ref()?.signal;
        let v = match column {
            SignalColumn::Reward => *signal.reward.get(sample)?,
            SignalColumn::Advantage => *signal.advantage.get(sample)?,
        };
        (!v.is_nan()).then_some(v)
    }

    /// The baseline's advantage of a sample, when a baseline is pinned.
    pub fn pinned_advantage(&self, sample: usize) -> Option<f64> {
        let v = *self.training_view.as_ref()?.pinned.as_ref()?.get(sample)?;
        (!v.is_nan()).then_some(v)
    }

    /// The selected sample's group, best advantage first (ties in data order): walks
    /// that group's members alone (the frame draws it).
    pub fn group_members(&self, sample: usize) -> Vec<Member> {
        let (Some(view), Some(groups)) = (&self.training_view, self.grouping()) else {
            return Vec::new();
        };
        let Some(&group) = groups.of.get(sample) else {
            return Vec::new();
        };
        let mut members: Vec<Member> = groups
            .members(group as usize)
            .map(|i| Member {
                sample: i,
                // a sample appended since the numbers were computed has none yet
                reward: at(&view.signal.reward, i),
                advantage: at(&view.signal.advantage, i),
                scores: (0..self.evaluators.len())
                    .map(|e| {
                        self.samples[i]
                            .cells
                            .get(e)
                            .and_then(|c| c.score())
                            .unwrap_or(f64::NAN)
                    })
                    .collect(),
            })
            .collect();
        let key = |a: f64| if a.is_nan() { f64::NEG_INFINITY } else { a };
        members.sort_by(|a, b| key(b.advantage).total_cmp(&key(a.advantage)));
        members
    }

    /// The rollout groups of one evaluator's scores alone, as the trainer (`[training]`,
    /// else TRL's defaults) would see them: its summary (groups, all-equal groups,
    /// `frac_reward_zero_std`). `None` until the group keys are computed.
    pub fn evaluator_signal(&self, evaluator: usize) -> Option<training::SignalSummary> {
        let grouping = self.grouping()?;
        let settings = self.training.clone().unwrap_or_default();
        let values: Vec<f64> = self
            .samples
            .iter()
            .map(|s| {
                s.cells
                    .get(evaluator)
                    .and_then(|c| c.score())
                    .unwrap_or(f64::NAN)
            })
            .collect();
        let scores = Scores {
            values: &values,
            evaluators: 1,
        };
        let signal = training::compute(&settings, &[1.0], scores, grouping);
        let with_advantage = settings.algorithm != training::Algorithm::None;
        Some(training::summarize(&signal, grouping, with_advantage))
    }

    /// The combined signal's summary (`[training]` only).
    pub fn combined_signal(&self) -> Option<&training::SignalSummary> {
        Some(&self.training_view.as_ref()?.summary)
    }

    /// The selected evaluator's rollout group of a sample, as TRL's GRPO with its
    /// defaults normalises it (unbiased std, epsilon 1e-4): (members, mean, std, this
    /// sample's advantage). `None` until the groups are known, or when the sample is
    /// alone or has no score. Walks that group's members alone (the frame draws it).
    pub fn group_of(&self, sample: usize, evaluator: usize) -> Option<(usize, f64, f64, f64)> {
        let groups = self.groups.as_ref()?;
        let group = *groups.of.get(sample)? as usize;
        let key = groups.keys[group]?;
        let members: Vec<usize> = groups.members(group).collect();
        let score = |i: usize| {
            self.samples
                .get(i)
                .and_then(|s| s.cells.get(evaluator)?.score())
        };
        let scores: Vec<f64> = members.iter().filter_map(|&i| score(i)).collect();
        score(sample)?;
        if scores.len() < 2 {
            return None;
        }
        let values: Vec<f64> = members
            .iter()
            .map(|&i| score(i).unwrap_or(f64::NAN))
            .collect();
        let grouping = Grouping::new(&vec![
            Place {
                key: Some(key),
                step: None
            };
            members.len()
        ]);
        let settings = Settings::default();
        let signal = training::compute(
            &settings,
            &[1.0],
            Scores {
                values: &values,
                evaluators: 1,
            },
            &grouping,
        );
        let n = scores.len() as f64;
        let mean = scores.iter().sum::<f64>() / n;
        let std = (scores.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let at = members.iter().position(|&i| i == sample)?;
        Some((scores.len(), mean, std, signal.advantage[at]))
    }

    /// "your fix turned 37 rollouts from reinforced to penalised and 2 from penalised
    /// to reinforced": with `[training]` and a baseline pinned.
    pub fn sign_changes(&self) -> Option<String> {
        let view = self.training_view.as_ref()?;
        view.pinned.as_ref()?;
        let rollouts = |n: usize| if n == 1 { "rollout" } else { "rollouts" };
        Some(format!(
            "your fix turned {} {} from reinforced to penalised and {} from penalised to reinforced",
            view.to_penalised,
            rollouts(view.to_penalised),
            view.to_reinforced
        ))
    }
}
