//! `rwb serve`: the evaluators over HTTP, compatible with reward-kit's
//! `generic_server` (SPEC §5), plus the OpenRLHF batch route.
//!
//! Each evaluator has one long-lived job queue drained by the worker pool: requests
//! that arrive together are batched into the same worker round trip, and each waits
//! for its own outcome by id. The server never runs Python itself.

use super::guard::{Access, HostPolicy, Verdict};
use super::listen::{self, Timing};
use crate::engine::{Pool, PoolJob, PoolWork};
use crate::model::{kinds, EvalError, EvaluatorSpec, Outcome};
use crate::runner::Prepared;
use crate::runner::Runner;
use crate::session::Session;
use crate::workspace::Workspace;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, Semaphore};
use tokio_util::sync::CancellationToken;

/// Request bodies larger than this are refused with 413 (`[serve] max_body_mb`).
const DEFAULT_MAX_BODY_MB: u64 = 16;
/// A request's headers must arrive within this (`[serve] header_timeout`).
const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A request's whole body must arrive within this (`[serve] body_timeout`).
const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Requests in flight beyond this get 503 (`[serve] max_in_flight`).
const DEFAULT_MAX_IN_FLIGHT: usize = 1024;
/// After Ctrl-C, how long requests in flight may finish before connections are dropped
/// (the process ends within 5 s, SPEC §5).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);
/// Characters of one of rwb's own errors a remote caller sees (its first line).
const PUBLIC_ERROR_CHARS: usize = 300;
/// Characters of an error the local log keeps.
const NOTE_CHARS: usize = 4000;
/// How many recent latencies the request log keeps for its percentiles.
const LATENCY_WINDOW: usize = 4096;

/// Counts and latencies of served requests, for the status line and `rwb serve`.
#[derive(Default)]
pub struct RequestLog {
    count: AtomicU64,
    errors: AtomicU64,
    recent: Mutex<VecDeque<f64>>,
}

/// A summary of the request log.
#[derive(Clone, Debug, PartialEq)]
pub struct LogSummary {
    pub requests: u64,
    pub errors: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl RequestLog {
    fn record(&self, ms: f64, ok: bool) {
        self.count.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let mut recent = self.recent.lock().unwrap();
        if recent.len() == LATENCY_WINDOW {
            recent.pop_front();
        }
        recent.push_back(ms);
    }

    pub fn summary(&self) -> LogSummary {
        let mut v: Vec<f64> = self.recent.lock().unwrap().iter().copied().collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let pct = |p: f64| (!v.is_empty()).then(|| v[((v.len() - 1) as f64 * p).round() as usize]);
        LogSummary {
            requests: self.count.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            p50_ms: pct(0.5),
            p99_ms: pct(0.99),
        }
    }
}

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
}

/// How to start a server.
pub struct Options {
    pub host: String,
    pub port: u16,
    /// The key it requires and the extra hosts it answers; shared, so that a tunnel
    /// can require a (generated) key on a server that is already running.
    pub access: Arc<Access>,
    pub notes: Option<Notes>,
}

