//! Scheduling: batches of samples over `--jobs` CPU slots, workers kept warm per
//! evaluator, lost batches rerun on a fresh worker.

use super::worker::{Next, Worker};
use super::zygote::{Engine, EngineError};
use crate::model::{kinds, EvalError, EvaluatorSpec, Outcome};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

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

    /// One slot's worth of work for an evaluator: takes batches from the queue and
    /// keeps its worker fed, sending the next batch while the current one runs (at
    /// most two in flight), so the worker never waits for a round trip.
    async fn lane(
        &self,
        spec: &EvaluatorSpec,
        key: [u8; 32],
        queue: flume::Receiver<PoolJob>,
        sink: Sink,
        average_ms: &AtomicU64,
    ) {
        let mut worker: Option<Worker> = None;
        // jobs that must run again because their worker died before answering them
        let mut retry: VecDeque<PoolJob> = VecDeque::new();
        let mut open = true;
        loop {
            let first = match retry.pop_front() {
                Some(job) => job,
                None if open => match queue.recv_async().await {
                    Ok(job) => job,
                    Err(_) => break,
                },
                None => break,
            };
            let limit = self.batch_limit(spec, worker.as_ref(), average_ms);
            let batch = take_batch(first, &mut retry, &queue, limit);
            let _slot = self
                .slots
                .acquire()
                .await
                .expect("the pool never closes its slots");
            let mut w = match worker.take() {
                Some(w) => w,
                None => match self.checkout(spec, key).await {
                    Ok(w) => w,
                    Err(e) => {
                        let error = spawn_error(spec, e);
                        for job in batch.into_iter().chain(retry.drain(..)) {
                            sink(job.id, Outcome::failed(error.clone()));
                        }
                        continue;
                    }
                },
            };
            let mut flight = Flight::default();
            let _ = w.send(&pairs(&batch)).await; // a failed write shows as Dead below
            flight.push(batch);
            let mut progress = Instant::now();
            let alive = loop {
                let deadline = progress + w.patience();
                let more = open && retry.is_empty() && flight.len() < 2;
                tokio::select! {
                    message = w.next_message(deadline) => {
                        let since = std::mem::replace(&mut progress, Instant::now());
                        match message {
                            Next::Result(id, outcome) => {
                                if flight.answer(id) {
                                    record_average(&w, &outcome, average_ms);
                                    sink(id, *outcome);
                                }
                            }
                            Next::Checked(..) => {}
                            Next::Done { .. } => {
                                // a sample the worker passed over still gets its row
                                for job in flight.done() {
                                    sink(job.id, Outcome::failed(no_result()));
                                }
                                if flight.len() == 0 {
                                    w.idle();
                                    break true;
                                }
                            }
                            Next::Dead(error) => {
                                let mut failed = Outcome::failed(error);
                                failed.duration_ms = since.elapsed().as_secs_f64() * 1000.0;
                                flight.lost(&w, failed, &mut retry, &sink);
                                break false;
                            }
                            Next::Retired => {
                                retry.extend(flight.unanswered().into_iter().flatten());
                                break false;
                            }
                        }
                    },
                    job = queue.recv_async(), if more => match job {
                        Ok(job) => {
                            let limit = self.batch_limit(spec, Some(&w), average_ms);
                            let next = take_batch(job, &mut retry, &queue, limit);
                            let _ = w.send(&pairs(&next)).await;
                            flight.push(next);
                        }
                        Err(_) => open = false,
                    },
                }
            };
            if alive {
                worker = Some(w);
            }
        }
        if let Some(w) = worker {
            self.checkin(&spec.name, key, w);
        }
    }

    /// How many samples to send in one batch: the configured size for batched styles,
    /// else about [`TARGET_BATCH_MS`] of work by the recent average.
    fn batch_limit(
        &self,
        spec: &EvaluatorSpec,
        worker: Option<&Worker>,
        average_ms: &AtomicU64,
    ) -> usize {
        if spec.style.is_some_and(|s| s.is_batched())
            || worker.is_some_and(|w| w.loaded.style.is_batched())
        {
            return spec.batch_size.max(1);
        }
        let avg = f64::from_bits(average_ms.load(Ordering::Relaxed));
        if avg.is_nan() {
            4
        } else {
            ((TARGET_BATCH_MS / avg.max(1e-3)) as usize).clamp(1, MAX_BATCH)
        }
    }
}

/// A batch: `first`, then what is waiting (jobs to retry first), up to `limit` jobs
/// and [`MAX_BATCH_BYTES`].
fn take_batch(
    first: PoolJob,
    retry: &mut VecDeque<PoolJob>,
    queue: &flume::Receiver<PoolJob>,
    limit: usize,
) -> Vec<PoolJob> {
    let mut bytes = first.raw.len();
    let mut batch = vec![first];
    while batch.len() < limit && bytes < MAX_BATCH_BYTES {
        let next = match retry.pop_front() {
            Some(job) => job,
            None => match queue.try_recv() {
                Ok(job) => job,
                Err(_) => break,
            },
        };
        bytes += next.raw.len();
        batch.push(next);
    }
    batch
}

