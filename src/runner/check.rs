//! `rwb check`'s calls: each evaluator called the way its trainer would on the first
//! samples, what its worker says of each call (contract breaks, the call it got, what
//! it swallowed), and the same samples scored again in a process of their own.

use super::{code_key, interpreter_identity, memo_is_current, Prepared, Runner};
use crate::model::{EvaluatorSpec, SampleRef, Source, Style};
use crate::store::{CheckRecord, CodeKey, Finding, ImportMemo, Store};
use crate::workspace::{SampleLine, SamplesFile, SamplesReader};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
/// The issue a second identical call gives when it raised where the first returned.
const RAISED_AGAIN: &str = "a second identical call raised ";

/// What one evaluator's check showed of its scores on repeated calls (SPEC §21's
/// reverify mode): how many samples were compared, and on how many a second call in
/// the same worker moved, raised, or another worker process scored otherwise.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Determinism {
    pub compared: usize,
    pub moved: usize,
    pub raised_again: usize,
    pub differs: usize,
    /// Samples whose `repeat = K` scores were not all equal.
    pub repeats_vary: usize,
}

impl Breaks {
    /// What evaluator `e`'s calls in a check showed of its scores on repeated calls,
    /// gathered before [`for_repeats`] drops what only says a repeated evaluator's
    /// score moves. A sample counts as compared when its first call gave a score.
    pub fn determinism(breaks: &[Breaks], e: usize) -> Determinism {
        let mut found = Determinism::default();
        for b in breaks.iter().filter(|b| b.evaluator == e) {
            let Some(trust) = &b.trust else { continue };
            let Some(score) = trust["score"].as_f64() else {
                continue;
            };
            found.compared += 1;
            if b.issues.iter().any(|i| i.starts_with(MOVED)) {
                found.moved += 1;
            } else if b.issues.iter().any(|i| i.starts_with(RAISED_AGAIN)) {
                found.raised_again += 1;
            }
            if trust
                .get("again")
                .is_some_and(|a| a.as_f64() != Some(score))
            {
                found.differs += 1;
            }
        }
        found
    }
}

impl Determinism {
    /// The finding and what showed it, in words; `None` when no sample was compared.
    pub fn finding(&self) -> Option<(Finding, String)> {
        let of = |n: usize| format!("{n} of {} samples", self.compared);
        if self.compared == 0 {
            return None;
        }
        if self.moved > 0 {
            let words = format!("{MOVED} on {}", of(self.moved));
            return Some((Finding::Nondeterministic, words));
        }
        if self.repeats_vary > 0 {
            let words = format!(
                "its repeats scored differently on {}",
                of(self.repeats_vary)
            );
            return Some((Finding::Nondeterministic, words));
        }
        if self.differs > 0 {
            let words = format!(
                "scored differently in another worker process on {}",
                of(self.differs)
            );
            return Some((Finding::Stateful, words));
        }
        if self.raised_again > 0 {
            let words = format!(
                "a second identical call raised on {}",
                of(self.raised_again)
            );
            return Some((Finding::Stateful, words));
        }
        Some((Finding::Deterministic, String::new()))
    }
}

impl Runner {
    /// The record of a check of `p`'s code that found `found`, checked at `checked`
    /// (seconds since the Unix epoch); `None` for an evaluator with no code of its
    /// own here (one that runs elsewhere or failed to import) or no sample compared.
    /// It is keyed by [`record_key`].
    pub fn check_record(
        &self,
        p: &Prepared,
        found: &Determinism,
        checked: f64,
    ) -> Option<CheckRecord> {
        if p.spec.source.is_remote() || p.failure.is_some() {
            return None;
        }
        let memo = p.memo.clone()?;
        let (finding, detail) = found.finding()?;
        Some(CheckRecord {
            evaluator: p.spec.name.clone(),
            key: record_key(&self.identity, &p.spec, &memo),
            checked,
            samples: found.compared,
            finding,
            detail,
            memo,
        })
    }

    /// The check `store` holds of `spec`'s code as it is now, the newest first: one
    /// whose import memo is still current (every project file's content, every
    /// third-party file's stamp) and whose key, made again from that memo with
    /// `python` and `spec` ([`record_key`]), is the key it was recorded under. No
    /// Python starts; an edited evaluator (another code key) has none until it is
    /// checked again.
    pub fn recorded_check(
        store: &Store,
        python: &Path,
        spec: &EvaluatorSpec,
    ) -> Option<CheckRecord> {
        if spec.source.is_remote() {
            return None;
        }
        let identity = interpreter_identity(python);
        store
            .checks_of(&spec.name)
            .ok()?
            .into_iter()
            .find(|r| memo_is_current(&r.memo) && record_key(&identity, spec, &r.memo) == r.key)
    }
}

/// The code key a check is recorded under: the result cache's code key of the
/// evaluator given by its absolute path. (The cache's own key holds the project
/// files' paths relative to the evaluator's folder as the workspace was named, so
/// `rwb check .` and `rwb serve /abs/path` key the same code apart.)
fn record_key(identity: &str, spec: &EvaluatorSpec, memo: &ImportMemo) -> CodeKey {
    let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
    let mut spec = spec.clone();
    match &mut spec.source {
        Source::Folder(dir) => *dir = absolute(dir),
        Source::Function { file, .. }
        | Source::Module { file, .. }
        | Source::Grader { file, .. } => *file = absolute(file),
        Source::Remote { .. } | Source::Fireworks { .. } => {}
    }
    code_key(identity, &spec, memo)
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(index: usize, issues: &[&str], trust: serde_json::Value) -> Breaks {
        Breaks {
            evaluator: 0,
            at: SampleRef::first_file(index),
            issues: issues.iter().map(|i| i.to_string()).collect(),
            call: None,
            trust: Some(trust),
        }
    }

    #[test]
    fn a_moved_score_is_nondeterministic_another_process_stateful_none_deterministic() {
        let same = |i| at(i, &[], json!({"score": 0.5, "again": 0.5}));
        let clean = [same(0), same(1)];
        let found = Breaks::determinism(&clean, 0);
        assert_eq!((found.compared, found.moved, found.differs), (2, 0, 0));
        assert_eq!(
            found.finding(),
            Some((Finding::Deterministic, String::new()))
        );
        // not the evaluator asked about
        assert_eq!(Breaks::determinism(&clean, 1).finding(), None);

        let moved = [
            same(0),
            at(1, &[MOVED], json!({"score": 0.25, "again": 0.75})),
        ];
        assert_eq!(
            Breaks::determinism(&moved, 0).finding(),
            Some((
                Finding::Nondeterministic,
                format!("{MOVED} on 1 of 2 samples")
            ))
        );

        let elsewhere = [same(0), at(1, &[], json!({"score": 0.25, "again": 1.0}))];
        assert_eq!(
            Breaks::determinism(&elsewhere, 0).finding(),
            Some((
                Finding::Stateful,
                "scored differently in another worker process on 1 of 2 samples".into()
            ))
        );

        // a first call that gave no score compares nothing
        let failed = [at(0, &["raised ValueError: x"], json!({"score": null}))];
        assert_eq!(Breaks::determinism(&failed, 0).finding(), None);

        // a repeated evaluator whose repeats vary
        let mut repeats = Breaks::determinism(&clean, 0);
        repeats.repeats_vary = 1;
        assert_eq!(
            repeats.finding().map(|f| f.0),
            Some(Finding::Nondeterministic)
        );
    }
}
