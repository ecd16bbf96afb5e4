//! `rwb serve`: the evaluators over HTTP, compatible with reward-kit's
//! `generic_server` (SPEC §5), plus the OpenRLHF batch route.
//!
//! Each evaluator has one long-lived job queue drained by the worker pool: requests
//! that arrive together are batched into the same worker round trip, and each waits
//! for its own outcome by id. The server never runs Python itself.

use crate::cli::Session;
use crate::engine::{Pool, PoolJob, PoolWork};
use crate::model::{EvalError, EvaluatorSpec, Outcome};
use crate::runner::Prepared;
use crate::runner::Runner;
use crate::workspace::Workspace;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Request bodies larger than this are refused with 413 (`[serve] max_body_mb`).
const DEFAULT_MAX_BODY_MB: u64 = 16;
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
    api_key: Option<String>,
    timeout: Duration,
    log: Arc<RequestLog>,
}

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    pub log: Arc<RequestLog>,
    /// Names of the served evaluators; the first is what `POST /evaluate` runs.
    pub routes: Vec<String>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    drains: Vec<tokio::task::JoinHandle<()>>,
}

impl Server {
    /// `http://HOST:PORT`, the root the routes hang from.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets requests in flight finish, then returns.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
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

/// Starts serving the session's evaluators on `host:port` (port 0 picks a free one).
pub async fn start(session: &Session, host: &str, port: u16) -> Result<Server, String> {
    start_with(session.runner.clone(), &session.workspace, host, port).await
}

/// Starts serving `workspace`'s evaluators with `runner`'s workers. Each evaluator is
/// imported first; one that fails to import answers 500 with its import error, and
/// the others are served.
pub async fn start_with(
    runner: Arc<Runner>,
    workspace: &Workspace,
    host: &str,
    port: u16,
) -> Result<Server, String> {
    let pool: Arc<Pool> = runner.pool().clone();
    let prepared: Vec<Prepared> =
        futures::future::join_all(workspace.evaluators.iter().map(|spec| runner.prepare(spec)))
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
    let waiting: Waiting = Arc::default();
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
            pool.drain(spec, key, rx, sink).await
        }));
        evaluators.push(Served {
            spec: p.spec,
            queue: Some(tx),
            failure: None,
            batched: p.style.is_some_and(|s| s.is_batched()),
        });
    }
    let default = workspace
        .config
        .evaluators
        .iter()
        .find(|(_, e)| e.default == Some(true))
        .and_then(|(name, _)| evaluators.iter().position(|s| &s.spec.name == name))
        .unwrap_or(0);
    let timeout = setting(workspace, "request_timeout")
        .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
        .unwrap_or_else(|| {
            evaluators
                .iter()
                .map(|e| e.spec.timeout)
                .fold(0.0, f64::max)
                + 5.0
        });
    let max_body = setting(workspace, "max_body_mb")
        .and_then(|v| v.as_integer())
        .map(|m| m as u64)
        .unwrap_or(DEFAULT_MAX_BODY_MB);
    let log = Arc::new(RequestLog::default());
    let mut routes: Vec<String> = evaluators.iter().map(|e| e.spec.name.clone()).collect();
    routes.swap(0, default);
    let shared = Arc::new(Shared {
        evaluators,
        default,
        waiting,
        next_id: AtomicU64::new(1),
        api_key: std::env::var("RK_ENDPOINT_API_KEY")
            .ok()
            .filter(|k| !k.is_empty()),
        timeout: Duration::from_secs_f64(timeout),
        log: log.clone(),
    });
    let protected = Router::new()
        .route("/evaluate", post(evaluate_default))
        .route("/evaluate/{name}", post(evaluate_named))
        .route("/batch/{name}", post(batch))
        .route_layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            authorize,
        ));
    let app = Router::new()
        .route("/health", get(health))
        .merge(protected)
        .layer(DefaultBodyLimit::max((max_body * 1024 * 1024) as usize))
        .with_state(shared);
    let listener = tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|e| format!("cannot listen on {host}:{port}: {e} (choose another --port)"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    Ok(Server {
        addr,
        log,
        routes,
        stop: Some(stop),
        task,
        drains,
    })
}

fn detail(status: StatusCode, text: impl Into<String>) -> Response {
    (status, Json(json!({"detail": text.into()}))).into_response()
}

/// reward-kit's key check: `X-Api-Key`, then `Authorization: Bearer`; 401 when
/// neither is given, 403 when the key is wrong. Runs before the body is read.
async fn authorize(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = &s.api_key else {
        return next.run(request).await;
    };
    let given = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| {
            headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(|k| k.trim().to_string())
        });
    match given {
        None => detail(
            StatusCode::UNAUTHORIZED,
            "API key required but not provided.",
        ),
        Some(k) if &k != expected => detail(StatusCode::FORBIDDEN, "Invalid API key."),
        Some(_) => next.run(request).await,
    }
}

async fn health(State(s): State<Arc<Shared>>) -> Json<Value> {
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
    for (k, v) in kwargs {
        sample.insert(k, v);
    }
    Ok(Value::Object(sample).to_string())
}

impl Shared {
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
                Some(e) => detail(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("Internal server error during evaluation: {}", e.message),
                ),
            },
            Err(e) => detail(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Internal server error during evaluation: {}", e.message),
            ),
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
    let outcomes = s.evaluate_all(index, lines.collect()).await;
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
            let message = match o {
                Ok(o) => o
                    .error
                    .as_ref()
                    .map(|e| format!("{}: {}", e.kind, e.message))
                    .unwrap_or_default(),
                Err(e) => format!("{}: {}", e.kind, e.message),
            };
            errors.push(json!({"index": i, "error": message}));
        }
    }
    if !errors.is_empty() {
        logs.insert("errors".into(), Value::Array(errors));
    }
    s.log.record(started.elapsed().as_secs_f64() * 1000.0, true);
    Json(json!({"rewards": rewards, "scores": rewards, "extra_logs": logs})).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_sample_line_means_what_the_checked_one_means() {
        let bodies = [
            r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
            r#"{"messages": [{"role": "user", "content": "h\"i"}], "ground_truth": "4", "kwargs": {"a": 1, "b": [1, 2]}}"#,
            r#"{"messages": [], "ground_truth": null, "kwargs": {}}"#,
            r#"{"messages": [{"role": "user"}], "kwargs": {"ground_truth": "override", "messages": [{"role": "x"}]}}"#,
            r#"{"kwargs": null, "messages": [{"role": "user", "content": "é"}], "extra": true}"#,
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
