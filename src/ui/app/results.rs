//! Results arriving on their cells, and the selected cell's whole outcome (kept, read
//! from the store, or sketched from its scores until it is read).

use super::{App, Kept, RunState};
use crate::model::{Metric, Outcome};
use std::sync::Arc;

/// The selected cell's whole outcome and its baseline's, read from the store when the
/// selection changes (`Msg::Detail`) or kept when its result arrives.
#[derive(Clone, Debug, Default)]
pub struct Detail {
    /// Whose it is: (sample content, evaluator name).
    pub of: ([u8; 16], String),
    pub outcome: Option<Arc<Outcome>>,
    /// The pinned baseline's outcome of the same sample.
    pub before: Option<Arc<Outcome>>,
}

impl App {
    /// A run began: its evaluators count from zero, and the cells of `stale` ones (whose
    /// code changed) are marked stale until their new result arrives.
    pub(super) fn run_started(&mut self, evaluators: &[usize], stale: &[usize]) {
        self.running = true;
        let total = self.samples.len();
        for &e in evaluators {
            if let Some(info) = self.evaluators.get_mut(e) {
                info.state = RunState::Running { done: 0, total };
            }
        }
        for &e in stale {
            if let Some(info) = self.evaluators.get(e) {
                self.watched.remove(&info.name); // changed or rerun alone: not watched now
            }
            for s in &mut self.samples {
                if let Some(c) = s.cells.get_mut(e) {
                    c.stale = c.outcome.is_some();
                }
            }
        }
        self.count_fresh();
    }

    /// One result: on its cell, counted in its evaluator's progress; a sorted or
    /// filtered list is recomputed.
    pub(super) fn on_result(&mut self, evaluator: usize, sample: usize, outcome: Outcome) {
        self.take_result(evaluator, sample, outcome);
        self.hacking_touch(sample);
        if let Some(info) = self.evaluators.get_mut(evaluator) {
            if let RunState::Running { done, total } = &mut info.state {
                *done += 1;
                if *done >= *total && !self.loading {
                    info.state = RunState::Idle;
                }
            }
        }
        if self.sort.is_some() || !self.filter.is_empty() || self.changed_only {
            self.view_stale = true;
        }
    }

    /// The selected cell's outcome read from the store.
    pub(super) fn take_detail(&mut self, mut detail: Detail) {
        // what was kept as its result arrived stays when the store lags behind
        if let Some(old) = self.selected_detail.take().filter(|d| d.of == detail.of) {
            detail.outcome = detail.outcome.or(old.outcome);
            detail.before = detail.before.or(old.before);
        }
        self.selected_detail = Some(detail);
    }

    /// Puts a result on its cell, keeping the whole outcome only where it cannot be
    /// read back from the store, and as the detail when the cell is selected.
    pub(super) fn take_result(&mut self, evaluator: usize, sample: usize, outcome: Outcome) {
        if self.components.len() < self.evaluators.len() {
            self.components.resize(self.evaluators.len(), Vec::new());
        }
        let Some(hash) = self
            .samples
            .get(sample)
            .filter(|s| evaluator < s.cells.len())
            .map(|s| s.hash)
        else {
            return;
        };
        let parts = match self.components.get_mut(evaluator) {
            Some(names) => crate::insight::component_scores(&outcome, names),
            None => Box::default(),
        };
        let score = outcome.score;
        let seconds = crate::trust::seconds_of(&outcome);
        let whole = self.keeps_whole(evaluator, &outcome);
        let selected = self.selected() == Some(sample) && self.evaluator == evaluator;
        let outcome = (whole || selected).then(|| self.share_error(evaluator, outcome));
        if selected && !whole {
            let name = self.evaluators[evaluator].name.clone();
            let of = (hash, name);
            let before = self
                .selected_detail
                .take()
                .filter(|d| d.of == of)
                .and_then(|d| d.before);
            self.selected_detail = Some(Detail {
                of,
                outcome: outcome.clone(),
                before,
            });
        }
        let cell = &mut self.samples[sample].cells[evaluator];
        let (was_error, was_fresh) = (cell.is_error(), cell.is_fresh());
        cell.parts = parts;
        cell.outcome = Some(Kept {
            score,
            seconds,
            full: outcome.filter(|_| whole),
        });
        cell.stale = false;
        if let Some(count) = self.error_counts.get_mut(evaluator) {
            *count = *count + usize::from(cell.is_error()) - usize::from(was_error);
        }
        self.fresh += usize::from(!was_fresh);
    }

    /// Whether a cell keeps this outcome whole: without a store, for an error (not
    /// always stored), and for an evaluator called in batches (stored under its
    /// batch's key) or whose style is not known yet.
    pub(super) fn keeps_whole(&self, evaluator: usize, outcome: &Outcome) -> bool {
        !self.store_details
            || outcome.is_error()
            || App::keeps_for_trust(outcome)
            || self.evaluators.get(evaluator).is_none_or(|e| {
                // a remote result is never stored: keep it whole
                let remote = e.placement.as_ref().is_some_and(|p| p.is_remote());
                remote || e.style.is_none_or(|s| s.is_batched())
            })
    }

