//! Scheduling: batches of samples over `--jobs` CPU slots, workers kept warm per
//! evaluator, lost batches rerun on a fresh worker.
//!
//! Single samples ([`PoolWork::One`]) are merged into batches sized by how long the
//! evaluator takes. A batch formed by the caller ([`PoolWork::Batch`], TRL's
//! generation batch) is one call: it is never merged, split or reordered, and a
//! retry keeps it whole, so a batch-relative reward sees the same batch on every run.
//!
//! With `concurrency = N` a pointwise batch is sent as "B <n> N": the worker keeps N of
//! its evaluations in flight, and batches hold at least two rounds of N. When such a
//! worker dies, the samples it had in flight run again one at a time
//! ([`PoolWork::Alone`]), so the crash is blamed on its own sample.

use super::chat_template::{templated_prompts, ChatTemplate};
use super::protocol::ThirdParty;
use super::worker::{Next, Worker};
use super::zygote::{Engine, EngineError};
use crate::model::{kinds, EvalError, EvaluatorSpec, Facts, Outcome, Style, TemplateSource};
use bytestring::ByteString;
use std::collections::{HashMap, VecDeque};
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

/// One sample to evaluate: its id (sample index), raw JSON line, and what its source
/// logged about it (the step a TRL call's `trainer_state` reports), if anything.
#[derive(Clone, Debug)]
pub struct PoolJob {
    pub id: u64,
    pub raw: ByteString,
    pub facts: Option<Arc<Facts>>,
    /// `raw`'s marshal form when its reader wrote it ([`crate::workspace::SampleLine::packed`]):
    /// sent as it is instead of parsing the line again.
    pub packed: Option<bytes::Bytes>,
}

/// What a pool's queue carries.
#[derive(Clone, Debug)]
pub enum PoolWork {
    /// One sample, merged with others waiting into a batch of adaptive size.
    One(PoolJob),
    /// A batch formed by the caller, sent to the worker as it is.
    Batch(Vec<PoolJob>),
    /// The pool's own: a sample that was in flight with others when their worker
    /// died, run again alone (one evaluation at a time) so that a crash it causes is
    /// blamed on it only.
    Alone(PoolJob),
}

impl PoolWork {
    /// The samples it carries, in order.
    pub fn into_jobs(self) -> Vec<PoolJob> {
        match self {
            PoolWork::One(job) | PoolWork::Alone(job) => vec![job],
            PoolWork::Batch(jobs) => jobs,
        }
    }
}

impl From<PoolJob> for PoolWork {
    fn from(job: PoolJob) -> PoolWork {
        PoolWork::One(job)
    }
}

/// Receives each outcome as it is produced.
pub type Sink = Arc<dyn Fn(u64, Outcome) + Send + Sync>;

/// Told when a worker finished a batch: the batch's sample ids, and the project files
/// (all so far) and third-party code (new) that the worker reported it imported, when
/// that changed. A batch whose worker died gets no call.
pub type BatchDone =
    Arc<dyn Fn(&[u64], Option<Vec<std::path::PathBuf>>, Option<ThirdParty>) + Send + Sync>;

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
    /// Jinja chat templates compiled by earlier runs, newest last (at most
    /// [`TEMPLATES_KEPT`]): a run reuses one, and the prompts it rendered.
    templates: Mutex<Vec<(TemplateSource, Arc<ChatTemplate>)>>,
    /// Whether the templates keep the prompts they render ([`Pool::keep_prompts`]).
    keep_prompts: std::sync::atomic::AtomicBool,
}

/// How many compiled chat templates the pool keeps (each with its rendered prompts).
const TEMPLATES_KEPT: usize = 2;

impl Pool {
    pub fn new(engine: Engine, jobs: usize) -> Pool {
        let jobs = jobs.max(1);
        Pool {
            engine,
            slots: Arc::new(Semaphore::new(jobs)),
            jobs,
            idle: Mutex::default(),
            preloaded: Mutex::default(),
            templates: Mutex::default(),
            keep_prompts: Default::default(),
        }
    }

