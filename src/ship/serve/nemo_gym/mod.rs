//! NeMo Gym's resources-server routes (SPEC §21), for one evaluator (the default, or
//! `rwb serve --evaluator NAME`): `POST /seed_session`, `POST /verify`, `POST
//! /aggregate_metrics` and `GET /reverify_mode`, as NVIDIA-NeMo/Gym's
//! `SimpleResourcesServer` answers them. `verify` reads a body as a sample and writes
//! the answer; `metrics` aggregates.

pub mod metrics;
pub mod verify;

use super::request::unprocessable;
use super::routes::detail;
use super::Shared;
use crate::model::EvaluatorSpec;
use crate::runner::Runner;
use crate::store::{CheckRecord, Finding, Store};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
pub use verify::Join;

/// The routes, for `GET /`, the 404 list and the start banner.
pub const ROUTES: [(&str, &str); 4] = [
    (
        "POST /seed_session",
        "NeMo Gym's resources server: any body -> {}",
    ),
    (
        "POST /verify",
        "NeMo Gym: {\"responses_create_params\", \"response\", ...task fields} -> the request with \"reward\" (and \"reward_components\")",
    ),
    (
        "POST /aggregate_metrics",
        "NeMo Gym: {\"verify_responses\": [...]} -> {\"group_level_metrics\", \"agent_metrics\", \"key_metrics\"}",
    ),
    (
        "GET /reverify_mode",
        "NeMo Gym: \"stateless\", or \"unsupported\" for an evaluator that is not",
    ),
];

/// What the NeMo Gym routes serve: which evaluator, how its text is joined, and
/// whether `gym eval reverify` may score a rollout again.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The evaluator `/verify` runs (`None`: the default).
    pub evaluator: Option<String>,
    pub join: Join,
    /// `[serve] nemo_gym_reverify`: "stateless" or "unsupported", said outright.
    pub reverify: Option<String>,
    /// The workspace (its store holds what `rwb check` found) and its interpreter
    /// (part of an evaluator's code key).
    pub root: PathBuf,
    pub python: PathBuf,
    /// What the start banner says of `GET /reverify_mode` for the evaluator `/verify`
    /// runs, and why (`NeMo Gym: "unsupported" (rwb check found it nondeterministic
    /// on 2026-12-06, on 3 samples)`).
    pub said: Option<String>,
}

impl Settings {
    /// `[serve] nemo_gym_join` ("output_text", the default, or "newline"), checked.
    pub fn of(
        workspace: &crate::workspace::Workspace,
        evaluator: Option<String>,
    ) -> Result<Settings, String> {
        let join = match workspace
            .config
            .serve
            .as_ref()
            .and_then(|t| t.get("nemo_gym_join"))
        {
            None => Join::OutputText,
            Some(toml::Value::String(s)) if s == "output_text" => Join::OutputText,
            Some(toml::Value::String(s)) if s == "newline" => Join::Newline,
            Some(other) => {
                return Err(format!(
                    "rwb.toml [serve] nemo_gym_join must be \"output_text\" or \"newline\", not {other}"
                ))
            }
        };
        if let Some(name) = &evaluator {
            if !workspace.evaluators.iter().any(|e| &e.name == name) {
                let names: Vec<&str> = workspace
                    .evaluators
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect();
                return Err(format!(
                    "--evaluator {name}: no such evaluator (there are: {})",
                    names.join(", ")
                ));
            }
        }
        let reverify = match workspace
            .config
            .serve
            .as_ref()
            .and_then(|t| t.get("nemo_gym_reverify"))
        {
            None => None,
            Some(toml::Value::String(s)) if s == "stateless" || s == "unsupported" => {
                Some(s.clone())
            }
            Some(other) => {
                return Err(format!(
                    "rwb.toml [serve] nemo_gym_reverify must be \"stateless\" or \"unsupported\", not {other}"
                ))
            }
        };
        let mut settings = Settings {
            evaluator,
            join,
            reverify,
            root: workspace.root.clone(),
            python: workspace.python.clone(),
            said: None,
        };
        // what the route list says: the mode of the evaluator /verify runs
        let served = match &settings.evaluator {
            Some(name) => workspace.evaluators.iter().find(|e| &e.name == name),
            None => workspace
                .config
                .evaluators
                .iter()
                .find(|(_, e)| e.default == Some(true))
                .and_then(|(name, _)| workspace.evaluators.iter().find(|e| &e.name == name))
                .or(workspace.evaluators.first()),
        };
        settings.said = served.map(|spec| {
            let mode = settings.mode(spec);
            format!("NeMo Gym: \"{}\" ({})", mode.answer, mode.why)
        });
        Ok(settings)
    }

