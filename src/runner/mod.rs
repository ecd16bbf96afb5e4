//! Running evaluators over samples files through the cache: the straight line from a
//! JSONL line (`workspace`) to a job (`engine`) to an outcome (`model`) stored by
//! `store` and handed to whoever asked (the CLI printer, the TUI).
//!
//! Owns code keys (what makes a cached result still valid) and the order of work.
//! Must not print or draw: results leave as [`Event`]s.

use crate::engine::{Engine, EngineError, Loaded, Pool, PoolWork, ThirdParty};
use crate::model::{kinds, EvalError, EvaluatorSpec, Outcome, SampleRef, Style};
use crate::store::{CodeKey, ImportMemo, SampleHash, Stamp, Store, StoreWriter};
use crate::workspace::{LineFiles, ReadAhead, SampleLine, SamplesFile, SamplesReader};
use inflight::InFlightMap;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;

mod feed;
mod inflight;
mod learn;
mod priority;
mod probes;
mod remote;
mod repeats;
pub use priority::{batch_of, Priority};
pub use probes::{probe_report, ProbeRow};
pub use repeats::{fold_repeats, Repeats};

/// Bump when a change to rwb changes what an evaluation returns.
const CACHE_VERSION: &str = "rwb-cache-2";
/// File-system clocks are coarse: a file changed this shortly after the fork-server
/// started counts as changed before it (it restarts once too often, never too rarely).
const CLOCK_SLACK: Duration = Duration::from_millis(20);
/// Jobs queued per evaluator ahead of the workers, per worker slot (two batches of
/// the most a batch takes): enough to keep every slot fed, and a bound on memory
/// (a queued line keeps its 64 KB block of read text alive: with 4,096 a run of
/// 1,000,000 samples, 38% of them new, peaked at 58 MB instead of 49).
const QUEUE_PER_SLOT: usize = 512;

/// An evaluator ready to run: its code key, or why it cannot run.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub spec: Arc<EvaluatorSpec>,
    pub key: CodeKey,
    /// `None` until known (an import that failed).
    pub style: Option<Style>,
    /// Project files the evaluator imported (what to watch).
    pub files: Vec<PathBuf>,
    /// Set when the module failed to import: every sample gets this error.
    pub failure: Option<EvalError>,
    /// What the key was computed from (`None` when the import failed).
    pub memo: Option<ImportMemo>,
}

/// Something the run produced.
#[derive(Debug)]
pub enum Event {
    /// One (sample, evaluator) outcome; `cached` when it came from the store.
    Result {
        evaluator: usize,
        at: SampleRef,
        /// The sample line's content hash, so a listener can tell a result for a line
        /// that has changed since from one for the line it shows.
        hash: SampleHash,
        outcome: Outcome,
        cached: bool,
    },
}

/// Where a run's events go: each one to `each`; or, with `batches`, those the run
/// makes as it reads its lines (cached outcomes, samples that cannot be evaluated)
/// gathered into batches to a listener that takes `Vec<Event>` (`rwb run`'s
/// printer), while the outcomes of evaluations still come through `each`. A fully
/// cached run then hands its outcomes on with one copy each instead of three
/// (into the channel, out of it, into a batch).
pub struct Events {
    pub each: mpsc::UnboundedSender<Event>,
    pub batches: Option<std::sync::mpsc::SyncSender<Vec<Event>>>,
}

impl From<mpsc::UnboundedSender<Event>> for Events {
    fn from(each: mpsc::UnboundedSender<Event>) -> Events {
        Events {
            each,
            batches: None,
        }
    }
}

/// Counts of one run, per evaluator.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    pub samples: usize,
    /// Evaluations that ran in a worker, per evaluator.
    pub evaluated: Vec<usize>,
    /// Outcomes served from the cache, per evaluator.
    pub cached: Vec<usize>,
    /// What went wrong with the cache without making a result wrong (it could not be
    /// read, or a result could not be stored): for the listener to say once.
    pub warnings: Vec<String>,
}

