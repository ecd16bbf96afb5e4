//! The fork-server: one warm interpreter that forks a worker per evaluator.
//!
//! [`Engine`] writes the embedded Python files to a private runtime folder, listens on a
//! Unix socket there, starts the zygote lazily (a fully cached run never starts Python)
//! and hands out connected [`Worker`]s. Each worker leads a process group of its own,
//! so that killing it kills what its evaluations started. Dropping the engine kills
//! the groups of the workers still handed out and the zygote; should rwb itself die,
//! the zygote sees its stdin close and kills every worker group it forked.

use super::protocol::{Hello, LoadReply};
use super::worker::{bounded_seconds, Loaded, Worker};
use crate::model::{EvalError, EvaluatorSpec, Style};
use serde::Deserialize;
use serde_json::json;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixListener;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, Mutex};

/// How long a forked worker may take to connect back.
const HELLO_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the zygote may take to import reward_kit and say it is ready.
const ZYGOTE_TIMEOUT: Duration = Duration::from_secs(120);
/// How much of the workers' stderr is kept for error messages.
const STDERR_KEEP: usize = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The interpreter is missing or does not start: nothing can run.
    #[error("{0}")]
    Interpreter(String),
    /// The evaluator's module failed to import.
    #[error("{}", .0.message)]
    Import(EvalError, Vec<PathBuf>),
    /// The worker died before it was ready (or the zygote did).
    #[error("{0}")]
    Crashed(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What the zygote reported about its interpreter.
#[derive(Clone, Debug, Deserialize)]
pub struct ZygoteInfo {
    pub python: String,
    pub executable: String,
    pub reward_kit: RewardKitInfo,
    /// The cluster, when the engine runs on Ray.
    #[serde(default)]
    pub ray: Option<super::RayInfo>,
    /// How its workers run (SPEC §18): `contained`, or `open: WHY`; `None` when rwb
    /// did not box the zygote (Ray, `[sandbox] workers = "open"`).
    #[serde(default)]
    pub containment: Option<String>,
}

impl ZygoteInfo {
    /// Whether the workers it forks are contained.
    pub fn contained(&self) -> bool {
        self.containment.as_deref() == Some("contained")
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct RewardKitInfo {
    /// "real" or "bundled".
    pub kind: String,
    pub version: Option<String>,
    /// Why an installed reward_kit could not be used.
    pub real_error: Option<String>,
}

type Connection = (BufReader<OwnedReadHalf>, OwnedWriteHalf, i32);

/// The pids of the live workers, each the id of its own process group.
pub(crate) type Groups = Arc<StdMutex<HashSet<i32>>>;

struct Zygote {
    child: Child,
    stdin: ChildStdin,
    info: ZygoteInfo,
    /// When it was started: code changed on disk after this may not be what it holds.
    started: SystemTime,
}

struct Shared {
    python: PathBuf,
    root: PathBuf,
    runtime: tempfile::TempDir,
    /// Where the embedded Python files are (see [`super::code_dir`]).
    code: PathBuf,
    socket: PathBuf,
    /// The Ray address to run on (the driver replaces the fork-server), or `None`.
    ray: Option<String>,
    /// What the Ray driver last reported about its cluster.
    cluster: StdMutex<Option<super::RayInfo>>,
    zygote: Mutex<Option<Zygote>>,
    /// Zygotes replaced by [`Engine::restart_if_older`], kept alive (with the workers
    /// they forked, which are still in use) until the engine is dropped.
    retired: StdMutex<Vec<Zygote>>,
    pending: StdMutex<HashMap<u64, oneshot::Sender<Connection>>>,
    next_token: AtomicU64,
    /// How long a worker may hold finished results before sending them, in µs (see
    /// [`Engine::answer_promptly`]).
    flush_us: AtomicU64,
    stderr_tail: Arc<StdMutex<VecDeque<u8>>>,
    listener: tokio::task::JoinHandle<()>,
    groups: Groups,
    /// The box the zygote (and so every worker) starts in, `None`: open (SPEC §18).
    containment: StdMutex<Option<crate::sandbox::contain::Plan>>,
    /// Variables the zygote (and so every worker) is started with.
    env: StdMutex<Vec<(String, String)>>,
    /// What the last zygote said of its box (`contained`, `open: WHY`).
    containment_said: StdMutex<Option<String>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.listener.abort();
        // The zygote is killed (not asked) when it drops, so it cannot clean up: the
        // workers' groups, with anything an evaluation left running, go first.
        for pid in self.groups.lock().unwrap().drain() {
            kill_group(pid);
        }
        if self.ray.is_some() {
            // A local cluster the Ray driver started (`auto`) runs in the driver's
            // process group, and would outlive a driver killed alone.
            let current = self.zygote.get_mut().take();
            let retired = std::mem::take(self.retired.get_mut().unwrap());
            for zygote in current.into_iter().chain(retired) {
                if let Some(pid) = zygote.child.id() {
                    kill_group(pid as i32);
                }
            }
        }
    }
}

/// A handle on one interpreter's fork-server. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<Shared>,
}

/// How long a worker may hold finished results to send them together: each send
/// wakes rwb's reading, run and printing threads, so a run over a file costs less
/// with a few results a send than with one.
const RESULT_INTERVAL: Duration = Duration::from_millis(10);
/// The same for a server, whose clients each wait for their own result.
const PROMPT_RESULT_INTERVAL: Duration = Duration::from_millis(1);

impl Engine {
    /// Workers forked from now on send each result within [`PROMPT_RESULT_INTERVAL`]
    /// of computing it, not [`RESULT_INTERVAL`] (for serving; workers forked before
    /// keep theirs, and hold a result at most [`RESULT_INTERVAL`] longer).
    pub fn answer_promptly(&self) {
        let us = PROMPT_RESULT_INTERVAL.as_micros() as u64;
        self.shared.flush_us.store(us, Ordering::Relaxed);
    }

    /// Prepares the runtime folder and socket. Must be called inside a tokio runtime.
    /// Starts no process: the zygote starts with the first worker.
    pub fn new(python: PathBuf, root: PathBuf) -> std::io::Result<Engine> {
        Engine::build(python, root, None)
    }

    /// An engine whose workers run their batches as tasks on the Ray cluster at
    /// `address` (`auto`: `RAY_ADDRESS` or a local cluster); see [`super::ray`].
    pub fn on_ray(python: PathBuf, root: PathBuf, address: String) -> std::io::Result<Engine> {
        Engine::build(python, root, Some(address))
    }

    fn build(python: PathBuf, root: PathBuf, ray: Option<String>) -> std::io::Result<Engine> {
        let runtime = tempfile::Builder::new().prefix("rwb-").tempdir()?;
        // the Ray driver builds the package it ships beside its files: a private folder
        let shared_code = ray.is_none().then(super::code_dir::shared).flatten();
        let code = match shared_code {
            Some(dir) => dir,
            None => {
                super::code_dir::write_files(runtime.path())?;
                runtime.path().to_path_buf()
            }
        };
        let socket = runtime.path().join("workers.sock");
        let listener = UnixListener::bind(&socket)?;
        let pending: StdMutex<HashMap<u64, oneshot::Sender<Connection>>> = Default::default();
        let shared = Arc::new_cyclic(|weak: &std::sync::Weak<Shared>| {
            let weak = weak.clone();
            let task = tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let weak = weak.clone();
                    tokio::spawn(async move {
                        let (read, write) = stream.into_split();
                        let mut reader = BufReader::new(read);
                        let mut line = String::new();
                        let greeted =
                            tokio::time::timeout(HELLO_TIMEOUT, reader.read_line(&mut line)).await;
                        let Ok(Ok(n)) = greeted else { return };
                        let Ok(hello) = serde_json::from_str::<Hello>(&line[..n]) else {
                            return;
                        };
                        let Some(shared) = weak.upgrade() else { return };
                        let waiting = shared.pending.lock().unwrap().remove(&hello.hello);
                        if let Some(tx) = waiting {
                            let _ = tx.send((reader, write, hello.pid));
                        }
                    });
                }
            });
            Shared {
                python,
                root,
                runtime,
                code,
                socket,
                ray,
                cluster: StdMutex::default(),
                zygote: Mutex::new(None),
                retired: StdMutex::default(),
                pending,
                next_token: AtomicU64::new(1),
                flush_us: AtomicU64::new(RESULT_INTERVAL.as_micros() as u64),
                stderr_tail: Default::default(),
                listener: task,
                groups: Groups::default(),
                containment: StdMutex::new(Some(crate::sandbox::contain::Plan {
                    writable: Vec::new(),
                    network: true,
                    tmp_read_only: true,
                    first: Vec::new(),
                    confine: false,
                })),
                env: StdMutex::default(),
                containment_said: StdMutex::default(),
            }
        });
        Ok(Engine { shared })
    }

    pub fn python(&self) -> &Path {
        &self.shared.python
    }

    /// The folder of rwb's own Python files the workers run.
    pub fn code_dir(&self) -> &Path {
        &self.shared.code
    }

    /// rwb's private runtime folder (sockets, mark pages), writable inside the box.
    pub fn runtime_dir(&self) -> &Path {
        self.shared.runtime.path()
    }

    /// Variables every zygote started from now on (and so its workers) gets.
    pub fn set_env(&self, vars: Vec<(String, String)>) {
        *self.shared.env.lock().unwrap() = vars;
    }

    /// Sets the box the zygote starts in (`None`: open), for a zygote started from
    /// now on. The user's cache folder, rwb's runtime folder and the folder of rwb's
    /// own Python are always kept writable inside.
    pub fn set_containment(&self, plan: Option<crate::sandbox::contain::Plan>) {
        *self.shared.containment.lock().unwrap() = plan;
    }

    /// Whether the workers are contained: as the running zygote said, else as the next
    /// one is to be started; `false` on Ray (the cluster's terms).
    pub fn contained(&self) -> Option<bool> {
        if self.shared.ray.is_some() {
            return Some(false);
        }
        if let Some(said) = self.shared.containment_said.lock().unwrap().as_deref() {
            return Some(said == "contained");
        }
        Some(self.shared.containment.lock().unwrap().is_some())
    }

    /// What the running zygote said of its box (`contained`, `open: WHY`); `None`
    /// before one started.
    pub fn containment_said(&self) -> Option<String> {
        self.shared.containment_said.lock().unwrap().clone()
    }

    /// The box the next zygote starts in, with the folders rwb itself needs writable.
    fn containment_plan(&self) -> Option<crate::sandbox::contain::Plan> {
        let mut plan = self.shared.containment.lock().unwrap().clone()?;
        let cache = directories::BaseDirs::new().map(|d| d.cache_dir().to_path_buf());
        let needed = [
            cache,
            Some(self.shared.runtime.path().to_path_buf()),
            Some(self.shared.code.clone()),
        ];
        for path in needed.into_iter().flatten() {
            if !plan.writable.iter().any(|w| path.starts_with(w)) {
                plan.writable.push(path);
            }
        }
        Some(plan)
    }

    pub fn root(&self) -> &Path {
        &self.shared.root
    }

    /// The Ray address this engine runs on, if any.
    pub fn ray(&self) -> Option<&str> {
        self.shared.ray.as_deref()
    }

    /// The Ray cluster (nodes, CPUs) once the driver joined it; `None` before, and
    /// for a local engine. For showing where evaluations run without waiting.
    pub fn cluster(&self) -> Option<super::RayInfo> {
        self.shared.cluster.lock().unwrap().clone()
    }

    /// The interpreter's report, starting the zygote if it is not running yet.
    pub async fn info(&self) -> Result<ZygoteInfo, EngineError> {
        let mut guard = self.shared.zygote.lock().await;
        let zygote = self.ensure_zygote(&mut guard).await?;
        Ok(zygote.info.clone())
    }

    /// Imports into the zygote modules that every future worker would import anyway
    /// (the evaluators' third-party dependencies), so a fork finds them loaded.
    pub async fn preload(&self, modules: &[String]) {
        if modules.is_empty() {
            return;
        }
        let mut guard = self.shared.zygote.lock().await;
        if let Some(z) = guard.as_mut() {
            let line = json!({"op": "preload", "modules": modules}).to_string() + "\n";
            let _ = z.stdin.write_all(line.as_bytes()).await;
        }
    }

    /// Replaces the fork-server when it was started before `changed` (third-party code
    /// it may hold was changed on disk since), so the next worker forks from a fresh
    /// interpreter. The old one is kept, with the workers it forked, until the engine
    /// is dropped. Starts nothing; returns whether it replaced one.
    ///
    /// A Ray driver is told to retire: it forks no more and ends with the last
    /// worker it handed out (see [`super::ray`]).
    pub async fn restart_if_older(&self, changed: SystemTime) -> bool {
        let mut guard = self.shared.zygote.lock().await;
        if guard.as_ref().is_none_or(|z| z.started > changed) {
            return false;
        }
        if let Some(mut old) = guard.take() {
            if self.shared.ray.is_some() {
                super::ray::retire(&mut old.stdin).await;
            }
            let mut retired = self.shared.retired.lock().unwrap();
            // those that ended (a retired Ray driver after its last worker) go
            retired.retain_mut(|z| matches!(z.child.try_wait(), Ok(None)));
            retired.push(old);
        }
        true
    }

    /// On Ray: replaces the driver when a file of the workspace changed after it
    /// started (it shipped the workspace as it was then), so that the worker about to
    /// be handed out runs the code on disk on every node.
    async fn reship_if_changed(&self) {
        let root = self.shared.root.clone();
        let newest = tokio::task::spawn_blocking(move || super::ray::newest_change(&root)).await;
        if let Ok(Some(changed)) = newest {
            self.restart_if_older(changed).await;
        }
    }

    /// The last lines the workers wrote to stderr (outside of evaluations).
    pub fn stderr_tail(&self) -> String {
        let tail = self.shared.stderr_tail.lock().unwrap();
        String::from_utf8_lossy(&tail.iter().copied().collect::<Vec<u8>>()).into_owned()
    }

    /// Forks a worker for `spec` and waits until it imported the evaluator.
    pub async fn spawn_worker(&self, spec: &EvaluatorSpec) -> Result<Worker, EngineError> {
        let token = self.shared.next_token.fetch_add(1, Ordering::Relaxed);
        if self.shared.ray.is_some() {
            self.reship_if_changed().await;
        }
        let (tx, rx) = oneshot::channel();
        self.shared.pending.lock().unwrap().insert(token, tx);
        let command = self.fork_command(token, spec);
        self.send_to_zygote(token, &command).await?;
        let (mut reader, writer, pid) = self.await_connection(token, rx, spec).await?;
        let mut reply = read_load_reply(spec, &mut reader, pid).await?;
        if let Some(failure) = reply.import_error.take() {
            let files = failure.files.iter().map(PathBuf::from).collect();
            return Err(EngineError::Import(failure.error, files));
        }
        let loaded = loaded_from(reply);
        let ray_worker = self.shared.ray.is_some();
        let mut worker = Worker::new(
            pid,
            self.shared.runtime.path(),
            reader,
            writer,
            loaded,
            spec,
            self.shared.groups.clone(),
        );
        if ray_worker {
            worker.set_grace(super::ray::RAY_PATIENCE);
        }
        Ok(worker)
    }

    /// The zygote's `fork` command line for `spec`, answered by the worker under `token`.
    fn fork_command(&self, token: u64, spec: &EvaluatorSpec) -> String {
        let root = absolute(&self.shared.root);
        // A package function imports by name from the root: its package folder is not
        // put on sys.path (its modules would import twice, under two names).
        let folder = match spec.source.module() {
            Some(_) => root.clone(),
            None => absolute(&spec.source.folder()),
        };
        // a grader's object when a request holds it, and the `[graders]` settings
        let (grader, grader_settings) = match &spec.source {
            crate::model::Source::Grader {
                inline, settings, ..
            } => (
                inline
                    .as_deref()
                    .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok()),
                serde_json::from_str(settings).unwrap_or_default(),
            ),
            _ => (None, serde_json::Value::Null),
        };
        let mut evaluator = spec.worker_fields(json!(absolute(&spec.source.file())), json!(folder));
        evaluator.extend([
            ("grader".to_string(), json!(grader)),
            ("grader_settings".to_string(), grader_settings),
            ("timeout".to_string(), json!(spec.timeout)),
            ("network".to_string(), json!(spec.network)),
            (
                "flush_ms".to_string(),
                json!(self.shared.flush_us.load(Ordering::Relaxed) as f64 / 1000.0),
            ),
        ]);
        json!({
            "op": "fork",
            "token": token,
            "root": root,
            "evaluator": evaluator,
        })
        .to_string()
            + "\n"
    }

    /// Writes `command` to the zygote, starting it (once more, should it have died)
    /// when needed; on failure forgets the worker awaited under `token`.
    async fn send_to_zygote(&self, token: u64, command: &str) -> Result<(), EngineError> {
        let mut guard = self.shared.zygote.lock().await;
        for _attempt in 0..2 {
            let zygote = self.ensure_zygote(&mut guard).await?;
            if zygote.stdin.write_all(command.as_bytes()).await.is_ok() {
                return Ok(());
            }
            // the zygote died: start a new one and try once more
            *guard = None;
        }
        self.shared.pending.lock().unwrap().remove(&token);
        Err(EngineError::Crashed(format!(
            "the Python fork-server stopped: {}",
            self.stderr_tail().trim()
        )))
    }

    /// Waits for the forked worker to connect back under `token`.
    async fn await_connection(
        &self,
        token: u64,
        rx: oneshot::Receiver<Connection>,
        spec: &EvaluatorSpec,
    ) -> Result<Connection, EngineError> {
        match tokio::time::timeout(HELLO_TIMEOUT, rx).await {
            Ok(Ok(c)) => Ok(c),
            _ => {
                self.shared.pending.lock().unwrap().remove(&token);
                Err(EngineError::Crashed(format!(
                    "the worker for '{}' did not start: {}",
                    spec.name,
                    self.stderr_tail().trim()
                )))
            }
        }
    }

    async fn ensure_zygote<'a>(
        &self,
        guard: &'a mut Option<Zygote>,
    ) -> Result<&'a mut Zygote, EngineError> {
        if let Some(z) = guard.as_mut() {
            if z.child.try_wait().ok().flatten().is_some() {
                *guard = None;
            }
        }
        if guard.is_none() {
            *guard = Some(self.start_zygote().await?);
        }
        Ok(guard.as_mut().expect("just started"))
    }

    async fn start_zygote(&self) -> Result<Zygote, EngineError> {
        let shared = &self.shared;
        let started = SystemTime::now();
        let mut command = self.zygote_command();
        let mut child = command
            .spawn()
            .map_err(|e| spawn_error(&shared.python, e))?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let stderr = child.stderr.take().expect("piped");
        keep_stderr_tail(stderr, shared.stderr_tail.clone());
        let info = read_ready(&mut child, &mut stdout).await?;
        let Some(info) = info else {
            let _ = child.kill().await;
            // give the stderr reader a moment to collect the interpreter's last words
            tokio::time::sleep(Duration::from_millis(50)).await;
            return Err(EngineError::Interpreter(format!(
                "Python interpreter {} did not start rwb's worker: {}",
                shared.python.display(),
                last_line(&self.stderr_tail())
            )));
        };
        if let Some(cluster) = &info.ray {
            *shared.cluster.lock().unwrap() = Some(cluster.clone());
        }
        *shared.containment_said.lock().unwrap() = Some(
            info.containment
                .clone()
                .unwrap_or_else(|| "open: [sandbox] workers = \"open\" or --no-contain".into()),
        );
        drain_replies(stdout);
        Ok(Zygote {
            child,
            stdin,
            info,
            started,
        })
    }

    /// The fork-server's command (the Ray driver's on Ray), with its pipes, folder,
    /// environment and a process group of its own.
    fn zygote_command(&self) -> Command {
        let shared = &self.shared;
        let script = shared.code.join("rwb_worker.py");
        let compat = shared.code.join("compat");
        let mut command = match &shared.ray {
            Some(address) => super::ray::driver_command(
                &shared.python,
                &shared.code,
                &shared.socket,
                address,
                &shared.root,
            ),
            None => {
                let args: Vec<std::ffi::OsString> = vec![
                    "-X".into(),
                    "utf8".into(),
                    script.into(),
                    shared.socket.clone().into(),
                    compat.into(),
                ];
                // boxed in by rwb itself (SPEC §18), when the interpreter is there
                // to start (else its own spawn error says what is missing)
                let plan = self
                    .containment_plan()
                    .filter(|_| program_exists(&shared.python));
                match plan.and_then(|plan| {
                    crate::sandbox::contain::wrap_tokio(&plan, &shared.python, &args).ok()
                }) {
                    Some(command) => command,
                    None => {
                        let mut command = Command::new(&shared.python);
                        command.args(&args);
                        command
                    }
                }
            }
        };
        command.envs(shared.env.lock().unwrap().iter().cloned());
        command
            .current_dir(&shared.root)
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        command
    }
}

