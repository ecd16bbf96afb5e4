//! One forked worker process serving one evaluator over its socket.

use super::protocol::BatchLine;
use super::zygote::kill;
use crate::model::{kinds, EvalError, EvaluatorSpec, Outcome, Style};
use std::collections::HashSet;
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
    pub decorated: bool,
    /// Every project-local Python file the evaluator imported.
    pub files: Vec<PathBuf>,
    /// Top-level third-party modules it imported (preloaded into the zygote).
    pub third_party: Vec<String>,
}

/// How a batch ended.
#[derive(Debug, PartialEq)]
pub enum BatchEnd {
    /// Every sample got its result; the worker is ready for more.
    /// `files` is set when the evaluator imported new project files meanwhile.
    Done { files: Option<Vec<PathBuf>> },
    /// The worker is gone (killed after a timeout, or it died). The sample it was on
    /// got its error; these ids got nothing and must run again on a new worker.
    Lost { rerun: Vec<u64> },
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
        let timeout = if spec.timeout > 0.0 {
            Duration::from_secs_f64(spec.timeout)
        } else {
            Duration::from_secs(365 * 24 * 3600)
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

    /// Sends `jobs` (sample id, raw JSON line) and reports each result as it arrives.
    pub async fn run_batch(
        &mut self,
        jobs: &[(u64, &str)],
        mut on_result: impl FnMut(u64, Outcome),
    ) -> BatchEnd {
        let mut message = Vec::with_capacity(jobs.iter().map(|(_, raw)| raw.len() + 24).sum());
        message.extend_from_slice(format!("B {}\n", jobs.len()).as_bytes());
        for (id, raw) in jobs {
            message.extend_from_slice(id.to_string().as_bytes());
            message.push(b' ');
            message.extend_from_slice(raw.trim().as_bytes());
            message.push(b'\n');
        }
        self.busy = true;
        let mut answered: HashSet<u64> = HashSet::with_capacity(jobs.len());
        if self.writer.write_all(&message).await.is_err() {
            return self.lost(jobs, &answered, crashed(), &mut on_result);
        }
        loop {
            self.line.clear();
            let wait = self.timeout + KILL_GRACE;
            let read = tokio::time::timeout(wait, self.reader.read_until(b'\n', &mut self.line));
            match read.await {
                Err(_) => {
                    kill(self.pid);
                    let error = EvalError::new(
                        kinds::TIMEOUT,
                        format!(
                            "the evaluation did not return within {} s and could not be interrupted; its worker was killed",
                            self.timeout.as_secs_f64()
                        ),
                    );
                    return self.lost(jobs, &answered, error, &mut on_result);
                }
                Ok(Ok(0)) | Ok(Err(_)) => {
                    return self.lost(jobs, &answered, crashed(), &mut on_result)
                }
                Ok(Ok(_)) => {}
            }
            let Ok(parsed) = serde_json::from_slice::<BatchLine>(&self.line) else {
                continue; // not a protocol line; the protocol is line-based and resynchronises
            };
            if let Some(id) = parsed.i {
                answered.insert(id);
                on_result(id, parsed.into_outcome());
            } else if parsed.done.is_some() {
                self.busy = false;
                let files = parsed
                    .files
                    .map(|f| f.into_iter().map(PathBuf::from).collect());
                return BatchEnd::Done { files };
            }
        }
    }

    /// The worker is gone: blame the sample it was on (the whole unanswered rest for
    /// batched styles, which are one call) and hand back the others, including any
    /// whose results died unsent in the worker's buffer.
    fn lost(
        &mut self,
        jobs: &[(u64, &str)],
        answered: &HashSet<u64>,
        error: EvalError,
        on_result: &mut impl FnMut(u64, Outcome),
    ) -> BatchEnd {
        self.alive = false;
        self.busy = false;
        let rest: Vec<u64> = jobs
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !answered.contains(id))
            .collect();
        let current = std::fs::read(&self.mark)
            .ok()
            .and_then(|b| Some(i64::from_le_bytes(b.get(..8)?.try_into().ok()?)))
            .and_then(|id| u64::try_from(id).ok())
            .filter(|id| rest.contains(id));
        let _ = std::fs::remove_file(&self.mark);
        let blamed: Vec<u64> = if self.loaded.style.is_batched() {
            rest.clone()
        } else {
            current.or(rest.first().copied()).into_iter().collect()
        };
        for id in &blamed {
            on_result(*id, Outcome::failed(error.clone()));
        }
        BatchEnd::Lost {
            rerun: rest.into_iter().filter(|id| !blamed.contains(id)).collect(),
        }
    }
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
    }
}