    /// The check `rwb check` recorded of `spec`'s code as it is now, if any (reads
    /// files: call it off the async threads).
    fn recorded(&self, spec: &EvaluatorSpec) -> Option<CheckRecord> {
        let path = Store::path_for(&self.root);
        if spec.source.is_remote() || !path.exists() {
            return None;
        }
        let store = Store::open(&self.root).ok()?;
        Runner::recorded_check(&store, &self.python, spec)
    }

    /// `spec`'s reverify mode and why ([`reverify_mode`]).
    pub fn mode(&self, spec: &EvaluatorSpec) -> Mode {
        let configured = self.reverify.as_deref();
        let recorded = match configured {
            Some(_) => None,
            None => self.recorded(spec),
        };
        reverify_mode(spec, configured, recorded.as_ref())
    }
}

/// An evaluator's answer to `GET /reverify_mode`, and where it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Mode {
    /// "stateless" or "unsupported".
    pub answer: &'static str,
    /// Why, in words: "rwb check found it nondeterministic on 2026-12-06".
    pub why: String,
}

/// Whether an evaluator gives the same score to the same rollout every time, as far
/// as rwb knows. `[serve] nemo_gym_reverify` says it outright; else what `rwb check`
/// found of its code as it is now (`recorded`): "unsupported" when a repeated call
/// scored otherwise, "stateless" when none did; else its kind: a remote evaluator, a
/// model grader or a `repeat = K` one (a judge meant to vary) is "unsupported".
pub fn reverify_mode(
    spec: &EvaluatorSpec,
    configured: Option<&str>,
    recorded: Option<&CheckRecord>,
) -> Mode {
    if let Some(configured) = configured {
        // Settings::of let only these two through
        let answer = if configured == "stateless" {
            "stateless"
        } else {
            "unsupported"
        };
        let why = "[serve] nemo_gym_reverify in rwb.toml".into();
        return Mode { answer, why };
    }
    if let Some(r) = recorded {
        let answer = if r.finding == Finding::Deterministic {
            "stateless"
        } else {
            "unsupported"
        };
        let samples = if r.samples == 1 { "sample" } else { "samples" };
        return Mode {
            answer,
            why: format!(
                "rwb check found it {} on {}, on {} {samples}",
                r.finding.as_str(),
                r.date(),
                r.samples
            ),
        };
    }
    let model_grader = match &spec.source {
        crate::model::Source::Grader { file, inline, .. } => {
            let text = inline
                .clone()
                .or_else(|| std::fs::read_to_string(file).ok())
                .unwrap_or_default();
            text.contains("score_model") || text.contains("label_model")
        }
        _ => false,
    };
    let (answer, kind) = if spec.source.is_remote() {
        (
            "unsupported",
            ": it runs elsewhere, which rwb check does not call",
        )
    } else if model_grader {
        (
            "unsupported",
            ", a model grader; run rwb check for a verdict",
        )
    } else if spec.repeat > 1 {
        ("unsupported", ", repeat > 1; run rwb check for a verdict")
    } else {
        ("stateless", "; run rwb check for a verdict")
    };
    Mode {
        answer,
        why: format!("from the evaluator's kind{kind}"),
    }
}

impl Shared {
    /// The evaluator the NeMo Gym routes run, or the 404 that says there is none.
    fn gym_evaluator(&self) -> Result<usize, Box<Response>> {
        match &self.nemo_gym.evaluator {
            Some(name) => self.find(name).map_err(|r| Box::new(r.into_response())),
            None if self.evaluators.is_empty() => Err(Box::new(detail(
                StatusCode::NOT_FOUND,
                "no evaluators are served",
            ))),
            None => Ok(self.default),
        }
    }
}