impl Options {
    /// `host:port` (port 0 picks a free one), requiring `RK_ENDPOINT_API_KEY` when set.
    pub fn new(host: &str, port: u16) -> Options {
        Options {
            host: host.to_string(),
            port,
            access: Arc::new(Access::from_env()),
            notes: None,
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
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    drains: Vec<tokio::task::JoinHandle<()>>,
}

impl Server {
    /// `http://HOST:PORT`, the root the routes hang from.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
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

fn setting<'a>(workspace: &'a Workspace, key: &str) -> Option<&'a toml::Value> {
    workspace.config.serve.as_ref().and_then(|t| t.get(key))
}

/// The port `[serve] port` in rwb.toml names, else 8001.
pub fn configured_port(workspace: &Workspace) -> u16 {
    setting(workspace, "port")
        .and_then(|p| p.as_integer())
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(8001)
}

/// The hardening limits of `[serve]` (SPEC §5), checked.
#[derive(Clone, Debug)]
struct Limits {
    max_body: usize,
    header_timeout: Duration,
    body_timeout: Duration,
    max_in_flight: usize,
}

impl Limits {
    fn of(workspace: &Workspace) -> Result<Limits, String> {
        let max_body_mb = setting(workspace, "max_body_mb")
            .and_then(|v| v.as_integer())
            .map(|m| m as u64)
            .unwrap_or(DEFAULT_MAX_BODY_MB);
        let max_in_flight = match setting(workspace, "max_in_flight") {
            None => DEFAULT_MAX_IN_FLIGHT,
            Some(toml::Value::Integer(n)) if (1..=1_000_000).contains(n) => *n as usize,
            Some(other) => {
                return Err(format!(
                    "rwb.toml [serve] max_in_flight must be a whole number from 1 to 1000000, not {other}"
                ))
            }
        };
        Ok(Limits {
            max_body: (max_body_mb.min(1 << 20) * 1024 * 1024) as usize,
            header_timeout: seconds(workspace, "header_timeout", DEFAULT_HEADER_TIMEOUT)?,
            body_timeout: seconds(workspace, "body_timeout", DEFAULT_BODY_TIMEOUT)?,
            max_in_flight,
        })
    }
}

/// `[serve] KEY` as a duration in seconds (above 0, at most a day).
fn seconds(workspace: &Workspace, key: &str, default: Duration) -> Result<Duration, String> {
    match setting(workspace, key) {
        None => Ok(default),
        Some(value) => super::seconds_setting("serve", key, value),
    }
}

/// Starts serving the session's evaluators.
pub async fn start(session: &Session, options: Options) -> Result<Server, String> {
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
    routes.swap(0, default);
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
    });
    let stop = CancellationToken::new();
    let task = tokio::spawn(listen::run(listener, router(shared), timing, stop.clone()));
    Ok(Server {
        addr,
        log,
        routes,
        access: options.access,
        stop,
        task,
        drains,
    })
}

/// The routes, behind their guards: every request is admitted first (the in-flight
/// cap, then the `Host`), and evaluations also need the key, a JSON body and the
/// whole body within the body timeout.
fn router(shared: Arc<Shared>) -> Router {
    let protected = Router::new()
        .route("/evaluate", post(evaluate_default))
        .route("/evaluate/{name}", post(evaluate_named))
        .route("/batch/{name}", post(batch))
        .route_layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            authorize,
        ));
    Router::new()
        .route("/health", get(health))
        .merge(protected)
        .layer(DefaultBodyLimit::max(shared.limits.max_body))
        .layer(axum::middleware::from_fn_with_state(shared.clone(), admit))
        .with_state(shared)
}

fn detail(status: StatusCode, text: impl Into<String>) -> Response {
    (status, Json(json!({"detail": text.into()}))).into_response()
}

/// Every request first: a place among the requests in flight (503 beyond the cap),
/// then a `Host` this server answers (421 otherwise: a page the user visits cannot
/// reach a loopback server through a name that resolves to 127.0.0.1).
async fn admit(State(s): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let Ok(_permit) = s.in_flight.clone().try_acquire_owned() else {
        let mut busy = detail(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the server is busy: {} requests are in flight (the limit is [serve] max_in_flight in rwb.toml); try again shortly",
                s.limits.max_in_flight
            ),
        );
        busy.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return busy;
    };
    let host = request
        .headers()
        .get(header::HOST)
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    if !s.hosts.admits(host.as_deref(), &s.access) {
        let host = host.unwrap_or_default();
        return detail(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "this server does not answer for host '{}': add it to allowed_hosts under [serve] in rwb.toml to allow it",
                host.chars().take(200).collect::<String>()
            ),
        );
    }
    next.run(request).await
}

