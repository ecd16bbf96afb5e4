//! OpenAI's graders API, answered (SPEC §17): `POST /v1/fine_tuning/alpha/graders/run`
//! (`{grader, model_sample, item}` → `{reward, metadata, sub_rewards,
//! model_grader_token_usage_per_model}`) and `…/graders/validate` (`{grader}` →
//! `{grader}`), as the `openai` SDK's `client.fine_tuning.alpha.graders` calls them.
//!
//! A grader is checked as a grader file is (`model::grader`); one that cannot run is a
//! 400 in OpenAI's error shape. A grader that runs is an evaluator of its own, with a
//! worker queue kept per grader object (the same grader, asked again, finds its worker
//! ready); an error while scoring is a 200 with reward 0 and the flag OpenAI sets.

use super::{Shared, Waiting};
use crate::engine::{PoolJob, PoolWork};
use crate::model::{grader, kinds, EvalError, Outcome};
use crate::runner::Runner;
use crate::workspace::Config;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::oneshot;

/// Grader queues kept at most (each holds a worker); beyond, the oldest go.
const KEPT: usize = 32;

/// What the graders routes need beyond the served evaluators: the runner that
/// starts a grader's worker, `[graders]` of rwb.toml, and each grader's queue.
pub(super) struct Graders {
    runner: Arc<Runner>,
    config: Config,
    queues: tokio::sync::Mutex<Vec<(String, flume::Sender<PoolWork>)>>,
    drains: Mutex<HashMap<String, tokio::task::JoinHandle<()>>>,
}

impl Graders {
    pub(super) fn new(runner: Arc<Runner>, config: Config) -> Graders {
        Graders {
            runner,
            config,
            queues: Default::default(),
            drains: Default::default(),
        }
    }
}

impl Drop for Graders {
    fn drop(&mut self) {
        for (_, d) in self.drains.lock().unwrap().drain() {
            d.abort();
        }
    }
}

/// OpenAI's error answer: `{"error": {message, type, param, code}}`.
fn openai_error(status: StatusCode, message: String, param: Option<String>) -> Response {
    let body = json!({"error": {
        "message": message,
        "type": "invalid_request_error",
        "param": param,
        "code": null,
    }});
    (status, Json(body)).into_response()
}

/// The request's grader, checked: a 400 naming the JSON path (from the request's
/// root: `grader.graders.sim.evaluation_metric`) otherwise.
fn checked(body: &[u8]) -> Result<Value, Box<Response>> {
    let parsed: Value = serde_json::from_slice(body).map_err(|e| {
        Box::new(openai_error(
            StatusCode::BAD_REQUEST,
            format!("the body is not JSON: {e}"),
            None,
        ))
    })?;
    let Some(g) = parsed.get("grader") else {
        return Err(Box::new(openai_error(
            StatusCode::BAD_REQUEST,
            "Missing required parameter: 'grader'.".into(),
            Some("grader".into()),
        )));
    };
    if let Err(p) = grader::check(g) {
        let param = format!("grader{}", &p.path[1..]);
        return Err(Box::new(openai_error(
            StatusCode::BAD_REQUEST,
            format!("Invalid grader: {param}: {}", p.message),
            Some(param),
        )));
    }
    Ok(parsed)
}

pub(super) async fn validate(body: axum::body::Bytes) -> Response {
    match checked(&body) {
        Ok(parsed) => Json(json!({"grader": parsed["grader"]})).into_response(),
        Err(refused) => *refused,
    }
}

pub(super) async fn run(State(s): State<Arc<Shared>>, body: axum::body::Bytes) -> Response {
    let started = Instant::now();
    let parsed = match checked(&body) {
        Ok(p) => p,
        Err(refused) => return *refused,
    };
    let g = &parsed["grader"];
    let Some(model_sample) = parsed.get("model_sample").and_then(Value::as_str) else {
        return openai_error(
            StatusCode::BAD_REQUEST,
            "Missing required parameter: 'model_sample' (the model's output, a string).".into(),
            Some("model_sample".into()),
        );
    };
    let item = match parsed.get("item") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(item)) => item.clone(),
        Some(_) => {
            return openai_error(
                StatusCode::BAD_REQUEST,
                "'item' must be an object (the dataset row the templates read as item.*)".into(),
                Some("item".into()),
            )
        }
    };
    // the sample: its completion is the model sample, its columns the item
    let mut sample = item;
    sample.insert(
        "messages".into(),
        json!([{"role": "assistant", "content": model_sample}]),
    );
    let outcome = s.run_grader(g, Value::Object(sample).to_string()).await;
    s.log
        .record(started.elapsed().as_secs_f64() * 1000.0, outcome.is_ok());
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            return openai_error(StatusCode::INTERNAL_SERVER_ERROR, e, None);
        }
    };
    Json(answer(g, &outcome, started.elapsed().as_secs_f64())).into_response()
}

