//! `rwb check`'s calls: each evaluator called the way its trainer would on the first
//! samples, what its worker says of each call (contract breaks, the call it got, what
//! it swallowed), and the same samples scored again in a process of their own.

use super::{Prepared, Runner};
use crate::model::{EvaluatorSpec, SampleRef, Style};
use crate::workspace::{SampleLine, SamplesFile, SamplesReader};
use std::collections::HashMap;

/// Contract breaks of one evaluator on one sample.
#[derive(Clone, Debug)]
pub struct Breaks {
    pub evaluator: usize,
    pub at: SampleRef,
    pub issues: Vec<String>,
    /// The call the evaluator was given for this sample, when the worker showed it.
    pub call: Option<Vec<crate::engine::CallArg>>,
    /// What the checked call scored, reached and swallowed (SPEC §16), and the score
    /// a second worker process gave the same sample (`again`).
    pub trust: Option<serde_json::Value>,
}

/// One evaluator's check: how many samples were checked, and each kind of break with
/// the samples it happened on (sorted by kind).
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub checked: usize,
    pub breaks: Vec<(String, Vec<SampleRef>)>,
}

/// The valid samples a check calls evaluators on: the first `max_samples` lines of
/// the files (a `BadSample` line counts, and is left out).
pub fn checked_samples(
    files: &[SamplesFile],
    max_samples: usize,
) -> std::io::Result<Vec<SampleLine>> {
    let mut samples: Vec<SampleLine> = Vec::new();
    for line in SamplesReader::new(files) {
        let line = line?;
        if samples.len() >= max_samples {
            break;
        }
        if line.bad.is_none() {
            samples.push(line);
        }
    }
    Ok(samples)
}

/// How a check hands `samples` to an evaluator in `style`: one rollout group a call
/// for a call per group (the groups in the order the samples first show them), else
/// `batch_size` consecutive samples for a batched style and 16 at a time for the
/// others (each sample still its own call).
pub fn calls(style: Style, spec: &EvaluatorSpec, samples: &[SampleLine]) -> Vec<Vec<SampleLine>> {
    if Style::per_group(Some(style), spec) {
        let by = crate::training::GroupBy::parse(spec.group.as_deref().unwrap_or("prompt"));
        return crate::training::in_groups(samples.to_vec(), &by, |s| &s.raw);
    }
    let size = if style.is_batched() {
        spec.batch_size.max(1)
    } else {
        16
    };
    samples.chunks(size).map(<[SampleLine]>::to_vec).collect()
}

/// Groups the breaks of a check by evaluator (one report each, in order) and kind.
pub fn group_breaks(breaks: &[Breaks], evaluators: usize) -> Vec<CheckReport> {
    let mut out = vec![CheckReport::default(); evaluators];
    let mut kinds: Vec<std::collections::BTreeMap<&str, Vec<SampleRef>>> =
        vec![Default::default(); evaluators];
    for b in breaks {
        let Some(report) = out.get_mut(b.evaluator) else {
            continue;
        };
        report.checked += 1;
        for issue in &b.issues {
            kinds[b.evaluator]
                .entry(issue)
                .or_default()
                .push(b.at.clone());
        }
    }
    for (report, grouped) in out.iter_mut().zip(kinds) {
        report.breaks = grouped
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    }
    out
}

impl Runner {
    /// Each evaluator's style and why its worker chose it ("declares completions and
    /// **kwargs, no messages ..."), for `rwb check`; `None` for one that cannot run.
    /// The workers asked stay warm for the check that follows.
    pub async fn style_reasons(
        &self,
        evaluators: &[Prepared],
    ) -> Vec<Option<(Style, String, Option<String>)>> {
        let mut out = Vec::with_capacity(evaluators.len());
        for p in evaluators {
            if p.failure.is_some() || p.spec.source.is_remote() {
                out.push(None);
                continue;
            }
            match self.pool.checkout(&p.spec, p.key).await {
                Ok(worker) => {
                    let loaded = &worker.loaded;
                    out.push(Some((
                        loaded.style,
                        loaded.style_reason.clone(),
                        loaded.call.clone(),
                    )));
                    self.pool.checkin(&p.spec.name, p.key, worker);
                }
                Err(_) => out.push(None),
            }
        }
        out
    }

    /// Calls each evaluator on up to `max_samples` samples the way its trainer would
    /// (one sample at a time, or batches for TRL) and collects the contract breaks:
    /// wrong length, None or NaN, scores out of range, a missing `score`, mutated
    /// inputs, a different result on a second identical call.
    pub async fn check(
        &self,
        evaluators: &[Prepared],
        files: &[SamplesFile],
        max_samples: usize,
    ) -> std::io::Result<Vec<Breaks>> {
        let samples = checked_samples(files, max_samples)?;
        let mut out = Vec::new();
        for (e, p) in evaluators.iter().enumerate() {
            if let Some(failure) = &p.failure {
                let issue = format!("{}: {}", failure.kind, failure.message);
                out.extend(every_sample_breaks(e, &samples, &issue));
                continue;
            }
            if p.spec.source.is_remote() {
                continue; // its contract is checked where it runs
            }
            match self.pool.checkout(&p.spec, p.key).await {
                Ok(worker) => {
                    let from = out.len();
                    self.check_with(e, p, worker, &samples, &mut out).await;
                    self.score_again(p, &samples, &mut out[from..]).await;
                }
                Err(err) => {
                    let error = crate::engine::spawn_error(&p.spec, err);
                    out.extend(every_sample_breaks(e, &samples, &error.message));
                }
            }
        }
        Ok(out)
    }