/// reward-kit's key check, before the body is read: `X-Api-Key`, or `Authorization:
/// Bearer`; 401 when neither is given, 403 when the key is wrong. Then the body must
/// be JSON (415: a browser's form or text post needs no preflight) and arrive whole
/// within the body timeout (408) and the size limit (413).
async fn authorize(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    match s.access.check(&headers) {
        Verdict::Granted => {}
        Verdict::Missing => {
            return detail(
                StatusCode::UNAUTHORIZED,
                "API key required but not provided.",
            )
        }
        Verdict::Wrong => return detail(StatusCode::FORBIDDEN, "Invalid API key."),
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    if !super::guard::is_json(content_type) {
        return detail(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "the body must be JSON: send Content-Type: application/json (got {})",
                content_type.map_or("none".to_string(), |c| format!("'{c}'"))
            ),
        );
    }
    match read_body(&s.limits, request).await {
        Ok(request) => next.run(request).await,
        Err(refused) => refused,
    }
}

/// The request with its whole body read, or the answer that refuses it.
async fn read_body(limits: &Limits, request: Request) -> Result<Request, Response> {
    let (parts, body) = request.into_parts();
    let limited = Limited::new(body, limits.max_body);
    match tokio::time::timeout(limits.body_timeout, limited.collect()).await {
        Ok(Ok(collected)) => Ok(Request::from_parts(parts, Body::from(collected.to_bytes()))),
        Ok(Err(e)) if e.is::<LengthLimitError>() => Err(closing(detail(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the body is larger than {} MB ([serve] max_body_mb in rwb.toml)",
                limits.max_body / (1024 * 1024)
            ),
        ))),
        Ok(Err(e)) => Err(closing(detail(
            StatusCode::BAD_REQUEST,
            format!("cannot read the body: {e}"),
        ))),
        Err(_) => Err(closing(detail(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the body did not arrive within {} s ([serve] body_timeout in rwb.toml)",
                limits.body_timeout.as_secs_f64()
            ),
        ))),
    }
}

/// Asks hyper to close the connection after this answer (its body was not read).
fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// reward-kit's health answer. With a key required and not given, only
/// `{"status": "ok"}`: no evaluator names, import errors or paths.
async fn health(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Json<Value> {
    if s.access.check(&headers) != Verdict::Granted {
        return Json(json!({"status": "ok"}));
    }
    let names: Vec<&str> = s.evaluators.iter().map(|e| e.spec.name.as_str()).collect();
    let broken: Map<String, Value> = s
        .evaluators
        .iter()
        .filter_map(|e| Some((e.spec.name.clone(), json!(e.failure.as_ref()?.message))))
        .collect();
    let summary = s.log.summary();
    Json(json!({
        "status": "ok",
        "reward_function": s.evaluators.get(s.default).map(|e| e.spec.name.as_str()),
        "evaluators": names,
        "import_errors": broken,
        "requests": summary.requests,
    }))
}

/// A refused request: its status and JSON body, made into a response at the end.
struct Reject(StatusCode, Value);

impl IntoResponse for Reject {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

/// A FastAPI-style 422 body for a request that is not an evaluation request.
fn unprocessable(loc: &[&str], kind: &str, msg: &str, input: Value) -> Reject {
    let loc: Vec<Value> = loc.iter().map(|l| json!(l)).collect();
    Reject(
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({"detail": [{"type": kind, "loc": loc, "msg": msg, "input": input}]}),
    )
}

/// Reads `{"messages": [...], "ground_truth": ..., "kwargs": {...}}` into a sample
/// line, as reward-kit's server calls the function (kwargs may override the others).
/// The flat body reward-kit's remote `RewardFunction` posts (`{"messages",
/// "ground_truth", **kwargs}`) is read too: other top-level keys are kwargs.
fn sample_line(body: &[u8]) -> Result<String, Reject> {
    match sample_line_fast(body) {
        Some(line) => Ok(line),
        None => sample_line_checked(body),
    }
}

/// The common case without building a JSON tree: a one-line body whose parts are
/// spliced into the sample line as they are. Anything unusual returns `None` and goes
/// the checked way (which also words the errors).
fn sample_line_fast(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)] // a flat body's kwargs go the checked way
    struct Request<'a> {
        #[serde(borrow)]
        messages: &'a serde_json::value::RawValue,
        #[serde(borrow, default)]
        ground_truth: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow, default)]
        kwargs: Option<&'a serde_json::value::RawValue>,
    }
    if body.contains(&b'\n') || body.contains(&b'\r') {
        return None; // the protocol is one line per sample
    }
    let text = std::str::from_utf8(body).ok()?;
    let request: Request = serde_json::from_str(text).ok()?;
    let items: Vec<&serde_json::value::RawValue> =
        serde_json::from_str(request.messages.get()).ok()?;
    if !items.iter().all(|m| m.get().starts_with('{')) {
        return None;
    }
    let mut line = String::with_capacity(body.len() + 32);
    line.push_str("{\"messages\":");
    line.push_str(request.messages.get());
    line.push_str(",\"ground_truth\":");
    line.push_str(request.ground_truth.map_or("null", |g| g.get()));
    if let Some(kwargs) = request.kwargs {
        let members = kwargs
            .get()
            .trim()
            .strip_prefix('{')?
            .strip_suffix('}')?
            .trim();
        if !members.is_empty() {
            line.push(',');
            line.push_str(members); // later keys win: kwargs may override the others
        }
    }
    line.push('}');
    Some(line)
}

