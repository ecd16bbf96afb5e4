//! `rwb probe`: score reward-hacking variants of the samples (insight::probes) and
//! report which evaluators, and which of their components, give them high scores.

use super::{Fail, Format, ProbeArgs, Session};
use crate::insight::probes::{derive, Probe};
use crate::model::Outcome;
use crate::runner::Event;
use crate::workspace::{SamplesFile, SamplesReader};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::sync::mpsc;

/// What one (probe, evaluator) scored.
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

    fn pass_share(&self, threshold: f64) -> Option<f64> {
        (!self.scores.is_empty()).then(|| {
            self.scores.iter().filter(|s| **s >= threshold).count() as f64
                / self.scores.len() as f64
        })
    }
}

pub(super) async fn probe(args: ProbeArgs) -> Result<ExitCode, Fail> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let session = Session::open(dir, &args.shared)?;
    let threshold = session.workspace.config.threshold();

    // originals first, then their probes, in one temporary samples file
    let mut kinds: Vec<Option<Probe>> = Vec::new();
    let mut text = String::new();
    let mut originals = 0;
    for line in SamplesReader::new(&session.workspace.samples) {
        let line = line.map_err(|e| Fail::Usage(e.to_string()))?;
        if originals >= args.max_samples {
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
    let tmp = tempfile::Builder::new()
        .prefix("rwb-probes-")
        .suffix(".jsonl")
        .tempfile()
        .map_err(|e| Fail::Usage(format!("cannot write the probes: {e}")))?;
    std::fs::write(tmp.path(), &text)
        .map_err(|e| Fail::Usage(format!("cannot write the probes: {e}")))?;
    let files = [SamplesFile {
        path: tmp.path().to_path_buf(),
        label: "probes".into(),
    }];

    let prepared = session.prepare_all().await?;
    let names: Vec<String> = prepared.iter().map(|p| p.spec.name.clone()).collect();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = session
        .runner
        .run(&prepared, &files, None, session.use_cache, tx);
    let mut tallies: BTreeMap<(Option<Probe>, usize), Tally> = BTreeMap::new();
    let consume = async {
        while let Some(Event::Result {
            evaluator,
            at,
            outcome,
            ..
        }) = rx.recv().await
        {
            if let Some(kind) = kinds.get(at.index) {
                tallies.entry((*kind, evaluator)).or_default().add(&outcome);
            }
        }
    };
    let (ran, ()) = tokio::join!(work, consume);
    ran.map_err(|e| Fail::Usage(e.to_string()))?;

    let mut report = Vec::new();
    let mut flagged = 0;
    for kind in Probe::ALL {
        for (e, name) in names.iter().enumerate() {
            let Some(t) = tallies.get(&(Some(kind), e)) else {
                continue;
            };
            let original = tallies.get(&(None, e)).and_then(|o| o.mean());
            let mean = t.mean();
            let share = t.pass_share(threshold);
            // a probe games the evaluator when it passes and scores like real answers
            let games = matches!((mean, original, share), (Some(m), Some(o), Some(p)) if p > 0.0 && m >= o - 1e-9);
            flagged += usize::from(games);
            let mut components: Vec<(String, f64)> = t
                .components
                .iter()
                .map(|(k, v)| (k.clone(), v.iter().sum::<f64>() / v.len() as f64))
                .filter(|(_, m)| *m >= threshold)
                .collect();
            components.sort_by(|a, b| b.1.total_cmp(&a.1));
            report.push(json!({
                "probe": kind.name(),
                "evaluator": name,
                "count": t.scores.len() + t.errors,
                "errors": t.errors,
                "mean": mean,
                "pass_share": share,
                "original_mean": original,
                "flagged": games,
                "components": components.iter().map(|(k, m)| json!({"name": k, "mean": m})).collect::<Vec<_>>(),
            }));
        }
    }
    let mut out = std::io::stdout().lock();
    if args.format == Format::Json {
        let doc = json!({"threshold": threshold, "samples": originals, "probes": report});
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let _ = writeln!(out, "Probes derived from {originals} samples; a probe is flagged when it passes (score ≥ {threshold}) and scores as well as the real answers.\n");
    let _ = writeln!(
        out,
        "{:<34} {:<12} {:>7} {:>8} {:>9}  flagged / components that reward it",
        "probe", "evaluator", "mean", "passing", "real mean"
    );
    for row in &report {
        let f = |v: &Value| {
            v.as_f64()
                .map(|x| format!("{x:.3}"))
                .unwrap_or_else(|| "-".into())
        };
        let share = row["pass_share"]
            .as_f64()
            .map(|x| format!("{:.0}%", x * 100.0))
            .unwrap_or_else(|| "-".into());
        let comps: Vec<String> = row["components"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{} {:.2}",
                    c["name"].as_str().unwrap_or(""),
                    c["mean"].as_f64().unwrap_or(0.0)
                )
            })
            .collect();
        let flag = if row["flagged"] == true { "⚠ " } else { "" };
        let _ = writeln!(
            out,
            "{:<34} {:<12} {:>7} {:>8} {:>9}  {flag}{}",
            row["probe"].as_str().unwrap_or(""),
            row["evaluator"].as_str().unwrap_or(""),
            f(&row["mean"]),
            share,
            f(&row["original_mean"]),
            comps.join(", ")
        );
    }
    let _ = writeln!(out, "\n{flagged} probe/evaluator pairs flagged");
    Ok(ExitCode::SUCCESS)
}
