//! `rwb run`'s verifier statistics (SPEC §20): each sample's correctness label (the
//! `label = "COLUMN"` of its `[samples.NAME]` or a RewardBench completion's role, else
//! a human pass/fail label of §16), its rollout group and its RewardBench place come
//! with its place, as seen when its row was converted (`sources::seen`); only the
//! samples of an rwb JSONL file, which has no facts, are read again for their groups,
//! on a thread of their own while the run goes on. The printer hands each completed
//! sample's scores; the arithmetic is `trust::verifier`'s and `trust::rewardbench`'s.

use super::output::SampleResults;
use crate::model::Label;
use crate::training::{place_sample, GroupBy, GroupKey};
use crate::trust::rewardbench::{self, Item};
use crate::trust::truth::Sources;
use crate::trust::verifier::{Verifier, VerifierBuilder};
use crate::workspace::{SamplesFile, SamplesReader};
use std::collections::HashMap;
use std::thread::JoinHandle;

/// What is known of one sample: its label (`None`: none; `Some(None)`: a label that
/// could not be read), its group and its RewardBench place.
#[derive(Clone, Default)]
struct Known {
    label: Option<Option<bool>>,
    group: Option<GroupKey>,
    item: Option<Item>,
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
    /// Per completed sample: its index, a human pass/fail label, and what its facts
    /// said (`None`: the second reader's finding is taken).
    at: Vec<(usize, Option<bool>, Option<Known>)>,
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
            scores: Vec::new(),
            warnings: Vec::new(),
            unreadable: 0,
        })
    }

    /// Takes a completed sample's scores (an error is NaN) and its human label.
    #[inline]
    pub fn add(&mut self, sample: &SampleResults, human: Option<bool>) {
        for o in &sample.outcomes {
            let s = if o.is_error() { None } else { o.score };
            self.scores.push(s.unwrap_or(f64::NAN));
        }
        let facts = sample.at.facts.as_deref();
        let known = match sample.at.seen.as_deref() {
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
                let item = seen.rewardbench.as_ref().and_then(Item::from_json);
                let label = label.or_else(|| item.as_ref().map(|i| Some(i.chosen)));
                let group = crate::sources::seen::quick_group(facts, Some(seen));
                Some(Known { label, group, item })
            }
            // a foreign row with nothing seen: one its reader refused, or one with
            // nothing to see on its line (its group, if logged, is in its facts);
            // nothing to read again
            None if self.foreign(sample.at.file) => Some(Known {
                group: crate::sources::seen::quick_group(facts, None),
                ..Known::default()
            }),
            None => {
                self.start_reading();
                None
            }
        };
        self.at.push((sample.at.index, human, known));
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
        let mut items: Vec<Vec<(Item, Option<f64>)>> = vec![Vec::new(); self.evaluators];
        let mut ids: HashMap<GroupKey, u32> = HashMap::new();
        let none = Known::default();
        for (k, (index, human, known)) in self.at.iter().enumerate() {
            let known = match known {
                Some(known) => known,
                None => read.known.get(*index).unwrap_or(&none),
            };
            let label = match known.label {
                Some(l) => Some(l),
                None => human.map(Some),
            };
            let group = known.group.map(|g| {
                let next = ids.len() as u32;
                *ids.entry(g).or_insert(next)
            });
            for (e, b) in builders.iter_mut().enumerate() {
                let s = self.scores[k * self.evaluators + e];
                let score = (!s.is_nan()).then_some(s);
                b.add(score, label, group);
                if let Some(item) = &known.item {
                    items[e].push((item.clone(), score));
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
