//! The scores a trainer or eval tool logged beside the ones the evaluators give now
//! (SPEC §13, "Logged beside recomputed"): which evaluators have a logged counterpart
//! (paired as `rwb run` pairs them, [`LoggedCmp`]), each row's logged value and Δ,
//! the rows that moved (the `logged` filter, the |Δ| sort), the logged advantage
//! beside the recomputed one, and the statistics' per-step means.
//!
//! The logged values are the samples' facts (`SampleRef::facts`), read with the
//! samples; which logged names exist is noted as samples arrive (only the new ones
//! are looked at), and the per-step means when the statistics open. Nothing here
//! walks every sample while drawing.

use super::{App, SignalColumn};
use crate::model::{self, Facts, Logged, LoggedCmp};
use std::collections::{BTreeMap, HashSet};

/// The logged name of the advantage a trainer trained on (TRL's completion logs).
pub const LOGGED_ADVANTAGE: &str = "advantage";

/// Where `App::sort` keeps "evaluator e's |score − logged|": far past any evaluator
/// index, below the signal columns.
const LOGGED_SORT: usize = usize::MAX / 2;

/// The sort index of evaluator `e`'s |Δ| against the log.
pub const fn logged_sort_index(e: usize) -> usize {
    LOGGED_SORT + e
}

/// The evaluator whose |Δ| against the log a sort index stands for.
pub fn logged_sort_evaluator(index: usize) -> Option<usize> {
    (LOGGED_SORT..SignalColumn::Reward.sort_index())
        .contains(&index)
        .then(|| index - LOGGED_SORT)
}

/// What the samples' sources logged, as far as the list has looked (kept up to
/// date as samples arrive, see [`App::see_logged`]).
#[derive(Clone, Debug, Default)]
pub struct LoggedSeen {
    /// Every logged name some sample has.
    pub names: HashSet<String>,
    /// Some sample has a step.
    pub steps: bool,
    /// How many samples were looked at.
    through: usize,
}

/// One row's logged value for one evaluator, and its score now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoggedCell {
    /// The logged score (`None`: the log says no score, a NaN).
    pub logged: Option<f64>,
    /// The score now, once evaluated (`Some(None)`: evaluated, no score).
    pub score: Option<Option<f64>>,
    /// The evaluation failed: nothing to compare (its error is no score that moved).
    pub failed: bool,
}

impl LoggedCell {
    /// score − logged, when both are numbers.
    pub fn delta(&self) -> Option<f64> {
        Some(self.score?? - self.logged?)
    }

    /// The score moved from the logged one (SPEC §13's rule); never before it is
    /// evaluated.
    pub fn moved(&self) -> bool {
        !self.failed && self.score.is_some_and(|s| model::moved(s, self.logged))
    }

    pub fn flipped(&self) -> bool {
        !self.failed && self.score.is_some_and(|s| model::flipped(s, self.logged))
    }

    /// What the |Δ| sort orders by: |Δ|; infinite when only one of the two is a
    /// number (moved by more than any number); none before it is evaluated.
    fn sort_key(&self) -> Option<f64> {
        if self.failed {
            return None;
        }
        let score = self.score?;
        Some(match (score, self.logged) {
            (Some(s), Some(l)) => (s - l).abs(),
            (None, None) => 0.0,
            _ => f64::INFINITY,
        })
    }
}

/// One row of the statistics' logged-vs-now table: per compared evaluator, the
/// logged mean and the mean now, over the same samples (those with a logged number
/// and a score now).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepMeans {
    /// `None`: every sample.
    pub step: Option<i64>,
    pub means: Vec<(Option<f64>, Option<f64>)>,
}

/// The statistics' comparison with the log (see [`App::logged_report`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoggedReport {
    /// The evaluators with a logged counterpart, in order.
    pub evaluators: Vec<usize>,
    /// Their logged names.
    pub names: Vec<String>,
    /// Per step, ascending (none when the source has no steps).
    pub steps: Vec<StepMeans>,
    /// Over every sample.
    pub all: StepMeans,
    /// `rwb run`'s summary lines: moved and flipped counts, logged values that are
    /// not numbers.
    pub lines: Vec<String>,
}

