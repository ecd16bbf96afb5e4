//! `rwb probe`'s code hacks (SPEC §18): which evaluators run code (what their own
//! source calls, and what rwb's audit sees a few checked calls reach), then the hacks
//! derived from the first samples scored by those evaluators in their real workers,
//! beside an empty solution.

use crate::insight::code_hacks::{self, detect, HackRow, Scored, Variant};
use crate::model::Source;
use crate::runner::{checked_samples, Prepared, Runner};
use crate::workspace::SamplesFile;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Samples the code hacks are derived from (each gives some fifteen programs a form).
const CODE_SAMPLES: usize = 8;
/// Samples the audit checks, each as it is and with the empty solution.
const AUDITED: usize = 3;

/// What the code hacks found.
pub struct CodeHacks {
    pub samples: usize,
    /// Each evaluator that runs code, with why rwb thinks so.
    pub runs_code: Vec<(String, Vec<String>)>,
    /// The local evaluators that run no code.
    pub others: Vec<String>,
    pub rows: Vec<HackRow>,
}

impl CodeHacks {
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "samples": self.samples,
            "evaluators": self.runs_code.iter().map(|(e, why)| serde_json::json!({"evaluator": e, "runs_code": true, "why": why}))
                .chain(self.others.iter().map(|e| serde_json::json!({"evaluator": e, "runs_code": false, "why": []})))
                .collect::<Vec<_>>(),
            "hacks": self.rows,
        })
    }

    pub fn report(&self) -> Vec<String> {
        code_hacks::report(self.samples, &self.runs_code, &self.others, &self.rows)
    }
}

/// Finds the evaluators that run code and scores the hacks with them.
pub async fn code_hacks(
    runner: &Runner,
    prepared: &[Prepared],
    files: &[SamplesFile],
    root: &Path,
    max_samples: usize,
    read_cache: bool,
) -> std::io::Result<CodeHacks> {
    let samples: Vec<Value> = checked_samples(files, max_samples.min(CODE_SAMPLES))?
        .iter()
        .filter_map(|s| serde_json::from_str::<Value>(&s.raw).ok())
        .filter(|v| code_hacks::tasks::completion(v).is_some())
        .collect();
    let local: Vec<&Prepared> = prepared
        .iter()
        .filter(|p| p.failure.is_none() && function_of(&p.spec.source).is_some())
        .collect();
    let mut reasons: Vec<Vec<String>> = local.iter().map(|p| from_source(p, root)).collect();
    audit(runner, &local, &samples, &mut reasons).await?;
    let mut out = CodeHacks {
        samples: samples.len(),
        runs_code: Vec::new(),
        others: Vec::new(),
        rows: Vec::new(),
    };
    let mut code: Vec<Prepared> = Vec::new();
    for (p, why) in local.iter().zip(reasons) {
        if why.is_empty() {
            out.others.push(p.spec.name.clone());
        } else {
            out.runs_code.push((p.spec.name.clone(), why));
            code.push((*p).clone());
        }
    }
    if code.is_empty() || samples.is_empty() {
        return Ok(out);
    }
    let token = token();
    // every evaluator scores the shared lines; a hack that leaves state behind is
    // scored by its own evaluator alone (the workers share /tmp)
    let mut batches: Vec<(Vec<Variant>, Vec<Value>)> = vec![Default::default(); code.len() + 1];
    for (i, sample) in samples.iter().enumerate() {
        for (variant, line) in code_hacks::derive(sample, i, &token, code.len()) {
            let batch = &mut batches[variant.copy.map_or(0, |c| c + 1)];
            batch.0.push(variant);
            batch.1.push(line);
        }
    }
    let mut scored: Vec<Scored> = Vec::new();
    for (b, (variants, lines)) in batches.iter().enumerate() {
        let evaluators = match b {
            0 => &code[..],
            _ => &code[b - 1..b],
        };
        if lines.is_empty() {
            continue;
        }
        let outcomes = score(runner, evaluators, lines, read_cache).await;
        remove_marks(&token);
        for (at, evaluator, score, error) in outcomes? {
            let Some(&variant) = variants.get(at) else {
                continue;
            };
            scored.push(Scored {
                variant,
                evaluator: if b == 0 { evaluator } else { b - 1 },
                score,
                error,
            });
        }
    }
    let names: Vec<String> = code.iter().map(|p| p.spec.name.clone()).collect();
    out.rows = code_hacks::rows(&names, &scored);
    Ok(out)
}

