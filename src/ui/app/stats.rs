//! Statistics over every sample: summaries, histograms, rollout groups, component
//! shares and the combined reward.

use super::{App, Overlay, Sample};
use crate::model::{Metric, Outcome, Summary, SummaryBuilder};

/// Up to this many samples, rollout groups are found as soon as the samples load;
/// beyond, when the statistics open (reading every line takes a while).
pub(super) const EAGER_GROUPS: usize = 5000;

/// Bins of the statistics' histogram of scores over [0, 1].
pub const HISTOGRAM_BINS: usize = 10;

/// What the statistics overlay shows of one evaluator, computed over every sample
/// when the overlay opens and again after scores changed ([`App::fill_stats`]), so
/// that a frame never walks a million cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvaluatorStats {
    pub summary: Summary,
    /// How many scores fall in each tenth of [0, 1] (out of range: the nearest end).
    pub bins: [usize; HISTOGRAM_BINS],
    /// Samples with a score.
    pub scored: usize,
    /// Every score is 0 (or every score is 1).
    pub all_zero: bool,
    pub all_one: bool,
    /// Component metrics that never vary (see [`App::constant_metrics`]).
    pub constant: Vec<(String, f64)>,
    /// Rollout groups, and of which with zero variance (see [`App::group_summary`]).
    pub groups: Option<(usize, usize)>,
    /// Samples alone in their group (no other rollout of their prompt): their
    /// advantage is 0 whatever they score, which counts in `zero_std`.
    pub alone: Option<usize>,
    /// The share of samples whose group's rewards (this evaluator's alone) are all
    /// equal: TRL's `frac_reward_zero_std` (see [`App::evaluator_signal`]).
    pub zero_std: Option<f64>,
    /// Each component's share of the score's variation.
    pub shares: Vec<(String, f64)>,
    /// Evaluation times: p50, p95, max, the five slowest, timeouts (SPEC §16).
    pub seconds: crate::trust::SecondsSummary,
    /// Agreement with the human labels, when some sample has one.
    pub agreement: Option<crate::trust::agreement::Agreement>,
    /// With `repeat = K`: the spread of the K calls (SPEC §16).
    pub repeat: Option<crate::trust::RepeatSummary>,
    /// After `R`: the exceptions swallowed in the project's files, most samples first.
    pub swallowed: Option<Vec<super::SwallowedCount>>,
    /// What rwb's sandbox ran for it (SPEC §18), when it ran anything.
    pub sandbox: Option<crate::model::SandboxSummary>,
    /// SPEC §20: against the samples' known correctness, when some sample's is known.
    pub verifier: Option<crate::trust::verifier::Verifier>,
}

impl App {
    /// Computes the statistics overlay's figures while it is open and they are out
    /// of date; forgets them when it closes.
    pub(super) fn fill_stats(&mut self) {
        if self.overlay != Overlay::Stats {
            self.stats_report = None;
            self.logged_report = None;
            return;
        }
        if self.stats_report.is_some() && !self.stats_stale {
            return;
        }
        self.stats_stale = false;
        let report = (0..self.evaluators.len())
            .map(|e| self.evaluator_stats(e))
            .collect();
        self.stats_report = Some(report);
        self.labels_report = self.labels_note();
        self.logged_report = self.logged_report();
    }

    /// One evaluator's figures for the statistics overlay.
    pub fn evaluator_stats(&self, evaluator: usize) -> EvaluatorStats {
        let mut bins = [0usize; HISTOGRAM_BINS];
        let (mut scored, mut all_zero, mut all_one) = (0, true, true);
        for s in &self.samples {
            let Some(x) = s.cells.get(evaluator).and_then(|c| c.score()) else {
                continue;
            };
            let bin = (x.clamp(0.0, 1.0) * HISTOGRAM_BINS as f64) as usize;
            bins[bin.min(HISTOGRAM_BINS - 1)] += 1;
            scored += 1;
            all_zero &= x == 0.0;
            all_one &= x == 1.0;
        }
        EvaluatorStats {
            summary: self.summary(evaluator),
            bins,
            scored,
            all_zero,
            all_one,
            constant: self.constant_metrics(evaluator),
            seconds: self.seconds_summary(evaluator),
            agreement: self.agreement(evaluator),
            repeat: self.repeat_summary(evaluator),
            swallowed: self.swallowed_summary(evaluator),
            sandbox: crate::model::SandboxSummary::of(
                self.samples
                    .iter()
                    .filter_map(|s| s.cells.get(evaluator).and_then(|c| c.full()))
                    .filter_map(|o| o.sandbox.as_deref()),
            ),
            groups: self.group_summary(evaluator),
            alone: self.samples_alone(),
            zero_std: self
                .evaluator_signal(evaluator)
                .and_then(|s| s.frac_reward_zero_std),
            shares: self.variance_shares(evaluator),
            verifier: self.verifier(evaluator),
        }
    }

    /// The combined reward of a sample, as the trainer combines its evaluators'
    /// scores with their weights ([`crate::training::combined`]: TRL's unless
    /// `[training]` names another trainer). `None` when weights are not configured, an
    /// evaluator has not scored the sample yet or failed on it, or no score is left.
    pub fn combined(&self, sample: &Sample) -> Option<f64> {
        let weights = self.weights.as_ref()?;
        let mut row = Vec::with_capacity(weights.len());
        for e in 0..weights.len() {
            let cell = sample.cells.get(e).filter(|c| c.outcome.is_some())?;
            if cell.is_error() {
                return None;
            }
            row.push(cell.score().unwrap_or(f64::NAN));
        }
        let trainer = self
            .training
            .as_ref()
            .map_or(crate::model::Trainer::Trl, |t| t.trainer);
        let total = crate::training::combined(trainer, weights, &row);
        (!total.is_nan()).then_some(total)
    }

