//! Evaluators that score elsewhere (SPEC §11): a reward-kit `generic_server`-compatible
//! endpoint (`url` in `rwb.toml`) or a deployed Fireworks evaluator (`fireworks`).
//!
//! Owns the HTTP calls and reading their answers into [`Outcome`]s, with a bounded
//! number of requests in flight. Sits beside `engine/` (which runs local Python) and
//! below `runner/`, which hands it the same queue of sample lines it hands the worker
//! pool. Must not touch the cache (remote results are never stored nor read back),
//! draw, or spawn processes. `fireworks/` is the Fireworks API client (also used by
//! `ship/` to deploy), `host.rs` reads host names, `retry.rs` says what is asked again.

mod deployed;
mod endpoint;
pub mod fireworks;
pub mod host;
mod retry;

pub use endpoint::Endpoint;

use crate::engine::{PoolJob, PoolWork, Sink};
use crate::model::{kinds, EvalError, EvaluatorSpec, Outcome, RemoteKey, Source};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

/// Requests in flight per remote evaluator unless its `concurrency` says otherwise.
pub const DEFAULT_CONCURRENCY: usize = 16;

/// Scores every sample of `queue` through the evaluator's endpoint, `concurrency` at
/// a time, handing each outcome to `sink` as it arrives. Returns when the queue is
/// closed and every answer is in.
pub async fn drain(
    spec: Arc<EvaluatorSpec>,
    queue: flume::Receiver<PoolWork>,
    sink: Sink,
    concurrency: usize,
) {
    let concurrency = concurrency.max(1);
    let timeout = request_timeout(spec.timeout);
    match &spec.source {
        Source::Remote { url, key } => {
            // a deploy's key: a refused key is explained without pointing at rwb.toml
            let held = matches!(key, Some(RemoteKey::Held(_)));
            let endpoint = key_value(key.as_ref(), &spec.name).and_then(|key| {
                Endpoint::new(url, key, spec.kwargs.clone(), timeout).map(|e| e.held_key(held))
            });
            let endpoint = match endpoint {
                Ok(e) => e,
                Err(message) => {
                    return fail_all(queue, sink, EvalError::new(kinds::REMOTE_ERROR, message))
                        .await
                }
            };
            jobs(queue)
                .for_each_concurrent(concurrency, |job| {
                    let (endpoint, sink) = (&endpoint, &sink);
                    async move { sink(job.id, endpoint.score(&job.raw).await) }
                })
                .await;
        }
        Source::Fireworks { id } => {
            deployed::drain(id, &spec.kwargs, queue, sink, concurrency, timeout).await
        }
        _ => {
            fail_all(
                queue,
                sink,
                EvalError::new(kinds::INVALID_RESULT, "not a remote evaluator"),
            )
            .await
        }
    }
}

/// The value of an evaluator's key; an unset `api_key_env` variable is an error that
/// names it and the evaluator.
fn key_value(key: Option<&RemoteKey>, name: &str) -> Result<Option<String>, String> {
    match key {
        None => Ok(None),
        Some(RemoteKey::Held(value)) => Ok(Some(value.clone())),
        Some(RemoteKey::Env(var)) => std::env::var(var).map(Some).map_err(|_| {
            format!(
                "the environment variable {var} (`api_key_env` of [evaluators.{name}]) is not set: export it with the endpoint's key"
            )
        }),
    }
}

/// The queue's samples one by one (a batch formed by the feed is taken apart: an
/// endpoint scores one sample per request).
fn jobs(queue: flume::Receiver<PoolWork>) -> impl futures::Stream<Item = PoolJob> {
    queue
        .into_stream()
        .flat_map(|work| futures::stream::iter(work.into_jobs()))
}

/// Gives every sample of the queue the same error (an endpoint that cannot be used).
async fn fail_all(queue: flume::Receiver<PoolWork>, sink: Sink, error: EvalError) {
    let mut jobs = std::pin::pin!(jobs(queue));
    while let Some(job) = jobs.next().await {
        sink(job.id, Outcome::failed(error.clone()));
    }
}

/// The per-request timeout: the evaluator's timeout (0: no limit, kept as a year).
fn request_timeout(secs: f64) -> Duration {
    let secs = if secs > 0.0 {
        secs
    } else {
        crate::workspace::MAX_TIMEOUT
    };
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::from_secs(3600))
}

fn http_client(timeout: Duration) -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(20)))
        .user_agent(concat!("rwb/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot start the HTTP client: {e}"))
}

/// A request that got no answer after `tries` tries: `Timeout`, or `Unreachable` with
/// the innermost cause (reqwest's own text is generic).
fn transport_error(url: &str, timeout: Duration, e: &reqwest::Error, tries: u32) -> EvalError {
    if e.is_timeout() {
        return EvalError::new(
            kinds::TIMEOUT,
            format!(
                "POST {url} did not answer within {} s (the evaluator's timeout: raise `timeout` in rwb.toml if the endpoint is slow)",
                timeout.as_secs_f64()
            ),
        );
    }
    let mut cause = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    let tried = if tries > 1 {
        format!(", {tries} tries")
    } else {
        String::new()
    };
    EvalError::new(
        kinds::UNREACHABLE,
        format!(
            "cannot reach {url}: {cause}{tried} (is the server running? check `url` in rwb.toml)"
        ),
    )
}
