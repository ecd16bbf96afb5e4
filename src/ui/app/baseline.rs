//! The pinned baseline (`b`): its scores and outcomes, what changed since, and ranks.

use super::{App, Sample};
use crate::model::Outcome;
use std::collections::HashMap;
use std::sync::Arc;

/// Scores pinned with `b`, by sample content and evaluator name.
#[derive(Clone, Debug, Default)]
pub struct Baseline {
    /// evaluator name -> its pinned cells
    outcomes: HashMap<String, BaselineOf>,
    /// "relevance: 12 samples changed (…), 10 through `format`", one per evaluator,
    /// recomputed when a run finishes.
    pub attribution: Vec<String>,
    /// Each evaluator's code key when pinned (where its reasons are in the store).
    pub keys: HashMap<String, [u8; 32]>,
}

/// A remembered rank change: ((sample, evaluator, revision), (rank then, rank now)).
pub(super) type RankMemo = ((usize, usize, u64), Option<(usize, usize)>);

/// A pinned cell: its score, component scores, the outcome itself when the cell kept
/// it (for reasons), and whether it had an outcome at all.
pub(super) type Pinned = (Option<f64>, Box<[f64]>, Option<Arc<Outcome>>, bool);

/// One evaluator's pinned scores, by sample content.
#[derive(Clone, Debug, Default)]
pub struct BaselineOf {
    cells: HashMap<[u8; 16], Pinned>,
}

impl Baseline {
    pub fn score(&self, sample: &Sample, evaluator: &str) -> Option<Option<f64>> {
        self.outcomes
            .get(evaluator)?
            .cells
            .get(&sample.hash)
            .map(|c| c.0)
    }

    /// The pinned score and component scores of a sample that had an outcome.
    pub fn pinned(&self, sample: &Sample, evaluator: &str) -> Option<(Option<f64>, &[f64])> {
        let cell = self.outcomes.get(evaluator)?.cells.get(&sample.hash)?;
        cell.3.then_some((cell.0, &cell.1))
    }

    /// The pinned outcome of a sample, when it was kept whole (see [`Kept`]).
    pub fn outcome(&self, sample: &Sample, evaluator: &str) -> Option<&Arc<Outcome>> {
        self.outcomes
            .get(evaluator)?
            .cells
            .get(&sample.hash)?
            .2
            .as_ref()
    }
}

impl App {
    pub(super) fn pin_baseline(&mut self) {
        let mut outcomes: HashMap<String, BaselineOf> = HashMap::new();
        for (e, info) in self.evaluators.iter().enumerate() {
            let of = outcomes.entry(info.name.clone()).or_default();
            for s in &self.samples {
                if let Some(cell) = s.cells.get(e) {
                    let whole = cell.full().cloned().or_else(|| {
                        let d = self.detail_for(s.hash, &info.name)?;
                        d.outcome.clone()
                    });
                    let pinned = (cell.score(), cell.parts.clone(), whole);
                    of.cells.insert(
                        s.hash,
                        (pinned.0, pinned.1, pinned.2, cell.outcome.is_some()),
                    );
                }
            }
        }
        let count = self.samples.len();
        self.revision += 1;
        self.signal_stale = true;
        self.pinned_stale = true;
        self.baseline = Some(Baseline {
            outcomes,
            attribution: Vec::new(),
            keys: self.code_keys.clone(),
        });
        self.attribute();
        // samples no evaluator has scored yet have nothing to compare with later
        let unscored = self
            .samples
            .iter()
            .filter(|s| s.cells.iter().any(|c| c.outcome.is_none()))
            .count();
        let later = match (unscored, self.baseline_key()) {
            (0, _) => String::new(),
            (n, key) => {
                format!(" ({n} not scored yet get no Δ: press {key} again when the run is done)")
            }
        };
        self.notice = Some(format!(
            "baseline pinned: {count} samples; Δ shows the change from here{later}"
        ));
        self.refresh_view();
    }

    fn baseline_key(&self) -> String {
        self.keymap.label(crate::ui::keymap::Action::Baseline)
    }

    /// Recomputes, per evaluator, what changed since the baseline and through which
    /// components (shown under the list while a baseline is pinned).
    pub fn attribute(&mut self) {
        let Some(baseline) = &self.baseline else {
            return;
        };
        let threshold = self.threshold;
        let lines = self
            .evaluators
            .iter()
            .enumerate()
            .map(|(e, info)| {
                let of = baseline.outcomes.get(&info.name);
                let pairs = self.samples.iter().filter_map(|s| {
                    let (score, parts, _, _) = of?.cells.get(&s.hash)?;
                    let cell = s.cells.get(e).filter(|c| c.outcome.is_some())?;
                    Some(((*score, &parts[..]), (cell.score(), &cell.parts[..])))
                });
                let names = self.components.get(e).map(|c| c.as_slice()).unwrap_or(&[]);
                format!(
                    "{}: {}",
                    info.name,
                    crate::insight::attribute_compact(pairs, names, threshold)
                )
            })
            .collect();
        if let Some(b) = self.baseline.as_mut() {
            b.attribution = lines;
        }
    }

    /// A sample's rank among all samples in the baseline and now (1 = best score),
    /// remembered until the scores change (the breakdown asks for it every frame).
    pub fn rank_change(&mut self, sample: usize, evaluator: usize) -> Option<(usize, usize)> {
        let key = (sample, evaluator, self.revision);
        if let Some((k, v)) = self.rank_memo {
            if k == key {
                return v;
            }
        }
        let v = self.count_rank_change(sample, evaluator);
        self.rank_memo = Some((key, v));
        v
    }

    /// The rank change [`App::settle`] found for the selected sample, when it is of
    /// `sample` and the scores did not change since.
    pub fn known_rank_change(&self, sample: usize, evaluator: usize) -> Option<(usize, usize)> {
        let (key, value) = self.rank_memo?;
        (key == (sample, evaluator, self.revision))
            .then_some(value)
            .flatten()
    }

    /// Counts the better scores: one pass over the samples.
    pub(super) fn count_rank_change(
        &self,
        sample: usize,
        evaluator: usize,
    ) -> Option<(usize, usize)> {
        let baseline = self.baseline.as_ref()?;
        let name = &self.evaluators.get(evaluator)?.name;
        let of = baseline.outcomes.get(name)?;
        let own = self.samples.get(sample)?;
        let was = of.cells.get(&own.hash)?.0?;
        let now = own.cells.get(evaluator)?.score()?;
        let (mut before, mut after) = (1, 1);
        for s in &self.samples {
            if of
                .cells
                .get(&s.hash)
                .and_then(|c| c.0)
                .is_some_and(|x| x > was)
            {
                before += 1;
            }
            if s.cells
                .get(evaluator)
                .and_then(|c| c.score())
                .is_some_and(|x| x > now)
            {
                after += 1;
            }
        }
        Some((before, after))
    }

    /// The change of a sample's score from the baseline.
    pub fn delta(&self, sample: &Sample, evaluator: usize) -> Option<f64> {
        let baseline = self.baseline.as_ref()?;
        let name = &self.evaluators.get(evaluator)?.name;
        let before = baseline.score(sample, name)??;
        Some(sample.cells.get(evaluator)?.score()? - before)
    }
}
