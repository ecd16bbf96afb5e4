//! The sandbox over HTTP (SPEC §18): SandboxFusion's `POST /run_code` and `GET
//! /v1/ping`, and open-r1's E2B router `POST /execute_batch`, on `rwb serve` and on
//! the listeners `rwb run` and the workbench open for their workers (a loopback port,
//! `SANDBOX_FUSION_ENDPOINT`, and a Unix socket in rwb's runtime folder, which a
//! worker without network still reaches).

use super::service::{check_request, Service};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The sandbox's routes, their state given (mount them with `route_service`, or
/// serve them as they are).
pub fn routes(service: Arc<Service>) -> Router {
    Router::new()
        .route("/run_code", post(run_code))
        .route(PING, get(ping))
        .route("/execute_batch", post(execute_batch))
        .with_state(service)
}

/// The paths [`routes`] answers, for a server that mounts them.
pub const PATHS: [&str; 3] = ["/run_code", PING, "/execute_batch"];

/// SandboxFusion's liveness probe (it runs nothing).
pub const PING: &str = "/v1/ping";

async fn ping() -> Json<Value> {
    Json(json!("pong"))
}

async fn run_code(State(service): State<Arc<Service>>, body: axum::body::Bytes) -> Response {
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                Json(json!({"detail": [{"type": "json_invalid", "loc": ["body"], "msg": format!("JSON decode error: {e}"), "input": {}}]})),
            )
                .into_response()
        }
    };
    match check_request(&body) {
        Ok(request) => Json(service.run_code(request).await).into_response(),
        Err(problems) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({ "detail": problems })),
        )
            .into_response(),
    }
}

/// open-r1's router request: `{scripts, languages, timeout, request_timeout}`; each
/// script runs as one Python cell whose last expression is `results[0].text`, as an
/// E2B sandbox runs it.
async fn execute_batch(State(service): State<Arc<Service>>, Json(body): Json<Value>) -> Response {
    let Some(scripts) = body["scripts"].as_array() else {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"detail": "scripts must be a list of strings"})),
        )
            .into_response();
    };
    let languages = body["languages"].as_array();
    let timeout = body["timeout"].as_f64().unwrap_or(30.0);
    let runs = scripts.iter().enumerate().map(|(i, script)| {
        let service = service.clone();
        let language = languages
            .and_then(|l| l.get(i))
            .and_then(Value::as_str)
            .unwrap_or("python")
            .to_string();
        let script = script.as_str().unwrap_or_default().to_string();
        async move { run_cell(&service, &script, &language, timeout).await }
    });
    Json(Value::Array(futures::future::join_all(runs).await)).into_response()
}

/// One cell as E2B answers it: `{execution: {results, logs, error, execution_count},
/// exception_str}`.
async fn run_cell(service: &Service, script: &str, language: &str, timeout: f64) -> Value {
    if language != "python" {
        return json!({"execution": null, "exception_str": format!("rwb's stand-in for E2B runs Python cells, not {language}")});
    }
    // unguessable: the cell's own code must not be able to print a result of its own
    let Ok(key) = crate::ship::guard::generate_key() else {
        return json!({"execution": null, "exception_str": "rwb cannot get random bytes for the cell's marker"});
    };
    let marker = format!("rwb-cell-result-{key}");
    let mut request = Map::new();
    request.insert("code".into(), json!(cell_program(script, &marker)));
    request.insert("language".into(), json!("python"));
    request.insert("run_timeout".into(), json!(timeout));
    let answer = service.run_code(request).await;
    if answer["status"] == "SandboxError" {
        return json!({"execution": null, "exception_str": answer["message"]});
    }
    let run = &answer["run_result"];
    let stdout = run["stdout"].as_str().unwrap_or_default();
    let stderr = run["stderr"].as_str().unwrap_or_default();
    let (printed, value) = match stdout.rsplit_once(&format!("\n{marker}\n")) {
        Some((printed, value)) => (printed.to_string(), Some(value.trim_end().to_string())),
        None => (stdout.to_string(), None),
    };
    let error = if run["status"] == "TimeLimitExceeded" {
        json!({"name": "TimeoutError", "value": "the cell did not finish in time", "traceback": ""})
    } else if run["return_code"].as_i64().is_some_and(|c| c != 0) {
        let last = stderr.lines().last().unwrap_or_default();
        let (name, value) = last.split_once(": ").unwrap_or((last, ""));
        json!({"name": name, "value": value, "traceback": stderr})
    } else {
        Value::Null
    };
    let results = match value {
        Some(text) if error.is_null() => json!([{"text": text, "is_main_result": true}]),
        _ => json!([]),
    };
    let lines =
        |text: &str| -> Vec<String> { text.split_inclusive('\n').map(str::to_string).collect() };
    json!({
        "execution": {
            "results": results,
            "logs": {"stdout": lines(&printed), "stderr": lines(stderr)},
            "error": error,
            "execution_count": 1,
        },
        "exception_str": null,
    })
}