/// What the model calls of an outcome used (its `judge` steps, one per call a score_model,
/// label_model or cosine made; a multi's sub-graders' all): the first model asked,
/// the total tokens (null when no model was asked) and each model's usage summed
/// field by field.
fn token_usage(o: &Outcome) -> (Value, Value, Map<String, Value>) {
    let steps = o.step_outputs.as_deref().and_then(Value::as_array);
    let calls = steps.into_iter().flatten().filter_map(|s| s.get("metrics"));
    let (mut first, mut total, mut per_model) = (Value::Null, None, Map::new());
    for call in calls {
        let Some(model) = call.get("model").and_then(Value::as_str) else {
            continue;
        };
        if first.is_null() {
            first = json!(model);
        }
        let usage = call.get("usage").and_then(Value::as_object);
        let tokens = usage
            .and_then(|u| u.get("total_tokens"))
            .and_then(Value::as_u64);
        total = Some(total.unwrap_or(0) + tokens.unwrap_or(0));
        let summed = per_model
            .entry(model.to_string())
            .or_insert_with(|| json!({}));
        for (field, n) in usage.into_iter().flatten() {
            if let (Some(n), Some(sum)) = (n.as_u64(), summed.as_object_mut()) {
                let was = sum.get(field).and_then(Value::as_u64).unwrap_or(0);
                sum.insert(field.clone(), json!(was + n));
            }
        }
    }
    (first, total.map_or(Value::Null, |t| json!(t)), per_model)
}

/// The `item.…`/`sample.…` variable a template error names, when it names one.
fn template_variable(message: &str) -> Option<String> {
    let start = ["item.", "sample."]
        .iter()
        .filter_map(|p| message.find(p))
        .min()?;
    let name: String = message[start..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '[' | ']' | '-'))
        .collect();
    Some(name.trim_end_matches('.').to_string())
}

/// `{reward, metadata, sub_rewards, model_grader_token_usage_per_model}` of an
/// outcome, as OpenAI answers it.
fn answer(g: &Value, o: &Outcome, seconds: f64) -> Value {
    let name = g.get("name").and_then(Value::as_str).unwrap_or("grader");
    let kind = grader::kind(g).unwrap_or_default();
    let mut errors = json!({
        "formula_parse_error": false,
        "sample_parse_error": false,
        "truncated_observation_error": false,
        "unresponsive_reward_error": false,
        "invalid_variable_error": false,
        "other_error": false,
        "python_grader_server_error": false,
        "python_grader_server_error_type": null,
        "python_grader_runtime_error": false,
        "python_grader_runtime_error_details": null,
        "model_grader_server_error": false,
        "model_grader_refusal_error": false,
        "model_grader_parse_error": false,
        "model_grader_server_error_details": null,
    });
    let mut sub_rewards = Map::new();
    let mut scores = Map::new();
    if let Some(e) = &o.error {
        let detail = format!("{}: {}", e.kind, e.message);
        match e.kind.as_str() {
            "TemplateError" => {
                // OpenAI's flag names nothing: rwb adds which variable, and why
                errors["invalid_variable_error"] = json!(true);
                errors["invalid_variable_error_details"] = json!(e.message);
                if let Some(variable) = template_variable(&e.message) {
                    errors["invalid_variable"] = json!(variable);
                }
            }
            "ConnectionError" => {
                errors["model_grader_server_error"] = json!(true);
                errors["model_grader_server_error_details"] = json!(detail);
            }
            kinds::INVALID_RESULT if matches!(kind, "score_model" | "label_model") => {
                errors["model_grader_parse_error"] = json!(true)
            }
            kinds::TIMEOUT => errors["unresponsive_reward_error"] = json!(true),
            _ if kind == "python" => {
                errors["python_grader_runtime_error"] = json!(true);
                errors["python_grader_runtime_error_details"] = json!(detail);
            }
            "ZeroDivisionError" | "OverflowError" if kind == "multi" => {
                errors["formula_parse_error"] = json!(true)
            }
            _ => errors["other_error"] = json!(true),
        }
    } else {
        for (sub, m) in &o.metrics {
            if kind == "multi" {
                sub_rewards.insert(sub.clone(), m["score"].clone());
                scores.insert(sub.clone(), m["score"].clone());
            }
        }
        scores.insert(name.to_string(), json!(o.score));
    }
    let (model, usage, per_model) = token_usage(o);
    json!({
        "reward": o.score.filter(|_| o.error.is_none()).unwrap_or(0.0),
        "metadata": {
            "name": name,
            "type": kind,
            "errors": errors,
            "execution_time": seconds,
            "scores": scores,
            "token_usage": usage,
            "sampled_model_name": model,
        },
        "sub_rewards": sub_rewards,
        "model_grader_token_usage_per_model": per_model,
    })
}

