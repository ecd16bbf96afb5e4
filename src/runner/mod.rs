//! Running evaluators over samples files through the cache: the straight line from a
//! JSONL line (`workspace`) to a job (`engine`) to an outcome (`model`) stored by
//! `store` and handed to whoever asked (the CLI printer, the TUI).
//!
//! Owns code keys (what makes a cached result still valid) and the order of work.
//! Must not print or draw: results leave as [`Event`]s.

use crate::engine::{Engine, EngineError, Pool, PoolJob};
use crate::model::{kinds, EvalError, EvaluatorSpec, Outcome, SampleRef, Style};
use crate::store::{CodeKey, ImportMemo, SampleHash, Store, StoreWriter};
use crate::workspace::{SampleLine, SamplesFile, SamplesReader};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use tokio::sync::mpsc;

mod probes;
pub use probes::{probe_report, ProbeRow};

/// Bump when a change to rwb changes what an evaluation returns.
const CACHE_VERSION: &str = "rwb-cache-1";
/// Jobs queued per evaluator ahead of the workers (bounds memory on huge files).
const QUEUE_DEPTH: usize = 4096;

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

/// Counts of one run, per evaluator.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    pub samples: usize,
    /// Evaluations that ran in a worker, per evaluator.
    pub evaluated: Vec<usize>,
    /// Outcomes served from the cache, per evaluator.
    pub cached: Vec<usize>,
}

pub struct Runner {
    pool: Arc<Pool>,
    store: Option<Arc<Store>>,
    identity: String,
}

struct InFlight {
    at: SampleRef,
    hash: SampleHash,
    waiting: usize,
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

    /// Finds the evaluator's code key: from the import memo when none of its files
    /// changed (no Python started), else by importing it in a fresh worker (kept warm
    /// for the run). Only an unusable interpreter is an `Err`.
    pub async fn prepare(&self, spec: &EvaluatorSpec) -> Result<Prepared, EngineError> {
        let spec = Arc::new(spec.clone());
        let spec_key = self.spec_key(&spec);
        if let Some(store) = &self.store {
            if let Some(memo) = store.import_memo(&spec_key) {
                let unchanged = memo
                    .files
                    .iter()
                    .all(|(path, hash)| file_hash(path).as_deref() == Some(hash.as_str()));
                if unchanged {
                    let key = self.code_key(&spec, memo.style, &memo.files);
                    let files = memo.files.into_iter().map(|(p, _)| p).collect();
                    return Ok(Prepared {
                        spec,
                        key,
                        style: Some(memo.style),
                        files,
                        failure: None,
                    });
                }
            }
        }
        let mut attempts = 0;
        loop {
            attempts += 1;
            let started = SystemTime::now();
            match self.engine().spawn_worker(&spec).await {
                Ok(worker) => {
                    let loaded = worker.loaded.clone();
                    let hashed: Vec<(PathBuf, String)> = loaded
                        .files
                        .iter()
                        .filter_map(|p| Some((p.clone(), file_hash(p)?)))
                        .collect();
                    // A file saved while the worker imported: the code we hashed may not
                    // be the code it runs. Import again rather than cache under a lie.
                    if attempts < 3 && loaded.files.iter().any(|p| modified_since(p, started)) {
                        continue;
                    }
                    let key = self.code_key(&spec, loaded.style, &hashed);
                    if let Some(store) = &self.store {
                        let memo = ImportMemo {
                            style: loaded.style,
                            files: hashed,
                        };
                        let _ = store.put_import_memo(&spec_key, &memo);
                    }
                    self.pool.checkin(&spec.name, key, worker);
                    return Ok(Prepared {
                        spec,
                        key,
                        style: Some(loaded.style),
                        files: loaded.files,
                        failure: None,
                    });
                }
                Err(EngineError::Import(error, files)) => {
                    return Ok(Prepared {
                        key: [0; 32],
                        spec,
                        style: None,
                        files,
                        failure: Some(error),
                    })
                }
                Err(EngineError::Crashed(message)) => {
                    return Ok(Prepared {
                        key: [0; 32],
                        files: vec![spec.source.file()],
                        spec,
                        style: None,
                        failure: Some(EvalError::new(kinds::WORKER_CRASHED, message)),
                    })
                }
                Err(e) => return Err(e),
            }
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
        ] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        *h.finalize().as_bytes()
    }

