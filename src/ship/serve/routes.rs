//! The routes behind their guards (the in-flight cap, the `Host`, the key, a JSON
//! body read whole within its limits), and reward-kit's `/health` answer.

use super::evaluate::{evaluate_default, evaluate_named};
use super::limits::Limits;
use super::openrlhf::batch;
use super::Shared;
use crate::ship::guard::{self, Verdict};
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The routes, behind their guards: every request is admitted first (the in-flight
/// cap, then the `Host`), and evaluations also need the key, a JSON body and the
/// whole body within the body timeout.
pub(super) fn router(shared: Arc<Shared>) -> Router {
    let mut protected = Router::new()
        .route("/evaluate", post(evaluate_default))
        .route("/evaluate/{name}", post(evaluate_named))
        .route("/batch/{name}", post(batch))
        .route("/slime/{name}", post(super::slime::reward))
        .route(
            "/v1/fine_tuning/alpha/graders/run",
            post(super::graders::run),
        )
        .route(
            "/v1/fine_tuning/alpha/graders/validate",
            post(super::graders::validate),
        )
        // NeMo Gym's resources server (SPEC §21)
        .route("/seed_session", post(super::nemo_gym::seed_session))
        .route("/verify", post(super::nemo_gym::verify_route))
        .route("/aggregate_metrics", post(super::nemo_gym::aggregate_route));
    if let Some(sandbox) = &shared.sandbox {
        // the sandbox runs code on this machine: behind the key like the rest
        let service = crate::sandbox::http::routes(sandbox.clone());
        for path in crate::sandbox::http::PATHS {
            if path != crate::sandbox::http::PING {
                protected = protected.route_service(path, service.clone());
            }
        }
    }
    let protected = protected.route_layer(axum::middleware::from_fn_with_state(
        shared.clone(),
        authorize,
    ));
    let mut open = Router::new()
        .route("/health", get(health))
        .route("/", get(index))
        // no body to check: it checks the key itself
        .route("/reverify_mode", get(super::nemo_gym::reverify));
    if let Some(sandbox) = &shared.sandbox {
        // SandboxFusion's liveness probe, like /health: it runs nothing
        open = open.route_service(
            crate::sandbox::http::PING,
            crate::sandbox::http::routes(sandbox.clone()),
        );
    }
    open.merge(protected)
        .fallback(no_route)
        .layer(DefaultBodyLimit::max(shared.limits.max_body))
        .layer(axum::middleware::from_fn_with_state(shared.clone(), admit))
        .with_state(shared)
}

pub(super) fn detail(status: StatusCode, text: impl Into<String>) -> Response {
    (status, Json(json!({"detail": text.into()}))).into_response()
}

/// The answer to a request the key turns away (401 without one, 403 with a wrong
/// one), reward-kit's words; `None` when it may pass.
pub(super) fn refused(s: &Shared, headers: &HeaderMap) -> Option<Response> {
    match s.access.check(headers) {
        Verdict::Granted => None,
        Verdict::Missing => Some(detail(
            StatusCode::UNAUTHORIZED,
            "API key required but not provided.",
        )),
        Verdict::Wrong => Some(detail(StatusCode::FORBIDDEN, "Invalid API key.")),
    }
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
    if let Some(refused) = refused(&s, &headers) {
        return refused;
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    if !guard::is_json(content_type) {
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

/// What every server answers, one line per route (what `GET /`, an unknown path and
/// `rwb serve` on start say), before the sandbox's (see [`answered`]).
pub const ROUTES: [(&str, &str); 6] = [
    (
        "POST /evaluate",
        "the default evaluator: {\"messages\": [...], \"ground_truth\": ..., \"kwargs\": {...}} -> an EvaluateResult (reward-kit's generic_server)",
    ),
    ("POST /evaluate/{name}", "the evaluator {name}, the same body"),
    (
        "POST /batch/{name}",
        "OpenRLHF's remote reward: {\"query\": [...], \"prompts\": [...], \"labels\": [...]} -> {\"rewards\", \"scores\", \"extra_logs\"}",
    ),
    (
        "POST /slime/{name}",
        "slime's remote reward model (--rm-type remote_rm): {\"prompt\", \"response\", \"label\"} -> the reward, a bare number",
    ),
    (
        "POST /v1/fine_tuning/alpha/graders/run",
        "OpenAI's graders API: {\"grader\": {...}, \"model_sample\": \"...\", \"item\": {...}} -> {\"reward\", \"metadata\", \"sub_rewards\", ...}",
    ),
    (
        "POST /v1/fine_tuning/alpha/graders/validate",
        "{\"grader\": {...}} -> {\"grader\": {...}}, or 400 naming what is wrong",
    ),
];

/// The sandbox's routes (SPEC §18), one for each of `crate::sandbox::http::PATHS`,
/// answered when the server has a sandbox.
pub const SANDBOX_ROUTES: [(&str, &str); 3] = [
    (
        "POST /run_code",
        "SandboxFusion's run: {\"code\", \"language\", \"run_timeout\", ...} -> {\"status\", \"run_result\", ...}",
    ),
    ("GET /v1/ping", "SandboxFusion's ping: \"pong\""),
    (
        "POST /execute_batch",
        "open-r1's E2B router: {\"scripts\": [...], \"languages\": [...], \"timeout\"} -> each script's last expression",
    ),
];

/// The routes after the others: health and this list.
const LAST_ROUTES: [(&str, &str); 2] = [
    ("GET /health", "status, evaluators and import errors"),
    ("GET /", "this list"),
];

/// Every route a server answers, in the order it lists them: the sandbox's only
/// when it has one.
pub fn answered(sandbox: bool) -> Vec<(&'static str, &'static str)> {
    let sandboxed: &[(&str, &str)] = if sandbox { &SANDBOX_ROUTES } else { &[] };
    ROUTES
        .iter()
        .chain(&super::nemo_gym::ROUTES)
        .chain(sandboxed)
        .chain(&LAST_ROUTES)
        .copied()
        .collect()
}

/// `GET /`: the routes, and (with the key, or when none is required) the evaluators.
async fn index(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Json<Value> {
    let routes: Map<String, Value> = answered(s.sandbox.is_some())
        .into_iter()
        .map(|(route, what)| (route.to_string(), json!(what)))
        .collect();
    if s.access.check(&headers) != Verdict::Granted {
        return Json(json!({"service": "rwb serve", "routes": routes}));
    }
    let names: Vec<&str> = s.evaluators.iter().map(|e| e.spec.name.as_str()).collect();
    Json(json!({
        "service": "rwb serve",
        "routes": routes,
        "evaluators": names,
        "default": s.evaluators.get(s.default).map(|e| e.spec.name.as_str()),
    }))
}

/// Any other path or method: 404 with the routes there are.
async fn no_route(State(s): State<Arc<Shared>>, request: Request) -> Response {
    let routes: Vec<&str> = answered(s.sandbox.is_some())
        .into_iter()
        .map(|(route, _)| route)
        .collect();
    detail(
        StatusCode::NOT_FOUND,
        format!(
            "no route {} {}: rwb serve answers {}",
            request.method(),
            request.uri().path().chars().take(200).collect::<String>(),
            routes.join(", ")
        ),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_routes_are_the_paths_it_mounts() {
        let paths: Vec<&str> = SANDBOX_ROUTES
            .iter()
            .map(|(route, _)| route.split_once(' ').expect("METHOD /path").1)
            .collect();
        assert_eq!(paths, crate::sandbox::http::PATHS);
    }

    #[test]
    fn every_route_is_listed_and_the_sandbox_only_with_one() {
        let plain: Vec<&str> = answered(false).iter().map(|(r, _)| *r).collect();
        assert!(plain.contains(&"POST /slime/{name}"), "{plain:?}");
        assert!(!plain.contains(&"POST /run_code"), "{plain:?}");
        let all: Vec<&str> = answered(true).iter().map(|(r, _)| *r).collect();
        for route in [
            "POST /run_code",
            "GET /v1/ping",
            "POST /execute_batch",
            "GET /",
        ] {
            assert!(all.contains(&route), "{all:?}");
        }
    }
}