/// A run that stopped at a samples file it could not read on (damaged, changed):
/// why, and the counts of what it read and evaluated before (those samples' results
/// were all reported).
#[derive(Debug)]
pub struct Unread {
    pub stats: RunStats,
    pub error: std::io::Error,
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for Unread {}

impl From<Unread> for std::io::Error {
    fn from(unread: Unread) -> std::io::Error {
        unread.error
    }
}

pub struct Runner {
    pool: Arc<Pool>,
    store: Option<Arc<Store>>,
    identity: String,
}

/// A sample some evaluators are still working on.
struct InFlight {
    at: SampleRef,
    /// The line's content hash (what events carry).
    hash: SampleHash,
    waiting: usize,
    /// Evaluators that store this sample's result under another key than `hash` (a
    /// batched style's member of a batch), as (evaluator, key).
    keys: Vec<(usize, SampleHash)>,
}

impl Runner {
    pub fn new(pool: Arc<Pool>, store: Option<Arc<Store>>) -> Runner {
        let identity = interpreter_identity(pool.engine().python());
        Runner {
            pool,
            store,
            identity,
        }
    }

    pub fn engine(&self) -> &Engine {
        self.pool.engine()
    }

    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    pub fn store(&self) -> Option<&Arc<Store>> {
        self.store.as_ref()
    }

    /// Where `spec` runs in this runner's runs: local workers, or elsewhere.
    pub fn placement(&self, spec: &EvaluatorSpec) -> crate::model::Placement {
        match self.pool.engine().cluster() {
            Some(cluster) if !spec.source.is_remote() => crate::model::Placement::Ray {
                nodes: cluster.nodes,
            },
            _ => match remote::placement(spec, self.pool.jobs()) {
                crate::model::Placement::Local {
                    workers,
                    concurrency,
                    ..
                } => crate::model::Placement::Local {
                    workers,
                    concurrency,
                    contained: self.pool.engine().contained(),
                },
                other => other,
            },
        }
    }

    /// Finds the evaluator's code key: from the import memo when none of the files it
    /// imported changed (no Python started), else by importing it in a fresh worker
    /// (kept warm for the run). Only an unusable interpreter is an `Err`.
    pub async fn prepare(&self, spec: &EvaluatorSpec) -> Result<Prepared, EngineError> {
        let spec = Arc::new(spec.clone());
        if spec.source.is_remote() {
            return Ok(remote::prepared(spec));
        }
        let spec_key = self.spec_key(&spec);
        let memo = self.store.as_ref().and_then(|s| s.import_memo(&spec_key));
        if let Some(memo) = memo.filter(memo_is_current) {
            return Ok(self.prepared(spec, memo));
        }
        self.import(spec, &spec_key).await
    }

    fn prepared(&self, spec: Arc<EvaluatorSpec>, memo: ImportMemo) -> Prepared {
        Prepared {
            key: code_key(&self.identity, &spec, &memo),
            style: Some(memo.style),
            files: memo.files.iter().map(|(p, _)| p.clone()).collect(),
            failure: None,
            memo: Some(memo),
            spec,
        }
    }

