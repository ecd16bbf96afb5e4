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

/// What is known of one completed sample as it is added: its label and group, or
/// that the second reader's finding is to be taken (`later`).
#[derive(Clone, Copy)]
struct Entry {
    index: usize,
    label: Option<Option<bool>>,
    human: Option<bool>,
    /// Its group's number among the run's groups ([`NO_GROUP`]: in none).
    group: u32,
    later: bool,
}

/// The group number of a sample in none.
const NO_GROUP: u32 = u32::MAX;

impl Entry {
    fn known(index: usize, label: Option<Option<bool>>, human: Option<bool>, group: u32) -> Entry {
        Entry {
            index,
            label,
            human,
            group,
            later: false,
        }
    }
}

/// What the reading thread found of each sample, in sample order.
#[derive(Default)]
struct Read {
    known: Vec<Known>,
    warnings: Vec<String>,
    unreadable: usize,
}

/// The scores of a run gathered for its verifier statistics.
pub struct VerifierRun {
    /// The second reader, started for the first sample whose facts say nothing.
    reading: Option<JoinHandle<Read>>,
    files: Vec<SamplesFile>,
    sources: Sources,
    limit: Option<usize>,
    evaluators: usize,
    threshold: f64,
    /// Per completed sample, in order: what is known of it ([`Entry`]), and the
    /// RewardBench places of those that have one, by their place in `at`.
    at: Vec<Entry>,
    items: Vec<(usize, Item)>,
    /// The run's groups, numbered as they first come, and the last one numbered (a
    /// group's rollouts mostly come one after another).
    ids: foldhash::HashMap<GroupKey, u32>,
    last_group: Option<(GroupKey, u32)>,
    /// `scores[k * evaluators + e]`, NaN on an error.
    scores: Vec<f64>,
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
            evaluators,
            threshold,
            at: Vec::new(),
            items: Vec::new(),
            ids: foldhash::HashMap::default(),
            last_group: None,
            scores: Vec::new(),
            warnings: Vec::new(),
            unreadable: 0,
        })
    }

    /// Takes a completed sample's scores (an error is NaN), what was seen of its
    /// row (when its run was handed it) and its human label.
    #[inline]
    pub fn add(&mut self, sample: &SampleResults, seen: Option<&Seen>, human: Option<bool>) {
        for o in &sample.outcomes {
            let s = if o.is_error() { None } else { o.score };
            self.scores.push(s.unwrap_or(f64::NAN));
        }
        let facts = sample.at.facts.as_deref();
        let known = match seen {
            Some(seen) => {
                let label = match &seen.label {
                    None => None,
                    Some(Label::Read(b)) => Some(Some(*b)),
                    Some(Label::Unreadable { unreadable }) => {
                        self.unreadable += 1;
                        if self.warnings.len() < NAMED {
                            let column =
                                self.sources.columns.get(sample.at.file).cloned().flatten();
                            let file = self
                                .files
                                .get(sample.at.file)
                                .map_or("", |f| f.label.as_str());
                            self.warnings.push(crate::trust::truth::unreadable_label(
                                &format!("{file}:{}", sample.at.line),
                                column.as_deref().unwrap_or("label"),
                                unreadable,
                            ));
                        }
                        Some(None)
                    }
                };
                let item = seen.rewardbench.as_deref().and_then(Item::from_json);
                let label = label.or_else(|| item.as_ref().map(|i| Some(i.chosen)));
                if let Some(item) = item {
                    self.items.push((self.at.len(), item));
                }
                let group = crate::sources::seen::quick_group(facts, Some(seen));
                Entry::known(sample.at.index, label, human, self.group_id(group))
            }
            // a foreign row with nothing seen: one its reader refused, or one with
            // nothing to see on its line (its group, if logged, is in its facts);
            // nothing to read again
            None if self.foreign(sample.at.file) => {
                let group = crate::sources::seen::quick_group(facts, None);
                Entry::known(sample.at.index, None, human, self.group_id(group))
            }
            None => {
                self.start_reading();
                Entry {
                    later: true,
                    ..Entry::known(sample.at.index, None, human, NO_GROUP)
                }
            }
        };
        self.at.push(known);
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
    pub fn finish(self) -> (Vec<Option<Verdicts>>, Vec<String>) {
        let mut read = self.reading.and_then(|h| h.join().ok()).unwrap_or_default();
        let mut builders = vec![VerifierBuilder::default(); self.evaluators];
        for b in &mut builders {
            b.reserve(self.at.len());
        }
        let mut items: Vec<Vec<(Item, Option<f64>)>> = vec![Vec::new(); self.evaluators];
        let mut ids = self.ids;
        let mut placed = self.items.into_iter().peekable();
        for (k, entry) in self.at.iter().enumerate() {
            let (label, group, mut item) = match entry.later {
                false => {
                    let item = placed.next_if(|(at, _)| *at == k).map(|(_, item)| item);
                    (entry.label, entry.group, item)
                }
                true => {
                    let known = read.known.get_mut(entry.index);
                    let known = known.map(std::mem::take).unwrap_or_default();
                    let group = known.group.map_or(NO_GROUP, |g| {
                        let next = ids.len() as u32;
                        *ids.entry(g).or_insert(next)
                    });
                    (known.label, group, known.item)
                }
            };
            let label = match label {
                Some(l) => Some(l),
                None => entry.human.map(Some),
            };
            let group = (group != NO_GROUP).then_some(group);
            for (e, b) in builders.iter_mut().enumerate() {
                let s = self.scores[k * self.evaluators + e];
                let score = (!s.is_nan()).then_some(s);
                b.add(score, label, group);
                // the last evaluator takes the place, the others a copy
                let place = match e + 1 == self.evaluators {
                    true => item.take(),
                    false => item.clone(),
                };
                if let Some(place) = place {
                    items[e].push((place, score));
                }
            }
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
        let out = builders
            .iter()
            .zip(&items)
            .map(|(b, items)| {
                let rewardbench = rewardbench::score(items);
                (b.labelled() || rewardbench.is_some()).then(|| Verdicts {
                    verifier: b.finish(self.threshold),
                    rewardbench,
                })
            })
            .collect();
        (out, warnings)
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
