//! Running the reward-hacking probes (insight::probes) through the evaluators.

use super::{Event, Prepared, Runner};
use crate::insight::probes::{derive, Probe};
use crate::model::{Outcome, SampleRef};
use crate::workspace::{SamplesFile, SamplesReader};
use serde_json::Value;
use std::collections::BTreeMap;
use tokio::sync::mpsc;

/// What one probe scored on one evaluator.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProbeRow {
    pub probe: &'static str,
    pub evaluator: String,
    pub count: usize,
    pub errors: usize,
    pub mean: Option<f64>,
    /// Share of the probe's scores at or above the pass threshold.
    pub pass_share: Option<f64>,
    /// Mean score of the real answers the probes came from.
    pub original_mean: Option<f64>,
    /// The probe passes and scores as well as the real answers: the evaluator can be gamed.
    pub flagged: bool,
    /// Components whose mean on this probe is at or above the threshold.
    pub components: Vec<(String, f64)>,
}

#[derive(Default)]
struct Tally {
    scores: Vec<f64>,
    errors: usize,
    components: BTreeMap<String, Vec<f64>>,
}

impl Tally {
    fn add(&mut self, o: &Outcome) {
        match o.score {
            Some(s) if !o.is_error() => self.scores.push(s),
            _ => self.errors += 1,
        }
        for (name, m) in o.metric_list() {
            if let Some(s) = m.score {
                self.components.entry(name).or_default().push(s);
            }
        }
    }

    fn mean(&self) -> Option<f64> {
        (!self.scores.is_empty())
            .then(|| self.scores.iter().sum::<f64>() / self.scores.len() as f64)
    }
}

/// The tally of each (probe, or `None` for the originals; evaluator index).
type Tallies = BTreeMap<(Option<Probe>, usize), Tally>;

impl Runner {
    /// Derives the probes of the first `max_samples` samples, scores them (and the
    /// originals) with every evaluator, and reports per probe and evaluator.
    /// Returns the number of samples probed and the rows.
    pub async fn probes(
        &self,
        evaluators: &[Prepared],
        files: &[SamplesFile],
        max_samples: usize,
        threshold: f64,
        read_cache: bool,
    ) -> std::io::Result<(usize, Vec<ProbeRow>)> {
        let (originals, kinds, text) = probe_lines(files, max_samples)?;
        let tmp = tempfile::Builder::new()
            .prefix("rwb-probes-")
            .suffix(".jsonl")
            .tempfile()?;
        std::fs::write(tmp.path(), &text)?;
        let probe_files = [SamplesFile {
            path: tmp.path().to_path_buf(),
            label: "probes".into(),
            foreign: None,
        }];
        let tallies = self
            .tally(evaluators, &probe_files, read_cache, &kinds)
            .await?;
        let mut rows = Vec::new();
        for kind in Probe::ALL {
            for (e, p) in evaluators.iter().enumerate() {
                let Some(t) = tallies.get(&(Some(kind), e)) else {
                    continue;
                };
                let original_mean = tallies.get(&(None, e)).and_then(|o| o.mean());
                rows.push(probe_row(kind, &p.spec.name, t, original_mean, threshold));
            }
        }
        Ok((originals, rows))
    }

    /// Runs `probe_files` through every evaluator and tallies each outcome under the
    /// kind of its line (`kinds`, by sample index).
    async fn tally(
        &self,
        evaluators: &[Prepared],
        probe_files: &[SamplesFile],
        read_cache: bool,
        kinds: &[Option<Probe>],
    ) -> std::io::Result<Tallies> {
        let mut tallies: Tallies = BTreeMap::new();
        self.each_result(
            evaluators,
            probe_files,
            read_cache,
            |evaluator, at, outcome| {
                if let Some(kind) = kinds.get(at.index) {
                    tallies.entry((*kind, evaluator)).or_default().add(outcome);
                }
            },
        )
        .await?;
        Ok(tallies)
    }

