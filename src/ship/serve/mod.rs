//! `rwb serve`: the evaluators over HTTP, compatible with reward-kit's
//! `generic_server` (SPEC §5), plus the OpenRLHF batch route.
//!
//! Each evaluator has one long-lived job queue drained by the worker pool: requests
//! that arrive together are batched into the same worker round trip, and each waits
//! for its own outcome by id. The server never runs Python itself.
//!
//! The parts: `limits` (the `[serve]` settings), `routes` (the router, its guards and
//! `/health`), `request` (a request body read as a sample line), `evaluate` (the
//! reward-kit routes and what a caller sees of an error), `openrlhf` (the batch route),
//! `nemo_gym` (NeMo Gym's resources-server routes, SPEC §21), `log` (counts and
//! latencies of served requests).

mod evaluate;
mod graders;
mod limits;
mod log;
pub mod nemo_gym;
mod openrlhf;
mod request;
mod routes;
mod slime;

pub use limits::configured_port;
pub use log::{LogSummary, RequestLog};
pub use routes::{answered, ROUTES, SANDBOX_ROUTES};

use super::guard::{Access, HostPolicy};
use super::listen::{self, Timing};
use crate::engine::{Pool, PoolWork};
use crate::model::{EvalError, EvaluatorSpec, Outcome};
use crate::runner::Prepared;
use crate::runner::Runner;
use crate::session::Session;
use crate::workspace::Workspace;
use limits::{seconds, Limits};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, Semaphore};
use tokio_util::sync::CancellationToken;

/// After Ctrl-C, how long requests in flight may finish before connections are dropped
/// (the process ends within 5 s, SPEC §5).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Outcome>>>>;

/// Hears what only the local user should read: full worker errors, which remote
/// callers get only the first line of.
pub type Notes = Arc<dyn Fn(String) + Send + Sync>;

/// One evaluator as served: its queue, or why it cannot run.
struct Served {
    spec: Arc<EvaluatorSpec>,
    queue: Option<flume::Sender<PoolWork>>,
    failure: Option<EvalError>,
    /// A batched style (TRL): a request's samples are one batch, called as one.
    batched: bool,
}

struct Shared {
    evaluators: Vec<Served>,
    default: usize,
    waiting: Waiting,
    next_id: AtomicU64,
    access: Arc<Access>,
    hosts: HostPolicy,
    limits: Limits,
    in_flight: Arc<Semaphore>,
    timeout: Duration,
    log: Arc<RequestLog>,
    notes: Option<Notes>,
    /// Errors already sent to `notes` (a broken evaluator fails every request alike).
    noted: Mutex<std::collections::HashSet<blake3::Hash>>,
    /// What the graders API routes run graders with (SPEC §17).
    graders: Option<graders::Graders>,
    /// The sandbox behind `/run_code` and its siblings (SPEC §18).
    sandbox: Option<Arc<crate::sandbox::service::Service>>,
    /// What NeMo Gym's routes serve (SPEC §21).
    nemo_gym: nemo_gym::Settings,
}

/// How to start a server.
pub struct Options {
    pub host: String,
    pub port: u16,
    /// The key it requires and the extra hosts it answers; shared, so that a tunnel
    /// can require a (generated) key on a server that is already running.
    pub access: Arc<Access>,
    pub notes: Option<Notes>,
    /// The sandbox `POST /run_code`, `GET /v1/ping` and `POST /execute_batch` run
    /// code in (SPEC §18); `None`: not served.
    pub sandbox: Option<Arc<crate::sandbox::service::Service>>,
    /// The evaluator NeMo Gym's `/verify` runs (SPEC §21); `None`: the default.
    pub nemo_gym_evaluator: Option<String>,
}

impl Options {
    /// `host:port` (port 0 picks a free one), requiring `RK_ENDPOINT_API_KEY` when set.
    pub fn new(host: &str, port: u16) -> Options {
        Options {
            host: host.to_string(),
            port,
            access: Arc::new(Access::from_env()),
            notes: None,
            sandbox: None,
            nemo_gym_evaluator: None,
        }
    }
}

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    pub log: Arc<RequestLog>,
    /// Names of the served evaluators; the first is what `POST /evaluate` runs.
    pub routes: Vec<String>,
    /// The key it requires and the extra hosts it answers.
    pub access: Arc<Access>,
    /// It serves the sandbox's routes (`/run_code` and its siblings).
    pub sandbox: bool,
    /// What `GET /reverify_mode` answers, and why, for the banner.
    pub reverify: Option<String>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    drains: Vec<tokio::task::JoinHandle<()>>,
}

impl Server {
    /// `http://HOST:PORT`, the root the routes hang from.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every route it answers, with what each takes and gives (`GET /reverify_mode`:
    /// what it answers here, and why).
    pub fn answered(&self) -> Vec<(&'static str, String)> {
        answered(self.sandbox)
            .into_iter()
            .map(|(route, what)| match (route, &self.reverify) {
                ("GET /reverify_mode", Some(said)) => (route, said.clone()),
                _ => (route, what.to_string()),
            })
            .collect()
    }