    fn code_key(&self, spec: &EvaluatorSpec, style: Style, files: &[(PathBuf, String)]) -> CodeKey {
        let mut h = blake3::Hasher::new();
        let kwargs = serde_json::to_string(&spec.kwargs).unwrap_or_default();
        for part in [
            CACHE_VERSION,
            &self.identity,
            style.as_str(),
            spec.source.function(),
            &kwargs,
            &spec.batch_size.to_string(),
        ] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        let folder = spec.source.folder();
        let mut files: Vec<(String, &str)> = files
            .iter()
            .map(|(p, hash)| {
                let rel = p.strip_prefix(&folder).unwrap_or(p);
                (rel.to_string_lossy().into_owned(), hash.as_str())
            })
            .collect();
        files.sort();
        for (rel, hash) in files {
            h.update(rel.as_bytes());
            h.update(&[0]);
            h.update(hash.as_bytes());
            h.update(&[0]);
        }
        *h.finalize().as_bytes()
    }

    /// Runs every prepared evaluator over the samples files, sending each outcome on
    /// `events` as it is known (cache hits first, in file order; evaluations as they
    /// finish). With `read_cache` false every sample is evaluated again (results are
    /// still stored, when there is a store).
    pub async fn run(
        &self,
        evaluators: &[Prepared],
        files: &[SamplesFile],
        max_samples: Option<usize>,
        read_cache: bool,
        events: mpsc::UnboundedSender<Event>,
    ) -> std::io::Result<RunStats> {
        let store = self.store.as_ref();
        let mut cached_maps: Vec<HashMap<SampleHash, Outcome>> = Vec::new();
        for p in evaluators {
            let map = match (store.filter(|_| read_cache), &p.failure) {
                (Some(s), None) => s.results_for(&p.key).unwrap_or_else(|e| {
                    eprintln!("rwb: {e}");
                    HashMap::new()
                }),
                _ => HashMap::new(),
            };
            cached_maps.push(map);
        }
        let writer: Option<Arc<StoreWriter>> = store.and_then(|s| s.writer().ok()).map(Arc::new);
        let inflight: Arc<Mutex<HashMap<u64, InFlight>>> = Arc::default();
        let evaluated: Arc<Vec<std::sync::atomic::AtomicUsize>> =
            Arc::new(evaluators.iter().map(|_| Default::default()).collect());

        let mut queues = Vec::new();
        let mut drains = tokio::task::JoinSet::new();
        for (index, p) in evaluators.iter().enumerate() {
            if p.failure.is_some() {
                queues.push(None);
                continue;
            }
            let (tx, rx) = flume::bounded::<PoolJob>(QUEUE_DEPTH);
            queues.push(Some(tx));
            let sink = {
                let inflight = inflight.clone();
                let writer = writer.clone();
                let events = events.clone();
                let evaluated = evaluated.clone();
                let key = p.key;
                Arc::new(move |id: u64, outcome: Outcome| {
                    evaluated[index].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let (at, hash) = {
                        let mut map = inflight.lock().unwrap();
                        let Some(entry) = map.get_mut(&id) else {
                            return;
                        };
                        let found = (entry.at.clone(), entry.hash);
                        entry.waiting -= 1;
                        if entry.waiting == 0 {
                            map.remove(&id);
                        }
                        found
                    };
                    if let Some(w) = &writer {
                        if outcome.error.as_ref().is_none_or(|e| !e.is_transient()) {
                            w.put(&key, &hash, &outcome);
                        }
                    }
                    let _ = events.send(Event::Result {
                        evaluator: index,
                        at,
                        hash,
                        outcome,
                        cached: false,
                    });
                })
            };
            let pool = self.pool.clone();
            let spec = p.spec.clone();
            let key = p.key;
            drains.spawn(async move { pool.drain(spec, key, rx, sink).await });
        }

        let mut stats = RunStats {
            samples: 0,
            evaluated: vec![0; evaluators.len()],
            cached: vec![0; evaluators.len()],
        };
        let mut reader = SamplesReader::new(files);
        let limit = max_samples.unwrap_or(usize::MAX);
        while stats.samples < limit {
            let Some(line) = reader.next() else { break };
            let line: SampleLine = line?;
            stats.samples += 1;
            let send = |evaluator: usize, outcome: Outcome, cached: bool| {
                let _ = events.send(Event::Result {
                    evaluator,
                    at: line.at.clone(),
                    hash: line.hash,
                    outcome,
                    cached,
                });
            };
            if let Some(why) = &line.bad {
                let label = &files[line.at.file].label;
                let error = EvalError::new(
                    kinds::BAD_SAMPLE,
                    format!("{label}:{}: {why}", line.at.line),
                );
                for index in 0..evaluators.len() {
                    send(index, Outcome::failed(error.clone()), false);
                }
                continue;
            }
            let raw: Arc<str> = Arc::from(line.raw.as_str());
            let mut to_run = Vec::new();
            for (index, p) in evaluators.iter().enumerate() {
                if let Some(failure) = &p.failure {
                    send(index, Outcome::failed(failure.clone()), false);
                } else if let Some(hit) = cached_maps[index].get(&line.hash) {
                    stats.cached[index] += 1;
                    send(index, hit.clone(), true);
                } else {
                    to_run.push(index);
                }
            }
            if to_run.is_empty() {
                continue;
            }
            let id = line.at.index as u64;
            inflight.lock().unwrap().insert(
                id,
                InFlight {
                    at: line.at.clone(),
                    hash: line.hash,
                    waiting: to_run.len(),
                },
            );
            for index in to_run {
                let queue = queues[index]
                    .as_ref()
                    .expect("evaluators that can run have a queue");
                let job = PoolJob {
                    id,
                    raw: raw.clone(),
                };
                if queue.send_async(job).await.is_err() {
                    break;
                }
            }
        }
        drop(queues);
        while drains.join_next().await.is_some() {}
        if let Some(w) = writer {
            if let Ok(w) = Arc::try_unwrap(w) {
                w.finish();
            }
        }
        for (i, n) in evaluated.iter().enumerate() {
            stats.evaluated[i] = n.load(std::sync::atomic::Ordering::Relaxed);
        }
        Ok(stats)
    }
}

