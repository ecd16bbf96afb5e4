//! The provider's process: its own process group, its output drained and kept, and
//! stopping it (SIGTERM, then SIGKILL, then reaped).

use super::error::clip;
use super::find_url::strip_ansi;
use super::TunnelError;
use rustix::process::Signal;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// Lines of provider output kept for error messages.
const TAIL_LINES: usize = 20;
/// Characters of one output line kept.
const LINE_CHARS: usize = 2000;
/// After SIGTERM, how long the provider may take to exit before SIGKILL.
pub(super) const TERM_GRACE: Duration = Duration::from_secs(3);

/// On Linux, the provider gets SIGTERM when rwb dies without stopping it (SIGKILL, a
/// crash), so no tunnel outlives rwb. (The signal follows the thread that spawned it;
/// spawning happens on a runtime thread, which lives as long as the runtime.)
#[cfg(target_os = "linux")]
fn end_with_parent(command: &mut Command) {
    use rustix::process::{getppid, set_parent_process_death_signal, Pid};
    let parent = Pid::from_raw(std::process::id() as i32);
    // SAFETY: between fork and exec the closure makes only the prctl and getppid system
    // calls, which are async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::TERM))?;
            // rwb died before prctl took effect (no allocation here: ESRCH as is)
            if getppid() != parent {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn end_with_parent(_command: &mut Command) {}

pub(super) fn shown_command(program: &str, args: &[String]) -> String {
    let mut out = program.to_string();
    for a in args {
        out.push(' ');
        if a.is_empty()
            || a.contains(|c: char| c.is_whitespace() || "'\"$\\|;&<>(){}*?".contains(c))
        {
            out.push('\'');
            out.push_str(&a.replace('\'', "'\\''"));
            out.push('\'');
        } else {
            out.push_str(a);
        }
    }
    out
}

/// The provider's process and its process group.
pub(super) struct Process {
    child: Child,
    /// The group's id (the child's pid, as it leads its own group); 0 when unknown.
    pgid: i32,
    /// Reaped: `child` has been waited for.
    exited: bool,
    /// [`Process::stop`] ran.
    stopped: bool,
}

/// The lines a provider prints, on stdout and stderr, as they come.
pub(super) type Lines = mpsc::UnboundedReceiver<String>;

impl Process {
    /// Starts `program` in its own process group with its output drained into the
    /// returned [`Tail`] and [`Lines`]; a missing program is [`TunnelError::NotInstalled`].
    pub(super) fn spawn(
        provider: &str,
        program: &str,
        args: &[String],
    ) -> Result<(Process, Tail, Lines), TunnelError> {
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        end_with_parent(&mut command);
        let mut child = command.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                TunnelError::NotInstalled {
                    provider: provider.into(),
                    program: program.into(),
                }
            } else {
                TunnelError::Spawn {
                    program: program.into(),
                    error: e.to_string(),
                }
            }
        })?;
        let pgid = child.id().map_or(0, |id| id as i32);
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let process = Process {
            child,
            pgid,
            exited: false,
            stopped: false,
        };
        let output = Tail::default();
        let (tx, rx) = mpsc::unbounded_channel::<String>();
        if let Some(out) = stdout {
            tokio::spawn(drain(out, tx.clone(), output.clone()));
        }
        if let Some(err) = stderr {
            tokio::spawn(drain(err, tx.clone(), output.clone()));
        }
        Ok((process, output, rx))
    }

    fn signal_group(&self, signal: Signal) {
        // never 0 or 1: kill(0, ..) and kill(-1, ..) would reach far more than the provider
        if self.pgid > 1 {
            if let Some(group) = rustix::process::Pid::from_raw(self.pgid) {
                // it may have ended already: nothing to do then
                let _ = rustix::process::kill_process_group(group, signal);
            }
        }
    }

    /// The group's id (the provider's pid), when known.
    pub(super) fn pgid(&self) -> Option<u32> {
        (self.pgid > 0).then_some(self.pgid as u32)
    }

    /// Waits for the process to end; its exit status, described. Cancel-safe.
    pub(super) async fn wait(&mut self) -> String {
        let status = self.child.wait().await;
        self.exited = true;
        match status {
            Ok(s) => s.to_string(),
            Err(e) => format!("its status is unknown: {e}"),
        }
    }

    pub(super) async fn stop(&mut self) {
        if self.stopped {
            return;
        }
        if !self.exited {
            self.signal_group(Signal::TERM);
            if tokio::time::timeout(TERM_GRACE, self.child.wait())
                .await
                .is_err()
            {
                self.signal_group(Signal::KILL);
                let _ = self.child.wait().await;
            }
            self.exited = true;
        }
        // whatever else it started in its group
        self.signal_group(Signal::KILL);
        self.stopped = true;
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        self.signal_group(Signal::KILL);
        if !self.exited {
            // SIGKILL is quick: reap it here so no zombie is left (tokio reaps it later
            // otherwise)
            for _ in 0..100 {
                if let Ok(Some(_)) = self.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

/// The last lines a provider printed, shared with the tasks that drain its pipes.
#[derive(Clone, Default)]
pub(super) struct Tail(Arc<Mutex<VecDeque<String>>>);

impl Tail {
    fn push(&self, line: &str) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(clip(line, LINE_CHARS));
        }
    }

    pub(super) fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Reads a pipe to its end (so the provider never blocks on a full pipe), keeping the
/// last lines and passing each one on while someone listens.
async fn drain<R: AsyncRead + Unpin>(reader: R, tx: mpsc::UnboundedSender<String>, tail: Tail) {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&buf);
        for piece in text.split(['\n', '\r']) {
            let line = strip_ansi(piece);
            let line = line.trim_end();
            if line.trim().is_empty() {
                continue;
            }
            tail.push(line);
            let _ = tx.send(line.to_string());
        }
    }
}
