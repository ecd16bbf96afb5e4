//! Is the verifier right, in the workbench (SPEC §20): each sample's correctness (its
//! file's `label` column or RewardBench role, sent with `Msg::Correct` each time the
//! samples are indexed; else a human pass/fail label of §16), the filters
//! `/false-negative` and `/false-positive` for the selected evaluator, and each
//! evaluator's verifier statistics for `v`. Data only.

use super::App;
use crate::trust::verifier::{Verifier, VerifierBuilder};

/// Correctness by sample content key.
pub type Correct = std::collections::HashMap<[u8; 16], bool>;

impl App {
    /// Whether the sample with content key `key` is right: its file says so, else a
    /// human pass/fail label (`None`: nobody said).
    pub fn truth_of(&self, key: &[u8; 16]) -> Option<bool> {
        self.correct
            .get(key)
            .copied()
            .or_else(|| self.label_of(key).and_then(|l| l.pass()))
    }

    /// Whether the selected evaluator fails a right answer (`right`: a false
    /// negative) or passes a wrong one (`!right`: a false positive) on sample
    /// `index`; an error is neither.
    pub(super) fn false_verdict(&self, index: usize, right: bool) -> bool {
        let Some(sample) = self.samples.get(index) else {
            return false;
        };
        if self.truth_of(&sample.hash) != Some(right) {
            return false;
        }
        let Some(cell) = sample.cells.get(self.evaluator).filter(|c| !c.is_error()) else {
            return false;
        };
        cell.score().is_some_and(|s| (s >= self.threshold) != right)
    }

    /// Evaluator `e`'s verifier statistics over the samples whose correctness is
    /// known (none while no sample's is), with best-of-n and pass@k once the
    /// samples' rollout groups are found.
    pub fn verifier(&self, e: usize) -> Option<Verifier> {
        if self.correct.is_empty() && self.labels.is_empty() && self.column_labels.is_empty() {
            return None;
        }
        let groups = self.grouping();
        let mut b = VerifierBuilder::new(self.threshold);
        for (i, s) in self.samples.iter().enumerate() {
            let Some(cell) = s.cells.get(e).filter(|c| c.outcome.is_some()) else {
                continue;
            };
            let group = groups.and_then(|g| g.of.get(i).copied());
            b.add(
                cell.score().filter(|_| !cell.is_error()),
                self.truth_of(&s.hash).map(Some),
                group,
            );
        }
        b.labelled().then(|| b.finish())
    }
}
