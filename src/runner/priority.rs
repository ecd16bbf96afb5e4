//! What a run feeds first: the samples the user is looking at (the workbench's rows on
//! screen and the selected one), before the rest of the files in file order.
//!
//! A batched evaluator (TRL) keeps the batches a run in file order forms: it takes
//! first only whole batches (consecutive valid samples, `batch_size` each, counted over
//! all files), so that skipping them later leaves every other batch as it was.

use super::Prepared;
use crate::workspace::SampleLine;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// Samples to feed before the rest of a run.
#[derive(Debug, Default)]
pub struct Priority {
    /// Valid (not `BadSample`) lines to feed first, in file order, each with its
    /// position among the valid samples of the files (what batches count).
    pub lines: Vec<(usize, SampleLine)>,
    /// Positions among the valid samples wanted first.
    pub wanted: Vec<usize>,
    /// How many valid samples the files hold (where the last, shorter batch ends).
    pub valid: usize,
}

/// The positions (among `valid` valid samples) of the batch of `batch_size` that
/// holds `position`.
pub fn batch_of(position: usize, batch_size: usize, valid: usize) -> Range<usize> {
    let size = batch_size.max(1);
    let start = position / size * size;
    start..(start + size).min(valid.max(position + 1))
}

impl Priority {
    /// Per evaluator, the sample indices it takes first: the wanted samples, and for a
    /// batched evaluator the whole batches holding them (a batch some of whose members
    /// are not in `lines` is not taken first at all).
    pub(super) fn plan(&self, evaluators: &[Prepared]) -> Vec<HashSet<usize>> {
        let index_of: HashMap<usize, usize> = self
            .lines
            .iter()
            .map(|(position, line)| (*position, line.at.index))
            .collect();
        evaluators
            .iter()
            .map(|p| {
                // a rollout group is whole only once the files are read: an
                // evaluator called per group is fed in file order only
                if p.failure.is_some() || crate::model::Style::per_group(p.style, &p.spec) {
                    return HashSet::new();
                }
                let size = p
                    .style
                    .filter(|s| s.is_batched())
                    .map(|_| p.spec.batch_size);
                let mut taken = HashSet::new();
                for &wanted in &self.wanted {
                    let members = match size {
                        Some(size) => batch_of(wanted, size, self.valid),
                        None => wanted..wanted + 1,
                    };
                    let indices: Option<Vec<usize>> =
                        members.map(|m| index_of.get(&m).copied()).collect();
                    taken.extend(indices.into_iter().flatten());
                }
                taken
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_aligned_and_the_last_is_shorter() {
        assert_eq!(batch_of(0, 4, 10), 0..4);
        assert_eq!(batch_of(5, 4, 10), 4..8);
        assert_eq!(batch_of(9, 4, 10), 8..10);
        assert_eq!(batch_of(3, 1, 10), 3..4);
        assert_eq!(batch_of(3, 0, 10), 3..4, "a batch size of 0 counts as 1");
    }
}
