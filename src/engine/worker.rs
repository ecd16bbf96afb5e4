//! One forked worker process serving one evaluator over its socket.

use super::pool::PoolJob;
use super::protocol::{plain_result, unreadable_line, BatchLine, ThirdParty};
use super::zygote::{kill_group, Groups};
use crate::model::{kinds, EvalError, EvaluatorSpec, Outcome, Style};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Extra time past the evaluation timeout before rwb kills a worker that did not
/// answer. The worker's own watchdog interrupts an evaluation on time; this is for
/// code that ignores or swallows that (a C loop holding the GIL, a blocked signal).
const KILL_GRACE: Duration = Duration::from_millis(500);

/// What the worker found when it imported the evaluator.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    pub style: Style,
    /// Why the worker chose `style`, in words for `rwb check`.
    pub style_reason: String,
    pub decorated: bool,
    /// The call a described caller makes, in words (`rwb check`).
    pub call: Option<String>,
    /// Every project-local Python file the evaluator imported.
    pub files: Vec<PathBuf>,
    /// Top-level third-party modules it imported (preloaded into the zygote).
    pub third_party: Vec<String>,
    /// Every third-party module file and distribution loaded in the worker.
    pub packages: ThirdParty,
}

pub struct Worker {
    pid: i32,
    /// Shared page where the worker writes the id of the sample it is on (first slot)
    /// and of each evaluation in flight together (the others).
    mark: PathBuf,
    reader: BufReader<OwnedReadHalf>,
    /// Batches waiting to be written: a writer task of its own writes them, so that a
    /// worker that stops reading never blocks the reading of its answers or the
    /// deadline.
    outbox: mpsc::UnboundedSender<Vec<u8>>,
    writer: JoinHandle<()>,
    /// The live workers' process groups, killed when the engine goes away.
    groups: Groups,
    pub loaded: Loaded,
    timeout: Duration,
    /// How long past `timeout` rwb waits for a line before it kills the worker.
    grace: Duration,
    alive: bool,
    busy: bool,
    line: Vec<u8>,
    /// The worker retired because a batched call timed out (`{"retire":"split"}`):
    /// the batch it was on goes again one sample a call, to find the one that hangs.
    split: bool,
}

impl Worker {
    pub(super) fn new(
        pid: i32,
        runtime: &std::path::Path,
        reader: BufReader<OwnedReadHalf>,
        writer: OwnedWriteHalf,
        loaded: Loaded,
        spec: &EvaluatorSpec,
        groups: Groups,
    ) -> Worker {
        let timeout = bounded_seconds(spec.timeout);
        let (outbox, writer) = spawn_writer(writer);
        groups.lock().unwrap().insert(pid);
        Worker {
            pid,
            mark: runtime.join(format!("mark-{pid}")),
            reader,
            outbox,
            writer,
            groups,
            loaded,
            timeout,
            grace: KILL_GRACE,
            alive: true,
            busy: false,
            line: Vec::with_capacity(4096),
            split: false,
        }
    }

