//! Outcomes that arrive in any order put back into (sample, evaluator) order.

use super::{SampleResults, SPARE_LISTS};
use crate::model::{Outcome, SampleRef};
use std::collections::VecDeque;

/// A sample some of whose outcomes have arrived: where it is, its content hash, its
/// outcomes so far (by evaluator) and how many those are.
struct Pending {
    at: SampleRef,
    hash: [u8; 16],
    outcomes: Vec<Option<Outcome>>,
    arrived: usize,
}

/// Puts outcomes that arrive in any order back into (sample, evaluator) order.
pub(super) struct Reorder {
    evaluators: usize,
    next: usize,
    /// The samples from `next` on, by their distance from it (`None`: nothing arrived
    /// yet). A ring rather than a map: the workers answer a few batches apart, so the
    /// samples waiting are nearly contiguous, and each one costs no node of a tree.
    waiting: VecDeque<Option<Pending>>,
    /// Emptied outcome lists of samples already written, for the next samples (one
    /// allocation freed and made again per sample was a tenth of a warm run's printing).
    spare: Vec<Vec<Outcome>>,
}

impl Reorder {
    pub(super) fn new(evaluators: usize) -> Reorder {
        Reorder {
            evaluators,
            next: 0,
            waiting: VecDeque::new(),
            spare: Vec::new(),
        }
    }

    /// With one evaluator, when `at` is the next sample and none waits: the sample
    /// is complete with this outcome, and here is an empty list for it (it counts
    /// as released). Else `None`: the outcome goes through [`Reorder::add`].
    pub(super) fn next_in_order(
        &mut self,
        evaluator: usize,
        at: &SampleRef,
    ) -> Option<Vec<Outcome>> {
        let alone = self.evaluators == 1 && evaluator == 0;
        if !(alone && at.index == self.next && self.waiting.is_empty()) {
            return None;
        }
        self.next += 1;
        Some(self.list())
    }

    /// An empty outcome list, from the spare ones when there is one.
    fn list(&mut self) -> Vec<Outcome> {
        self.spare.pop().unwrap_or_default()
    }

    /// Takes a written sample's outcome list back, emptied, for a later sample.
    pub(super) fn recycle(&mut self, mut outcomes: Vec<Outcome>) {
        if self.spare.len() < SPARE_LISTS {
            outcomes.clear();
            self.spare.push(outcomes);
        }
    }

    pub(super) fn add(
        &mut self,
        evaluator: usize,
        at: SampleRef,
        hash: [u8; 16],
        outcome: Outcome,
        ready: &mut Vec<SampleResults>,
    ) {
        let n = self.evaluators;
        // every (sample, evaluator) outcome comes once: none is behind `next`
        let Some(distance) = at.index.checked_sub(self.next) else {
            debug_assert!(false, "sample {} came again", at.index);
            return;
        };
        if self.waiting.len() <= distance {
            self.waiting.resize_with(distance + 1, || None);
        }
        let entry = self.waiting[distance].get_or_insert_with(|| Pending {
            at,
            hash,
            outcomes: (0..n).map(|_| None).collect(),
            arrived: 0,
        });
        if entry.outcomes[evaluator].is_none() {
            entry.arrived += 1;
        }
        entry.outcomes[evaluator] = Some(outcome);
        while let Some(Some(first)) = self.waiting.front() {
            if first.arrived < n {
                break;
            }
            let done = self
                .waiting
                .pop_front()
                .flatten()
                .expect("the front is complete");
            self.next += 1;
            let mut outcomes = self.list();
            outcomes.extend(done.outcomes.into_iter().map(|o| o.expect("complete")));
            ready.push(SampleResults {
                at: done.at,
                hash: done.hash,
                outcomes,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EvalError;

    fn at(index: usize) -> SampleRef {
        SampleRef::first_file(index)
    }

    #[test]
    fn reorder_releases_samples_only_when_complete_and_in_order() {
        let mut r = Reorder::new(2);
        let mut ready = Vec::new();
        let o = || Outcome::failed(EvalError::new("X", "y"));
        r.add(1, at(1), [1; 16], o(), &mut ready);
        r.add(0, at(1), [1; 16], o(), &mut ready);
        assert!(ready.is_empty(), "sample 0 is not complete yet");
        r.add(0, at(0), [0; 16], o(), &mut ready);
        assert!(ready.is_empty());
        r.add(1, at(0), [0; 16], o(), &mut ready);
        let order: Vec<usize> = ready.iter().map(|s| s.at.index).collect();
        assert_eq!(order, vec![0, 1]);
    }

    #[test]
    fn reorder_of_one_evaluator_releases_batches_that_finish_out_of_order_in_order() {
        // two workers, batches of 3: the second batch answers first, its samples wait
        let mut r = Reorder::new(1);
        let mut ready = Vec::new();
        let o = |i: usize| Outcome::scored(i as f64, Default::default());
        for i in [3, 5, 4] {
            r.add(0, at(i), [i as u8; 16], o(i), &mut ready);
        }
        assert!(ready.is_empty(), "samples 0..3 are not in yet");
        r.add(0, at(1), [1; 16], o(1), &mut ready);
        r.add(0, at(0), [0; 16], o(0), &mut ready);
        let order: Vec<usize> = ready.iter().map(|s| s.at.index).collect();
        assert_eq!(order, vec![0, 1]);
        r.add(0, at(2), [2; 16], o(2), &mut ready);
        r.add(0, at(6), [6; 16], o(6), &mut ready); // in order again: straight through
        let got: Vec<(usize, [u8; 16], Option<f64>)> = ready
            .iter()
            .map(|s| (s.at.index, s.hash, s.outcomes[0].score))
            .collect();
        let want: Vec<(usize, [u8; 16], Option<f64>)> =
            (0..7).map(|i| (i, [i as u8; 16], Some(i as f64))).collect();
        assert_eq!(got, want);
        assert!(r.waiting.is_empty());
    }
}