    /// Finds each sample's rollout group (its prompt, or the `group_by` column, within
    /// its step; or the group its source logged: [`crate::training::place_sample`],
    /// as `rwb run` groups them) and indexes the groups' members: only the samples
    /// appended since the last call when the list grew.
    pub(super) fn compute_groups(&mut self) {
        let have = match &self.groups {
            Some(g) if g.samples() == self.samples.len() => return,
            Some(g) if g.samples() < self.samples.len() => g.samples(),
            _ => 0,
        };
        let mut groups = match self.groups.take() {
            Some(g) if have > 0 => g,
            _ => crate::training::Grouping::default(),
        };
        let by = crate::training::GroupBy::parse(self.group_by.as_deref().unwrap_or("prompt"));
        for s in &self.samples[have..] {
            let facts = s.at.facts.as_deref();
            groups.push(crate::training::place_sample(facts, &by, || self.text(s)));
        }
        // the samples changed, or the groups were forgotten: the signal is stale already
        self.groups = Some(groups);
        self.groups_revision += 1;
    }

    /// The samples' rollout groups, once found (see [`App::compute_groups`]).
    pub fn groups(&self) -> Option<&crate::training::Grouping> {
        self.groups.as_ref()
    }

    /// Sets the samples' rollout groups (`None`: found again when next needed); the
    /// trainer's numbers follow at the next update.
    pub fn set_groups(&mut self, groups: Option<crate::training::Grouping>) {
        self.groups = groups;
        self.groups_revision += 1;
        self.signal_stale = true;
    }

    /// Summary of one evaluator over every sample.
    pub fn summary(&self, evaluator: usize) -> Summary {
        let mut b = SummaryBuilder::default();
        for s in &self.samples {
            let Some(cell) = s.cells.get(evaluator) else {
                continue;
            };
            match (&cell.outcome, cell.full()) {
                (_, Some(o)) => b.add(o),
                (Some(kept), None) => b.add(&Outcome {
                    score: kept.score,
                    ..Outcome::scored(0.0, Default::default())
                }),
                (None, None) => {}
            }
        }
        b.finish()
    }

    /// Scores of one evaluator (for the histogram).
    pub fn scores(&self, evaluator: usize) -> Vec<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.cells.get(evaluator).and_then(|c| c.score()))
            .collect()
    }

    /// Rollout groups of one evaluator's scores, as the trainer groups them: (groups
    /// of two or more, of which every member's reward is the same). `None` until the
    /// group keys are computed.
    /// How many samples are alone in their group, once the groups are known.
    pub fn samples_alone(&self) -> Option<usize> {
        let grouping = self.grouping()?;
        Some(grouping.sizes.iter().filter(|n| **n == 1).count())
    }

    pub fn group_summary(&self, evaluator: usize) -> Option<(usize, usize)> {
        let s = self.evaluator_signal(evaluator)?;
        let grouping = self.grouping()?;
        let groups = grouping.sizes.iter().filter(|n| **n > 1).count();
        Some((groups, s.groups_all_equal))
    }

    /// Each component's share of how the evaluator's score varies.
    pub fn variance_shares(&self, evaluator: usize) -> Vec<(String, f64)> {
        let names = self
            .components
            .get(evaluator)
            .map(|c| c.as_slice())
            .unwrap_or(&[]);
        let cells = self
            .samples
            .iter()
            .filter_map(|s| s.cells.get(evaluator).filter(|c| !c.is_error()))
            .map(|c| (c.score(), &c.parts[..]));
        crate::insight::variance_shares_compact(cells, names)
    }

    /// Component metrics whose score is the same on every sample that has them.
    pub fn constant_metrics(&self, evaluator: usize) -> Vec<(String, f64)> {
        let mut seen: Vec<(String, Option<f64>, bool)> = Vec::new();
        let names = self
            .components
            .get(evaluator)
            .map(|c| c.as_slice())
            .unwrap_or(&[]);
        for s in &self.samples {
            let Some(cell) = s.cells.get(evaluator).filter(|c| c.outcome.is_some()) else {
                continue;
            };
            // a kept outcome says which metrics it has; else its component scores do
            let metrics = match cell.full() {
                Some(o) => o.metric_list(),
                None => names
                    .iter()
                    .zip(&cell.parts[..])
                    .filter(|(_, x)| !x.is_nan())
                    .map(|(n, x)| {
                        let m = Metric {
                            score: Some(*x),
                            is_score_valid: true,
                            reason: None,
                        };
                        (n.clone(), m)
                    })
                    .collect(),
            };
            for (name, Metric { score, .. }) in metrics {
                match seen.iter_mut().find(|(n, _, _)| *n == name) {
                    Some((_, first, varies)) => {
                        if *first != score {
                            *varies = true;
                        }
                    }
                    None => seen.push((name, score, false)),
                }
            }
        }
        seen.into_iter()
            .filter(|(_, _, varies)| !varies)
            .filter_map(|(n, s, _)| Some((n, s?)))
            .collect()
    }
}
