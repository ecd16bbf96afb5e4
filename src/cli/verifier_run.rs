//! `rwb run`'s verifier statistics (SPEC §20): each sample's correctness label (the
//! `label = "COLUMN"` of its `[samples.NAME]` or a RewardBench completion's role, else
//! a human pass/fail label of §16), its rollout group and its RewardBench place come
//! with its place, as seen when its row was converted (`sources::seen`); only the
//! samples of an rwb JSONL file, which has no facts, are read again for their groups,
//! on a thread of their own while the run goes on. The printer hands each completed
//! sample's scores; the arithmetic is `trust::verifier`'s and `trust::rewardbench`'s.

use super::output::SampleResults;
use crate::model::{Label, Seen};
use crate::training::{place_sample, GroupBy, GroupKey};
use crate::trust::rewardbench::{self, Item};
use crate::trust::truth::Sources;
use crate::trust::verifier::{Verifier, VerifierBuilder};
use crate::workspace::{SamplesFile, SamplesReader};
use std::thread::JoinHandle;

/// What is known of one sample: its label (`None`: none; `Some(None)`: a label that
/// could not be read), its group and its RewardBench place.
#[derive(Clone, Default)]
struct Known {
    label: Option<Option<bool>>,
    group: Option<GroupKey>,
    item: Option<Item>,
}

/// A completed sample kept until the run ends, in order: one whose label or group
/// the second reader gives (`later`), or any after the first such (so that every
/// sample is taken in the order it came).
struct Pending {
    index: usize,
    label: Option<Option<bool>>,
    human: Option<bool>,
    /// Its group's number among the run's groups ([`NO_GROUP`]: in none).
    group: u32,
    item: Option<Item>,
    later: bool,
}

/// The group number of a sample in none.
const NO_GROUP: u32 = u32::MAX;

/// What the reading thread found of each sample, in sample order.
#[derive(Default)]
struct Read {
    known: Vec<Known>,
    warnings: Vec<String>,
    unreadable: usize,
}

/// The scores of a run gathered for its verifier statistics, each evaluator's as
/// they come (see [`VerifierBuilder`]).
pub struct VerifierRun {
    /// The second reader, started for the first sample whose facts say nothing.
    reading: Option<JoinHandle<Read>>,
    files: Vec<SamplesFile>,
    sources: Sources,
    limit: Option<usize>,
    /// Each evaluator's statistics, and its scores of the RewardBench places.
    builders: Vec<VerifierBuilder>,
    items: Vec<Vec<(Item, Option<f64>)>>,
    /// The samples kept to the end ([`Pending`]) and their scores
    /// (`pending_scores[k * evaluators + e]`, NaN on an error).
    pending: Vec<Pending>,
    pending_scores: Vec<f64>,
    /// The run's groups, numbered as they first come, and the last one numbered (a
    /// group's rollouts mostly come one after another).
    ids: foldhash::HashMap<GroupKey, u32>,
    last_group: Option<(GroupKey, u32)>,
    warnings: Vec<String>,
    unreadable: usize,
}

impl VerifierRun {
    /// `None` when no samples file has a `label` column or RewardBench rows and the
    /// workspace has no human labels (`human`).
    pub fn start(
        files: &[SamplesFile],
        limit: Option<usize>,
        evaluators: usize,
        threshold: f64,
        human: bool,
    ) -> Option<VerifierRun> {
        let sources = Sources::of(files);
        if !human && !sources.any() {
            return None;
        }
        Some(VerifierRun {
            reading: None,
            files: files.to_vec(),
            sources,
            limit,
            builders: vec![VerifierBuilder::new(threshold); evaluators],
            items: vec![Vec::new(); evaluators],
            pending: Vec::new(),
            pending_scores: Vec::new(),
            ids: foldhash::HashMap::default(),
            last_group: None,
            warnings: Vec::new(),
            unreadable: 0,
        })
    }