fn sample_line_checked(body: &[u8]) -> Result<String, Reject> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        unprocessable(
            &["body"],
            "json_invalid",
            "JSON decode error",
            json!({"error": e.to_string()}),
        )
    })?;
    let Value::Object(mut obj) = value else {
        return Err(unprocessable(
            &["body"],
            "model_attributes_type",
            "Input should be a valid dictionary or object to extract fields from",
            value,
        ));
    };
    let messages = match obj.remove("messages") {
        Some(Value::Array(m)) => m,
        Some(other) => {
            return Err(unprocessable(
                &["body", "messages"],
                "list_type",
                "Input should be a valid list",
                other,
            ))
        }
        None => {
            return Err(unprocessable(
                &["body", "messages"],
                "missing",
                "Field required",
                Value::Object(obj),
            ))
        }
    };
    if let Some((i, bad)) = messages.iter().enumerate().find(|(_, m)| !m.is_object()) {
        return Err(unprocessable(
            &["body", "messages", &i.to_string()],
            "dict_type",
            "Input should be a valid dictionary",
            bad.clone(),
        ));
    }
    let kwargs = match obj.remove("kwargs") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(k)) => k,
        Some(other) => {
            return Err(unprocessable(
                &["body", "kwargs"],
                "dict_type",
                "Input should be a valid dictionary",
                other,
            ))
        }
    };
    let mut sample = Map::new();
    sample.insert("messages".into(), Value::Array(messages));
    sample.insert(
        "ground_truth".into(),
        obj.remove("ground_truth").unwrap_or(Value::Null),
    );
    // a flat body: what is left are kwargs, and the nested ones win over them
    for (k, v) in obj.into_iter().chain(kwargs) {
        sample.insert(k, v);
    }
    Ok(Value::Object(sample).to_string())
}