/// Sums for a mean of logged scores and one of scores now.
#[derive(Clone, Copy, Default)]
struct Sums {
    logged: (f64, usize),
    now: (f64, usize),
}

impl Sums {
    fn add(&mut self, logged: f64, now: f64) {
        self.logged = (self.logged.0 + logged, self.logged.1 + 1);
        self.now = (self.now.0 + now, self.now.1 + 1);
    }

    fn means(&self) -> (Option<f64>, Option<f64>) {
        let mean = |(sum, n): (f64, usize)| (n > 0).then(|| sum / n as f64);
        (mean(self.logged), mean(self.now))
    }
}

impl App {
    /// Pairs each evaluator with its logged name (its own, or `logged = "NAME"`).
    pub(super) fn pair_logged(&mut self) {
        let names: Vec<String> = self.evaluators.iter().map(|e| e.name.clone()).collect();
        let logged: Vec<Option<String>> = names
            .iter()
            .map(|n| self.logged_names.get(n).cloned())
            .collect();
        self.logged_cmp = LoggedCmp::new(&names, &logged);
    }

    /// Notes the logged names and steps of the samples not looked at yet (all of
    /// them when `again`, after the samples were replaced).
    pub(super) fn see_logged(&mut self, again: bool) {
        if again {
            self.logged_seen = LoggedSeen::default();
        }
        let seen = &mut self.logged_seen;
        let mut last: Option<&Facts> = None;
        for s in self.samples.iter().skip(seen.through) {
            let Some(facts) = s.at.facts.as_deref() else {
                continue;
            };
            seen.steps |= facts.step.is_some();
            // a source's rows log the same names: compared with the last row's
            let same = last.is_some_and(|l| {
                l.logged.len() == facts.logged.len()
                    && l.logged.iter().zip(&facts.logged).all(|(a, b)| a.0 == b.0)
            });
            if !same {
                for (name, _) in &facts.logged {
                    if !seen.names.contains(name) {
                        seen.names.insert(name.clone());
                    }
                }
                last = Some(facts);
            }
        }
        seen.through = self.samples.len();
    }

