//! Slow samples in the workbench (SPEC §16): the list sorted by an evaluator's
//! evaluation time (`s` cycles to it; a timeout sorts slowest), and each
//! evaluator's p50/p95/max, five slowest and timeouts for the statistics.

use super::App;
use crate::trust::{SecondsBuilder, SecondsSummary};

/// Where `App::sort` keeps "evaluator e's seconds": past any evaluator index, below
/// the |Δ log| sorts.
const TIME_SORT: usize = usize::MAX / 4;

/// The sort index of evaluator `e`'s evaluation time.
pub const fn time_sort_index(e: usize) -> usize {
    TIME_SORT + e
}

/// The evaluator whose evaluation time a sort index stands for.
pub fn time_sort_evaluator(index: usize) -> Option<usize> {
    (TIME_SORT..usize::MAX / 2)
        .contains(&index)
        .then(|| index - TIME_SORT)
}

impl App {
    /// What the time sort orders sample `sample` by: its seconds, infinite for a
    /// timeout; none before it was evaluated.
    pub(super) fn time_sort_value(&self, sample: usize, e: usize) -> Option<f64> {
        let kept = self.samples.get(sample)?.cells.get(e)?.outcome.as_ref()?;
        let seconds = kept.seconds;
        (!seconds.is_nan()).then_some(seconds)
    }

    /// Evaluator `e`'s slow samples over every evaluated sample.
    pub fn seconds_summary(&self, e: usize) -> SecondsSummary {
        let mut b = SecondsBuilder::default();
        for s in &self.samples {
            if let Some(kept) = s.cells.get(e).and_then(|c| c.outcome.as_ref()) {
                b.add_seconds(&s.at, kept.seconds);
            }
        }
        b.finish()
    }
}