impl Shared {
    /// The 500 answer of a failed evaluation, as reward-kit's server words it.
    fn failed(&self, index: usize, e: &EvalError) -> Response {
        detail(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "Internal server error during evaluation: {}",
                self.public_message(index, e)
            ),
        )
    }

    /// What a remote caller sees of an error. What the user's code raised is passed
    /// on as reward-kit passes it; rwb's own errors (a worker that would not start,
    /// with up to 16 KB of its stderr) are cut to their first line, and the whole text
    /// goes to the local log instead.
    fn public_message<'a>(&self, index: usize, e: &'a EvalError) -> std::borrow::Cow<'a, str> {
        let short = public_text(e);
        if short.len() != e.message.len() {
            if let Some(notes) = &self.notes {
                let name = &self.evaluators[index].spec.name;
                let note = format!(
                    "evaluator '{name}': {}: {}",
                    e.kind,
                    clip(&e.message, NOTE_CHARS)
                );
                let mut noted = self.noted.lock().unwrap_or_else(|p| p.into_inner());
                if noted.len() > 1000 {
                    noted.clear();
                }
                if noted.insert(blake3::hash(note.as_bytes())) {
                    notes(note);
                }
            }
        }
        short
    }

    fn find(&self, name: &str) -> Result<usize, Reject> {
        self.evaluators
            .iter()
            .position(|e| e.spec.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self
                    .evaluators
                    .iter()
                    .map(|e| e.spec.name.as_str())
                    .collect();
                let text = format!("no evaluator named '{name}' (served: {})", names.join(", "));
                Reject(StatusCode::NOT_FOUND, json!({ "detail": text }))
            })
    }

    /// Evaluates one sample line on evaluator `index` (for TRL, a batch of one).
    async fn evaluate(&self, index: usize, raw: String) -> Result<Outcome, EvalError> {
        let mut outcomes = self.evaluate_all(index, vec![raw]).await;
        outcomes.pop().expect("one outcome per line")
    }

    /// Evaluates sample lines on evaluator `index`, one outcome per line in order. For
    /// a batched style they are one batch, as a trainer's generation batch is.
    async fn evaluate_all(
        &self,
        index: usize,
        raws: Vec<String>,
    ) -> Vec<Result<Outcome, EvalError>> {
        let served = &self.evaluators[index];
        let Some(queue) = &served.queue else {
            let failure = served
                .failure
                .clone()
                .unwrap_or_else(|| EvalError::new("ImportFailed", "not loaded"));
            return raws.iter().map(|_| Err(failure.clone())).collect();
        };
        let mut jobs = Vec::with_capacity(raws.len());
        let mut replies = Vec::with_capacity(raws.len());
        for raw in raws {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            self.waiting.lock().unwrap().insert(id, tx);
            jobs.push(PoolJob {
                id,
                raw: raw.into(),
            });
            replies.push(self.reply(id, rx));
        }
        if jobs.is_empty() {
            return Vec::new();
        }
        if served.batched {
            let _ = queue.send(PoolWork::Batch(jobs));
        } else {
            for job in jobs {
                let _ = queue.send(PoolWork::One(job));
            }
        }
        futures::future::join_all(replies).await
    }

    /// Waits for the outcome of job `id`, up to the request timeout.
    async fn reply(&self, id: u64, rx: oneshot::Receiver<Outcome>) -> Result<Outcome, EvalError> {
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(_)) => Err(EvalError::new(
                "WorkerCrashed",
                "the evaluation was dropped",
            )),
            Err(_) => {
                self.waiting.lock().unwrap().remove(&id);
                Err(EvalError::new(
                    "Timeout",
                    format!(
                        "no result within the request timeout of {} s",
                        self.timeout.as_secs_f64()
                    ),
                ))
            }
        }
    }
}

/// The EvaluateResult JSON of an outcome, as reward-kit's server returns it: written
/// straight from the outcome, with no JSON tree in between.
#[derive(serde::Serialize)]
struct ResultBody<'a> {
    score: Option<f64>,
    is_score_valid: bool,
    reason: &'a Option<String>,
    metrics: &'a Map<String, Value>,
    step_outputs: &'a Option<Value>,
    error: &'a Option<String>,
}