    /// Whether the worker retired because a batched call (of more than one sample)
    /// timed out, leaving that batch unanswered to be split.
    pub fn retired_to_split(&self) -> bool {
        self.split
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn is_alive(&self) -> bool {
        self.alive
    }

    /// The per-evaluation timeout plus the grace rwb gives the worker's own alarm.
    pub fn patience(&self) -> Duration {
        self.timeout + self.grace
    }

    /// Waits `grace` past the timeout (a Ray worker's tasks may queue first).
    pub(super) fn set_grace(&mut self, grace: Duration) {
        self.grace = grace;
    }

    /// Queues a batch of (sample id, raw JSON line) for the worker; returns at once. More
    /// batches may be sent before the first is answered: the worker reads them when it
    /// is ready. An error means the worker's socket is closed.
    /// With `concurrency` above 1 the worker keeps that many of the batch's
    /// evaluations in flight at once.
    pub async fn send(&mut self, jobs: &[(u64, &str)], concurrency: usize) -> std::io::Result<()> {
        if concurrency > 1 {
            self.send_op(&format!("B {} {concurrency}", jobs.len()), jobs)
                .await
        } else {
            self.send_packed(jobs.iter().map(|&(id, raw)| (id, raw, None)), jobs.len())
        }
    }

    /// [`Worker::send`] of a pool's jobs: a sample whose reader wrote its marshal
    /// form goes with it as it is.
    pub async fn send_jobs(
        &mut self,
        batch: &[PoolJob],
        concurrency: usize,
    ) -> std::io::Result<()> {
        if concurrency > 1 {
            let jobs: Vec<(u64, &str)> = batch.iter().map(|j| (j.id, &*j.raw)).collect();
            return self.send(&jobs, concurrency).await;
        }
        let jobs = batch.iter().map(|j| (j.id, &*j.raw, j.packed.as_deref()));
        self.send_packed(jobs, batch.len())
    }

    /// A batch scored one sample at a time, each sample as `marshal` writes the object
    /// `json.loads` reads from its line (see [`super::marshal`]): `<id> @<n>`, `n` in
    /// ten digits, then `n` bytes: the marshal data and a zero byte, which tells the
    /// worker's `_sample` it apart from a JSON line. A line that may not read back
    /// exactly goes as JSON.
    fn send_packed<'a>(
        &mut self,
        jobs: impl Iterator<Item = (u64, &'a str, Option<&'a [u8]>)> + Clone,
        count: usize,
    ) -> std::io::Result<()> {
        let size = jobs.clone().map(|(_, raw, _)| raw.len() + 40).sum();
        let mut message = Vec::with_capacity(size);
        message.extend_from_slice(format!("B {count}\n").as_bytes());
        let mut digits = itoa::Buffer::new();
        for (id, raw, packed) in jobs {
            message.extend_from_slice(digits.format(id).as_bytes());
            message.push(b' ');
            let header = message.len();
            message.extend_from_slice(b"@0000000000\n");
            let body = message.len();
            let written = match packed {
                Some(packed) => {
                    message.extend_from_slice(packed);
                    true
                }
                None => super::marshal::write(raw.trim(), &mut message),
            };
            if written {
                message.push(0);
                let mut size = message.len() - body;
                for digit in message[header + 1..body - 1].iter_mut().rev() {
                    *digit = b'0' + (size % 10) as u8;
                    size /= 10;
                }
            } else {
                message.truncate(header);
                message.extend_from_slice(raw.trim().as_bytes());
                message.push(b'\n');
            }
        }
        self.queue(message)
    }

    /// [`Worker::send`], each call watched for the exceptions it swallows in the
    /// project's files (one at a time; each result carries them): `B n 1 w`.
    pub async fn send_watched(&mut self, jobs: &[(u64, &str)]) -> std::io::Result<()> {
        self.send_op(&format!("B {} 1 w", jobs.len()), jobs).await
    }

    /// [`Worker::send`] with each sample's prompt as the trainer templated it (one
    /// JSON string, or `null`, on the line after the sample's): op `P` (`P n 1 w`
    /// when `watch`: see [`Worker::send_watched`]).
    pub async fn send_with_prompts(
        &mut self,
        jobs: &[(u64, &str)],
        concurrency: usize,
        prompts: &[Option<String>],
        watch: bool,
    ) -> std::io::Result<()> {
        let mut message = Vec::with_capacity(jobs.iter().map(|(_, raw)| 2 * raw.len() + 24).sum());
        let header = if watch {
            format!("P {} 1 w\n", jobs.len())
        } else {
            format!("P {} {}\n", jobs.len(), concurrency.max(1))
        };
        message.extend_from_slice(header.as_bytes());
        let mut digits = itoa::Buffer::new();
        for ((id, raw), prompt) in jobs.iter().zip(prompts) {
            message.extend_from_slice(digits.format(*id).as_bytes());
            message.push(b' ');
            message.extend_from_slice(raw.trim().as_bytes());
            message.push(b'\n');
            // serde_json escapes every newline inside the string: one line
            let _ = serde_json::to_writer(&mut message, prompt);
            message.push(b'\n');
        }
        self.queue(message)
    }