/// The function an evaluator's source names (`evaluate` for a metric folder), for
/// the evaluators whose code is here to read.
fn function_of(source: &Source) -> Option<&str> {
    match source {
        Source::Folder(_) => Some("evaluate"),
        Source::Function { function, .. } | Source::Module { function, .. } => Some(function),
        _ => None,
    }
}

/// What the evaluator's own code says of running code (its file first, then the
/// project files it imported).
fn from_source(p: &Prepared, root: &Path) -> Vec<String> {
    let Some(function) = function_of(&p.spec.source) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = vec![p.spec.source.file()];
    for f in &p.files {
        if !paths.contains(f) {
            paths.push(f.clone());
        }
    }
    let texts: Vec<(String, String)> = paths
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            let name = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string();
            Some((name, text))
        })
        .collect();
    if texts.is_empty() {
        return Vec::new();
    }
    let files: Vec<detect::SourceFile> = texts
        .iter()
        .map(|(name, text)| detect::SourceFile { name, text })
        .collect();
    detect::from_source(&files, 0, function)
}

/// Adds what rwb's audit sees the evaluators whose source said nothing reach, on the
/// first samples as they are and with the empty solution.
async fn audit(
    runner: &Runner,
    local: &[&Prepared],
    samples: &[Value],
    reasons: &mut [Vec<String>],
) -> std::io::Result<()> {
    let unsure: Vec<usize> = (0..local.len())
        .filter(|&i| reasons[i].is_empty())
        .collect();
    if unsure.is_empty() || samples.is_empty() {
        return Ok(());
    }
    let mut lines = Vec::new();
    for sample in samples.iter().take(AUDITED) {
        lines.push(sample.clone());
        lines.extend(code_hacks::tasks::with_code(sample, code_hacks::EMPTY));
    }
    let (_dir, file) = samples_file(&lines)?;
    let checked: Vec<Prepared> = unsure.iter().map(|&i| local[i].clone()).collect();
    let mut reaches: Vec<Vec<String>> = vec![Vec::new(); checked.len()];
    for b in runner.check(&checked, &[file], lines.len()).await? {
        let found = b.trust.as_ref().and_then(|t| t["reaches"].as_array());
        if let Some(mine) = reaches.get_mut(b.evaluator) {
            mine.extend(
                found
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r.as_str().map(str::to_string)),
            );
        }
    }
    for (&i, seen) in unsure.iter().zip(&reaches) {
        reasons[i] = detect::from_reaches(seen);
    }
    Ok(())
}

/// Scores the derived lines with each evaluator: (line index, evaluator index,
/// score, error kind) per outcome.
async fn score(
    runner: &Runner,
    evaluators: &[Prepared],
    lines: &[Value],
    read_cache: bool,
) -> std::io::Result<Vec<(usize, usize, Option<f64>, Option<String>)>> {
    let (_dir, file) = samples_file(lines)?;
    let files = [file];
    let mut out = Vec::new();
    runner
        .each_result(evaluators, &files, read_cache, |evaluator, at, outcome| {
            let error = outcome.error.as_ref().map(|e| e.kind.clone());
            let score = outcome.score.filter(|_| error.is_none());
            out.push((at.index, evaluator, score, error));
        })
        .await?;
    Ok(out)
}

/// The lines as a samples file of their own, two folders below the temporary folder
/// (so that the hack that reads the tests from disk finds the user's files, not
/// rwb's): the folder (removed when dropped) and the file.
fn samples_file(lines: &[Value]) -> std::io::Result<(tempfile::TempDir, SamplesFile)> {
    let dir = tempfile::Builder::new()
        .prefix("rwb-code-hacks-")
        .tempdir()?;
    let inner = dir.path().join("probe");
    std::fs::create_dir(&inner)?;
    let path = inner.join("samples.jsonl");
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&path, text)?;
    let file = SamplesFile {
        path,
        label: "code hacks".into(),
        foreign: None,
    };
    Ok((dir, file))
}

/// Removes the files the `/tmp` hack left where rwb sees them (workers that run
/// open; a contained worker's `/tmp` is its own, and goes with it).
fn remove_marks(token: &str) {
    let prefix = format!("rwb-probe-state-{token}");
    for folder in [PathBuf::from("/tmp"), std::env::temp_dir()] {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// A word unique to this probe run (the files the `/tmp` hack leaves carry it).
fn token() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let hash = blake3::hash(format!("{now}-{}", std::process::id()).as_bytes());
    hash.to_hex()[..10].to_string()
}