/// Whether `program` can be started: a path that is a file, or a name found on `PATH`.
fn program_exists(program: &Path) -> bool {
    if program.components().count() > 1 {
        return program.is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Reads the worker's reply to loading its evaluator, within the import time limit;
/// a worker that does not answer in time is killed.
async fn read_load_reply(
    spec: &EvaluatorSpec,
    reader: &mut BufReader<OwnedReadHalf>,
    pid: i32,
) -> Result<LoadReply, EngineError> {
    // Importing may run arbitrary module-level code: give it the evaluation timeout,
    // but never less than a minute (heavy imports such as torch are slow).
    let limit = bounded_seconds(spec.timeout.max(60.0));
    let mut line = String::new();
    let read = tokio::time::timeout(limit, reader.read_line(&mut line)).await;
    match read {
        Ok(Ok(n)) if n > 0 => serde_json::from_str(&line)
            .map_err(|e| EngineError::Crashed(format!("the worker sent an unreadable reply: {e}"))),
        Ok(_) => Err(EngineError::Crashed(format!(
            "the worker for '{}' died while importing {}",
            spec.name,
            spec.source.file().display()
        ))),
        Err(_) => {
            kill_group(pid);
            let mut error = EvalError::new(
                crate::model::kinds::IMPORT_FAILED,
                format!(
                    "importing {} did not finish within {:.0} s",
                    spec.source.file().display(),
                    limit.as_secs_f64()
                ),
            );
            error.file = Some(spec.source.file().display().to_string());
            Err(EngineError::Import(error, vec![spec.source.file()]))
        }
    }
}

/// What a worker that imported its evaluator loaded.
fn loaded_from(reply: LoadReply) -> Loaded {
    let style = reply
        .style
        .as_deref()
        .and_then(Style::parse)
        .unwrap_or(Style::RewardKit);
    Loaded {
        style,
        style_reason: reply.style_reason.unwrap_or_default(),
        decorated: reply.decorated,
        call: reply.call,
        files: reply.files.iter().map(PathBuf::from).collect(),
        third_party: reply.third_party,
        packages: reply.packages,
    }
}

fn spawn_error(python: &Path, e: std::io::Error) -> EngineError {
    EngineError::Interpreter(if e.kind() == std::io::ErrorKind::NotFound {
        format!(
            "Python interpreter not found: {} (give --python PATH, set `python` in rwb.toml, or activate a virtualenv)",
            python.display()
        )
    } else {
        format!("cannot start Python interpreter {}: {e}", python.display())
    })
}

/// Keeps the last [`STDERR_KEEP`] bytes the zygote and its workers write to stderr.
fn keep_stderr_tail(mut stderr: ChildStderr, tail: Arc<StdMutex<VecDeque<u8>>>) {
    tokio::spawn(async move {
        let mut buf = [0u8; 8192];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut tail = tail.lock().unwrap();
            tail.extend(&buf[..n]);
            let excess = tail.len().saturating_sub(STDERR_KEEP);
            tail.drain(..excess);
        }
    });
}

/// Waits for the zygote's ready line: its report, `None` when it said nothing
/// readable, or the error it refused to serve with (then it is killed).
async fn read_ready(
    child: &mut Child,
    stdout: &mut BufReader<ChildStdout>,
) -> Result<Option<ZygoteInfo>, EngineError> {
    let mut line = String::new();
    let ready = tokio::time::timeout(ZYGOTE_TIMEOUT, stdout.read_line(&mut line)).await;
    match ready {
        Ok(Ok(n)) if n > 0 => {
            #[derive(Deserialize)]
            #[serde(untagged)]
            enum Ready {
                Info(ZygoteInfo),
                /// It cannot serve, and says why (the Ray driver without `ray`).
                Refused {
                    error: String,
                },
            }
            match serde_json::from_str::<Ready>(&line) {
                Ok(Ready::Info(info)) => Ok(Some(info)),
                Ok(Ready::Refused { error }) => {
                    let _ = child.kill().await;
                    Err(EngineError::Interpreter(error))
                }
                Err(_) => Ok(None),
            }
        }
        _ => Ok(None),
    }
}

/// Drains the zygote's replies so its pipe never fills.
fn drain_replies(mut stdout: BufReader<ChildStdout>) {
    tokio::spawn(async move {
        let mut line = String::new();
        while let Ok(n) = stdout.read_line(&mut line).await {
            if n == 0 {
                break;
            }
            line.clear();
        }
    });
}

fn last_line(text: &str) -> String {
    text.trim()
        .lines()
        .last()
        .unwrap_or("it printed nothing")
        .to_string()
}

pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Sends SIGKILL to a worker's process group: the worker and every process its
/// evaluations started. A worker that could not lead a group of its own is killed
/// alone.
pub(crate) fn kill_group(pid: i32) {
    use rustix::process::{kill_process, kill_process_group, Pid, Signal};
    // never 0 or below: kill(0, ..) and kill(-1, ..) would reach far more than a worker
    let Some(pid) = (pid > 0).then(|| Pid::from_raw(pid)).flatten() else {
        return;
    };
    if kill_process_group(pid, Signal::KILL).is_err() {
        let _ = kill_process(pid, Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Source;

    fn flush_ms(engine: &Engine) -> f64 {
        let spec = EvaluatorSpec {
            name: "e".into(),
            source: Source::Folder(PathBuf::from("metrics/e")),
            style: None,
            timeout: 30.0,
            kwargs: Default::default(),
            batch_size: 1,
            solution_str: Default::default(),
            concurrency: 1,
            trainer: None,
            chat_template: Default::default(),
            call: None,
            trainer_args: Default::default(),
            group: None,
            network: None,
            repeat: 1,
            repeat_index: 0,
            watch: false,
        };
        let command: serde_json::Value =
            serde_json::from_str(&engine.fork_command(1, &spec)).unwrap();
        command["evaluator"]["flush_ms"].as_f64().unwrap()
    }

    #[tokio::test]
    async fn workers_hold_results_10_ms_unless_serving_asks_for_them_at_once() {
        let root = tempfile::tempdir().unwrap();
        let engine = Engine::new("python3".into(), root.path().to_path_buf()).unwrap();
        assert_eq!(flush_ms(&engine), 10.0);
        engine.answer_promptly();
        assert_eq!(flush_ms(&engine), 1.0);
    }
}
