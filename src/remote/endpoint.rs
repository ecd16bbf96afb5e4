//! One `generic_server`-compatible endpoint: the sample posted as reward-kit's
//! `RewardFunction(mode="remote")` posts it, the answer read into an [`Outcome`].

use super::retry::{self, Reach};
use crate::model::{kinds, EvalError, Outcome};
use serde_json::{Map, Value};
use std::time::{Duration, Instant};

/// The longest part of an answer quoted in an error message.
const QUOTE_CHARS: usize = 200;

/// A client for one endpoint URL (cheap to share: one connection pool).
pub struct Endpoint {
    url: String,
    api_key: Option<String>,
    kwargs: Map<String, Value>,
    client: reqwest::Client,
    timeout: Duration,
    /// The key is a deploy's, held for the session (not from `api_key_env`).
    held_key: bool,
    /// Whether the endpoint answered yet, or is down (see `retry.rs`).
    reach: Reach,
}

impl Endpoint {
    /// `api_key` is sent as `X-Api-Key`; `kwargs` (the evaluator's extra keyword
    /// arguments) are added to every body; `timeout` bounds each request.
    pub fn new(
        url: &str,
        api_key: Option<String>,
        kwargs: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Endpoint, String> {
        let client = super::http_client(timeout)?;
        Ok(Endpoint {
            url: url.to_string(),
            api_key,
            kwargs,
            client,
            timeout,
            held_key: false,
            reach: Reach::default(),
        })
    }

    /// Marks the key as a deploy's, held for the session: a refused key is then
    /// explained as the deploy's, not as `api_key_env`'s.
    pub fn held_key(mut self, held: bool) -> Endpoint {
        self.held_key = held;
        self
    }

    /// Scores one sample line; every failure is an error outcome naming the URL.
    pub async fn score(&self, raw: &str) -> Outcome {
        let started = Instant::now();
        let mut outcome = match body(raw, &self.kwargs) {
            Ok(body) => self.post(body).await,
            Err(e) => Outcome::failed(e),
        };
        outcome.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        outcome
    }

    /// Posts the body until it is answered (see `retry.rs`: a 429, a busy gateway,
    /// a refused or reset connection are tried again), then reads the answer.
    async fn post(&self, body: String) -> Outcome {
        let mut attempt = 0;
        loop {
            let last = attempt + 1 >= retry::TRIES;
            match self.post_once(body.clone()).await {
                Ok(answer) => {
                    self.reach.answered();
                    if retry::status_retried(answer.status.as_u16()) && !last {
                        let wait = answer.retry_after.unwrap_or(retry::backoff(attempt));
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                        continue;
                    }
                    return if answer.status.is_success() {
                        read_result(&self.url, &answer.text)
                    } else {
                        Outcome::failed(status_error(
                            &self.url,
                            answer.status,
                            &answer.text,
                            self.held_key,
                        ))
                    };
                }
                Err(e) if retry::dropped(&e) && !last && self.reach.worth_another_try() => {
                    tokio::time::sleep(retry::backoff(attempt)).await;
                    attempt += 1;
                }
                Err(e) => {
                    if e.is_connect() && last {
                        self.reach.refused_every_try();
                    }
                    let error = super::transport_error(&self.url, self.timeout, &e, attempt + 1);
                    return Outcome::failed(error);
                }
            }
        }
    }

    /// One try: the status, its `Retry-After` and the answer's text.
    async fn post_once(&self, body: String) -> Result<Answer, reqwest::Error> {
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .body(body);
        if let Some(key) = &self.api_key {
            request = request.header("X-Api-Key", key);
        }
        let response = request.send().await?;
        let status = response.status();
        let retry_after = retry::retry_after(
            response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()),
        );
        let text = response.text().await?;
        Ok(Answer {
            status,
            retry_after,
            text,
        })
    }
}

/// What one try got back.
struct Answer {
    status: reqwest::StatusCode,
    retry_after: Option<Duration>,
    text: String,
}

/// The request body: the sample's keys flat (`messages`, `ground_truth` and every
/// other key, as reward-kit's remote mode sends `**kwargs`), then the evaluator's
/// kwargs.
fn body(raw: &str, kwargs: &Map<String, Value>) -> Result<String, EvalError> {
    let Ok(Value::Object(mut sample)) = serde_json::from_str::<Value>(raw) else {
        return Err(EvalError::new(
            kinds::BAD_SAMPLE,
            "the sample is not a JSON object",
        ));
    };
    sample.entry("ground_truth").or_insert(Value::Null);
    for (k, v) in kwargs {
        sample.insert(k.clone(), v.clone());
    }
    Ok(Value::Object(sample).to_string())
}

