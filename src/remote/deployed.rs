//! A deployed Fireworks evaluator as a column: its definition fetched once per run,
//! then samples scored in batches through the preview API (SPEC §7, §11), with the
//! client of `remote::fireworks`.

use super::fireworks::{self, Credentials, FireworksError, RemoteResult};
use super::jobs;
use crate::engine::{PoolJob, PoolWork, Sink};
use crate::model::{kinds, EvalError, Outcome};
use futures::StreamExt;
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

/// Samples per preview call.
const BATCH: usize = 32;

pub(super) async fn drain(
    id: &str,
    kwargs: &Map<String, Value>,
    queue: flume::Receiver<PoolWork>,
    sink: Sink,
    concurrency: usize,
    timeout: Duration,
) {
    let setup = async {
        let creds = Credentials::load()?;
        let evaluator = fireworks::deployed_evaluator(&creds, id).await?;
        Ok::<_, FireworksError>((creds, evaluator))
    };
    let (creds, evaluator) = match setup.await {
        Ok(found) => found,
        Err(e) => {
            let error = error_of(id, &e);
            return super::fail_all(queue, sink, error).await;
        }
    };
    // every call carries up to BATCH samples: keep about `concurrency` samples in flight
    let calls = concurrency.div_ceil(BATCH).max(1);
    jobs(queue)
        .ready_chunks(BATCH)
        .for_each_concurrent(calls, |batch| {
            let (creds, evaluator, sink) = (&creds, &evaluator, &sink);
            async move {
                for (job, outcome) in score(id, creds, evaluator, kwargs, batch, timeout).await {
                    sink(job.id, outcome);
                }
            }
        })
        .await;
}

/// One preview call over a batch: an outcome per sample, in order.
async fn score(
    id: &str,
    creds: &Credentials,
    evaluator: &Value,
    kwargs: &Map<String, Value>,
    batch: Vec<PoolJob>,
    timeout: Duration,
) -> Vec<(PoolJob, Outcome)> {
    let started = Instant::now();
    let lines: Vec<String> = batch.iter().map(|j| with_kwargs(&j.raw, kwargs)).collect();
    let call = fireworks::preview_deployed(creds, evaluator, lines);
    // one call scores the whole batch: each of its samples has the evaluator's timeout
    let timeout = timeout.saturating_mul(batch.len().max(1) as u32);
    let answer = match tokio::time::timeout(timeout, call).await {
        Ok(answer) => answer,
        Err(_) => Err(FireworksError::Timeout {
            method: "POST".into(),
            url: format!("{}:previewEvaluator", creds.evaluators_url()),
            secs: timeout.as_secs_f64(),
        }),
    };
    let each_ms = started.elapsed().as_secs_f64() * 1000.0 / batch.len().max(1) as f64;
    let outcomes: Vec<Outcome> = match answer {
        Ok(preview) if preview.results.len() == batch.len() => {
            preview.results.iter().map(|r| outcome_of(id, r)).collect()
        }
        Ok(preview) => {
            let error = EvalError::new(
                kinds::INVALID_RESULT,
                format!(
                    "Fireworks evaluator {id} answered {} results for {} samples (the preview answer must have one per sample)",
                    preview.results.len(),
                    batch.len()
                ),
            );
            vec![Outcome::failed(error); batch.len()]
        }
        Err(e) => vec![Outcome::failed(error_of(id, &e)); batch.len()],
    };
    batch
        .into_iter()
        .zip(outcomes)
        .map(|(job, mut o)| {
            o.duration_ms = each_ms;
            (job, o)
        })
        .collect()
}

/// The sample line with the evaluator's kwargs added (they travel in the sample).
fn with_kwargs(raw: &str, kwargs: &Map<String, Value>) -> String {
    if kwargs.is_empty() {
        return raw.to_string();
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(mut sample)) => {
            sample.extend(kwargs.clone());
            Value::Object(sample).to_string()
        }
        _ => raw.to_string(),
    }
}

fn outcome_of(id: &str, r: &RemoteResult) -> Outcome {
    if !r.success {
        let why = r.reason.as_deref().unwrap_or("no reason given");
        return Outcome::failed(EvalError::new(
            kinds::REMOTE_ERROR,
            format!("Fireworks evaluator {id} failed on this sample: {why}"),
        ));
    }
    let metrics: Map<String, Value> = r
        .per_metric
        .iter()
        .map(|(name, m)| {
            let value = json!({
                "score": m.score,
                "is_score_valid": m.is_score_valid.unwrap_or(true),
                "reason": m.reason,
            });
            (name.clone(), value)
        })
        .collect();
    let mut outcome = Outcome::scored(r.score.unwrap_or(0.0), metrics);
    outcome.reason = r.reason.as_deref().map(Into::into);
    outcome
}

/// A Fireworks failure as the rows show it: rwb's kinds, the client's message.
fn error_of(id: &str, e: &FireworksError) -> EvalError {
    let kind = match e {
        FireworksError::Timeout { .. } => kinds::TIMEOUT,
        FireworksError::Connect { .. } => kinds::UNREACHABLE,
        FireworksError::BadResponse { .. } => kinds::INVALID_RESULT,
        _ => kinds::REMOTE_ERROR,
    };
    EvalError::new(kind, format!("Fireworks evaluator {id}: {e}"))
}