    /// Logged scores the samples carry when no evaluator is compared with any (the
    /// trainer's advantage aside), in name order.
    pub fn unpaired_logged(&self) -> Vec<String> {
        if (0..self.evaluators.len()).any(|e| self.logged_pair(e).is_some()) {
            return Vec::new();
        }
        let paired = |name: &String| {
            (0..self.evaluators.len()).any(|e| self.logged_cmp.name(e) == Some(name.as_str()))
        };
        let mut names: Vec<String> = self
            .logged_seen
            .names
            .iter()
            .filter(|n| n.as_str() != LOGGED_ADVANTAGE && !paired(n))
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// Says once, when the samples are read, that they log scores no evaluator is
    /// compared with, and how to pair one (a veRL dump's `score` is compared only
    /// when an evaluator is named so or says `logged = "score"`).
    pub(super) fn say_unpaired_logged(&mut self) {
        if self.loading {
            return;
        }
        let unpaired = self.unpaired_logged();
        if !unpaired.is_empty() && unpaired != self.unpaired_said {
            let names: Vec<String> = self.evaluators.iter().map(|e| e.name.clone()).collect();
            self.notice = Some(model::unpaired_hint(&unpaired, &names));
        }
        self.unpaired_said = unpaired;
    }

    /// The logged name evaluator `e` is compared with, when some sample logged it.
    pub fn logged_pair(&self, e: usize) -> Option<&str> {
        let name = self.logged_cmp.name(e)?;
        self.logged_seen.names.contains(name).then_some(name)
    }

    /// Whether the list shows a logged column (some evaluator has a counterpart).
    pub fn has_logged(&self) -> bool {
        (0..self.evaluators.len()).any(|e| self.logged_pair(e).is_some())
    }

    /// Sample `sample`'s logged value for evaluator `e` beside its score now: `None`
    /// without a logged number or NaN to compare with (a logged value that is not a
    /// number is not compared, as in `rwb run`).
    pub fn logged_cell(&self, sample: usize, e: usize) -> Option<LoggedCell> {
        let s = self.samples.get(sample)?;
        let facts = s.at.facts.as_deref()?;
        let Logged::Score(logged) = self.logged_cmp.value(facts, e)? else {
            return None;
        };
        let cell = s.cells.get(e)?;
        Some(LoggedCell {
            logged: *logged,
            score: cell.outcome.as_ref().map(|o| o.score),
            failed: cell.error().is_some(),
        })
    }

    /// The logged value of evaluator `e` that is not a number (shown, not compared).
    pub fn logged_not_numeric(&self, sample: usize, e: usize) -> bool {
        let facts = self.samples.get(sample).and_then(|s| s.at.facts.as_deref());
        facts
            .and_then(|f| self.logged_cmp.value(f, e))
            .is_some_and(|v| matches!(v, Logged::NotNumeric { .. }))
    }

    /// Whether a sample's score moved from the log: evaluator `e`'s, or any paired
    /// evaluator's (the `logged` filter).
    pub(super) fn moved_from_log(&self, sample: usize, e: Option<usize>) -> bool {
        let moved = |e: usize| self.logged_cell(sample, e).is_some_and(|c| c.moved());
        match e {
            Some(e) => moved(e),
            None => (0..self.evaluators.len()).any(moved),
        }
    }

    /// What the |Δ| sort orders sample `sample` by (see [`logged_sort_index`]).
    pub(super) fn logged_sort_value(&self, sample: usize, e: usize) -> Option<f64> {
        self.logged_cell(sample, e)?.sort_key()
    }

    /// The advantage the trainer logged for a sample (TRL's `advantage` column).
    pub fn logged_advantage(&self, sample: usize) -> Option<f64> {
        let facts = self.samples.get(sample)?.at.facts.as_deref()?;
        match facts.logged(LOGGED_ADVANTAGE)? {
            Logged::Score(x) => *x,
            Logged::NotNumeric { .. } => None,
        }
    }

    /// Whether the logged advantage is shown beside the recomputed one: with
    /// `[training]`, when the samples' source logged one.
    pub fn shows_logged_advantage(&self) -> bool {
        self.training.is_some() && self.logged_seen.names.contains(LOGGED_ADVANTAGE)
    }

    /// The statistics' comparison with the log, over every sample (when the
    /// statistics open or scores changed while they are open): per step and over
    /// all, the logged mean and the mean now of each evaluator with a logged
    /// counterpart, and `rwb run`'s moved and flipped counts. Cells not evaluated yet
    /// are left out. `None` when no evaluator has a logged counterpart.
    pub fn logged_report(&self) -> Option<LoggedReport> {
        let evaluators: Vec<usize> = (0..self.evaluators.len())
            .filter(|&e| self.logged_pair(e).is_some())
            .collect();
        if evaluators.is_empty() {
            return None;
        }
        let mut cmp = self.logged_cmp.clone();
        let mut steps: BTreeMap<i64, Vec<Sums>> = BTreeMap::new();
        let mut all = vec![Sums::default(); evaluators.len()];
        for s in &self.samples {
            let Some(facts) = s.at.facts.as_deref() else {
                continue;
            };
            for (k, &e) in evaluators.iter().enumerate() {
                let Some(cell) = s.cells.get(e).filter(|c| c.outcome.is_some()) else {
                    continue;
                };
                cmp.add(facts, e, cell.score(), cell.error().is_some());
                let (Some(Logged::Score(Some(logged))), Some(now)) =
                    (cmp.value(facts, e), cell.score())
                else {
                    continue;
                };
                all[k].add(*logged, now);
                if let Some(step) = facts.step {
                    let sums = steps
                        .entry(step)
                        .or_insert_with(|| vec![Sums::default(); evaluators.len()]);
                    sums[k].add(*logged, now);
                }
            }
        }
        let row = |step: Option<i64>, sums: &[Sums]| StepMeans {
            step,
            means: sums.iter().map(Sums::means).collect(),
        };
        let names = evaluators
            .iter()
            .map(|&e| cmp.name(e).unwrap_or_default().to_string())
            .collect();
        Some(LoggedReport {
            names,
            steps: steps.iter().map(|(s, sums)| row(Some(*s), sums)).collect(),
            all: row(None, &all),
            lines: cmp.lines(),
            evaluators,
        })
    }
}
