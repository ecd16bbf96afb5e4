//! `rwb run`'s `reward` rows (SPEC §14): with `[training]` in `rwb.toml`, each
//! sample's combined reward, advantage and group, once every result of the run is in
//! (an advantage depends on the whole group, and the batch).
//!
//! The samples' groups are read on a thread of its own while the run goes on, placed
//! as the workbench places them ([`training::place_sample`]: a TRL log's rollouts of
//! one prompt within one step, from the source's facts); the arithmetic is
//! `training`'s.

use super::output::SampleResults;
use crate::model::SampleRef;
use crate::training::{self, Grouping, Place, Settings, Signal, SignalSummary};
use crate::workspace::{SamplesFile, SamplesReader, REWARD_ROW};
use serde::Serialize;
use std::thread::JoinHandle;

/// The scores of a run gathered for its reward rows.
pub struct RewardRows {
    pub settings: Settings,
    weights: Vec<f64>,
    evaluators: usize,
    /// `scores[sample * evaluators + e]`, NaN where there is no score.
    scores: Vec<f64>,
    at: Vec<SampleRef>,
    places: Option<JoinHandle<Vec<Place>>>,
    /// With `repeat = K` on some evaluator (K the largest): the scores of each repeat
    /// index, laid out as `scores`, so that advantages are computed once per repeat.
    pub repeats: Vec<Vec<f64>>,
}

/// The run's reward rows, computed.
pub struct Rewards {
    pub settings: Settings,
    pub at: Vec<SampleRef>,
    pub grouping: Grouping,
    pub signal: Signal,
    pub summary: SignalSummary,
    /// A group of another size than `group_size`, named (for stderr).
    pub warning: Option<String>,
    /// With repeats: the share of samples whose advantage changes sign between them.
    pub sign_change: Option<f64>,
}

/// One reward row as `--format jsonl` prints it.
#[derive(Serialize)]
pub struct RewardRow<'a> {
    pub sample: usize,
    pub file: &'a str,
    pub line: usize,
    pub evaluator: &'static str,
    pub score: Option<f64>,
    pub advantage: Option<f64>,
    pub group: Option<String>,
    pub group_size: u32,
}

impl RewardRows {
    /// Starts reading the places of the first `limit` samples of `files` (all with
    /// `None`) on a thread.
    pub fn start(
        settings: Settings,
        weights: Vec<f64>,
        files: &[SamplesFile],
        limit: Option<usize>,
    ) -> RewardRows {
        let by = settings.group.clone();
        let files = files.to_vec();
        let places = std::thread::Builder::new()
            .name("rwb-groups".into())
            .spawn(move || {
                let mut reader = SamplesReader::unhashed(&files);
                let mut places = Vec::new();
                while places.len() < limit.unwrap_or(usize::MAX) {
                    match reader.read_next() {
                        Some(Ok(line)) => {
                            let facts = line.at.facts.as_deref();
                            places.push(training::place_sample(facts, &by, || line.raw))
                        }
                        Some(Err(_)) | None => break,
                    }
                }
                places
            })
            .ok();
        RewardRows {
            settings,
            evaluators: weights.len(),
            weights,
            scores: Vec::new(),
            at: Vec::new(),
            places,
            repeats: Vec::new(),
        }
    }

    /// Takes a completed sample's scores (samples come in order). A sample on which
    /// an evaluator failed has no score at all: the trainer would have stopped on the
    /// exception, so no reward of it is the one trained on.
    pub fn add(&mut self, sample: &SampleResults) {
        let failed = sample.outcomes.iter().any(|o| o.is_error());
        for o in &sample.outcomes {
            let score = if failed { None } else { o.score };
            self.scores.push(score.unwrap_or(f64::NAN));
        }
        for (r, scores) in self.repeats.iter_mut().enumerate() {
            // a repeat that failed on some evaluator stops the trainer for that repeat
            let of = |o: &crate::model::Outcome| match &o.repeat {
                Some(rep) => rep.scores.get(r).copied().flatten(),
                None => o.score.filter(|_| !o.is_error()),
            };
            let failed = sample.outcomes.iter().any(|o| match &o.repeat {
                Some(rep) => rep.scores.get(r).is_some_and(Option::is_none),
                None => o.is_error(),
            });
            for o in &sample.outcomes {
                let score = if failed { None } else { of(o) };
                scores.push(score.unwrap_or(f64::NAN));
            }
        }
        self.at.push(sample.at.clone());
    }

    /// Groups the samples and computes their rewards and advantages.
    pub fn finish(self) -> Rewards {
        let n = self.at.len();
        let mut places = self.places.and_then(|h| h.join().ok()).unwrap_or_default();
        // a line that could not be read again (the file changed): a group of its own
        places.resize(n, Place::default());
        let grouping = Grouping::new(&places);
        let scores = training::Scores {
            values: &self.scores,
            evaluators: self.evaluators,
        };
        let signal = training::compute(&self.settings, &self.weights, scores, &grouping);
        let with_advantage = self.settings.algorithm != training::Algorithm::None;
        let sign_change = (with_advantage && !self.repeats.is_empty())
            .then(|| {
                let advantages: Vec<Vec<f64>> = self
                    .repeats
                    .iter()
                    .map(|values| {
                        let scores = training::Scores {
                            values,
                            evaluators: self.evaluators,
                        };
                        training::compute(&self.settings, &self.weights, scores, &grouping)
                            .advantage
                    })
                    .collect();
                crate::trust::repeat::share_sign_change(&advantages)
            })
            .flatten();
        let summary = training::summarize(&signal, &grouping, with_advantage);
        let warning = self
            .settings
            .group_size
            .and_then(|g| grouping.size_warning(g));
        Rewards {
            settings: self.settings,
            at: self.at,
            grouping,
            signal,
            summary,
            warning,
            sign_change,
        }
    }
}

fn number(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

impl Rewards {
    /// The reward row of the `i`-th sample of the run.
    pub fn row<'a>(&self, i: usize, labels: &'a [String]) -> RewardRow<'a> {
        let at = &self.at[i];
        let g = self.grouping.of[i] as usize;
        RewardRow {
            sample: at.index,
            file: &labels[at.file],
            line: at.line,
            evaluator: REWARD_ROW,
            score: number(self.signal.reward[i]),
            advantage: number(self.signal.advantage[i]),
            group: self.grouping.id(g),
            group_size: self.grouping.sizes[g],
        }
    }

    /// The summary's line: what the numbers follow and the shares with no signal.
    pub fn summary_line(&self) -> String {
        let s = &self.summary;
        let share = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        format!(
            "reward ({}): {} samples in {} groups, {} with all rewards equal; frac_reward_zero_std {}, frac_zero_advantage {}, {} unscorable",
            self.settings.describe(),
            s.samples,
            s.groups,
            s.groups_all_equal,
            share(s.frac_reward_zero_std),
            share(s.frac_zero_advantage),
            s.unscorable,
        )
    }
}