/// The batches sent to one worker and not finished yet, oldest first, and which of
/// their jobs still wait for an answer. Every job leaves it exactly once: answered,
/// passed over at its batch's end, lost with the worker, or handed back for a retry.
#[derive(Default)]
struct Flight {
    batches: VecDeque<Vec<PoolJob>>,
    waiting: HashSet<u64>,
}

impl Flight {
    fn push(&mut self, batch: Vec<PoolJob>) {
        self.waiting.extend(batch.iter().map(|j| j.id));
        self.batches.push_back(batch);
    }

    fn len(&self) -> usize {
        self.batches.len()
    }

    /// Whether `id` waited for an answer (and now has one). A line for a sample that
    /// is not in flight, or answered twice, is ignored: one row per job.
    fn answer(&mut self, id: u64) -> bool {
        self.waiting.remove(&id)
    }

    /// The oldest batch is finished: its jobs that got no answer.
    fn done(&mut self) -> Vec<PoolJob> {
        let batch = self.batches.pop_front().unwrap_or_default();
        batch
            .into_iter()
            .filter(|j| self.waiting.remove(&j.id))
            .collect()
    }

    /// Every batch's unanswered jobs, oldest batch first; the flight is empty after.
    fn unanswered(&mut self) -> Vec<Vec<PoolJob>> {
        let waiting = std::mem::take(&mut self.waiting);
        self.batches
            .drain(..)
            .map(|b| b.into_iter().filter(|j| waiting.contains(&j.id)).collect())
            .collect()
    }

    /// The worker died (a crash, or killed at the deadline): the one evaluation it was
    /// on gets the `failed` outcome, the rest go back to `retry`. A batched style's
    /// call is one call for its whole batch, so that batch fails together.
    fn lost(
        &mut self,
        worker: &Worker,
        failed: Outcome,
        retry: &mut VecDeque<PoolJob>,
        sink: &Sink,
    ) {
        let mut batches = self.unanswered().into_iter();
        if worker.loaded.style.is_batched() {
            for job in batches.next().unwrap_or_default() {
                sink(job.id, failed.clone());
            }
            retry.extend(batches.flatten());
            return;
        }
        let unanswered: Vec<PoolJob> = batches.flatten().collect();
        let Some(first) = unanswered.first() else {
            return;
        };
        let blamed = worker
            .current()
            .filter(|c| unanswered.iter().any(|j| j.id == *c))
            .unwrap_or(first.id);
        for job in unanswered {
            if job.id == blamed {
                sink(job.id, failed.clone());
            } else {
                retry.push_back(job);
            }
        }
    }
}

/// Folds a pointwise evaluation's time into the running average that sizes batches.
fn record_average(worker: &Worker, outcome: &Outcome, average_ms: &AtomicU64) {
    if worker.loaded.style.is_batched() {
        return;
    }
    let old = f64::from_bits(average_ms.load(Ordering::Relaxed));
    let per = outcome.duration_ms.max(0.001);
    let new = if old.is_nan() {
        per
    } else {
        old * 0.8 + per * 0.2
    };
    average_ms.store(new.to_bits(), Ordering::Relaxed);
}

/// What a sample gets when its worker ended the batch without a line for it.
fn no_result() -> EvalError {
    EvalError::new(
        kinds::INVALID_RESULT,
        "the worker finished the batch without a result for this sample",
    )
}

fn pairs(batch: &[PoolJob]) -> Vec<(u64, &str)> {
    batch.iter().map(|j| (j.id, &*j.raw)).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(ids: &[u64]) -> Vec<PoolJob> {
        ids.iter()
            .map(|&id| PoolJob {
                id,
                raw: Arc::from(format!("{{\"n\": {id}}}")),
            })
            .collect()
    }

    fn ids(jobs: &[PoolJob]) -> Vec<u64> {
        jobs.iter().map(|j| j.id).collect()
    }

    #[test]
    fn each_job_is_answered_once_and_only_jobs_in_flight_are() {
        let mut flight = Flight::default();
        flight.push(batch(&[1, 2, 3]));
        assert!(flight.answer(2));
        assert!(!flight.answer(2), "a second line for a sample is ignored");
        assert!(
            !flight.answer(9),
            "a line for a sample not in flight is ignored"
        );
        assert!(flight.answer(1));
        assert_eq!(
            ids(&flight.done()),
            [3],
            "3 got no result before its batch ended"
        );
        assert_eq!(flight.len(), 0);
        assert!(!flight.answer(3), "nor after it");
    }

    #[test]
    fn a_lost_worker_leaves_the_unanswered_jobs_of_every_batch() {
        let mut flight = Flight::default();
        flight.push(batch(&[1, 2]));
        flight.push(batch(&[3, 4]));
        assert!(flight.answer(1));
        assert!(flight.answer(4));
        let left: Vec<Vec<u64>> = flight.unanswered().iter().map(|b| ids(b)).collect();
        assert_eq!(left, [vec![2], vec![3]]);
        assert_eq!(flight.len(), 0);
        assert!(!flight.answer(2));
    }
}