    /// Stops accepting, lets requests in flight finish for up to [`SHUTDOWN_GRACE`],
    /// drops the connections still open, then returns.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        let _ = (&mut self.task).await;
        for d in &self.drains {
            d.abort();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
        for d in &self.drains {
            d.abort();
        }
    }
}

/// Starts serving the session's evaluators.
pub async fn start(session: &Session, mut options: Options) -> Result<Server, String> {
    options
        .sandbox
        .get_or_insert_with(|| session.sandbox.clone());
    start_with(session.runner.clone(), &session.workspace, options).await
}

/// The evaluators with a queue each (drained by the pool, or for one that runs
/// elsewhere by its remote client), or their import failure.
async fn queues(
    runner: &Runner,
    workspace: &Workspace,
    waiting: &Waiting,
) -> Result<(Vec<Served>, Vec<tokio::task::JoinHandle<()>>), String> {
    let pool: Arc<Pool> = runner.pool().clone();
    let prepared: Vec<Prepared> =
        futures::future::join_all(workspace.evaluators.iter().map(|spec| runner.prepare(spec)))
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
    let mut evaluators = Vec::new();
    let mut drains = Vec::new();
    for p in prepared {
        if p.failure.is_some() {
            evaluators.push(Served {
                spec: p.spec.clone(),
                queue: None,
                failure: p.failure,
                batched: false,
            });
            continue;
        }
        let (tx, rx) = flume::unbounded::<PoolWork>();
        let sink_waiting = waiting.clone();
        let sink: crate::engine::Sink = Arc::new(move |id, outcome| {
            if let Some(reply) = sink_waiting.lock().unwrap().remove(&id) {
                let _ = reply.send(outcome);
            }
        });
        let pool = pool.clone();
        let spec = p.spec.clone();
        let key = p.key;
        drains.push(tokio::spawn(async move {
            if spec.source.is_remote() {
                // served as a proxy: each request is passed on to where it runs
                let n = crate::remote::DEFAULT_CONCURRENCY;
                crate::remote::drain(spec, rx, sink, n).await
            } else {
                pool.drain(spec, key, rx, sink).await
            }
        }));
        evaluators.push(Served {
            spec: p.spec,
            queue: Some(tx),
            failure: None,
            batched: p.style.is_some_and(|s| s.is_batched()),
        });
    }
    Ok((evaluators, drains))
}

/// Starts serving `workspace`'s evaluators with `runner`'s workers. Each evaluator is
/// imported first; one that fails to import answers 500 with its import error, and
/// the others are served.
pub async fn start_with(
    runner: Arc<Runner>,
    workspace: &Workspace,
    options: Options,
) -> Result<Server, String> {
    let limits = Limits::of(workspace)?;
    let allowed_hosts = workspace.config.allowed_hosts()?;
    let nemo_gym = nemo_gym::Settings::of(workspace, options.nemo_gym_evaluator.clone())?;
    let reverify = nemo_gym.said.clone();
    let waiting: Waiting = Arc::default();
    // each request's client waits for its result: no holding results to send together
    runner.engine().answer_promptly();
    let (evaluators, drains) = queues(&runner, workspace, &waiting).await?;
    let default = workspace
        .config
        .evaluators
        .iter()
        .find(|(_, e)| e.default == Some(true))
        .and_then(|(name, _)| evaluators.iter().position(|s| &s.spec.name == name))
        .unwrap_or(0);
    // by default a request may take as long as its slowest evaluation, and 5 s more
    let slowest = evaluators
        .iter()
        .map(|e| e.spec.timeout)
        .fold(0.0, f64::max);
    let default_timeout =
        Duration::try_from_secs_f64(slowest + 5.0).unwrap_or(Duration::from_secs(86_400));
    let timeout = seconds(workspace, "request_timeout", default_timeout)?;
    let (host, port) = (options.host.as_str(), options.port);
    let listener = tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|e| format!("cannot listen on {host}:{port}: {e} (choose another --port)"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let log = Arc::new(RequestLog::default());
    let mut routes: Vec<String> = evaluators.iter().map(|e| e.spec.name.clone()).collect();
    if !routes.is_empty() {
        routes.swap(0, default);
    }
    let timing = Timing {
        header_timeout: limits.header_timeout,
        grace: SHUTDOWN_GRACE,
    };
    let shared = Arc::new(Shared {
        evaluators,
        default,
        waiting,
        next_id: AtomicU64::new(1),
        access: options.access.clone(),
        hosts: HostPolicy::new(addr.ip().is_loopback(), allowed_hosts),
        in_flight: Arc::new(Semaphore::new(limits.max_in_flight)),
        limits,
        timeout,
        log: log.clone(),
        notes: options.notes,
        noted: Mutex::default(),
        graders: Some(graders::Graders::new(
            runner.clone(),
            workspace.config.clone(),
        )),
        sandbox: options.sandbox.clone(),
        nemo_gym,
    });
    let stop = CancellationToken::new();
    let task = tokio::spawn(listen::run(
        listener,
        routes::router(shared),
        timing,
        stop.clone(),
    ));
    Ok(Server {
        addr,
        log,
        routes,
        access: options.access,
        sandbox: options.sandbox.is_some(),
        reverify,
        stop,
        task,
        drains,
    })
}
