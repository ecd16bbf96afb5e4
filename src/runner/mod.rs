//! Running evaluators over samples files through the cache: the straight line from a
//! JSONL line (`workspace`) to a job (`engine`) to an outcome (`model`) stored by
//! `store` and handed to whoever asked (the CLI printer, the TUI).
//!
//! Owns code keys (what makes a cached result still valid) and the order of work.
//! Must not print or draw: results leave as [`Event`]s.

use crate::engine::{Engine, EngineError, Pool, PoolWork};
use crate::model::{kinds, EvalError, EvaluatorSpec, Outcome, SampleRef, Style};
use crate::store::{CodeKey, ImportMemo, SampleHash, Store, StoreWriter};
use crate::workspace::{LineFiles, ReadAhead, SampleLine, SamplesFile, SamplesReader};
use inflight::InFlightMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;

mod check;
mod feed;
mod inflight;
mod keys;
mod learn;
mod priority;
mod probes;
mod remote;
mod repeats;
pub use check::{calls, checked_samples, for_repeats, group_breaks, Breaks, CheckReport};
use keys::{
    code_key, import_failure, interpreter_identity, memo_is_current, memo_of, modified_since,
    stamp, third_party_parts,
};
pub use keys::{file_hash, find_program};
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
    /// Where the samples reader sends what was seen of each row the run is handed
    /// (`sources::seen`), for a listener that takes it ([`Runner::run`] only).
    pub seen: Option<crate::sources::seen::SeenSender>,
}

impl From<mpsc::UnboundedSender<Event>> for Events {
    fn from(each: mpsc::UnboundedSender<Event>) -> Events {
        Events {
            each,
            batches: None,
            seen: None,
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
    /// The rows of the samples files that hold no sample and were skipped, neither
    /// samples nor bad rows (SPEC §13: a prime-rl episode that failed before any
    /// trace), each as its file names it: `FILE: line N: why`.
    pub skipped: Vec<String>,
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
        let mut events: Events = events.into();
        let handing = events.seen.take();
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
        let skipped = crate::workspace::Skipped::default();
        let reader = reader.packing().handing(handing).noting(skipped.clone());
        let lines = ReadAhead::spawn_reader(reader, max_samples);
        let run = self
            .run_lines(evaluators, files, lines, read_cache, events, None, texts)
            .await;
        let named = skipped.named(files);
        match run {
            Ok(mut stats) => {
                stats.skipped = named;
                Ok(stats)
            }
            Err(mut unread) => {
                unread.stats.skipped = named;
                Err(unread)
            }
        }
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
            ..
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