    /// Takes a completed sample's scores, what was seen of its row (when its run
    /// was handed it) and its human label.
    #[inline]
    pub fn add(&mut self, sample: &SampleResults, seen: Option<&Seen>, human: Option<bool>) {
        let facts = sample.at.facts.as_deref();
        let (label, group, item, later) = match seen {
            Some(seen) => {
                let label = match &seen.label {
                    None => None,
                    Some(Label::Read(b)) => Some(Some(*b)),
                    Some(Label::Unreadable { unreadable }) => {
                        self.unreadable_label(sample, unreadable);
                        Some(None)
                    }
                };
                let item = seen.rewardbench.as_deref().and_then(Item::from_json);
                let label = label.or_else(|| item.as_ref().map(|i| Some(i.chosen)));
                let group = crate::sources::seen::quick_group(facts, Some(seen));
                (label, self.group_id(group), item, false)
            }
            // a foreign row with nothing seen: one its reader refused, or one with
            // nothing to see on its line (its group, if logged, is in its facts);
            // nothing to read again
            None if self.foreign(sample.at.file) => {
                let group = crate::sources::seen::quick_group(facts, None);
                (None, self.group_id(group), None, false)
            }
            None => {
                self.start_reading();
                (None, NO_GROUP, None, true)
            }
        };
        let score = |o: &crate::model::Outcome| o.score.filter(|_| !o.is_error());
        if later || !self.pending.is_empty() {
            let scores = sample.outcomes.iter().map(|o| score(o).unwrap_or(f64::NAN));
            self.pending_scores.extend(scores);
            self.pending.push(Pending {
                index: sample.at.index,
                label,
                human,
                group,
                item,
                later,
            });
            return;
        }
        let scores = sample.outcomes.iter().map(score);
        take(
            &mut self.builders,
            &mut self.items,
            (label, human, group, item),
            scores,
        );
    }

    /// Notes a label that could not be read, naming the first few.
    fn unreadable_label(&mut self, sample: &SampleResults, text: &str) {
        self.unreadable += 1;
        if self.warnings.len() < NAMED {
            let column = self.sources.columns.get(sample.at.file).cloned().flatten();
            let file = self
                .files
                .get(sample.at.file)
                .map_or("", |f| f.label.as_str());
            self.warnings.push(crate::trust::truth::unreadable_label(
                &format!("{file}:{}", sample.at.line),
                column.as_deref().unwrap_or("label"),
                text,
            ));
        }
    }

    /// The number of group `key` among the run's groups (numbered as they first
    /// come), or [`NO_GROUP`].
    fn group_id(&mut self, key: Option<GroupKey>) -> u32 {
        let Some(key) = key else {
            return NO_GROUP;
        };
        if let Some((_, id)) = self.last_group.filter(|(last, _)| *last == key) {
            return id;
        }
        let next = self.ids.len() as u32;
        let id = *self.ids.entry(key).or_insert(next);
        self.last_group = Some((key, id));
        id
    }

    /// Whether samples file `file` is another tool's (its rows come with facts).
    fn foreign(&self, file: usize) -> bool {
        self.files.get(file).is_some_and(|f| f.foreign.is_some())
    }

    fn start_reading(&mut self) {
        if self.reading.is_some() {
            return;
        }
        let (files, sources, limit) = (self.files.clone(), self.sources.clone(), self.limit);
        self.reading = std::thread::Builder::new()
            .name("rwb-verifier".into())
            .spawn(move || read(&files, &sources, limit))
            .ok();
    }