    /// Sends a batch to check rather than score: each sample is answered with the
    /// contract breaks found calling the evaluator the way its trainer does.
    pub async fn send_check(&mut self, jobs: &[(u64, &str)]) -> std::io::Result<()> {
        self.send_op(&format!("C {}", jobs.len()), jobs).await
    }

    /// Writes `header` (the op and the count) and the batch's lines.
    async fn send_op(&mut self, header: &str, jobs: &[(u64, &str)]) -> std::io::Result<()> {
        let mut message = Vec::with_capacity(jobs.iter().map(|(_, raw)| raw.len() + 24).sum());
        message.extend_from_slice(header.as_bytes());
        message.push(b'\n');
        let mut digits = itoa::Buffer::new();
        for (id, raw) in jobs {
            message.extend_from_slice(digits.format(*id).as_bytes());
            message.push(b' ');
            message.extend_from_slice(raw.trim().as_bytes());
            message.push(b'\n');
        }
        self.queue(message)
    }

    /// Hands a whole message to the writer task.
    fn queue(&mut self, message: Vec<u8>) -> std::io::Result<()> {
        self.busy = true;
        self.outbox.send(message).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the worker's socket is closed",
            )
        })
    }

    /// The next message from the worker, waiting until `deadline` at most. Safe to
    /// cancel (in `select!`): a partly read line is kept for the next call.
    pub async fn next_message(&mut self, deadline: tokio::time::Instant) -> Next {
        loop {
            let read =
                tokio::time::timeout_at(deadline, self.reader.read_until(b'\n', &mut self.line));
            match read.await {
                Err(_) => {
                    self.end();
                    return Next::Dead(EvalError::new(
                        kinds::TIMEOUT,
                        format!(
                            "the evaluation did not return within {} s and could not be interrupted; its worker was killed",
                            self.timeout.as_secs_f64()
                        ),
                    ));
                }
                Ok(Ok(0)) | Ok(Err(_)) => {
                    self.end(); // what the dead worker started dies too
                    return Next::Dead(crashed());
                }
                Ok(Ok(_)) if !self.line.ends_with(b"\n") => continue,
                Ok(Ok(_)) => {}
            }
            if let Some((id, outcome)) = plain_result(&self.line) {
                self.line.clear();
                return Next::Result(id, Box::new(outcome));
            }
            let parsed = serde_json::from_slice::<BatchLine>(&self.line);
            let parsed = match parsed {
                Ok(parsed) => parsed,
                Err(e) => {
                    let lost = unreadable_line(&self.line, &e);
                    self.line.clear();
                    match lost {
                        Some((id, error)) => {
                            return Next::Result(id, Box::new(Outcome::failed(error)))
                        }
                        // not a protocol line; the protocol is line-based and resynchronises
                        None => continue,
                    }
                }
            };
            self.line.clear();
            if let Some(why) = &parsed.retire {
                self.split = why == "split";
                self.end();
                return Next::Retired;
            }
            if let Some(id) = parsed.i {
                if let Some(issues) = parsed.issues {
                    return Next::Checked(id, issues, parsed.call, parsed.trust);
                }
                return Next::Result(id, Box::new(parsed.into_outcome()));
            }
            if parsed.done.is_some() {
                let files = parsed
                    .files
                    .map(|f| f.into_iter().map(PathBuf::from).collect());
                return Next::Done {
                    files,
                    packages: parsed.packages,
                };
            }
        }
    }

    /// No batch is in flight any more.
    pub fn idle(&mut self) {
        self.busy = false;
    }

    /// Kills the worker's process group (the worker and every process its evaluations
    /// started) and forgets it.
    fn end(&mut self) {
        if self.groups.lock().unwrap().remove(&self.pid) {
            kill_group(self.pid);
        }
        self.alive = false;
    }

    /// The id of the sample the worker was evaluating when it stopped answering,
    /// from the shared mark it writes before each evaluation.
    pub fn current(&self) -> Option<u64> {
        self.marked().first().copied().flatten()
    }

    /// Every sample id in the mark page: the first slot is the one-at-a-time
    /// evaluation's, the others those of evaluations in flight together (`None`: a
    /// free slot).
    pub fn marked(&self) -> Vec<Option<u64>> {
        let bytes = std::fs::read(&self.mark).unwrap_or_default();
        bytes
            .chunks_exact(8)
            .map(|slot| u64::try_from(i64::from_le_bytes(slot.try_into().unwrap())).ok())
            .collect()
    }

    /// The samples whose evaluations were in flight together when the worker stopped.
    pub fn in_flight(&self) -> Vec<u64> {
        self.marked().into_iter().skip(1).flatten().collect()
    }
}

