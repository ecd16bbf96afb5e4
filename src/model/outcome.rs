//! What one evaluation gave (a result, or the error instead of one) and where its
//! sample came from: the data a run hands from the worker to the store and the screen.

use super::{Caught, Facts};
use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One component metric of a result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub score: Option<f64>,
    pub is_score_valid: bool,
    pub reason: Option<String>,
}

/// Why an evaluation produced no result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalError {
    /// Bare class name of what user code raised, or one of rwb's own kinds
    /// (`Timeout`, `WorkerCrashed`, `ImportFailed`, `InvalidResult`, `BadSample`;
    /// for remote evaluators also `RemoteError` and `Unreachable`).
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    #[serde(default)]
    pub traceback: Option<String>,
    /// The innermost project file and line of the traceback, for the source pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

impl EvalError {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> EvalError {
        EvalError {
            kind: kind.into(),
            message: message.into(),
            traceback: None,
            file: None,
            line: None,
        }
    }

    /// Errors that say something about the environment, not the code and sample:
    /// they are never cached.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind.as_str(),
            kinds::TIMEOUT
                | kinds::WORKER_CRASHED
                | kinds::IMPORT_FAILED
                | kinds::BAD_SAMPLE
                | kinds::REMOTE_ERROR
                | kinds::UNREACHABLE
        )
    }
}

/// rwb's own error kinds.
pub mod kinds {
    pub const TIMEOUT: &str = "Timeout";
    pub const WORKER_CRASHED: &str = "WorkerCrashed";
    pub const IMPORT_FAILED: &str = "ImportFailed";
    pub const INVALID_RESULT: &str = "InvalidResult";
    pub const BAD_SAMPLE: &str = "BadSample";
    /// The trainer's chat template refused the sample's prompt (Jinja's
    /// `TemplateError`, as Hugging Face's `raise_exception` raises it).
    pub const TEMPLATE_ERROR: &str = "TemplateError";
    /// A remote evaluator's endpoint answered with an HTTP error status.
    pub const REMOTE_ERROR: &str = "RemoteError";
    /// A remote evaluator's endpoint could not be reached (refused, DNS, TLS).
    pub const UNREACHABLE: &str = "Unreachable";
}

/// What one evaluator gave for one sample: a result, or the error instead of one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub score: Option<f64>,
    pub is_score_valid: bool,
    /// Held inline up to 24 bytes: most reasons are short, and a cached outcome's
    /// reason then costs no allocation on the run's thread and no free on the
    /// printer's.
    pub reason: Option<CompactString>,
    #[serde(default)]
    pub metrics: Map<String, Value>,
    /// Boxed, as is `error`: most outcomes have neither, and a run hands each outcome
    /// on several times (an `Outcome` is 216 bytes with them boxed, 376 without).
    #[serde(default)]
    pub step_outputs: Option<Box<Value>>,
    pub error: Option<Box<EvalError>>,
    /// The string a user put in `EvaluateResult.error` (still a valid result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_error: Option<String>,
    pub duration_ms: f64,
    /// What the evaluator printed while scoring this sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// With `repeat = K`: the K calls' scores and what they say together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<Box<Repeated>>,
    /// In a watched run (the workbench's `R`): the exceptions the call swallowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swallowed: Option<Box<[Caught]>>,
    /// What rwb's sandbox ran for this evaluation (SPEC §18), when it ran anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Box<Sandboxed>>,
}

/// What rwb's sandbox ran for one evaluation, as `rwb.sandbox` counted it in the
/// worker (SPEC §18, "what a run shows"): its runs, their times, the timeouts and
/// memory kills among them, and the verdicts `run` gave. `of = "batch"`: a batched
/// call's, told with its first sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sandboxed {
    #[serde(default)]
    pub runs: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub timeouts: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub memory_kills: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sandbox_errors: u64,
    /// Each run's time in the sandbox, in seconds.
    #[serde(default)]
    pub seconds: Vec<f64>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub verdicts: std::collections::BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<String>,
}

/// An evaluator's sandbox runs over its samples (the statistics' `v`, SPEC §18):
/// how many, their p50/p95 time, the timeouts, memory kills and SandboxErrors, and
/// the verdicts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SandboxSummary {
    pub samples: usize,
    pub runs: u64,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub timeouts: u64,
    pub memory_kills: u64,
    pub sandbox_errors: u64,
    pub verdicts: std::collections::BTreeMap<String, u64>,
}