    /// The outcome to keep; an error identical to the evaluator's last one shares it.
    pub(super) fn share_error(&mut self, evaluator: usize, outcome: Outcome) -> Arc<Outcome> {
        if !outcome.is_error() {
            return Arc::new(outcome);
        }
        if self.last_error.len() <= evaluator {
            self.last_error.resize(evaluator + 1, None);
        }
        match &self.last_error[evaluator] {
            Some(last) if **last == outcome => last.clone(),
            _ => {
                let kept = Arc::new(outcome);
                self.last_error[evaluator] = Some(kept.clone());
                kept
            }
        }
    }

    pub(super) fn detail_for(&self, hash: [u8; 16], evaluator: &str) -> Option<&Detail> {
        self.selected_detail
            .as_ref()
            .filter(|d| d.of.0 == hash && d.of.1 == evaluator)
    }

    /// The selected (sample, evaluator) whose whole outcome, or pinned baseline
    /// outcome, is neither kept nor read yet: the live loop reads it from the store
    /// and answers with `Msg::Detail`. `None` without a store.
    pub fn wanted_detail(&self) -> Option<(usize, usize)> {
        if !self.store_details {
            return None;
        }
        let sample = self.selected()?;
        let e = self.evaluator;
        let s = self.samples.get(sample)?;
        let name = &self.evaluators.get(e)?.name;
        let cell = s.cells.get(e)?;
        let needs_now = cell.outcome.as_ref().is_some_and(|k| k.full.is_none());
        let needs_before = self
            .baseline
            .as_ref()
            .is_some_and(|b| b.outcome(s, name).is_none() && b.pinned(s, name).is_some());
        let detail = self.detail_for(s.hash, name);
        let missing = |d: Option<&Detail>| {
            (needs_now && d.is_none_or(|d| d.outcome.is_none()))
                || (needs_before && d.is_none_or(|d| d.before.is_none()))
        };
        missing(detail).then_some((sample, e))
    }

    /// An outcome made of what a cell keeps: its score and component scores.
    pub(super) fn sketch(&self, evaluator: usize, score: Option<f64>, parts: &[f64]) -> Outcome {
        let names = self
            .components
            .get(evaluator)
            .map(|c| c.as_slice())
            .unwrap_or(&[]);
        let metrics = names
            .iter()
            .zip(parts)
            .filter(|(_, x)| !x.is_nan())
            .map(|(n, x)| {
                let metric = Metric {
                    score: Some(*x),
                    is_score_valid: true,
                    reason: None,
                };
                (n.clone(), serde_json::to_value(metric).unwrap_or_default())
            })
            .collect();
        Outcome {
            score,
            is_score_valid: score.is_some(),
            ..Outcome::scored(0.0, metrics)
        }
    }

    /// The whole outcome of a cell: kept, or read for the selection, or (until it is
    /// read) sketched from its score and component scores.
    pub fn outcome_of(&self, sample: usize, evaluator: usize) -> Option<Arc<Outcome>> {
        let s = self.samples.get(sample)?;
        let cell = s.cells.get(evaluator)?;
        let kept = cell.outcome.as_ref()?;
        if let Some(full) = &kept.full {
            return Some(full.clone());
        }
        let name = &self.evaluators.get(evaluator)?.name;
        if let Some(o) = self
            .detail_for(s.hash, name)
            .and_then(|d| d.outcome.clone())
        {
            return Some(o);
        }
        Some(Arc::new(self.sketch(evaluator, kept.score, &cell.parts)))
    }

    /// The selected cell's whole outcome (see [`App::outcome_of`]).
    pub fn selected_outcome(&self) -> Option<Arc<Outcome>> {
        self.outcome_of(self.selected()?, self.evaluator)
    }

    /// The pinned baseline's outcome of a sample: kept, read, or (until it is read)
    /// sketched from the pinned scores with `now`'s reason, so that no change of
    /// reason is claimed that was not seen.
    pub fn baseline_outcome(
        &self,
        sample: usize,
        evaluator: usize,
        now: &Outcome,
    ) -> Option<Arc<Outcome>> {
        let baseline = self.baseline.as_ref()?;
        let s = self.samples.get(sample)?;
        let name = &self.evaluators.get(evaluator)?.name;
        if let Some(o) = baseline.outcome(s, name) {
            return Some(o.clone());
        }
        let (score, parts) = baseline.pinned(s, name)?;
        if let Some(o) = self.detail_for(s.hash, name).and_then(|d| d.before.clone()) {
            return Some(o);
        }
        let mut sketch = self.sketch(evaluator, score, parts);
        sketch.reason = now.reason.clone();
        Some(Arc::new(sketch))
    }
}