    /// From now on, the chat templates this pool compiles keep the prompts they
    /// render, for the next run on the same samples: the workbench's pool, which
    /// runs again on every save (a single `rwb run` renders each line once, and would
    /// only pay for the keeping).
    pub fn keep_prompts(&self) {
        self.keep_prompts.store(true, Ordering::Relaxed);
    }

    /// `source` compiled, an earlier run's when it had the same source; `None` when
    /// it is not a Jinja template (or does not compile: a broken template stopped
    /// the run before it began).
    fn template(&self, source: &TemplateSource) -> Option<Arc<ChatTemplate>> {
        if !matches!(source, TemplateSource::Jinja { .. }) {
            return None;
        }
        let mut kept = self.templates.lock().ok()?;
        if let Some(at) = kept.iter().position(|(s, _)| s == source) {
            let entry = kept.remove(at);
            let template = entry.1.clone();
            kept.push(entry);
            return Some(template);
        }
        let mut template = ChatTemplate::compile(source).ok()?;
        if self.keep_prompts.load(Ordering::Relaxed) {
            template = template.keeping_prompts();
        }
        let template = Arc::new(template);
        if kept.len() >= TEMPLATES_KEPT {
            kept.remove(0);
        }
        kept.push((source.clone(), template.clone()));
        Some(template)
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

    /// Replaces the fork-server when it started before `changed` (see
    /// [`Engine::restart_if_older`]); the new one is preloaded again as workers start.
    pub async fn restart_engine_if_older(&self, changed: std::time::SystemTime) -> bool {
        let restarted = self.engine.restart_if_older(changed).await;
        if restarted {
            self.preloaded.lock().unwrap().clear();
        }
        restarted
    }

    /// Evaluates all work sent on `queue` until it closes, on up to `jobs` workers of
    /// this evaluator at a time, calling `sink` with each outcome as it arrives.
    /// Dropping the returned future cancels the work and kills busy workers.
    pub async fn drain(
        self: &Arc<Self>,
        spec: Arc<EvaluatorSpec>,
        key: [u8; 32],
        queue: flume::Receiver<PoolWork>,
        sink: Sink,
    ) {
        self.drain_with(spec, key, queue, sink, None).await
    }

    /// [`Pool::drain`], also calling `on_done` as each batch is answered.
    pub async fn drain_with(
        self: &Arc<Self>,
        spec: Arc<EvaluatorSpec>,
        key: [u8; 32],
        queue: flume::Receiver<PoolWork>,
        sink: Sink,
        on_done: Option<BatchDone>,
    ) {
        let average_ms = Arc::new(AtomicU64::new(f64::NAN.to_bits()));
        // compiled once, for this run and the next ones
        let template = self.template(&spec.chat_template);
        let mut tasks = JoinSet::new();
        for _ in 0..self.jobs {
            let pool = self.clone();
            let spec = spec.clone();
            let queue = queue.clone();
            let sink = sink.clone();
            let average_ms = average_ms.clone();
            let on_done = on_done.clone();
            let template = template.clone();
            tasks.spawn(async move {
                pool.lane(&spec, key, queue, sink, &average_ms, on_done, template)
                    .await;
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    /// One slot's worth of work for an evaluator: takes batches from the queue and
    /// keeps its worker fed, sending the next batch while the current one runs (at
    /// most two in flight), so the worker never waits for a round trip.
    #[allow(clippy::too_many_arguments)]
    async fn lane(
        &self,
        spec: &EvaluatorSpec,
        key: [u8; 32],
        queue: flume::Receiver<PoolWork>,
        sink: Sink,
        average_ms: &AtomicU64,
        on_done: Option<BatchDone>,
        template: Option<Arc<ChatTemplate>>,
    ) {
        let mut lane = Lane {
            spec,
            queue: &queue,
            sink: &sink,
            average_ms,
            on_done: on_done.as_ref(),
            retry: VecDeque::new(),
            open: true,
            template,
        };
        let mut worker: Option<Worker> = None;
        while let Some(first) = lane.next_work().await {
            let limit = self.batch_limit(spec, worker.as_ref(), average_ms, &queue);
            let concurrency = in_flight_for(spec, worker.as_ref(), &first);
            let batch = take_batch(first, &mut lane.retry, &queue, limit);
            if batch.is_empty() {
                continue;
            }
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
                        lane.fail_all(batch, spawn_error(spec, e));
                        continue;
                    }
                },
            };
            if self.keep_fed(&mut lane, &mut w, batch, concurrency).await {
                worker = Some(w);
            }
        }
        if let Some(w) = worker {
            self.checkin(&spec.name, key, w);
        }
    }

    /// Sends `batch` to `w`, then answers its messages and sends the next batches
    /// while they run, until nothing is in flight; returns whether `w` is still alive.
    async fn keep_fed(
        &self,
        lane: &mut Lane<'_>,
        w: &mut Worker,
        batch: Vec<PoolJob>,
        concurrency: usize,
    ) -> bool {
        let mut flight = Flight::default();
        let concurrency = if w.loaded.style.is_batched() {
            1
        } else {
            concurrency
        };
        // a failed write shows as Dead below
        if !lane.send(w, batch, concurrency, &mut flight).await {
            w.idle();
            return true; // nothing of it could be sent: the worker is as it was
        }
        let mut progress = Instant::now();
        loop {
            // The next batch is taken when there is room for it, from what is queued
            // then, never by waiting on the queue beside the worker: flume loses the
            // wake-up a receiving future was given when that future is dropped
            // unfinished (as `select!` drops the branch that lost), and with every
            // lane asleep on a full queue the run stalled for good.
            while lane.open && lane.retry.is_empty() && flight.len() < 2 {
                match lane.queue.try_recv() {
                    Ok(work) => self.send_next(lane, w, work, &mut flight).await,
                    Err(flume::TryRecvError::Empty) => break,
                    Err(flume::TryRecvError::Disconnected) => lane.open = false,
                }
            }
            let deadline = progress + w.patience();
            let message = w.next_message(deadline).await;
            let since = std::mem::replace(&mut progress, Instant::now());
            if let Some(alive) = lane.on_message(w, message, since, &mut flight) {
                return alive;
            }
        }
    }

    /// Merges `work` with what waits into the next batch and sends it to `w`.
    async fn send_next(
        &self,
        lane: &mut Lane<'_>,
        w: &mut Worker,
        work: PoolWork,
        flight: &mut Flight,
    ) {
        let limit = self.batch_limit(lane.spec, Some(&*w), lane.average_ms, lane.queue);
        let concurrency = in_flight_for(lane.spec, Some(&*w), &work);
        let next = take_batch(work, &mut lane.retry, lane.queue, limit);
        if !next.is_empty() {
            lane.send(w, next, concurrency, flight).await;
        }
    }

    /// How many single jobs to merge into one batch: the configured size for batched
    /// styles, else about [`TARGET_BATCH_MS`] of work by the recent average. Once
    /// nothing more will be queued, the last jobs are shared out in smaller batches,
    /// so that the workers finish together: a worker left with two full batches in
    /// flight when the others ran out kept the run going up to 50 ms longer.
    fn batch_limit(
        &self,
        spec: &EvaluatorSpec,
        worker: Option<&Worker>,
        average_ms: &AtomicU64,
        queue: &flume::Receiver<PoolWork>,
    ) -> usize {
        if spec.style.is_some_and(|s| s.is_batched())
            || worker.is_some_and(|w| w.loaded.style.is_batched())
        {
            return spec.batch_size.max(1);
        }
        let avg = f64::from_bits(average_ms.load(Ordering::Relaxed));
        let c = spec.concurrency.max(1);
        // with c in flight, a batch does c times the work in the same time; at least
        // two rounds of c, so that the worker's slots stay full across a batch
        let least = if c > 1 { 2 * c } else { 1 };
        let limit = if avg.is_nan() {
            4 * c
        } else {
            ((TARGET_BATCH_MS * c as f64 / avg.max(1e-3)) as usize)
                .clamp(least, MAX_BATCH.max(least))
        };
        match queue.is_disconnected() {
            true => last_batches(limit, least, queue.len(), self.jobs),
            false => limit,
        }
    }
}

/// The size of a batch taken once the queue is closed with `left` jobs in it, for
/// `lanes` lanes: at most half a lane's share of what is left (two batches are in
/// flight a lane), and never under `least`.
fn last_batches(limit: usize, least: usize, left: usize, lanes: usize) -> usize {
    limit.min(left / (2 * lanes.max(1))).max(least)
}

/// Evaluations in flight for the next batch: the evaluator's `concurrency`, but one
/// for a batched style (one call per batch) and for a sample run again alone.
fn in_flight_for(spec: &EvaluatorSpec, worker: Option<&Worker>, next: &PoolWork) -> usize {
    let batched = spec.style.is_some_and(|s| s.is_batched())
        || worker.is_some_and(|w| w.loaded.style.is_batched());
    match next {
        PoolWork::Alone(_) | PoolWork::Batch(_) => 1,
        PoolWork::One(_) if batched => 1,
        PoolWork::One(_) => spec.concurrency.max(1),
    }
}

/// The next batch to send. A caller's batch goes as it is; a single job is merged
/// with the single jobs waiting after it (work to retry first), up to `limit` jobs and
/// [`MAX_BATCH_BYTES`], stopping at a caller's batch, which is kept to go next.
fn take_batch(
    first: PoolWork,
    retry: &mut VecDeque<PoolWork>,
    queue: &flume::Receiver<PoolWork>,
    limit: usize,
) -> Vec<PoolJob> {
    let first = match first {
        PoolWork::Batch(jobs) => return jobs,
        PoolWork::Alone(job) => return vec![job],
        PoolWork::One(job) => job,
    };
    let mut bytes = first.raw.len();
    let mut batch = vec![first];
    while batch.len() < limit && bytes < MAX_BATCH_BYTES {
        let next = match retry.pop_front() {
            Some(work) => work,
            None => match queue.try_recv() {
                Ok(work) => work,
                Err(_) => break,
            },
        };
        match next {
            PoolWork::One(job) => {
                bytes += job.raw.len();
                batch.push(job);
            }
            whole @ (PoolWork::Batch(_) | PoolWork::Alone(_)) => {
                retry.push_front(whole);
                break;
            }
        }
    }
    batch
}

/// One lane's queue, where its outcomes go, and the work that goes next.
struct Lane<'a> {
    spec: &'a EvaluatorSpec,
    queue: &'a flume::Receiver<PoolWork>,
    sink: &'a Sink,
    average_ms: &'a AtomicU64,
    on_done: Option<&'a BatchDone>,
    /// Work that goes next: jobs that must run again because their worker died
    /// before answering them, or a whole batch met while merging single jobs.
    retry: VecDeque<PoolWork>,
    /// Whether the queue may still hold work.
    open: bool,
    /// The evaluator's Jinja chat template, when it has one.
    template: Option<Arc<ChatTemplate>>,
}

impl Lane<'_> {
    /// Sends `batch` to `w` and puts it in flight; with the prompts the trainer would
    /// have templated when the worker's style takes templated text and the template is
    /// rwb's to render. A sample whose prompt the template refuses fails (a batched
    /// call: its whole batch, as the trainer's step would) and is not sent. Returns
    /// whether anything was sent.
    async fn send(
        &mut self,
        w: &mut Worker,
        batch: Vec<PoolJob>,
        concurrency: usize,
        flight: &mut Flight,
    ) -> bool {
        let style = w.loaded.style;
        let templated = style.takes_templated_prompt()
            || (style == crate::model::Style::Verl
                && self.spec.solution_str == crate::model::SolutionStr::PromptAndResponse);
        let Some(template) = self.template.as_ref().filter(|_| templated) else {
            match with_steps(style, &batch) {
                Some(lines) => {
                    let jobs: Vec<(u64, &str)> = batch
                        .iter()
                        .zip(&lines)
                        .map(|(j, l)| (j.id, &**l))
                        .collect();
                    let _ = match self.spec.watch {
                        true => w.send_watched(&jobs).await,
                        false => w.send(&jobs, concurrency).await,
                    };
                }
                None => {
                    let _ = match self.spec.watch {
                        true => w.send_watched(&pairs(&batch)).await,
                        false => w.send_jobs(&batch, concurrency).await,
                    };
                }
            }
            flight.push(batch);
            return true;
        };
        let origin = self.spec.chat_template.describe();
        let rendered = templated_prompts(template, batch.iter().map(|j| &*j.raw), &origin);
        let failed = |e: &super::chat_template::TemplateError| {
            let mut error = EvalError::new(kinds::TEMPLATE_ERROR, e.to_string());
            error.file = Some(e.origin.clone());
            error.line = e.line.map(|l| l as u32);
            Outcome::failed(error)
        };
        let mut jobs = Vec::with_capacity(batch.len());
        let mut prompts = Vec::with_capacity(batch.len());
        if style.is_batched() {
            if let Some(e) = rendered.iter().find_map(|r| r.as_ref().err()) {
                for job in batch {
                    (self.sink)(job.id, failed(e));
                }
                return false;
            }
        }
        for (job, prompt) in batch.into_iter().zip(rendered) {
            match prompt {
                Ok(prompt) => {
                    jobs.push(job);
                    prompts.push(prompt);
                }
                Err(e) => (self.sink)(job.id, failed(&e)),
            }
        }
        if jobs.is_empty() {
            return false;
        }
        let _ = w
            .send_with_prompts(&pairs(&jobs), concurrency, &prompts, self.spec.watch)
            .await;
        flight.push(jobs);
        true
    }