impl Shared {
    /// Scores one sample line with a grader object: on the queue of that grader (a
    /// worker started for it the first time it is asked).
    async fn run_grader(&self, g: &Value, raw: String) -> Result<Outcome, String> {
        let Some(graders) = &self.graders else {
            return Err("this server runs no graders".into());
        };
        let spec = crate::workspace::grader_spec(g, &graders.config)?;
        let digest = spec.source.function().to_string();
        let queue = {
            let mut queues = graders.queues.lock().await;
            match queues.iter().find(|(d, _)| *d == digest) {
                Some((_, q)) => q.clone(),
                None => {
                    let prepared = graders
                        .runner
                        .prepare(&spec)
                        .await
                        .map_err(|e| e.to_string())?;
                    if let Some(failure) = prepared.failure {
                        return Ok(Outcome::failed(failure));
                    }
                    let (tx, rx) = flume::unbounded::<PoolWork>();
                    let waiting: Waiting = self.waiting.clone();
                    let sink: crate::engine::Sink = Arc::new(move |id, outcome| {
                        if let Some(reply) = waiting.lock().unwrap().remove(&id) {
                            let _ = reply.send(outcome);
                        }
                    });
                    let pool = graders.runner.pool().clone();
                    let drain = tokio::spawn(async move {
                        pool.drain(prepared.spec, prepared.key, rx, sink).await
                    });
                    let mut drains = graders.drains.lock().unwrap();
                    if queues.len() >= KEPT {
                        let (old, _) = queues.remove(0);
                        if let Some(d) = drains.remove(&old) {
                            d.abort();
                        }
                    }
                    drains.insert(digest.clone(), drain);
                    queues.push((digest, tx.clone()));
                    tx
                }
            }
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap().insert(id, tx);
        let job = PoolJob {
            id,
            raw: raw.into(),
            facts: None,
            packed: None,
        };
        let _ = queue.send(PoolWork::One(job));
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(_)) => Ok(Outcome::failed(EvalError::new(
                kinds::WORKER_CRASHED,
                "the evaluation was dropped",
            ))),
            Err(_) => {
                self.waiting.lock().unwrap().remove(&id);
                Ok(Outcome::failed(EvalError::new(
                    kinds::TIMEOUT,
                    "no result within the request timeout",
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_error_is_a_zero_reward_with_its_flag() {
        let g = json!({"type": "string_check", "name": "x", "operation": "eq", "input": "{{ item.a }}", "reference": "b"});
        let o = Outcome::failed(EvalError::new("TemplateError", "the sample has no item.a"));
        let a = answer(&g, &o, 0.1);
        assert_eq!(a["reward"], json!(0.0));
        assert_eq!(
            a["metadata"]["errors"]["invalid_variable_error"],
            json!(true)
        );
        // the variable named, beside OpenAI's flag (issue 48)
        assert_eq!(a["metadata"]["errors"]["invalid_variable"], json!("item.a"));
        assert_eq!(
            a["metadata"]["errors"]["invalid_variable_error_details"],
            json!("the sample has no item.a")
        );
        assert_eq!(a["metadata"]["token_usage"], Value::Null);
        assert_eq!(a["metadata"]["type"], json!("string_check"));
    }
}