/// A time limit in seconds as a `Duration` a deadline can be computed from: no limit
/// (0, negative, NaN) or one longer than a year is a year.
pub(super) fn bounded_seconds(seconds: f64) -> Duration {
    let year = Duration::from_secs(365 * 24 * 3600);
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|t| !t.is_zero())
        .map_or(year, |t| t.min(year))
}

/// What a worker said next.
#[derive(Debug)]
pub enum Next {
    Result(u64, Box<Outcome>),
    /// Contract breaks found for a sample (check mode).
    Checked(
        u64,
        Vec<String>,
        Option<Vec<super::protocol::CallArg>>,
        Option<serde_json::Value>,
    ),
    /// The oldest batch in flight is answered.
    Done {
        files: Option<Vec<PathBuf>>,
        packages: Option<ThirdParty>,
    },
    /// The worker is gone: killed after a timeout, or it died.
    Dead(EvalError),
    /// The worker interrupted a timed-out evaluation, reported it, and left so that
    /// nothing the evaluation started outlives it. Its group is killed; the samples
    /// it did not answer belong to no one and run again on a fresh worker.
    Retired,
}

fn crashed() -> EvalError {
    EvalError::new(
        kinds::WORKER_CRASHED,
        "the worker process died while evaluating this sample (os._exit, a crash in native code, or a signal)",
    )
}

/// The task that writes queued messages to the worker's socket, in order, until the
/// queue closes or a write fails (the worker is gone: its reader sees that).
fn spawn_writer(mut writer: OwnedWriteHalf) -> (mpsc::UnboundedSender<Vec<u8>>, JoinHandle<()>) {
    let (outbox, mut queued) = mpsc::unbounded_channel::<Vec<u8>>();
    let task = tokio::spawn(async move {
        while let Some(message) = queued.recv().await {
            if writer.write_all(&message).await.is_err() {
                break;
            }
        }
    });
    (outbox, task)
}

impl Drop for Worker {
    fn drop(&mut self) {
        // An idle worker exits by itself when its socket closes, and takes its process
        // group with it; one that may be busy (cancelled mid-batch) is killed.
        if self.alive && self.busy {
            self.end();
        }
        self.groups.lock().unwrap().remove(&self.pid);
        self.writer.abort();
        let _ = std::fs::remove_file(&self.mark);
    }
}

#[cfg(test)]
mod tests {
    use super::bounded_seconds;
    use std::time::Duration;

    #[test]
    fn any_timeout_value_gives_a_usable_limit() {
        let year = Duration::from_secs(365 * 24 * 3600);
        assert_eq!(bounded_seconds(1.5), Duration::from_millis(1500));
        for none in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e30] {
            assert_eq!(bounded_seconds(none), year, "{none}");
        }
    }
}