impl Runner {
    /// Records each evaluator's code version with its sources and what it scored
    /// (`(count, mean)` per evaluator), for the history view. Without a store, nothing.
    pub fn record_versions(&self, evaluators: &[Prepared], scored: &[(usize, Option<f64>)]) {
        let Some(store) = &self.store else { return };
        for (p, (count, mean)) in evaluators.iter().zip(scored) {
            if p.failure.is_some() {
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
            let _ = store.record_version(&p.spec.name, &p.key, &sources, *count, *mean);
        }
    }
}

/// Contract breaks of one evaluator on one sample.
#[derive(Clone, Debug)]
pub struct Breaks {
    pub evaluator: usize,
    pub at: SampleRef,
    pub issues: Vec<String>,
}

/// One evaluator's check: how many samples were checked, and each kind of break with
/// the samples it happened on (sorted by kind).
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub checked: usize,
    pub breaks: Vec<(String, Vec<SampleRef>)>,
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
        let mut out = Vec::new();
        for (e, p) in evaluators.iter().enumerate() {
            if let Some(failure) = &p.failure {
                for s in &samples {
                    out.push(Breaks {
                        evaluator: e,
                        at: s.at.clone(),
                        issues: vec![format!("{}: {}", failure.kind, failure.message)],
                    });
                }
                continue;
            }
            let mut worker = match self.pool.checkout(&p.spec, p.key).await {
                Ok(w) => w,
                Err(err) => {
                    let error = crate::engine::spawn_error(&p.spec, err);
                    for s in &samples {
                        out.push(Breaks {
                            evaluator: e,
                            at: s.at.clone(),
                            issues: vec![error.message.clone()],
                        });
                    }
                    continue;
                }
            };
            let size = if worker.loaded.style.is_batched() {
                p.spec.batch_size.max(1)
            } else {
                16
            };
            let by_id: HashMap<u64, &SampleLine> =
                samples.iter().map(|s| (s.at.index as u64, s)).collect();
            let mut alive = true;
            for chunk in samples.chunks(size) {
                if !alive {
                    break;
                }
                let jobs: Vec<(u64, &str)> = chunk
                    .iter()
                    .map(|s| (s.at.index as u64, s.raw.as_str()))
                    .collect();
                let _ = worker.send_check(&jobs).await;
                let mut answered = 0;
                loop {
                    let deadline = tokio::time::Instant::now() + worker.patience() * 2;
                    match worker.next_message(deadline).await {
                        crate::engine::Next::Checked(id, issues) => {
                            answered += 1;
                            if let Some(s) = by_id.get(&id) {
                                out.push(Breaks {
                                    evaluator: e,
                                    at: s.at.clone(),
                                    issues,
                                });
                            }
                        }
                        crate::engine::Next::Done { .. } => {
                            worker.idle();
                            break;
                        }
                        crate::engine::Next::Result(..) => {}
                        // check mode reports a timeout as an issue and never retires
                        crate::engine::Next::Retired => {
                            alive = false;
                            break;
                        }
                        crate::engine::Next::Dead(error) => {
                            for s in &chunk[answered.min(chunk.len())..] {
                                out.push(Breaks {
                                    evaluator: e,
                                    at: s.at.clone(),
                                    issues: vec![format!("{}: {}", error.kind, error.message)],
                                });
                            }
                            alive = false;
                            break;
                        }
                    }
                }
            }
            if alive {
                self.pool.checkin(&p.spec.name, p.key, worker);
            }
        }
        Ok(out)
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