    /// Imports the evaluator in a fresh worker and memoises what it imported. A file
    /// changed while the worker imported it means the code we stamp may not be the code
    /// it runs: import again. Third-party code changed since the fork-server started
    /// means the fork-server may hold the old code: restart it first.
    async fn import(
        &self,
        spec: Arc<EvaluatorSpec>,
        spec_key: &CodeKey,
    ) -> Result<Prepared, EngineError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let started = SystemTime::now();
            let worker = match self.engine().spawn_worker(&spec).await {
                Ok(worker) => worker,
                Err(EngineError::Import(error, files)) => {
                    return Ok(import_failure(spec, files, error))
                }
                Err(EngineError::Crashed(message)) => {
                    let files = vec![spec.source.file()];
                    let error = EvalError::new(kinds::WORKER_CRASHED, message);
                    return Ok(import_failure(spec, files, error));
                }
                Err(e) => return Err(e),
            };
            let (memo, changed) = memo_of(&worker.loaded);
            if attempts < 3 {
                if let Some(changed) = changed {
                    if self
                        .pool
                        .restart_engine_if_older(changed + CLOCK_SLACK)
                        .await
                        || changed + CLOCK_SLACK >= started
                    {
                        continue;
                    }
                }
                if worker
                    .loaded
                    .files
                    .iter()
                    .any(|p| modified_since(p, started))
                {
                    continue;
                }
            }
            if let Some(store) = &self.store {
                let _ = store.put_import_memo(spec_key, &memo);
            }
            let prepared = self.prepared(spec, memo);
            self.pool.checkin(&prepared.spec.name, prepared.key, worker);
            return Ok(prepared);
        }
    }

    fn spec_key(&self, spec: &EvaluatorSpec) -> CodeKey {
        let mut h = blake3::Hasher::new();
        for part in [
            CACHE_VERSION,
            &self.identity,
            &spec.source.file().to_string_lossy(),
            spec.source.function(),
            spec.style.map(|s| s.as_str()).unwrap_or("-"),
            spec.trainer.map(|t| t.as_str()).unwrap_or("-"),
        ] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        *h.finalize().as_bytes()
    }

    /// Runs every prepared evaluator over the samples files, sending each outcome on
    /// `events` as it is known (cache hits first, in file order; evaluations as they
    /// finish). With `read_cache` false every sample is evaluated again (results are
    /// still stored, when there is a store).
    ///
    /// Batched styles (TRL) get consecutive valid samples in file order, exactly
    /// `batch_size` per call (the last shorter), whatever `--jobs` is; their results
    /// are cached under keys that cover the whole batch (see [`feed`]).
    ///
    /// Without a store, the lines are hashed only when `hashes` (the listener needs
    /// the events' content hashes, to compare with a baseline or save one); else every
    /// event's `hash` is all zeros.
    pub async fn run(
        &self,
        evaluators: &[Prepared],
        files: &[SamplesFile],
        max_samples: Option<usize>,
        read_cache: bool,
        hashes: bool,
        events: impl Into<Events>,
    ) -> Result<RunStats, Unread> {
        // read, checked and hashed on a thread of its own, ahead of the lookups
        let mut texts = None;
        let reader = if let Some(store) = &self.store {
            // foreign files' row files make the next run read them as JSONL
            let reader = SamplesReader::new(files)
                .with_memos(store.line_memos())
                .writing_rows();
            // a line its file's memo vouches for is read only when a lookup misses:
            // a fully cached run reads no sample text
            match read_cache.then(|| LineFiles::open(files).ok()).flatten() {
                Some(again) => {
                    let wanted = Arc::new(AtomicBool::new(false));
                    texts = Some((again, wanted.clone()));
                    reader.texts_when_wanted(wanted)
                }
                None => reader,
            }
        } else {
            // without the cache, the memos an earlier cached run left still say which
            // lines are samples (and their hashes): those are not checked again
            let reader = match hashes {
                true => SamplesReader::new(files),
                false => SamplesReader::unhashed(files),
            };
            reader.trusting(Store::line_memos_of(self.pool.engine().root()))
        };
        // each line is parsed once on the reading thread, for its check and for the
        // marshal form its worker reads
        let lines = ReadAhead::spawn_reader(reader.packing(), max_samples);
        self.run_lines(evaluators, files, lines, read_cache, events, None, texts)
            .await
    }

    /// [`Runner::run`] over lines already read and hashed, the samples of `priority`
    /// (the rows on screen) first, the rest in file order without them: the workbench's
    /// samples index feeds them ([`crate::workspace::SampleIndex::lines`]), so a run
    /// does not read, hash and check every line a second time. `files` names them;
    /// `texts` reads the lines that come unread ([`SampleLine::unread`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn run_lines(
        &self,
        evaluators: &[Prepared],
        files: &[SamplesFile],
        lines: impl Iterator<Item = std::io::Result<SampleLine>> + Send,
        read_cache: bool,
        events: impl Into<Events>,
        priority: Option<&Priority>,
        texts: Option<feed::Texts>,
    ) -> Result<RunStats, Unread> {
        let Events {
            each: events,
            batches,
        } = events.into();
        let store = self.store.as_ref();
        let mut warnings = Vec::new();
        let cache = feed::Cache::open(store, read_cache, evaluators, &mut warnings);
        let started = SystemTime::now();
        let writer: Option<Arc<StoreWriter>> = match store.map(|s| s.writer()) {
            Some(Ok(writer)) => Some(Arc::new(writer)),
            Some(Err(e)) => {
                warnings.push(format!(
                    "cannot write to the {e}: this run's results are not stored"
                ));
                None
            }
            None => None,
        };
        let inflight: Arc<Mutex<InFlightMap>> = Arc::default();
        let evaluated: Arc<Vec<AtomicUsize>> =
            Arc::new(evaluators.iter().map(|_| Default::default()).collect());

        let mut queues = Vec::new();
        let mut drains = tokio::task::JoinSet::new();
        for (index, p) in evaluators.iter().enumerate() {
            if p.failure.is_some() {
                queues.push(None);
                continue;
            }
            let depth = QUEUE_PER_SLOT * self.pool.jobs();
            let (tx, rx) = flume::bounded::<PoolWork>(depth);
            queues.push(Some(tx));
            let show =
                feed::show_result(index, inflight.clone(), events.clone(), evaluated.clone());
            let replaces_nothing = cache.replaces_nothing(index);
            let (sink, on_done) = match self.learner(p, writer.as_ref(), started, replaces_nothing)
            {
                Some(learner) => {
                    let (sink, on_done) = learn::hooks(learner, show);
                    (sink, Some(on_done))
                }
                None => {
                    let sink: crate::engine::Sink = Arc::new(move |id, outcome| {
                        show(id, outcome);
                    });
                    (sink, None)
                }
            };
            let pool = self.pool.clone();
            let spec = p.spec.clone();
            let key = p.key;
            if spec.source.is_remote() {
                drains.spawn(remote::drain(spec, rx, sink));
                continue;
            }
            drains.spawn(async move { pool.drain_with(spec, key, rx, sink, on_done).await });
        }

        let mut feed =
            feed::Feed::new(evaluators, files, cache, queues, inflight, &events, batches);
        feed.keyed = store.is_some();
        feed.texts = texts;
        if let Some(priority) = priority {
            feed.feed_first(priority).await;
        }
        // a file that cannot be read on (damaged, changed) ends the lines; those
        // read before it are still evaluated, then the error is the run's
        let mut failed = None;
        for line in lines {
            if events.is_closed() {
                break; // nobody listens any more (stdout closed): no more work
            }
            match line {
                Ok(line) => feed.line(line).await,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let mut stats = feed.finish().await;
        while drains.join_next().await.is_some() {}
        if let Some(w) = writer {
            if let Some(e) = Arc::try_unwrap(w).ok().and_then(StoreWriter::finish) {
                warnings.push(format!(
                    "could not store every result in the {e}; the results shown are right, \
                     and those not stored are evaluated again by the next run"
                ));
            }
        }
        stats.warnings = warnings;
        for (i, n) in evaluated.iter().enumerate() {
            stats.evaluated[i] = n.load(Ordering::Relaxed);
        }
        match failed {
            Some(error) => Err(Unread { stats, error }),
            None => Ok(stats),
        }
    }
}

impl Runner {
    /// What stores an evaluator's outcomes in this run and extends its code key as
    /// the workers report imports (`None` without a store or a known import).
    fn learner(
        &self,
        p: &Prepared,
        writer: Option<&Arc<StoreWriter>>,
        since: SystemTime,
        replaces_nothing: bool,
    ) -> Option<Arc<Mutex<learn::Learner>>> {
        let learner = learn::Learner::new(
            self.identity.clone(),
            p,
            self.spec_key(&p.spec),
            since,
            replaces_nothing,
            self.store.clone()?,
            writer?.clone(),
        )?;
        Some(Arc::new(Mutex::new(learner)))
    }

    /// Records each evaluator's code version with its sources and what it scored
    /// (per evaluator), for the history view. Without a store, nothing.
    pub fn record_versions(&self, evaluators: &[Prepared], scored: &[crate::store::Scored]) {
        let Some(store) = &self.store else { return };
        for (p, scored) in evaluators.iter().zip(scored) {
            if p.failure.is_some() || p.spec.source.is_remote() {
                continue;
            }
            let sources: Vec<(String, String)> = p
                .files
                .iter()
                .map(|f| {
                    (
                        f.display().to_string(),
                        std::fs::read_to_string(f).unwrap_or_default(),
                    )
                })
                .collect();
            let _ = store.record_version(&p.spec.name, &p.key, &sources, *scored);
        }
    }
}

impl Runner {
    /// The evaluators of a run with each `repeat = K` evaluator made K (SPEC §16): the
    /// r-th copy calls the same code with `repeat_index` r, so its results are cached
    /// under a key of their own (the first under the evaluator's usual key), and
    /// copies after the first are named `NAME#r` (1-based) for the pool's warm
    /// workers and their messages. Also says, per returned evaluator, (the index of
    /// the evaluator it repeats, its repeat index).
    pub fn expand_repeats(&self, evaluators: &[Prepared]) -> (Vec<Prepared>, Vec<(usize, usize)>) {
        let mut out = Vec::new();
        let mut of = Vec::new();
        for (e, p) in evaluators.iter().enumerate() {
            for r in 0..p.spec.repeat.max(1) {
                let mut copy = p.clone();
                if r > 0 {
                    let mut spec = (*p.spec).clone();
                    spec.repeat_index = r;
                    spec.name = format!("{}#{}", p.spec.name, r + 1);
                    if let Some(memo) = &p.memo {
                        copy.key = code_key(&self.identity, &spec, memo);
                    }
                    copy.spec = Arc::new(spec);
                }
                out.push(copy);
                of.push((e, r));
            }
        }
        (out, of)
    }
}

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

/// The code key: rwb's cache version, the interpreter, how the evaluator is called,
/// and everything it imported (project files by content, third-party files by stamp,
/// distributions by version).
fn code_key(identity: &str, spec: &EvaluatorSpec, memo: &ImportMemo) -> CodeKey {
    let mut h = blake3::Hasher::new();
    let kwargs = serde_json::to_string(&spec.kwargs).unwrap_or_default();
    let call = spec.call.as_ref().map(|c| c.identity()).unwrap_or_default();
    let trainer_args = serde_json::to_string(&spec.trainer_args).unwrap_or_default();
    let part = |h: &mut blake3::Hasher, text: &str| {
        h.update(text.as_bytes());
        h.update(&[0]);
    };
    // each repeat from the second on is cached apart (SPEC §16); the first shares
    // the key of a run without `repeat`, so adding `repeat` reuses what is cached
    if spec.repeat_index > 0 {
        part(&mut h, &format!("repeat {}", spec.repeat_index));
    }
    // a call per rollout group depends on what makes a group
    if Style::per_group(Some(memo.style), spec) {
        part(
            &mut h,
            &format!("group {}", spec.group.as_deref().unwrap_or("prompt")),
        );
    }
    for text in [
        CACHE_VERSION,
        identity,
        memo.style.as_str(),
        spec.source.function(),
        spec.source.module().unwrap_or("-"),
        &kwargs,
        &spec.batch_size.to_string(),
        spec.solution_str.as_str(),
        spec.trainer.map(|t| t.as_str()).unwrap_or("-"),
        &spec.chat_template.identity(),
        &call,
        &trainer_args,
    ] {
        part(&mut h, text);
    }
    let folder = spec.source.folder();
    let mut files: Vec<(String, &str)> = memo
        .files
        .iter()
        .map(|(p, hash)| {
            let rel = p.strip_prefix(&folder).unwrap_or(p);
            (rel.to_string_lossy().into_owned(), hash.as_str())
        })
        .collect();
    files.sort();
    for (rel, hash) in files {
        part(&mut h, &rel);
        part(&mut h, hash);
    }
    part(&mut h, "third-party");
    let mut stamps: Vec<&Stamp> = memo.stamps.iter().collect();
    stamps.sort();
    for s in stamps {
        part(
            &mut h,
            &format!("{}|{}|{}", s.path.display(), s.size, s.mtime_ns),
        );
    }
    let mut dists: Vec<&(String, String)> = memo.dists.iter().collect();
    dists.sort();
    for (name, version) in dists {
        part(&mut h, &format!("{name}=={version}"));
    }
    *h.finalize().as_bytes()
}

/// What a freshly loaded worker imported, as a memo, and the newest inode change time
/// among its third-party files (to tell whether the fork-server may hold older code).
fn memo_of(loaded: &Loaded) -> (ImportMemo, Option<SystemTime>) {
    let mut files: Vec<(PathBuf, String)> = loaded
        .files
        .iter()
        .filter_map(|p| Some((p.clone(), file_hash(p)?)))
        .collect();
    files.sort();
    let (paths, mut dists) = third_party_parts(&loaded.packages);
    let mut newest: Option<SystemTime> = None;
    let mut stamps = Vec::with_capacity(paths.len());
    for path in paths {
        if let Some((s, changed)) = stamp(&path) {
            newest = newest.max(Some(changed));
            stamps.push(s);
        }
    }
    stamps.sort();
    dists.sort();
    let memo = ImportMemo {
        style: loaded.style,
        files,
        stamps,
        dists,
    };
    (memo, newest)
}

/// Whether every file a memo names is as it was: project files by content, the
/// third-party files by stamp (one `stat` each).
fn memo_is_current(memo: &ImportMemo) -> bool {
    memo.files
        .iter()
        .all(|(path, hash)| file_hash(path).as_deref() == Some(hash.as_str()))
        && memo
            .stamps
            .iter()
            .all(|s| stamp(&s.path).is_some_and(|(now, _)| now == *s))
}

/// The files to stamp (module files and distribution metadata) and the (name,
/// version) of each distribution a worker reported.
fn third_party_parts(packages: &ThirdParty) -> (Vec<PathBuf>, Vec<(String, String)>) {
    let mut paths: Vec<PathBuf> = packages.modules.clone();
    paths.extend(packages.dists.iter().map(|d| d.metadata.clone()));
    paths.sort();
    paths.dedup();
    let mut dists: Vec<(String, String)> = packages
        .dists
        .iter()
        .map(|d| (d.name.clone(), d.version.clone().unwrap_or_default()))
        .collect();
    dists.sort();
    dists.dedup();
    (paths, dists)
}

/// A file's stamp and its inode change time (which no tool sets back), or `None`
/// when it is gone.
fn stamp(path: &Path) -> Option<(Stamp, SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let changed = SystemTime::UNIX_EPOCH
        + Duration::new(
            meta.ctime().max(0) as u64,
            meta.ctime_nsec().clamp(0, 999_999_999) as u32,
        );
    let stamp = Stamp {
        path: path.to_path_buf(),
        size: meta.len(),
        mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
    };
    Some((stamp, changed))
}

/// The `Prepared` of an evaluator whose worker could not import it.
fn import_failure(spec: Arc<EvaluatorSpec>, files: Vec<PathBuf>, failure: EvalError) -> Prepared {
    Prepared {
        key: [0; 32],
        spec,
        style: None,
        files,
        failure: Some(failure),
        memo: None,
    }
}

/// The content hash of a file, or `None` when it cannot be read.
pub fn file_hash(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(blake3::hash(&bytes).to_hex().to_string())
}

fn modified_since(path: &Path, since: SystemTime) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map(|t| t >= since)
        .unwrap_or(false)
}

/// Which interpreter this is, without starting it: its resolved path, size and
/// modification time (a reinstalled Python invalidates the cache).
fn interpreter_identity(python: &Path) -> String {
    let resolved = find_program(python).unwrap_or_else(|| python.to_path_buf());
    let real = std::fs::canonicalize(&resolved).unwrap_or(resolved.clone());
    let meta = std::fs::metadata(&real).ok();
    let stamp = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}|{}|{}|{}",
        resolved.display(),
        real.display(),
        meta.map(|m| m.len()).unwrap_or(0),
        stamp
    )
}

/// Looks a bare program name up on PATH; a path is returned as is.
pub fn find_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.exists().then(|| program.to_path_buf());
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}
