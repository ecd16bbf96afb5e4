//! slime's remote reward model route (`POST /slime/{name}`): what slime's `remote_rm`
//! sends (`{"prompt", "response", "label"}`, slime/rollout/rm_hub/__init__.py at
//! THUDM/slime 624b824a) as one sample, answered with the reward as the bare JSON
//! value `remote_rm` returns to slime (`await resp.json()`): a number. A failed
//! evaluation is a 500 (slime's `raise_for_status` retries, then raises), never 0.

use super::request::unprocessable;
use super::Shared;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

pub(super) async fn reward(
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
    let line = match slime_line(&parsed) {
        Ok(line) => line,
        Err(reject) => return reject.into_response(),
    };
    let outcome = s.evaluate_all(index, vec![line]).await.pop();
    let answer = match outcome {
        Some(Ok(o)) => match (&o.error, o.score) {
            (None, Some(score)) => Json(json!(score)).into_response(),
            (Some(e), _) => s.failed(index, e),
            (None, None) => s.failed(
                index,
                &crate::model::EvalError::new(
                    "NoScore",
                    "the evaluator returned no score for this sample",
                ),
            ),
        },
        Some(Err(e)) => s.failed(index, &e),
        None => s.failed(
            index,
            &crate::model::EvalError::new("WorkerCrashed", "no outcome"),
        ),
    };
    s.log.record(started.elapsed().as_secs_f64() * 1000.0, true);
    answer
}

/// The sample line of a `remote_rm` body: a text prompt and the response as a
/// prompt/completion sample, a message-list prompt (slime's `--apply-chat-template`
/// off, chat data) as a chat; the label as `label` and as the ground truth.
fn slime_line(body: &Value) -> Result<String, super::request::Reject> {
    let Some(response) = body.get("response").and_then(Value::as_str) else {
        return Err(unprocessable(
            &["body", "response"],
            "missing",
            "Field required: the response text, as slime's remote_rm sends it",
            body.clone(),
        ));
    };
    let label = body.get("label").cloned().unwrap_or(Value::Null);
    let mut sample = match body.get("prompt") {
        Some(Value::Array(turns)) => {
            let mut messages = turns.clone();
            messages.push(json!({"role": "assistant", "content": response}));
            json!({ "messages": messages })
        }
        Some(Value::String(prompt)) => json!({"prompt": prompt, "completion": response}),
        None | Some(Value::Null) => json!({"prompt": "", "completion": response}),
        Some(other) => {
            return Err(unprocessable(
                &["body", "prompt"],
                "string_type",
                "the prompt is text or a list of messages",
                other.clone(),
            ))
        }
    };
    sample["label"] = label.clone();
    sample["ground_truth"] = label;
    if let Some(metadata) = body.get("metadata") {
        sample["metadata"] = metadata.clone();
    }
    Ok(sample.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_rm_body_is_one_sample_with_its_label() {
        let line = slime_line(&json!({"prompt": "2+2?", "response": "4", "label": "4"})).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            json!({"prompt": "2+2?", "completion": "4", "label": "4", "ground_truth": "4"})
        );
        let line = slime_line(
            &json!({"prompt": [{"role": "user", "content": "hi"}], "response": "yo", "label": null}),
        )
        .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap()["messages"][1],
            json!({"role": "assistant", "content": "yo"})
        );
        assert!(slime_line(&json!({"prompt": "x"})).is_err());
        assert!(slime_line(&json!({"prompt": 3, "response": "x"})).is_err());
    }
}
