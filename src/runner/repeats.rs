//! `repeat = K` (SPEC §16): a run's K copies of a repeated evaluator (see
//! [`Runner::expand_repeats`](super::Runner::expand_repeats)) put back together as
//! one outcome per sample, and their counts as one; `rwb run` and the workbench both
//! merge their runs' events here.

use crate::runner::Event;
/// Puts the K outcomes of each repeated evaluator's sample back together as one
/// (SPEC §16), as they arrive from the run's K copies of it.
pub struct Repeats {
    /// Per run evaluator: (the evaluator it repeats, its repeat index).
    of: Vec<(usize, usize)>,
    /// Per evaluator: K.
    k: Vec<usize>,
    /// The largest K.
    pub most: usize,
    threshold: f64,
    /// (evaluator, sample index) -> the repeats that arrived.
    waiting: std::collections::HashMap<(usize, usize), Vec<Option<crate::model::Outcome>>>,
}

impl Repeats {
    /// `None` when no evaluator is repeated.
    pub fn new(prepared: &[crate::runner::Prepared], threshold: f64) -> Option<Repeats> {
        let k: Vec<usize> = prepared.iter().map(|p| p.spec.repeat.max(1)).collect();
        let most = k.iter().copied().max().unwrap_or(1);
        (most > 1).then(|| Repeats {
            of: Vec::new(),
            k,
            most,
            threshold,
            waiting: Default::default(),
        })
    }

    pub fn with(mut self, of: Vec<(usize, usize)>) -> Repeats {
        self.of = of;
        self
    }

    /// The event for the evaluator once all its repeats of the sample arrived.
    pub fn add(&mut self, event: Event) -> Option<Event> {
        let Event::Result {
            evaluator,
            at,
            hash,
            outcome,
            cached,
        } = event;
        let (e, r) = self.of[evaluator];
        let k = self.k[e];
        if k == 1 {
            return Some(Event::Result {
                evaluator: e,
                at,
                hash,
                outcome,
                cached,
            });
        }
        let parts = self
            .waiting
            .entry((e, at.index))
            .or_insert_with(|| vec![None; k]);
        parts[r] = Some(outcome);
        if parts.iter().any(Option::is_none) {
            return None;
        }
        let parts = self.waiting.remove(&(e, at.index)).unwrap_or_default();
        let outcome = crate::trust::merge(parts.into_iter().flatten().collect(), self.threshold);
        Some(Event::Result {
            evaluator: e,
            at,
            hash,
            outcome,
            cached,
        })
    }
}

/// The run's counts per evaluator of the run (K copies of a repeated one) as counts
/// per evaluator: its calls, evaluated and cached, summed.
pub fn fold_repeats(
    stats: crate::runner::RunStats,
    runs: &[crate::runner::Prepared],
    prepared: &[crate::runner::Prepared],
) -> crate::runner::RunStats {
    if runs.len() == prepared.len() {
        return stats;
    }
    let mut folded = crate::runner::RunStats {
        samples: stats.samples,
        evaluated: vec![0; prepared.len()],
        cached: vec![0; prepared.len()],
        warnings: stats.warnings.clone(),
        skipped: stats.skipped.clone(),
    };
    let mut i = 0;
    for (e, p) in prepared.iter().enumerate() {
        for _ in 0..p.spec.repeat.max(1) {
            folded.evaluated[e] += stats.evaluated.get(i).copied().unwrap_or(0);
            folded.cached[e] += stats.cached.get(i).copied().unwrap_or(0);
            i += 1;
        }
    }
    folded
}