    /// The work to do next: a retry first, else the queue's next; `None` at the end.
    async fn next_work(&mut self) -> Option<PoolWork> {
        match self.retry.pop_front() {
            Some(job) => Some(job),
            None if self.open => self.queue.recv_async().await.ok(),
            None => None,
        }
    }

    /// No worker could start: `batch` and everything waiting to run again fail with
    /// `error`.
    fn fail_all(&mut self, batch: Vec<PoolJob>, error: EvalError) {
        let waiting = self.retry.drain(..).flat_map(PoolWork::into_jobs);
        for job in batch.into_iter().chain(waiting) {
            (self.sink)(job.id, Outcome::failed(error.clone()));
        }
    }

    /// Handles one message of the worker; `Some(alive)` when no batch is left in
    /// flight on it, `Some(false)` when it is gone.
    fn on_message(
        &mut self,
        w: &mut Worker,
        message: Next,
        since: Instant,
        flight: &mut Flight,
    ) -> Option<bool> {
        match message {
            Next::Result(id, outcome) => {
                if flight.answer(id) {
                    record_average(w, &outcome, self.average_ms);
                    (self.sink)(id, *outcome);
                }
            }
            Next::Checked(..) => {}
            Next::Done { files, packages } => {
                let (ids, passed_over) = flight.done();
                // a sample the worker passed over still gets its row
                for job in passed_over {
                    (self.sink)(job.id, Outcome::failed(no_result()));
                }
                if let Some(hook) = self.on_done {
                    hook(&ids, files, packages);
                }
                if flight.len() == 0 {
                    w.idle();
                    return Some(true);
                }
            }
            Next::Dead(error) => {
                let mut failed = Outcome::failed(error);
                failed.duration_ms = since.elapsed().as_secs_f64() * 1000.0;
                flight.lost(w, failed, &mut self.retry, self.sink);
                return Some(false);
            }
            Next::Retired => {
                flight.requeue(
                    w.loaded.style.is_batched(),
                    w.retired_to_split(),
                    &mut self.retry,
                );
                return Some(false);
            }
        }
        None
    }
}

