//! `rwb run`'s verifier statistics (SPEC §20): each sample's correctness label (the
//! `label = "COLUMN"` of its `[samples.NAME]` or a RewardBench completion's role, as
//! `trust::truth` reads them, else a human pass/fail label of §16), its rollout group and its RewardBench place
//! are read on a thread of their own while the run goes on; the printer hands each
//! completed sample's scores; the arithmetic is `trust::verifier`'s and
//! `trust::rewardbench`'s.

use super::output::SampleResults;
use crate::training::{place_sample, GroupBy};
use crate::trust::rewardbench::{self, Item};
use crate::trust::truth::Sources;
use crate::trust::verifier::{Verifier, VerifierBuilder};
use crate::workspace::{SamplesFile, SamplesReader};
use std::collections::HashMap;
use std::thread::JoinHandle;

/// What the reading thread found of each sample, in sample order.
#[derive(Default)]
struct Read {
    /// `None`: no label; `Some(None)`: a label that could not be read.
    labels: Vec<Option<Option<bool>>>,
    groups: Vec<Option<u32>>,
    /// RewardBench places by sample index (only RewardBench rows have one).
    items: HashMap<usize, Item>,
    warnings: Vec<String>,
    unreadable: usize,
}

/// The scores of a run gathered for its verifier statistics.
pub struct VerifierRun {
    reading: Option<JoinHandle<Read>>,
    evaluators: usize,
    threshold: f64,
    /// Per completed sample: its index and a human pass/fail label.
    at: Vec<(usize, Option<bool>)>,
    /// `scores[k * evaluators + e]`, NaN on an error.
    scores: Vec<f64>,
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
        let files = files.to_vec();
        let reading = std::thread::Builder::new()
            .name("rwb-verifier".into())
            .spawn(move || read(&files, &sources, limit))
            .ok();
        Some(VerifierRun {
            reading,
            evaluators,
            threshold,
            at: Vec::new(),
            scores: Vec::new(),
        })
    }

    /// Takes a completed sample's scores (an error is NaN) and its human label.
    #[inline]
    pub fn add(&mut self, sample: &SampleResults, human: Option<bool>) {
        for o in &sample.outcomes {
            let s = if o.is_error() { None } else { o.score };
            self.scores.push(s.unwrap_or(f64::NAN));
        }
        self.at.push((sample.at.index, human));
    }

    /// Each evaluator's `verifier: {...}` (with `rewardbench` when the samples are
    /// RewardBench rows), or `None` for one with nothing labelled; and the warnings
    /// of labels that could not be read.
    pub fn finish(self) -> (Vec<Option<Verdicts>>, Vec<String>) {
        let read = self.reading.and_then(|h| h.join().ok()).unwrap_or_default();
        let mut builders = vec![VerifierBuilder::default(); self.evaluators];
        let mut items: Vec<Vec<(Item, Option<f64>)>> = vec![Vec::new(); self.evaluators];
        for (k, &(index, human)) in self.at.iter().enumerate() {
            let item = read.items.get(&index);
            let label = match read.labels.get(index).copied().flatten() {
                Some(l) => Some(l),
                None => human
                    .map(Some)
                    .or_else(|| item.as_ref().map(|i| Some(i.chosen))),
            };
            let group = read.groups.get(index).copied().flatten();
            for (e, b) in builders.iter_mut().enumerate() {
                let s = self.scores[k * self.evaluators + e];
                let score = (!s.is_nan()).then_some(s);
                b.add(score, label, group);
                if let Some(item) = item {
                    items[e].push((item.clone(), score));
                }
            }
        }
        let mut warnings = read.warnings;
        if read.unreadable > warnings.len() {
            warnings.push(format!(
                "and {} more labels that could not be read",
                read.unreadable - warnings.len()
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

fn read(files: &[SamplesFile], sources: &Sources, limit: Option<usize>) -> Read {
    let mut out = Read::default();
    let mut groups: HashMap<[u8; 16], u32> = HashMap::new();
    let mut reader = SamplesReader::unhashed(files);
    let mut warnings = Vec::new();
    while out.labels.len() < limit.unwrap_or(usize::MAX) {
        let Some(Ok(line)) = reader.read_next() else {
            break;
        };
        let place = || format!("{}:{}", files[line.at.file].label, line.at.line);
        let (label, item) = sources.read(line.at.file, line.raw, place, &mut warnings);
        if matches!(label, Some(None)) {
            out.unreadable += 1;
        }
        warnings.truncate(NAMED);
        out.labels.push(label);
        if let Some(item) = item {
            out.items.insert(out.labels.len() - 1, item);
        }
        let place = place_sample(line.at.facts.as_deref(), &GroupBy::Prompt, || line.raw);
        let next = groups.len() as u32;
        out.groups
            .push(place.key.map(|k| *groups.entry(k).or_insert(next)));
    }
    out.warnings = warnings;
    out
}