impl<'a> ResultBody<'a> {
    fn of(o: &'a Outcome) -> ResultBody<'a> {
        ResultBody {
            score: o.score,
            is_score_valid: o.is_score_valid,
            reason: &o.reason,
            metrics: &o.metrics,
            step_outputs: &o.step_outputs,
            error: &o.result_error,
        }
    }
}

async fn run_one(s: &Shared, index: usize, body: &[u8]) -> Response {
    let started = Instant::now();
    let response = match sample_line(body) {
        Err(r) => r.into_response(),
        Ok(raw) => match s.evaluate(index, raw).await {
            Ok(o) => match &o.error {
                None => Json(ResultBody::of(&o)).into_response(),
                Some(e) => s.failed(index, e),
            },
            Err(e) => s.failed(index, &e),
        },
    };
    s.log.record(
        started.elapsed().as_secs_f64() * 1000.0,
        response.status().is_success(),
    );
    response
}

async fn evaluate_default(State(s): State<Arc<Shared>>, body: axum::body::Bytes) -> Response {
    if s.evaluators.is_empty() {
        return detail(StatusCode::NOT_FOUND, "no evaluators are served");
    }
    run_one(&s, s.default, &body).await
}

async fn evaluate_named(
    State(s): State<Arc<Shared>>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    match s.find(&name) {
        Ok(i) => run_one(&s, i, &body).await,
        Err(r) => r.into_response(),
    }
}

/// OpenRLHF's remote reward model: `{"query": [...], "prompts": [...], "labels": [...]}`
/// → `{"rewards": [...], "scores": [...], "extra_logs": {...}}`. Each query is the
/// prompt followed by the response; a failed evaluation scores 0 and is logged.
async fn batch(
    State(s): State<Arc<Shared>>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let started = Instant::now();
    let index = match s.find(&name) {
        Ok(i) => i,
        Err(r) => return r.into_response(),
    };
    let parsed: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return unprocessable(
                &["body"],
                "json_invalid",
                "JSON decode error",
                json!({"error": e.to_string()}),
            )
            .into_response()
        }
    };
    let Some(queries) = parsed.get("query").and_then(|q| q.as_array()) else {
        return unprocessable(
            &["body", "query"],
            "missing",
            "Field required: a list of prompt+response strings",
            parsed.clone(),
        )
        .into_response();
    };
    let prompts = parsed.get("prompts").and_then(|p| p.as_array());
    let labels = parsed.get("labels").and_then(|l| l.as_array());
    let lines = openrlhf_lines(queries, prompts, labels);
    let outcomes = s.evaluate_all(index, lines).await;
    let reply = openrlhf_reply(&s, index, &outcomes);
    s.log.record(started.elapsed().as_secs_f64() * 1000.0, true);
    Json(reply).into_response()
}

/// OpenRLHF's queries as sample lines: the prompt as the user's message (when there
/// is one), the rest of the query as the assistant's, the label as ground truth.
fn openrlhf_lines(
    queries: &[Value],
    prompts: Option<&Vec<Value>>,
    labels: Option<&Vec<Value>>,
) -> Vec<String> {
    let lines = queries.iter().enumerate().map(|(i, q)| {
        let query = q.as_str().unwrap_or_default();
        let prompt = prompts
            .and_then(|p| p.get(i))
            .and_then(|p| p.as_str())
            .unwrap_or("");
        let response = query.strip_prefix(prompt).unwrap_or(query);
        let mut messages = Vec::new();
        if !prompt.is_empty() {
            messages.push(json!({"role": "user", "content": prompt}));
        }
        messages.push(json!({"role": "assistant", "content": response}));
        let label = labels
            .and_then(|l| l.get(i))
            .cloned()
            .unwrap_or(Value::Null);
        json!({"messages": messages, "ground_truth": label}).to_string()
    });
    lines.collect()
}

/// OpenRLHF's answer: a reward per query (0 when it failed), each metric's scores
/// and the failures in `extra_logs`.
fn openrlhf_reply(s: &Shared, index: usize, outcomes: &[Result<Outcome, EvalError>]) -> Value {
    let mut rewards = Vec::new();
    let mut logs: Map<String, Value> = Map::new();
    let mut errors = Vec::new();
    for (i, o) in outcomes.iter().enumerate() {
        let outcome = o.as_ref().ok().filter(|o| o.error.is_none());
        rewards.push(json!(outcome.and_then(|o| o.score).unwrap_or(0.0)));
        if let Some(o) = outcome {
            for (m, v) in &o.metrics {
                let entry = logs
                    .entry(m.clone())
                    .or_insert_with(|| json!(vec![Value::Null; outcomes.len()]));
                entry[i] = v.get("score").cloned().unwrap_or(Value::Null);
            }
        } else {
            let error = match o {
                Ok(o) => o.error.as_ref(),
                Err(e) => Some(e),
            };
            let message = error
                .map(|e| format!("{}: {}", e.kind, s.public_message(index, e)))
                .unwrap_or_default();
            errors.push(json!({"index": i, "error": message}));
        }
    }
    if !errors.is_empty() {
        logs.insert("errors".into(), Value::Array(errors));
    }
    json!({"rewards": rewards, "scores": rewards, "extra_logs": logs})
}