/// The batches sent to one worker and not finished yet, oldest first, and which of
/// their jobs still wait for an answer. Every job leaves it exactly once: answered,
/// passed over at its batch's end, lost with the worker, or handed back for a retry.
#[derive(Default)]
struct Flight {
    batches: VecDeque<Vec<PoolJob>>,
    /// (foldhash: a lookup per answer; SipHash's DoS resistance buys nothing for ids)
    waiting: foldhash::HashSet<u64>,
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

    /// The oldest batch is finished: the ids of all its jobs, and its jobs that got
    /// no answer.
    fn done(&mut self) -> (Vec<u64>, Vec<PoolJob>) {
        let batch = self.batches.pop_front().unwrap_or_default();
        let ids = batch.iter().map(|j| j.id).collect();
        let passed_over = batch
            .into_iter()
            .filter(|j| self.waiting.remove(&j.id))
            .collect();
        (ids, passed_over)
    }

    /// The worker retired (after a timeout): everything not answered runs again on a
    /// fresh worker, a caller's batch as the same batch. With `split`, the oldest
    /// batch is the batched call that timed out (SPEC §3: a batch that times out
    /// names its sample): its samples go again one a call, so that the one that
    /// hangs is the `Timeout` row and the others get their scores.
    fn requeue(&mut self, batched: bool, split: bool, retry: &mut VecDeque<PoolWork>) {
        let mut batches = self.unanswered().into_iter();
        if batched && split {
            let timed_out = batches.next().unwrap_or_default();
            retry.extend(timed_out.into_iter().map(|job| PoolWork::Batch(vec![job])));
        }
        for batch in batches {
            requeue(batch, batched, retry);
        }
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
        retry: &mut VecDeque<PoolWork>,
        sink: &Sink,
    ) {
        let mut batches = self.unanswered().into_iter();
        if worker.loaded.style.is_batched() {
            // a batched call is one call: its whole batch failed (SPEC §3) — but one
            // killed at the deadline goes again one sample a call, to find the sample
            // that hangs; the batches queued behind it have not started and run
            // again as the same batches
            let lost = batches.next().unwrap_or_default();
            let hung = failed
                .error
                .as_ref()
                .is_some_and(|e| e.kind == kinds::TIMEOUT);
            if hung && lost.len() > 1 {
                for job in lost.into_iter().rev() {
                    retry.push_front(PoolWork::Batch(vec![job]));
                }
            } else {
                for job in lost {
                    sink(job.id, failed.clone());
                }
            }
            for batch in batches {
                requeue(batch, true, retry);
            }
            return;
        }
        let unanswered: Vec<PoolJob> = batches.flatten().collect();
        let suspects = suspects(worker, &unanswered);
        let mut alone = Vec::new();
        for job in unanswered {
            if !suspects.contains(&job.id) {
                retry.push_back(PoolWork::One(job));
            } else if suspects.len() == 1 {
                sink(job.id, failed.clone());
            } else {
                alone.push(PoolWork::Alone(job));
            }
        }
        // several were in flight together: each runs again alone, first, and the
        // one that kills its worker then is the one blamed
        for work in alone.into_iter().rev() {
            retry.push_front(work);
        }
    }
}