impl SandboxSummary {
    /// The summary of these evaluations' counts; `None` when none ran anything.
    pub fn of<'a>(counts: impl IntoIterator<Item = &'a Sandboxed>) -> Option<SandboxSummary> {
        let mut out = SandboxSummary::default();
        let mut seconds = Vec::new();
        for c in counts {
            out.samples += 1;
            out.runs += c.runs;
            out.timeouts += c.timeouts;
            out.memory_kills += c.memory_kills;
            out.sandbox_errors += c.sandbox_errors;
            seconds.extend(c.seconds.iter().copied().filter(|s| s.is_finite()));
            for (verdict, n) in &c.verdicts {
                *out.verdicts.entry(verdict.clone()).or_default() += n;
            }
        }
        if out.samples == 0 {
            return None;
        }
        seconds.sort_by(f64::total_cmp);
        out.p50 = crate::trust::nearest_rank(&seconds, 50.0);
        out.p95 = crate::trust::nearest_rank(&seconds, 95.0);
        Some(out)
    }

    /// `sandbox: 40 runs on 10 samples, p50 2.1 ms, p95 9.8 ms, 1 timeout, 0 memory
    /// kills; verdicts 31 pass, 8 wrong, 1 timeout`.
    pub fn describe(&self) -> String {
        let ms = |s: Option<f64>| s.map_or("-".to_string(), |s| format!("{:.1} ms", s * 1000.0));
        let mut text = format!(
            "sandbox: {} run(s) on {} sample(s), p50 {}, p95 {}, {} timeout(s), {} memory kill(s)",
            self.runs,
            self.samples,
            ms(self.p50),
            ms(self.p95),
            self.timeouts,
            self.memory_kills
        );
        if self.sandbox_errors > 0 {
            text += &format!(", {} SandboxError(s)", self.sandbox_errors);
        }
        if !self.verdicts.is_empty() {
            text += &format!("; verdicts {}", verdicts_text(&self.verdicts));
        }
        text
    }
}

/// `3 pass, 1 wrong`: each verdict's count, in the verdicts' order.
fn verdicts_text(verdicts: &std::collections::BTreeMap<String, u64>) -> String {
    let each: Vec<String> = verdicts.iter().map(|(v, n)| format!("{n} {v}")).collect();
    each.join(", ")
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Sandboxed {
    /// The breakdown's words: `3 pass, 1 wrong of 4 run(s)` (the verdicts when `run`
    /// judged them), with the timeouts and memory kills.
    pub fn describe(&self) -> String {
        let mut text = if self.verdicts.is_empty() {
            format!("{} run(s)", self.runs)
        } else {
            format!("{} of {} run(s)", verdicts_text(&self.verdicts), self.runs)
        };
        for (n, what) in [
            (self.timeouts, "timed out"),
            (self.memory_kills, "killed at the memory limit"),
            (self.sandbox_errors, "SandboxError"),
        ] {
            if n > 0 {
                text += &format!(", {n} {what}");
            }
        }
        if self.of.as_deref() == Some("batch") {
            text += " (the whole batch's)";
        }
        text
    }
}

/// The K scores of a repeated evaluation (SPEC §16): `null` for a repeat that failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Repeated {
    pub scores: Vec<Option<f64>>,
    /// Population std of the repeats that succeeded.
    pub score_std: Option<f64>,
    /// The scores fall on both sides of the threshold.
    pub flips: bool,
}

impl Outcome {
    pub fn failed(error: EvalError) -> Outcome {
        Outcome {
            score: None,
            is_score_valid: false,
            reason: None,
            metrics: Map::new(),
            step_outputs: None,
            error: Some(Box::new(error)),
            result_error: None,
            duration_ms: 0.0,
            output: None,
            repeat: None,
            swallowed: None,
            sandbox: None,
        }
    }

    /// A valid score with these component metrics, and nothing else said.
    pub fn scored(score: f64, metrics: Map<String, Value>) -> Outcome {
        Outcome {
            score: Some(score),
            is_score_valid: true,
            reason: None,
            metrics,
            step_outputs: None,
            error: None,
            result_error: None,
            duration_ms: 0.0,
            output: None,
            repeat: None,
            swallowed: None,
            sandbox: None,
        }
    }

    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }

    /// The component metrics as typed values (unknown shapes are skipped).
    pub fn metric_list(&self) -> Vec<(String, Metric)> {
        self.metrics
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), serde_json::from_value(v.clone()).ok()?)))
            .collect()
    }
}

/// Where a sample came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleRef {
    /// 0-based over all samples files in order, blank lines skipped.
    pub index: usize,
    /// Index into the run's list of samples files.
    pub file: usize,
    /// 1-based physical line (a row number in a file of rows, SPEC §13).
    pub line: usize,
    /// What the sample's source logged about it (none for a JSONL line).
    pub facts: Option<std::sync::Arc<Facts>>,
}

impl SampleRef {
    /// Sample `index` of the first samples file, on line `index + 1`, with nothing
    /// logged of it: a JSONL file of no blank lines (what tests and benches
    /// build).
    pub fn first_file(index: usize) -> SampleRef {
        SampleRef {
            index,
            file: 0,
            line: index + 1,
            facts: None,
        }
    }
}
