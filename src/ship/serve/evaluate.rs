//! The reward-kit routes (`POST /evaluate`, `/evaluate/{name}`): a sample evaluated
//! on its evaluator's queue, answered as reward-kit's server answers; and what a
//! remote caller sees of an error (rwb's own cut to a line, the whole in the log).

use super::request::{sample_line, Reject};
use super::routes::detail;
use super::Shared;
use crate::engine::{PoolJob, PoolWork};
use crate::model::{kinds, EvalError, Outcome};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;

/// Characters of one of rwb's own errors a remote caller sees (its first line).
const PUBLIC_ERROR_CHARS: usize = 300;
/// Characters of an error the local log keeps.
const NOTE_CHARS: usize = 4000;

impl Shared {
    /// The 500 answer of a failed evaluation, as reward-kit's server words it.
    pub(super) fn failed(&self, index: usize, e: &EvalError) -> Response {
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
    pub(super) fn public_message<'a>(
        &self,
        index: usize,
        e: &'a EvalError,
    ) -> std::borrow::Cow<'a, str> {
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

    pub(super) fn find(&self, name: &str) -> Result<usize, Reject> {
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
    pub(super) async fn evaluate_all(
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
                facts: None,
                packed: None,
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
    reason: &'a Option<compact_str::CompactString>,
    metrics: &'a Map<String, Value>,
    step_outputs: &'a Option<Box<Value>>,
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

pub(super) async fn evaluate_default(
    State(s): State<Arc<Shared>>,
    body: axum::body::Bytes,
) -> Response {
    if s.evaluators.is_empty() {
        return detail(StatusCode::NOT_FOUND, "no evaluators are served");
    }
    run_one(&s, s.default, &body).await
}

pub(super) async fn evaluate_named(
    State(s): State<Arc<Shared>>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    match s.find(&name) {
        Ok(i) => run_one(&s, i, &body).await,
        Err(r) => r.into_response(),
    }
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
}