/// The samples a dead worker may have died of, among those it had not answered: the
/// ones in flight together (their mark slots), else the one it was on, else the first.
fn suspects(worker: &Worker, unanswered: &[PoolJob]) -> Vec<u64> {
    let waiting = |id: &u64| unanswered.iter().any(|j| j.id == *id);
    let together: Vec<u64> = worker.in_flight().into_iter().filter(waiting).collect();
    if !together.is_empty() {
        return together;
    }
    let one = worker.current().filter(waiting);
    one.or(unanswered.first().map(|j| j.id))
        .into_iter()
        .collect()
}

/// Puts unanswered jobs back in front of the queue: a caller's batch whole, single
/// jobs one by one (they merge again as the lane sees fit).
fn requeue(batch: Vec<PoolJob>, batched: bool, retry: &mut VecDeque<PoolWork>) {
    if batch.is_empty() {
        return;
    }
    if batched {
        retry.push_back(PoolWork::Batch(batch));
    } else {
        retry.extend(batch.into_iter().map(PoolWork::One));
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

/// For a TRL call, whose `trainer_state` reports the step: the batch's sample lines
/// with the step and epoch their source logged, under a key no sample has (`STEP` in
/// styles/samples.py: `{"\u0000rwb_step":{"step":N,"epoch":N},...}`). `None` for
/// another style or when no sample's source logged a step or epoch.
fn with_steps(style: Style, batch: &[PoolJob]) -> Option<Vec<String>> {
    let step = |j: &PoolJob| {
        j.facts
            .as_deref()
            .filter(|f| f.step.is_some() || f.epoch.is_some())
            .map(|f| (f.step, f.epoch))
    };
    if style != Style::Trl || !batch.iter().any(|j| step(j).is_some()) {
        return None;
    }
    let lines = batch.iter().map(|j| {
        let raw = j.raw.trim();
        let (Some((step, epoch)), Some(rest)) = (step(j), raw.strip_prefix('{')) else {
            return raw.to_string();
        };
        let rest = rest.trim_start();
        let known = serde_json::json!({"step": step, "epoch": epoch});
        let comma = if rest.starts_with('}') { "" } else { "," };
        format!("{{\"\\u0000rwb_step\":{known}{comma}{rest}")
    });
    Some(lines.collect())
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

    fn job(id: u64) -> PoolJob {
        PoolJob {
            id,
            raw: ByteString::from_static("{}"),
            facts: None,
            packed: None,
        }
    }

    fn ids(batch: &[PoolJob]) -> Vec<u64> {
        batch.iter().map(|j| j.id).collect()
    }

    #[tokio::test]
    async fn a_template_is_compiled_once_for_every_run_that_has_its_source() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::new("python3".into(), dir.path().to_path_buf()).unwrap();
        let pool = Pool::new(engine, 1);
        let jinja = |text: &str| TemplateSource::Jinja {
            origin: "t.jinja".into(),
            text: text.into(),
            special_tokens: Vec::new(),
        };
        let a = pool.template(&jinja("a{{ messages }}")).unwrap();
        assert!(Arc::ptr_eq(
            &a,
            &pool.template(&jinja("a{{ messages }}")).unwrap()
        ));
        // an edited template is compiled anew; ChatML and a broken template have none
        let b = pool.template(&jinja("b{{ messages }}")).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(pool.template(&TemplateSource::ChatMl).is_none());
        assert!(pool.template(&jinja("{% for %}")).is_none());
        // the last TEMPLATES_KEPT are kept, the one used longest ago goes first
        for i in 0..TEMPLATES_KEPT - 1 {
            pool.template(&jinja(&format!("{i}{{{{ messages }}}}")));
        }
        assert!(Arc::ptr_eq(
            &b,
            &pool.template(&jinja("b{{ messages }}")).unwrap()
        ));
        let again = pool.template(&jinja("a{{ messages }}")).unwrap();
        assert!(
            !Arc::ptr_eq(&a, &again),
            "a was dropped to keep the last ones"
        );
        assert_eq!(pool.templates.lock().unwrap().len(), TEMPLATES_KEPT);
        // a run keeps no prompts; the workbench's pool asks for them to be kept
        assert!(!again.keeps_prompts());
        pool.keep_prompts();
        assert!(pool
            .template(&jinja("c{{ messages }}"))
            .unwrap()
            .keeps_prompts());
    }

    #[test]
    fn a_callers_batch_is_never_merged_split_or_reordered() {
        let (tx, rx) = flume::unbounded();
        tx.send(PoolWork::Batch(vec![job(3), job(4)])).unwrap();
        tx.send(PoolWork::One(job(5))).unwrap();
        let mut retry = VecDeque::new();
        let whole = PoolWork::Batch(vec![job(2), job(0), job(1)]);
        // a limit below the batch's size does not split it, and nothing joins it
        assert_eq!(ids(&take_batch(whole, &mut retry, &rx, 2)), [2, 0, 1]);
        assert_eq!(rx.len(), 2);
        // single jobs merge up to the next caller's batch, which is kept to go next
        let mut retry = VecDeque::from([PoolWork::One(job(1))]);
        let merged = take_batch(PoolWork::One(job(0)), &mut retry, &rx, 16);
        assert_eq!(ids(&merged), [0, 1]);
        let next = retry.pop_front().expect("the batch met is kept");
        let next = take_batch(next, &mut retry, &rx, 16);
        assert_eq!(ids(&next), [3, 4]);
        assert_eq!(
            ids(&take_batch(PoolWork::One(job(9)), &mut retry, &rx, 16)),
            [9, 5]
        );
    }

    fn batch(ids: &[u64]) -> Vec<PoolJob> {
        ids.iter()
            .map(|&id| PoolJob {
                id,
                raw: ByteString::from(format!("{{\"n\": {id}}}")),
                facts: None,
                packed: None,
            })
            .collect()
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
            ids(&flight.done().1),
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

    #[test]
    fn the_last_jobs_are_shared_out_in_smaller_batches() {
        // plenty left: the usual size
        assert_eq!(last_batches(25, 1, 1000, 2), 25);
        // two lanes, two batches in flight each: a quarter of what is left
        assert_eq!(last_batches(25, 1, 80, 2), 20);
        assert_eq!(last_batches(25, 1, 12, 2), 3);
        // down to one job, or the least a concurrent evaluator's batch needs
        assert_eq!(last_batches(25, 1, 2, 2), 1);
        assert_eq!(last_batches(25, 1, 0, 2), 1);
        assert_eq!(last_batches(64, 8, 10, 2), 8);
        assert_eq!(last_batches(25, 1, 9, 1), 4, "one lane");
    }

    #[test]
    fn a_trl_batch_carries_the_step_its_source_logged() {
        let job = |id: u64, raw: &'static str, step: Option<i64>| PoolJob {
            id,
            raw: ByteString::from_static(raw),
            facts: step.map(|s| {
                Arc::new(Facts {
                    step: Some(s),
                    ..Facts::default()
                })
            }),
            packed: None,
        };
        let batch = [
            job(0, " {\"prompt\": \"p\"} ", Some(120)),
            job(1, "{}", Some(7)),
            job(2, "{\"prompt\": \"q\"}", None),
        ];
        let lines = with_steps(Style::Trl, &batch).expect("steps to carry");
        assert_eq!(
            lines,
            [
                "{\"\\u0000rwb_step\":{\"step\":120,\"epoch\":null},\"prompt\": \"p\"}",
                "{\"\\u0000rwb_step\":{\"step\":7,\"epoch\":null}}",
                "{\"prompt\": \"q\"}",
            ]
        );
        for line in &lines {
            let _: serde_json::Value = serde_json::from_str(line).expect("still JSON");
        }
        // other styles, and batches with no logged step, are sent as they are
        assert!(with_steps(Style::Tunix, &batch).is_none());
        assert!(with_steps(Style::Trl, &batch[2..]).is_none());
    }
}