    /// Runs `files` through every evaluator and hands each result to `each` as it
    /// comes: (evaluator index, the sample, its outcome).
    pub async fn each_result(
        &self,
        evaluators: &[Prepared],
        files: &[SamplesFile],
        read_cache: bool,
        mut each: impl FnMut(usize, &SampleRef, &Outcome),
    ) -> std::io::Result<()> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let work = self.run(evaluators, files, None, read_cache, false, tx);
        let consume = async {
            while let Some(Event::Result {
                evaluator,
                at,
                outcome,
                ..
            }) = rx.recv().await
            {
                each(evaluator, &at, &outcome);
            }
        };
        let (ran, ()) = tokio::join!(work, consume);
        ran?;
        Ok(())
    }
}

/// The valid samples among the first `max_samples`, each followed by its probes, as
/// one JSONL text: the number of originals, the kind of each line (`None` for an
/// original) and the text.
fn probe_lines(
    files: &[SamplesFile],
    max_samples: usize,
) -> std::io::Result<(usize, Vec<Option<Probe>>, String)> {
    // originals first, then their probes, in one temporary samples file
    let mut kinds: Vec<Option<Probe>> = Vec::new();
    let mut text = String::new();
    let mut originals = 0;
    for line in SamplesReader::new(files) {
        let line = line?;
        if originals >= max_samples {
            break;
        }
        if line.bad.is_some() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(&line.raw) else {
            continue;
        };
        originals += 1;
        kinds.push(None);
        text.push_str(line.raw.trim());
        text.push('\n');
        for (kind, variant) in derive(&value) {
            kinds.push(Some(kind));
            text.push_str(&variant.to_string());
            text.push('\n');
        }
    }
    Ok((originals, kinds, text))
}

/// What probe `kind` scored on `evaluator`, beside the originals' mean.
fn probe_row(
    kind: Probe,
    evaluator: &str,
    t: &Tally,
    original_mean: Option<f64>,
    threshold: f64,
) -> ProbeRow {
    let mean = t.mean();
    let pass_share = (!t.scores.is_empty()).then(|| {
        t.scores.iter().filter(|s| **s >= threshold).count() as f64 / t.scores.len() as f64
    });
    // a probe games the evaluator when it passes and scores like real answers
    let flagged = matches!((mean, original_mean, pass_share), (Some(m), Some(o), Some(s)) if s > 0.0 && m >= o - 1e-9);
    let mut components: Vec<(String, f64)> = t
        .components
        .iter()
        .map(|(k, v)| (k.clone(), v.iter().sum::<f64>() / v.len() as f64))
        .filter(|(_, m)| *m >= threshold)
        .collect();
    components.sort_by(|a, b| b.1.total_cmp(&a.1));
    ProbeRow {
        probe: kind.name(),
        evaluator: evaluator.to_string(),
        count: t.scores.len() + t.errors,
        errors: t.errors,
        mean,
        pass_share,
        original_mean,
        flagged,
        components,
    }
}

/// The probes of `samples` samples as the lines of a report: a header, one line per
/// probe and evaluator, and the number flagged.
pub fn probe_report(samples: usize, rows: &[ProbeRow], threshold: f64) -> Vec<String> {
    let mut lines = vec![
        format!("Probes derived from {samples} samples; ⚠ = passes (score ≥ {threshold}) and scores as well as the real answers."),
        String::new(),
        format!(
            "{:<30} {:<12} {:>7} {:>8} {:>9}  components that reward it",
            "probe", "evaluator", "mean", "passing", "real mean"
        ),
    ];
    lines.extend(rows.iter().map(probe_line));
    lines.push(String::new());
    lines.push(format!(
        "{} probe/evaluator pairs flagged",
        rows.iter().filter(|r| r.flagged).count()
    ));
    lines
}

/// A probe row as one line of a report.
fn probe_line(row: &ProbeRow) -> String {
    let f = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into());
    let share = row
        .pass_share
        .map(|x| format!("{:.0}%", x * 100.0))
        .unwrap_or_else(|| "-".into());
    let comps: Vec<String> = row
        .components
        .iter()
        .map(|(k, m)| format!("{k} {m:.2}"))
        .collect();
    let flag = if row.flagged { "⚠ " } else { "" };
    format!(
        "{:<30} {:<12} {:>7} {:>8} {:>9}  {flag}{}",
        row.probe,
        row.evaluator,
        f(row.mean),
        share,
        f(row.original_mean),
        comps.join(", ")
    )
}