    /// Each evaluator's `verifier: {...}` (with `rewardbench` when the samples are
    /// RewardBench rows), or `None` for one with nothing labelled; and the warnings
    /// of labels that could not be read.
    pub fn finish(mut self) -> (Vec<Option<Verdicts>>, Vec<String>) {
        let mut read = self.reading.and_then(|h| h.join().ok()).unwrap_or_default();
        let evaluators = self.builders.len();
        for (k, p) in self.pending.into_iter().enumerate() {
            let known = match p.later {
                false => (p.label, p.human, p.group, p.item),
                true => {
                    let known = read.known.get_mut(p.index);
                    let known = known.map(std::mem::take).unwrap_or_default();
                    let group = known.group.map_or(NO_GROUP, |g| {
                        let next = self.ids.len() as u32;
                        *self.ids.entry(g).or_insert(next)
                    });
                    (known.label, p.human, group, known.item)
                }
            };
            let scores = &self.pending_scores[k * evaluators..(k + 1) * evaluators];
            let scores = scores.iter().map(|s| (!s.is_nan()).then_some(*s));
            take(&mut self.builders, &mut self.items, known, scores);
        }
        let mut warnings = self.warnings;
        warnings.append(&mut read.warnings);
        warnings.truncate(NAMED);
        let unreadable = self.unreadable + read.unreadable;
        if unreadable > warnings.len() {
            warnings.push(format!(
                "and {} more labels that could not be read",
                unreadable - warnings.len()
            ));
        }
        let out = self
            .builders
            .into_iter()
            .zip(&self.items)
            .map(|(b, items)| {
                let rewardbench = rewardbench::score(items);
                (b.labelled() || rewardbench.is_some()).then(|| Verdicts {
                    verifier: b.finish(),
                    rewardbench,
                })
            })
            .collect();
        (out, warnings)
    }
}

/// Gives each evaluator's statistics one sample: its label (else its human label),
/// group and RewardBench place, and each evaluator's score (`None` on an error).
fn take(
    builders: &mut [VerifierBuilder],
    items: &mut [Vec<(Item, Option<f64>)>],
    (label, human, group, mut item): (Option<Option<bool>>, Option<bool>, u32, Option<Item>),
    scores: impl Iterator<Item = Option<f64>>,
) {
    let label = label.or(human.map(Some));
    let group = (group != NO_GROUP).then_some(group);
    let last = builders.len().saturating_sub(1);
    for (e, ((b, items), score)) in builders.iter_mut().zip(items).zip(scores).enumerate() {
        b.add(score, label, group);
        // the last evaluator takes the place, the others a copy
        let place = match e == last {
            true => item.take(),
            false => item.clone(),
        };
        if let Some(place) = place {
            items.push((place, score));
        }
    }
}

/// One evaluator's verifier statistics.
pub struct Verdicts {
    pub verifier: Verifier,
    pub rewardbench: Option<rewardbench::Scores>,
}

impl Verdicts {
    /// `verifier: {...}` as the JSON summary holds it.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.verifier).expect("summaries serialize");
        if let (Some(rb), Some(m)) = (&self.rewardbench, v.as_object_mut()) {
            m.insert(
                "rewardbench".into(),
                serde_json::to_value(rb).expect("summaries serialize"),
            );
        }
        v
    }

    pub fn lines(&self, name: &str) -> Vec<String> {
        let mut out = self.verifier.lines(name);
        if let Some(rb) = &self.rewardbench {
            out.extend(rb.lines(name));
        }
        out
    }
}

/// How many unreadable labels are named one by one.
const NAMED: usize = 10;

/// Reads every sample line for what its facts did not say (an rwb JSONL file's
/// samples: their groups).
fn read(files: &[SamplesFile], sources: &Sources, limit: Option<usize>) -> Read {
    let mut out = Read::default();
    let mut reader = SamplesReader::unhashed(files);
    let mut warnings = Vec::new();
    while out.known.len() < limit.unwrap_or(usize::MAX) {
        let Some(Ok(line)) = reader.read_next() else {
            break;
        };
        let place = || format!("{}:{}", files[line.at.file].label, line.at.line);
        let (label, item) = sources.read(line.at.file, line.raw, place, &mut warnings);
        if matches!(label, Some(None)) {
            out.unreadable += 1;
        }
        warnings.truncate(NAMED);
        let group = place_sample(line.at.facts.as_deref(), &GroupBy::Prompt, || line.raw).key;
        out.known.push(Known { label, group, item });
    }
    out.warnings = warnings;
    out
}