/// rwb's own errors cut to their first line and [`PUBLIC_ERROR_CHARS`]; the user's
/// own exceptions as they are.
fn public_text(e: &EvalError) -> std::borrow::Cow<'_, str> {
    let ours = matches!(
        e.kind.as_str(),
        kinds::WORKER_CRASHED | kinds::IMPORT_FAILED | kinds::TIMEOUT | kinds::INVALID_RESULT
    );
    let first = e.message.trim().lines().next().unwrap_or("").trim_end();
    if !ours || (first.len() == e.message.len() && first.chars().count() <= PUBLIC_ERROR_CHARS) {
        return std::borrow::Cow::Borrowed(&e.message);
    }
    let mut text = clip(first, PUBLIC_ERROR_CHARS);
    text.push_str(" (the rest is in the server's log)");
    std::borrow::Cow::Owned(text)
}

fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_callers_get_the_first_line_of_rwbs_own_errors() {
        let tail =
            "Traceback (most recent call last):\n  File \"/home/u/private/x.py\"\n".repeat(300);
        let e = EvalError::new(
            kinds::WORKER_CRASHED,
            format!("the worker for 'crash' did not start: boom\n{tail}"),
        );
        assert!(e.message.len() > 16_000);
        assert_eq!(
            public_text(&e),
            "the worker for 'crash' did not start: boom (the rest is in the server's log)"
        );
        let long = EvalError::new(kinds::WORKER_CRASHED, "x".repeat(1000));
        assert_eq!(
            public_text(&long),
            format!("{}… (the rest is in the server's log)", "x".repeat(300))
        );
        let short = EvalError::new(kinds::TIMEOUT, "no result within 1 s");
        assert_eq!(public_text(&short), "no result within 1 s");
        // the user's own exception is passed on whole, as reward-kit does
        let user = EvalError::new("ValueError", "line one\nline two");
        assert_eq!(public_text(&user), "line one\nline two");
    }

    #[test]
    fn a_flat_body_passes_its_other_keys_as_kwargs_and_nested_kwargs_win() {
        let flat = r#"{"messages": [{"role": "user", "content": "hi"}], "ground_truth": "4", "solution": "x", "n": 2, "kwargs": {"n": 3}}"#;
        assert_eq!(sample_line_fast(flat.as_bytes()), None, "the checked way");
        let line: Value =
            serde_json::from_str(&sample_line(flat.as_bytes()).ok().expect("valid")).unwrap();
        assert_eq!(
            line,
            json!({"messages": [{"role": "user", "content": "hi"}], "ground_truth": "4", "solution": "x", "n": 3})
        );
    }

    #[test]
    fn the_fast_sample_line_means_what_the_checked_one_means() {
        let bodies = [
            r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
            r#"{"messages": [{"role": "user", "content": "h\"i"}], "ground_truth": "4", "kwargs": {"a": 1, "b": [1, 2]}}"#,
            r#"{"messages": [], "ground_truth": null, "kwargs": {}}"#,
            r#"{"messages": [{"role": "user"}], "kwargs": {"ground_truth": "override", "messages": [{"role": "x"}]}}"#,
            r#"{"kwargs": null, "messages": [{"role": "user", "content": "é"}]}"#,
        ];
        for body in bodies {
            let fast = sample_line_fast(body.as_bytes()).expect("the fast path takes it");
            let checked = sample_line_checked(body.as_bytes()).ok().expect("valid");
            let (a, b): (Value, Value) = (
                serde_json::from_str(&fast).unwrap(),
                serde_json::from_str(&checked).unwrap(),
            );
            assert_eq!(a, b, "{body}");
            assert!(!fast.contains('\n'));
        }
        // unusual bodies go the checked way
        for body in [
            "{\"messages\": [1]}",
            "{\"messages\": []}\n",
            "{\"messages\": [], \"kwargs\": [1]}",
            "[]",
        ] {
            assert!(sample_line_fast(body.as_bytes()).is_none(), "{body}");
        }
    }
}
