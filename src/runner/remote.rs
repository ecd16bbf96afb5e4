//! Evaluators that score elsewhere (`url`, `fireworks`) in a run: prepared without
//! Python, fed from the same queue as local ones, never cached.

use super::Prepared;
use crate::engine::{PoolWork, Sink};
use crate::model::{EvaluatorSpec, Placement};
use std::sync::Arc;

/// A remote evaluator is ready at once: nothing to import. Its key names the endpoint
/// only so that it differs from every local key; nothing is stored under it.
pub(super) fn prepared(spec: Arc<EvaluatorSpec>) -> Prepared {
    let key = *blake3::hash(format!("remote\0{}", spec.source.location()).as_bytes()).as_bytes();
    Prepared {
        spec,
        key,
        style: None,
        files: Vec::new(),
        failure: None,
        memo: None,
    }
}

/// Requests in flight for a remote evaluator: its `concurrency` when it asks for more
/// than one, else the default (a remote call is mostly waiting).
fn concurrency(spec: &EvaluatorSpec) -> usize {
    if spec.concurrency > 1 {
        spec.concurrency
    } else {
        crate::remote::DEFAULT_CONCURRENCY
    }
}

/// The task that scores a remote evaluator's queue.
pub(super) async fn drain(spec: Arc<EvaluatorSpec>, queue: flume::Receiver<PoolWork>, sink: Sink) {
    let n = concurrency(&spec);
    crate::remote::drain(spec, queue, sink, n).await
}

/// Where `spec` runs with `workers` local slots (see [`Placement`]).
pub fn placement(spec: &EvaluatorSpec, workers: usize) -> Placement {
    Placement::of(spec, workers, Some(spec.concurrency))
}
