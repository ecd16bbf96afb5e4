//! The messages a worker sends back over its socket (see `python/rwb_worker.py`).

use crate::model::{EvalError, Outcome};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// The first line a forked worker writes after connecting.
#[derive(Debug, Deserialize)]
pub struct Hello {
    pub hello: u64,
    pub pid: i32,
}

/// The worker's answer once it imported (or failed to import) its evaluator.
#[derive(Debug, Deserialize)]
pub struct LoadReply {
    #[serde(default)]
    pub style: Option<String>,
    /// Why the worker chose that style ("declares completions and **kwargs, ...").
    #[serde(default)]
    pub style_reason: Option<String>,
    #[serde(default)]
    pub decorated: bool,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub third_party: Vec<String>,
    #[serde(default)]
    pub packages: ThirdParty,
    #[serde(default)]
    pub import_error: Option<ImportError>,
}

/// Third-party code a worker imported (neither the standard library nor the project):
/// its module files and the installed distributions they belong to.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct ThirdParty {
    #[serde(default)]
    pub modules: Vec<PathBuf>,
    #[serde(default)]
    pub dists: Vec<Dist>,
}

/// One installed distribution, as its metadata file names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
pub struct Dist {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
    /// Its `METADATA` (or `PKG-INFO`) file: an upgrade replaces it.
    pub metadata: PathBuf,
}

#[derive(Debug, Deserialize)]
pub struct ImportError {
    #[serde(flatten)]
    pub error: EvalError,
    #[serde(default)]
    pub files: Vec<String>,
}

/// A result as the worker reads it off the user's return value.
#[derive(Debug, Deserialize)]
pub struct WireResult {
    pub score: Option<f64>,
    #[serde(default = "yes")]
    pub is_score_valid: bool,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub metrics: Map<String, Value>,
    #[serde(default)]
    pub step_outputs: Option<Value>,
    #[serde(default)]
    pub error: Option<String>,
}

fn yes() -> bool {
    true
}

/// One line of a batch's answer: a result for sample `i`, or the end of the batch.
#[derive(Debug, Deserialize)]
pub struct BatchLine {
    #[serde(default)]
    pub i: Option<u64>,
    #[serde(default)]
    pub ms: f64,
    #[serde(default)]
    pub ok: Option<WireResult>,
    #[serde(default)]
    pub err: Option<EvalError>,
    #[serde(default)]
    pub out: Option<String>,
    #[serde(default)]
    pub done: Option<usize>,
    #[serde(default)]
    pub files: Option<Vec<String>>,
    /// Third-party code first imported during this batch.
    #[serde(default)]
    pub packages: Option<ThirdParty>,
    /// Contract breaks found for sample `i` (check mode).
    #[serde(default)]
    pub issues: Option<Vec<String>>,
    /// The worker is leaving after an interrupted evaluation (why, e.g. "timeout").
    #[serde(default)]
    pub retire: Option<String>,
}

/// A line the worker wrote that does not read as a [`BatchLine`] (a result holding a
/// value rwb's types cannot take, nesting deeper than serde_json's limit, a number
/// beyond f64): the sample it was for, from the `{"i":N,` the worker always writes
/// first, and the `InvalidResult` that sample gets instead. `None` when the line names
/// no sample.
pub fn unreadable_line(line: &[u8], error: &serde_json::Error) -> Option<(u64, EvalError)> {
    let rest = line.strip_prefix(b"{\"i\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || rest.get(digits) != Some(&b',') {
        return None;
    }
    let id = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let error = EvalError::new(
        crate::model::kinds::INVALID_RESULT,
        format!("rwb cannot read the result the worker sent for this sample: {error}"),
    );
    Some((id, error))
}

impl BatchLine {
    pub fn into_outcome(self) -> Outcome {
        let mut outcome = match (self.ok, self.err) {
            (Some(r), _) => Outcome {
                score: r.score,
                is_score_valid: r.is_score_valid,
                reason: r.reason,
                metrics: r.metrics,
                step_outputs: r.step_outputs,
                error: None,
                result_error: r.error,
                duration_ms: 0.0,
                output: None,
            },
            (None, Some(e)) => Outcome::failed(e),
            (None, None) => Outcome::failed(EvalError::new(
                crate::model::kinds::INVALID_RESULT,
                "the worker sent neither a result nor an error",
            )),
        };
        outcome.duration_ms = self.ms;
        outcome.output = self.out;
        outcome
    }
}