/// `POST /seed_session`: nothing to set up; `{}` whatever the body.
pub(super) async fn seed_session() -> Json<Value> {
    Json(json!({}))
}

/// `GET /reverify_mode`, behind the key like the other routes (it has no body).
pub(super) async fn reverify(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(refused) = super::routes::refused(&s, &headers) {
        return refused;
    }
    let index = match s.gym_evaluator() {
        Ok(i) => i,
        Err(r) => return *r,
    };
    // what rwb check recorded is read afresh: a check run while the server runs counts
    let spec = s.evaluators[index].spec.clone();
    let settings = s.nemo_gym.clone();
    match tokio::task::spawn_blocking(move || settings.mode(&spec)).await {
        Ok(mode) => Json(json!(mode.answer)).into_response(),
        Err(e) => detail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn object_body(body: &[u8]) -> Result<Map<String, Value>, Box<Response>> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(other) => Err(Box::new(
            unprocessable(
                &["body"],
                "model_attributes_type",
                "Input should be a valid dictionary or object to extract fields from",
                other,
            )
            .into_response(),
        )),
        Err(e) => Err(Box::new(
            unprocessable(
                &["body"],
                "json_invalid",
                "JSON decode error",
                json!({"error": e.to_string()}),
            )
            .into_response(),
        )),
    }
}

/// `POST /verify`: the rollout scored by the evaluator, answered as the request with
/// `reward` (SPEC §21). A judge or network failure is Gym's failsafe answer (200,
/// `reward: 0.0`, `_ng_failure_class: "judge_failed"`); another error is 422.
pub(super) async fn verify_route(
    State(s): State<Arc<Shared>>,
    body: axum::body::Bytes,
) -> Response {
    let started = Instant::now();
    let answer = verify_one(&s, &body).await;
    s.log.record(
        started.elapsed().as_secs_f64() * 1000.0,
        answer.status().is_success(),
    );
    answer
}

async fn verify_one(s: &Shared, body: &[u8]) -> Response {
    let index = match s.gym_evaluator() {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let request = match object_body(body) {
        Ok(o) => o,
        Err(r) => return *r,
    };
    let read = match verify::sample_of(&request, s.nemo_gym.join) {
        Ok(read) => read,
        Err(refused) => {
            return unprocessable(&refused.loc, refused.kind, &refused.msg, Value::Null)
                .into_response()
        }
    };
    let outcome = s.evaluate_all(index, vec![read.line]).await.pop();
    let error = match outcome {
        Some(Ok(o)) => match (&o.error, o.score) {
            (None, Some(score)) => {
                let answer = verify::answer(request, score, &o.metrics, read.note);
                return Json(Value::Object(answer)).into_response();
            }
            (Some(e), _) => (**e).clone(),
            (None, None) => crate::model::EvalError::new(
                "NoScore",
                "the evaluator returned no score for this rollout",
            ),
        },
        Some(Err(e)) => e,
        None => crate::model::EvalError::new("WorkerCrashed", "no outcome"),
    };
    let text = format!("{}: {}", error.kind, s.public_message(index, &error));
    let remote = s.evaluators[index].spec.source.is_remote();
    if verify::is_judge_failure(&error.kind) || remote && error.kind != "BadSample" {
        return Json(Value::Object(verify::judge_failed(request, &text))).into_response();
    }
    detail(StatusCode::UNPROCESSABLE_ENTITY, text)
}

/// `POST /aggregate_metrics`: Gym's metrics of the verify responses.
pub(super) async fn aggregate_route(body: axum::body::Bytes) -> Response {
    let request = match object_body(&body) {
        Ok(o) => o,
        Err(r) => return *r,
    };
    let responses = match request.get("verify_responses") {
        Some(Value::Array(list)) => list,
        Some(_) => {
            return unprocessable(
                &["body", "verify_responses"],
                "list_type",
                "Input should be a valid list",
                Value::Null,
            )
            .into_response()
        }
        None => {
            return unprocessable(
                &["body", "verify_responses"],
                "missing",
                "Field required",
                Value::Null,
            )
            .into_response()
        }
    };
    match metrics::aggregate(responses) {
        Ok(v) => Json(v).into_response(),
        Err(e) => detail(StatusCode::UNPROCESSABLE_ENTITY, e),
    }
}
