//! Scheduling: batches of samples over `--jobs` CPU slots, workers kept warm per
//! evaluator, lost batches rerun on a fresh worker.

use super::worker::{BatchEnd, Worker};
use super::zygote::{Engine, EngineError};
use crate::model::{kinds, EvalError, EvaluatorSpec, Outcome};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Aim for batches of about this much work, so that results stream steadily and the
/// last batches of a run spread over every slot.
const TARGET_BATCH_MS: f64 = 25.0;
const MAX_BATCH: usize = 256;
const MAX_BATCH_BYTES: usize = 4 << 20;

/// One sample to evaluate: its id (sample index) and raw JSON line.
#[derive(Clone, Debug)]
pub struct PoolJob {
    pub id: u64,
    pub raw: Arc<str>,
}

/// Receives each outcome as it is produced.
pub type Sink = Arc<dyn Fn(u64, Outcome) + Send + Sync>;

struct Idle {
    key: [u8; 32],
    workers: Vec<Worker>,
}

/// Worker processes for every evaluator, sharing `jobs` slots.
pub struct Pool {
    engine: Engine,
    slots: Arc<Semaphore>,
    jobs: usize,
    idle: Mutex<HashMap<String, Idle>>,
    preloaded: Mutex<std::collections::HashSet<String>>,
}

impl Pool {
    pub fn new(engine: Engine, jobs: usize) -> Pool {
        let jobs = jobs.max(1);
        Pool {
            engine,
            slots: Arc::new(Semaphore::new(jobs)),
            jobs,
            idle: Mutex::default(),
            preloaded: Mutex::default(),
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn jobs(&self) -> usize {
        self.jobs
    }

    /// An idle worker of `spec.name` running code `key`, or a freshly forked one.
    /// Idle workers of older code are dropped (they exit when their socket closes).
    pub async fn checkout(
        &self,
        spec: &EvaluatorSpec,
        key: [u8; 32],
    ) -> Result<Worker, EngineError> {
        {
            let mut idle = self.idle.lock().unwrap();
            if let Some(entry) = idle.get_mut(&spec.name) {
                if entry.key == key {
                    if let Some(w) = entry.workers.pop() {
                        return Ok(w);
                    }
                } else {
                    idle.remove(&spec.name);
                }
            }
        }
        let worker = self.engine.spawn_worker(spec).await?;
        let fresh: Vec<String> = {
            let mut done = self.preloaded.lock().unwrap();
            worker
                .loaded
                .third_party
                .iter()
                .filter(|m| done.insert((*m).clone()))
                .cloned()
                .collect()
        };
        self.engine.preload(&fresh).await;
        Ok(worker)
    }

    /// Returns a worker for reuse by later batches of the same code.
    pub fn checkin(&self, name: &str, key: [u8; 32], worker: Worker) {
        if !worker.is_alive() {
            return;
        }
        let mut idle = self.idle.lock().unwrap();
        let entry = idle.entry(name.to_string()).or_insert_with(|| Idle {
            key,
            workers: Vec::new(),
        });
        if entry.key != key {
            *entry = Idle {
                key,
                workers: Vec::new(),
            };
        }
        if entry.workers.len() < self.jobs {
            entry.workers.push(worker);
        }
    }

    /// Drops the idle workers of an evaluator (its code changed).
    pub fn retire(&self, name: &str) {
        self.idle.lock().unwrap().remove(name);
    }

    /// Evaluates every job sent on `queue` until it closes, on up to `jobs` workers of
    /// this evaluator at a time, calling `sink` with each outcome as it arrives.
    /// Dropping the returned future cancels the work and kills busy workers.
    pub async fn drain(
        self: &Arc<Self>,
        spec: Arc<EvaluatorSpec>,
        key: [u8; 32],
        queue: flume::Receiver<PoolJob>,
        sink: Sink,
    ) {
        let average_ms = Arc::new(AtomicU64::new(f64::NAN.to_bits()));
        let mut tasks = JoinSet::new();
        for _ in 0..self.jobs {
            let pool = self.clone();
            let spec = spec.clone();
            let queue = queue.clone();
            let sink = sink.clone();
            let average_ms = average_ms.clone();
            tasks.spawn(async move {
                pool.lane(&spec, key, queue, sink, &average_ms).await;
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    async fn lane(
        &self,
        spec: &EvaluatorSpec,
        key: [u8; 32],
        queue: flume::Receiver<PoolJob>,
        sink: Sink,
        average_ms: &AtomicU64,
    ) {
        let mut worker: Option<Worker> = None;
        while let Ok(first) = queue.recv_async().await {
            let limit = if spec.style.is_some_and(|s| s.is_batched())
                || worker.as_ref().is_some_and(|w| w.loaded.style.is_batched())
            {
                spec.batch_size.max(1)
            } else {
                let avg = f64::from_bits(average_ms.load(Ordering::Relaxed));
                if avg.is_nan() {
                    4
                } else {
                    ((TARGET_BATCH_MS / avg.max(1e-3)) as usize).clamp(1, MAX_BATCH)
                }
            };
            let mut batch = vec![first];
            let mut bytes = batch[0].raw.len();
            while batch.len() < limit && bytes < MAX_BATCH_BYTES {
                match queue.try_recv() {
                    Ok(job) => {
                        bytes += job.raw.len();
                        batch.push(job);
                    }
                    Err(_) => break,
                }
            }
            let _slot = self
                .slots
                .acquire()
                .await
                .expect("the pool never closes its slots");
            let mut todo: Vec<(u64, &str)> = batch.iter().map(|j| (j.id, &*j.raw)).collect();
            while !todo.is_empty() {
                let mut w = match worker.take() {
                    Some(w) => w,
                    None => match self.checkout(spec, key).await {
                        Ok(w) => w,
                        Err(e) => {
                            let error = spawn_error(spec, e);
                            for (id, _) in &todo {
                                sink(*id, Outcome::failed(error.clone()));
                            }
                            break;
                        }
                    },
                };
                // A batched style is only known once the first worker imported the code.
                let batched = w.loaded.style.is_batched();
                let started = std::time::Instant::now();
                let mut count = 0usize;
                let end = w
                    .run_batch(&todo, |id, outcome| {
                        count += 1;
                        sink(id, outcome)
                    })
                    .await;
                if !batched && count > 0 {
                    let per = started.elapsed().as_secs_f64() * 1000.0 / count as f64;
                    let old = f64::from_bits(average_ms.load(Ordering::Relaxed));
                    let new = if old.is_nan() {
                        per
                    } else {
                        old * 0.7 + per * 0.3
                    };
                    average_ms.store(new.to_bits(), Ordering::Relaxed);
                }
                match end {
                    BatchEnd::Done { .. } => {
                        worker = Some(w);
                        todo.clear();
                    }
                    BatchEnd::Lost { rerun } => {
                        todo.retain(|(id, _)| rerun.contains(id));
                    }
                }
            }
        }
        if let Some(w) = worker {
            self.checkin(&spec.name, key, w);
        }
    }
}

/// The error every sample of a batch gets when no worker could be started for it.
pub fn spawn_error(spec: &EvaluatorSpec, error: EngineError) -> EvalError {
    match error {
        EngineError::Import(e, _) => e,
        EngineError::Interpreter(m) => EvalError::new(kinds::WORKER_CRASHED, m),
        other => EvalError::new(
            kinds::WORKER_CRASHED,
            format!("no worker for '{}': {other}", spec.name),
        ),
    }
}
