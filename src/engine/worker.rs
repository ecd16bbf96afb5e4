//! One forked worker process serving one evaluator over its socket.

use super::protocol::{BatchLine, ThirdParty};
use super::zygote::kill;
use crate::model::{kinds, EvalError, EvaluatorSpec, Outcome, Style};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// Extra time past the evaluation timeout before rwb kills a worker that did not
/// answer (its own SIGALRM could not interrupt the code, e.g. a C extension loop).
const KILL_GRACE: Duration = Duration::from_secs(2);

/// What the worker found when it imported the evaluator.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    pub style: Style,
    /// Why the worker chose `style`, in words for `rwb check`.
    pub style_reason: String,
    pub decorated: bool,
    /// Every project-local Python file the evaluator imported.
    pub files: Vec<PathBuf>,
    /// Top-level third-party modules it imported (preloaded into the zygote).
    pub third_party: Vec<String>,
    /// Every third-party module file and distribution loaded in the worker.
    pub packages: ThirdParty,
}

pub struct Worker {
    pid: i32,
    /// Shared 8-byte page where the worker writes the id of the sample it is on.
    mark: PathBuf,
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    pub loaded: Loaded,
    timeout: Duration,
    alive: bool,
    busy: bool,
    line: Vec<u8>,
}

impl Worker {
    pub(super) fn new(
        pid: i32,
        runtime: &std::path::Path,
        reader: BufReader<OwnedReadHalf>,
        writer: OwnedWriteHalf,
        loaded: Loaded,
        spec: &EvaluatorSpec,
    ) -> Worker {
        let no_limit = Duration::from_secs(365 * 24 * 3600);
        let timeout = match Duration::try_from_secs_f64(spec.timeout) {
            Ok(t) if !t.is_zero() => t.min(no_limit),
            _ => no_limit, // 0, or a value no duration holds (inf, NaN): no limit
        };
        Worker {
            pid,
            mark: runtime.join(format!("mark-{pid}")),
            reader,
            writer,
            loaded,
            timeout,
            alive: true,
            busy: false,
            line: Vec::with_capacity(4096),
        }
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn is_alive(&self) -> bool {
        self.alive
    }

    /// The per-evaluation timeout plus the grace rwb gives the worker's own alarm.
    pub fn patience(&self) -> Duration {
        self.timeout + KILL_GRACE
    }

    /// Writes a batch of (sample id, raw JSON line) to the worker. More batches may be
    /// sent before the first is answered: the worker reads them when it is ready.
    pub async fn send(&mut self, jobs: &[(u64, &str)]) -> std::io::Result<()> {
        self.send_op("B", jobs).await
    }

    /// Sends a batch to check rather than score: each sample is answered with the
    /// contract breaks found calling the evaluator the way its trainer does.
    pub async fn send_check(&mut self, jobs: &[(u64, &str)]) -> std::io::Result<()> {
        self.send_op("C", jobs).await
    }

    async fn send_op(&mut self, op: &str, jobs: &[(u64, &str)]) -> std::io::Result<()> {
        let mut message = Vec::with_capacity(jobs.iter().map(|(_, raw)| raw.len() + 24).sum());
        message.extend_from_slice(format!("{op} {}\n", jobs.len()).as_bytes());
        for (id, raw) in jobs {
            message.extend_from_slice(id.to_string().as_bytes());
            message.push(b' ');
            message.extend_from_slice(raw.trim().as_bytes());
            message.push(b'\n');
        }
        self.busy = true;
        self.writer.write_all(&message).await
    }

    /// The next message from the worker, waiting until `deadline` at most. Safe to
    /// cancel (in `select!`): a partly read line is kept for the next call.
    pub async fn next_message(&mut self, deadline: tokio::time::Instant) -> Next {
        loop {
            let read =
                tokio::time::timeout_at(deadline, self.reader.read_until(b'\n', &mut self.line));
            match read.await {
                Err(_) => {
                    kill(self.pid);
                    self.alive = false;
                    return Next::Dead(EvalError::new(
                        kinds::TIMEOUT,
                        format!(
                            "the evaluation did not return within {} s and could not be interrupted; its worker was killed",
                            self.timeout.as_secs_f64()
                        ),
                    ));
                }
                Ok(Ok(0)) | Ok(Err(_)) => {
                    self.alive = false;
                    return Next::Dead(crashed());
                }
                Ok(Ok(_)) if !self.line.ends_with(b"\n") => continue,
                Ok(Ok(_)) => {}
            }
            let parsed = serde_json::from_slice::<BatchLine>(&self.line);
            self.line.clear();
            let Ok(parsed) = parsed else {
                continue; // not a protocol line; the protocol is line-based and resynchronises
            };
            if let Some(id) = parsed.i {
                if let Some(issues) = parsed.issues {
                    return Next::Checked(id, issues);
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

    /// The id of the sample the worker was evaluating when it stopped answering,
    /// from the shared mark it writes before each evaluation.
    pub fn current(&self) -> Option<u64> {
        let bytes = std::fs::read(&self.mark).ok()?;
        let id = i64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
        u64::try_from(id).ok()
    }
}

/// What a worker said next.
#[derive(Debug)]
pub enum Next {
    Result(u64, Box<Outcome>),
    /// Contract breaks found for a sample (check mode).
    Checked(u64, Vec<String>),
    /// The oldest batch in flight is answered.
    Done {
        files: Option<Vec<PathBuf>>,
        packages: Option<ThirdParty>,
    },
    /// The worker is gone: killed after a timeout, or it died.
    Dead(EvalError),
}

fn crashed() -> EvalError {
    EvalError::new(
        kinds::WORKER_CRASHED,
        "the worker process died while evaluating this sample (os._exit, a crash in native code, or a signal)",
    )
}

impl Drop for Worker {
    fn drop(&mut self) {
        // An idle worker exits by itself when its socket closes; one that may be busy
        // (cancelled mid-batch) is killed.
        if self.alive && self.busy {
            kill(self.pid);
        }
        let _ = std::fs::remove_file(&self.mark);
    }
}
