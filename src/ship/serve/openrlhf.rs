//! OpenRLHF's remote reward model route (`POST /batch/{name}`): its queries as
//! sample lines, evaluated together, answered with rewards and logs.

use super::request::unprocessable;
use super::Shared;
use crate::model::{EvalError, Outcome};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Instant;

/// OpenRLHF's remote reward model: `{"query": [...], "prompts": [...], "labels": [...]}`
/// → `{"rewards": [...], "scores": [...], "extra_logs": {...}}`. Each query is the
/// prompt followed by the response; a failed evaluation scores 0 and is logged.
pub(super) async fn batch(
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
                Ok(o) => o.error.as_deref(),
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