/// A Python program running `script` as a notebook cell: its last expression, when
/// it ends in one, is printed after `marker` on a line of its own (as `repr`, the
/// text a notebook shows).
fn cell_program(script: &str, marker: &str) -> String {
    let literal = serde_json::to_string(script).unwrap_or_else(|_| "\"\"".into());
    format!(
        "import ast as _rwb_ast, sys as _rwb_sys\n\
         _rwb_tree = _rwb_ast.parse({literal}, '<cell>')\n\
         _rwb_last = _rwb_tree.body.pop() if _rwb_tree.body and isinstance(_rwb_tree.body[-1], _rwb_ast.Expr) else None\n\
         _rwb_ns = {{'__name__': '__main__'}}\n\
         exec(compile(_rwb_tree, '<cell>', 'exec'), _rwb_ns)\n\
         if _rwb_last is not None:\n\
         \x20   _rwb_value = eval(compile(_rwb_ast.Expression(_rwb_last.value), '<cell>', 'eval'), _rwb_ns)\n\
         \x20   if _rwb_value is not None:\n\
         \x20       _rwb_sys.stdout.write('\\n{marker}\\n' + repr(_rwb_value) + '\\n')\n"
    )
}

/// Where a run's workers reach the sandbox: a loopback URL and a Unix socket.
pub struct Listening {
    pub url: String,
    pub socket: PathBuf,
    /// Runs at once, and a run's memory in MiB (what veRL's config would say).
    pub slots: usize,
    pub memory_mb: u64,
}

impl Listening {
    /// The environment a worker gets: SandboxFusion's client variable and rwb's own.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("SANDBOX_FUSION_ENDPOINT".into(), self.url.clone()),
            ("RWB_SANDBOX_URL".into(), self.url.clone()),
            (
                "RWB_SANDBOX_SOCKET".into(),
                self.socket.to_string_lossy().into_owned(),
            ),
            ("RWB_SANDBOX_SLOTS".into(), self.slots.to_string()),
            ("RWB_SANDBOX_MEMORY_MB".into(), self.memory_mb.to_string()),
        ]
    }
}

/// Serves [`routes`] on a loopback port and on a Unix socket at `socket`, for as long
/// as the runtime runs. Must be called inside a tokio runtime.
pub fn listen(service: Arc<Service>, socket: &Path) -> std::io::Result<Listening> {
    let tcp = std::net::TcpListener::bind("127.0.0.1:0")?;
    tcp.set_nonblocking(true)?;
    let port = tcp.local_addr()?.port();
    let tcp = tokio::net::TcpListener::from_std(tcp)?;
    let _ = std::fs::remove_file(socket);
    let unix = tokio::net::UnixListener::bind(socket)?;
    let (slots, memory_mb) = (service.settings.slots, service.settings.memory_mb);
    let app = routes(service);
    let for_unix = app.clone();
    tokio::spawn(async move {
        let _ = axum::serve(tcp, app).await;
    });
    tokio::spawn(async move {
        let _ = axum::serve(unix, for_unix).await;
    });
    Ok(Listening {
        url: format!("http://127.0.0.1:{port}"),
        socket: socket.to_path_buf(),
        slots,
        memory_mb,
    })
}
