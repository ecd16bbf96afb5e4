//! A run compared with a stored baseline (`rwb run --baseline NAME`): each row's
//! baseline score and delta, the samples that regressed, and what changed through
//! which component.

use super::{Printer, SampleResults};
use crate::insight::{attribute_compact, component_scores, EPSILON};
use crate::model::Outcome;
use std::collections::HashMap;

/// A cell in compact form: its score and component scores along shared names.
type CompactCell = (Option<f64>, Box<[f64]>);

/// A run compared with a stored baseline (`rwb run --baseline NAME`).
pub struct BaselineCmp {
    name: String,
    /// Per evaluator (in run order): the baseline outcomes by sample content.
    outcomes: Vec<HashMap<[u8; 16], Outcome>>,
    threshold: f64,
    /// Per evaluator: component names, and (baseline, now) for every compared sample.
    components: Vec<Vec<String>>,
    pairs: Vec<Vec<(CompactCell, CompactCell)>>,
    /// Samples that score lower than in the baseline on some evaluator.
    pub regressions: usize,
}

impl BaselineCmp {
    /// Arranges a stored baseline for the run's evaluators (`names`, in order).
    pub fn new(
        name: String,
        stored: crate::store::BaselineOutcomes,
        names: &[String],
        threshold: f64,
    ) -> BaselineCmp {
        let mut outcomes: Vec<HashMap<[u8; 16], Outcome>> = vec![HashMap::new(); names.len()];
        for ((evaluator, hash), outcome) in stored {
            if let Some(i) = names.iter().position(|n| *n == evaluator) {
                outcomes[i].insert(hash, outcome);
            }
        }
        BaselineCmp {
            name,
            outcomes,
            threshold,
            components: vec![Vec::new(); names.len()],
            pairs: vec![Vec::new(); names.len()],
            regressions: 0,
        }
    }
}

impl Printer {
    /// Records how a completed sample moved against the baseline.
    pub(super) fn compare(&mut self, sample: &SampleResults) {
        if let Some(facts) = &sample.at.facts {
            self.logged.see(facts);
            for (i, outcome) in sample.outcomes.iter().enumerate() {
                self.logged
                    .add(facts, i, outcome.score, outcome.error.is_some());
            }
        }
        let Some(b) = self.baseline.as_mut() else {
            return;
        };
        let mut regressed = false;
        for (i, outcome) in sample.outcomes.iter().enumerate() {
            if let Some(before) = b.outcomes[i].get(&sample.hash) {
                if let (Some(x), Some(y)) = (before.score, outcome.score) {
                    regressed |= y < x - EPSILON;
                }
                let names = &mut b.components[i];
                let was = (before.score, component_scores(before, names));
                let now = (outcome.score, component_scores(outcome, names));
                b.pairs[i].push((was, now));
            }
        }
        b.regressions += usize::from(regressed);
    }

    /// (baseline score, delta) of a row, when comparing with a baseline.
    pub(super) fn baseline_fields(
        &self,
        sample: &SampleResults,
        i: usize,
    ) -> (Option<Option<f64>>, Option<Option<f64>>) {
        let Some(b) = &self.baseline else {
            return (None, None);
        };
        let before = b.outcomes[i].get(&sample.hash).and_then(|o| o.score);
        let delta = match (before, sample.outcomes[i].score) {
            (Some(x), Some(y)) => Some(y - x),
            _ => None,
        };
        (Some(before), Some(delta))
    }

    /// One line per evaluator: what changed against the baseline, and through what.
    pub fn attribution_lines(&self) -> Vec<String> {
        let Some(b) = &self.baseline else {
            return Vec::new();
        };
        let mut lines: Vec<String> = (0..self.names.len())
            .map(|i| {
                let pairs = b.pairs[i]
                    .iter()
                    .map(|((x, p), (y, q))| ((*x, &p[..]), (*y, &q[..])));
                let attribution = attribute_compact(pairs, &b.components[i], b.threshold);
                format!("{} vs baseline {}: {attribution}", self.names[i], b.name)
            })
            .collect();
        lines.push(format!(
            "{} sample(s) score lower than in baseline {} on some evaluator",
            b.regressions, b.name
        ));
        lines
    }
}
