//! What `v` says of a reward's trust beyond its scores (SPEC §16): the spread of a
//! repeated evaluator's K calls (`repeat = K`) and the exceptions an evaluator
//! swallowed in the project's files during the last `R` (a watched run).
//!
//! Both are read from the cells' whole outcomes: a repeated or watched outcome is
//! kept whole (see [`App::keeps_whole`]), a normal one never carries either.

use super::App;
use crate::model::Outcome;
use crate::training::{self, Scores};
use crate::trust::{RepeatBuilder, RepeatSummary};

/// Exceptions of one kind caught at one place, on samples that got one score:
/// ((type, `file:line`, the score), how many samples).
pub type SwallowedCount = ((String, String, Option<f64>), usize);

impl App {
    /// Evaluator `e`'s spread over its repeats, as `rwb run`'s summary gives it;
    /// `None` while no sample of it was scored K times.
    pub fn repeat_summary(&self, e: usize) -> Option<RepeatSummary> {
        let mut builder: Option<RepeatBuilder> = None;
        for s in &self.samples {
            let Some(o) = s.cells.get(e).and_then(|c| c.full()) else {
                continue;
            };
            let Some(r) = &o.repeat else { continue };
            builder
                .get_or_insert_with(|| RepeatBuilder::new(r.scores.len()))
                .add(o);
        }
        let sign_change = self.repeat_sign_change();
        builder.map(|b| b.finish(sign_change))
    }

    /// With `[training]` and an advantage: the share of samples whose advantage
    /// changes sign between repeats, the advantages computed once per repeat index
    /// on that repeat's scores (as `rwb run` computes them: a sample on which some
    /// evaluator failed in that repeat has no reward in it).
    fn repeat_sign_change(&self) -> Option<f64> {
        let settings = self.training.clone()?;
        if settings.algorithm == training::Algorithm::None {
            return None;
        }
        let grouping = self.grouping()?;
        let k = self
            .samples
            .iter()
            .flat_map(|s| &s.cells)
            .filter_map(|c| c.full()?.repeat.as_ref().map(|r| r.scores.len()))
            .max()
            .filter(|&k| k > 1)?;
        let n = self.evaluators.len();
        let weights = self.training_weights();
        let advantages: Vec<Vec<f64>> = (0..k)
            .map(|r| {
                let mut values = Vec::with_capacity(self.samples.len() * n);
                for s in &self.samples {
                    let row: Vec<Option<f64>> = (0..n)
                        .map(|e| {
                            let cell = s.cells.get(e)?;
                            match cell.full().and_then(|o| o.repeat.as_ref()) {
                                Some(rep) => rep.scores.get(r).copied().flatten(),
                                None => cell.score().filter(|_| !cell.is_error()),
                            }
                        })
                        .collect();
                    let failed = row.iter().any(Option::is_none);
                    values.extend(row.iter().map(|x| {
                        if failed {
                            f64::NAN
                        } else {
                            x.unwrap_or(f64::NAN)
                        }
                    }));
                }
                let scores = Scores {
                    values: &values,
                    evaluators: n,
                };
                training::compute(&settings, &weights, scores, grouping).advantage
            })
            .collect();
        crate::trust::repeat::share_sign_change(&advantages)
    }

    /// Evaluator `e`'s swallowed exceptions after `R` (most samples first); `None`
    /// when no `R` watched it since its code last changed.
    pub fn swallowed_summary(&self, e: usize) -> Option<Vec<SwallowedCount>> {
        let name = &self.evaluators.get(e)?.name;
        if !self.watched.contains(name) {
            return None;
        }
        let mut found: Vec<SwallowedCount> = Vec::new();
        for s in &self.samples {
            let Some(o) = s.cells.get(e).and_then(|c| c.full()) else {
                continue;
            };
            let Some(caught) = &o.swallowed else { continue };
            let score = o.score.filter(|_| !o.is_error());
            let mut seen = Vec::new();
            for (kind, at) in caught.iter() {
                let key = (kind.clone(), at.clone(), score);
                if seen.contains(&key) {
                    continue; // a sample counts once per kind and place
                }
                seen.push(key.clone());
                match found.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, n)) => *n += 1,
                    None => found.push((key, 1)),
                }
            }
        }
        found.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        Some(found)
    }

    /// A run watches these evaluators' calls for swallowed exceptions (`R`).
    pub(super) fn watching(&mut self, evaluators: &[usize]) {
        for &e in evaluators {
            if let Some(info) = self.evaluators.get(e) {
                self.watched.insert(info.name.clone());
            }
        }
        self.stats_stale = true;
    }

    /// Whether an outcome is kept whole for what `v` says of it here.
    pub(super) fn keeps_for_trust(outcome: &Outcome) -> bool {
        // (and what rwb's sandbox ran for it: the statistics count its runs)
        outcome.repeat.is_some() || outcome.swallowed.is_some() || outcome.sandbox.is_some()
    }
}

/// The line `v` shows for a group of swallowed exceptions.
pub fn swallowed_line(((kind, at, score), n): &SwallowedCount) -> String {
    let scored = match score {
        Some(x) => format!("scored {}", crate::model::py_float(*x)),
        None => "got no score".into(),
    };
    format!(
        "{n} sample{} {scored} after a {kind} caught at {at}",
        if *n == 1 { "" } else { "s" }
    )
}