    /// Checks `samples` against evaluator `e` in chunks on `worker`, which goes back
    /// to the pool unless it died or retired.
    async fn check_with(
        &self,
        e: usize,
        p: &Prepared,
        mut worker: crate::engine::Worker,
        samples: &[SampleLine],
        out: &mut Vec<Breaks>,
    ) {
        let by_id: HashMap<u64, &SampleLine> =
            samples.iter().map(|s| (s.at.index as u64, s)).collect();
        for chunk in calls(worker.loaded.style, &p.spec, samples) {
            if !check_chunk(&mut worker, e, &chunk, &by_id, out).await {
                return;
            }
        }
        self.pool.checkin(&p.spec.name, p.key, worker);
    }
}

impl Runner {
    /// Scores the checked samples again in a worker process of their own (never the
    /// pool's: state one process kept must not carry over) and puts each score in its
    /// break's `trust` as `again` (SPEC §16's "same input, same score?"). A batched
    /// style is given the same batches as its check (`batch_size` samples a call);
    /// a worker that cannot start leaves `again` out.
    async fn score_again(&self, p: &Prepared, samples: &[SampleLine], checked: &mut [Breaks]) {
        if checked.is_empty() {
            return;
        }
        let Ok(mut worker) = self.engine().spawn_worker(&p.spec).await else {
            return;
        };
        let mut scores: HashMap<u64, Option<f64>> = HashMap::new();
        for chunk in calls(worker.loaded.style, &p.spec, samples) {
            let jobs: Vec<(u64, &str)> =
                chunk.iter().map(|s| (s.at.index as u64, &*s.raw)).collect();
            if worker.send(&jobs, 1).await.is_err() {
                return;
            }
            loop {
                let deadline = tokio::time::Instant::now() + worker.patience() * 2;
                match worker.next_message(deadline).await {
                    crate::engine::Next::Result(id, outcome) => {
                        scores.insert(id, outcome.score.filter(|_| !outcome.is_error()));
                    }
                    crate::engine::Next::Done { .. } => {
                        worker.idle();
                        break;
                    }
                    crate::engine::Next::Checked(..) => {}
                    crate::engine::Next::Retired | crate::engine::Next::Dead(_) => return,
                }
            }
        }
        for b in checked {
            let (Some(trust), Some(again)) = (
                b.trust.as_mut().and_then(|t| t.as_object_mut()),
                scores.get(&(b.at.index as u64)),
            ) else {
                continue;
            };
            trust.insert("again".into(), serde_json::json!(again));
        }
    }
}

/// The same issue for every sample (an evaluator that cannot be called at all).
fn every_sample_breaks(e: usize, samples: &[SampleLine], issue: &str) -> Vec<Breaks> {
    samples
        .iter()
        .map(|s| Breaks {
            evaluator: e,
            at: s.at.clone(),
            issues: vec![issue.to_string()],
            call: None,
            trust: None,
        })
        .collect()
}

/// Sends one chunk in check mode and collects what the worker says of each sample;
/// false when the worker is gone (the chunk's unanswered samples then carry why).
async fn check_chunk(
    worker: &mut crate::engine::Worker,
    e: usize,
    chunk: &[SampleLine],
    by_id: &HashMap<u64, &SampleLine>,
    out: &mut Vec<Breaks>,
) -> bool {
    let jobs: Vec<(u64, &str)> = chunk.iter().map(|s| (s.at.index as u64, &*s.raw)).collect();
    let _ = worker.send_check(&jobs).await;
    let mut answered = 0;
    loop {
        let deadline = tokio::time::Instant::now() + worker.patience() * 2;
        match worker.next_message(deadline).await {
            crate::engine::Next::Checked(id, issues, call, trust) => {
                answered += 1;
                if let Some(s) = by_id.get(&id) {
                    out.push(Breaks {
                        evaluator: e,
                        at: s.at.clone(),
                        issues,
                        call,
                        trust,
                    });
                }
            }
            crate::engine::Next::Done { .. } => {
                worker.idle();
                return true;
            }
            crate::engine::Next::Result(..) => {}
            // check mode reports a timeout as an issue and never retires
            crate::engine::Next::Retired => return false,
            crate::engine::Next::Dead(error) => {
                let issue = format!("{}: {}", error.kind, error.message);
                out.extend(every_sample_breaks(
                    e,
                    &chunk[answered.min(chunk.len())..],
                    &issue,
                ));
                return false;
            }
        }
    }
}

/// The issue a second identical call in one worker gives when its score moved: what
/// `repeat = K` is for, so never a break of a repeated evaluator.
const MOVED: &str = "a second identical call returned a different result";

/// Drops from a `repeat = K` evaluator's breaks what only says that its score moves
/// between calls (a second identical call, a second worker process): `repeat`
/// measures that, and the check reports its spread instead (SPEC §16).
pub fn for_repeats(breaks: &mut [Breaks], prepared: &[Prepared]) {
    for b in breaks {
        if prepared.get(b.evaluator).is_none_or(|p| p.spec.repeat <= 1) {
            continue;
        }
        b.issues.retain(|i| !i.starts_with(MOVED));
        if let Some(trust) = b.trust.as_mut().and_then(serde_json::Value::as_object_mut) {
            trust.remove("again");
        }
    }
}