/// An answer's text cut to a quotable length, on one line.
pub(super) fn quote(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// A non-2xx answer, with what to do about it; `held_key`: the key sent was a
/// deploy's (a live column's), not one from `rwb.toml`.
fn status_error(url: &str, status: reqwest::StatusCode, text: &str, held_key: bool) -> EvalError {
    let detail = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("detail").cloned())
        .map(|d| match d {
            Value::String(s) => s,
            other => other.to_string(),
        })
        .unwrap_or_else(|| quote(text));
    let hint = match status.as_u16() {
        401 | 403 if held_key => "the service did not take the key of the deploy that made this column: deploy again (d), or drop the column",
        401 | 403 => "the endpoint wants a key: set `api_key_env` on this evaluator in rwb.toml to a variable holding the right one",
        404 | 405 => "check `url` in rwb.toml: it should end in the endpoint's evaluate route (/evaluate or /evaluate/NAME)",
        422 => "the endpoint did not accept the sample as reward-kit's body",
        500..=599 => "the evaluator behind the endpoint failed: see its logs",
        _ => "check `url` in rwb.toml",
    };
    EvalError::new(
        kinds::REMOTE_ERROR,
        format!("POST {url} answered {status}: {detail} ({hint})"),
    )
}

/// A 2xx answer as reward-kit reads it: `score`, `reason`, `metrics` (a metric's
/// `success` becomes `is_score_valid`), plus `is_score_valid`, `step_outputs` and
/// `error` when an `EvaluateResult` carries them.
pub(super) fn read_result(url: &str, text: &str) -> Outcome {
    let invalid = |why: &str| {
        Outcome::failed(EvalError::new(
            kinds::INVALID_RESULT,
            format!(
                "POST {url} answered with {why}, not a result: {} (the endpoint must answer reward-kit's EvaluateResult JSON, {{\"score\": ..., \"reason\": ..., \"metrics\": {{...}}}})",
                quote(text)
            ),
        ))
    };
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return invalid("text that is not JSON");
    };
    let Some(object) = value.as_object() else {
        return invalid("JSON that is not an object");
    };
    let Some(score) = object.get("score").and_then(Value::as_f64) else {
        return invalid("an object without a numeric `score`");
    };
    let mut metrics = Map::new();
    if let Some(Value::Object(given)) = object.get("metrics") {
        for (name, m) in given {
            metrics.insert(name.clone(), metric(m));
        }
    }
    let text_of = |key: &str| match object.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    let mut outcome = Outcome::scored(score, metrics);
    outcome.is_score_valid = object
        .get("is_score_valid")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    outcome.reason = text_of("reason").map(Into::into);
    outcome.result_error = text_of("error");
    outcome.step_outputs = object
        .get("step_outputs")
        .filter(|v| !v.is_null())
        .map(|v| Box::new(v.clone()));
    outcome
}

/// One metric in rwb's shape: `{score, is_score_valid, reason}`.
fn metric(m: &Value) -> Value {
    let valid = m
        .get("is_score_valid")
        .or_else(|| m.get("success"))
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let score = match m {
        Value::Number(_) => m.clone(),
        _ => m.get("score").cloned().unwrap_or(Value::Null),
    };
    let reason = m.get("reason").cloned().unwrap_or(Value::Null);
    serde_json::json!({"score": score, "is_score_valid": valid, "reason": reason})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_body_is_flat_with_ground_truth_and_kwargs() {
        let kwargs = json!({"tolerance": 0.1}).as_object().unwrap().clone();
        let b = body(r#"{"messages": [], "answer": "4"}"#, &kwargs).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&b).unwrap(),
            json!({"messages": [], "answer": "4", "ground_truth": null, "tolerance": 0.1})
        );
    }

    #[test]
    fn a_result_reads_like_reward_kit_reads_it() {
        let o = read_result(
            "u",
            r#"{"score": 0.25, "reason": "r", "metrics": {"a": {"score": 1.0, "success": false, "reason": "x"}, "b": {"score": 0.5, "is_score_valid": true}}, "error": "note"}"#,
        );
        assert_eq!(o.score, Some(0.25));
        assert_eq!(o.reason.as_deref(), Some("r"));
        assert_eq!(o.result_error.as_deref(), Some("note"));
        assert_eq!(
            Value::Object(o.metrics),
            json!({"a": {"score": 1.0, "is_score_valid": false, "reason": "x"},
                   "b": {"score": 0.5, "is_score_valid": true, "reason": null}})
        );
    }

    #[test]
    fn an_answer_that_is_no_result_is_invalid_and_quoted() {
        let o = read_result("http://h/evaluate", "<html>oops</html>");
        let e = o.error.unwrap();
        assert_eq!(e.kind, "InvalidResult");
        assert!(
            e.message.starts_with(
                "POST http://h/evaluate answered with text that is not JSON, not a result: <html>oops</html>"
            ),
            "{}",
            e.message
        );
        let e = read_result("u", r#"{"score": "high"}"#).error.unwrap();
        assert!(
            e.message.contains("an object without a numeric `score`"),
            "{}",
            e.message
        );
    }
}
