//! Plain data shared by every part: evaluator specs, sample references and results.
//!
//! Owns the shapes and their JSON forms (SPEC §4), and what a sample must hold
//! ([`check_sample`]: `sources/` and `workspace/` both ask it). Does no I/O: reading files,
//! running Python and storing results belong to `workspace/`, `engine/` and `store/`.

use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::path::PathBuf;

mod call;
mod facts;
mod forms;
pub mod grader;
mod logged;
mod placement;
mod trainer;
pub use call::{CallSpec, Per, SOURCES as CALL_SOURCES};
pub use facts::{Facts, Logged};
pub use forms::check_sample;
pub use logged::{flipped, moved, unpaired_hint, Counts, LoggedCmp, StepDrift};
pub use placement::Placement;
pub use trainer::Trainer;

/// How rwb calls an evaluator (SPEC §3), detected from its signature or set in `rwb.toml`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Style {
    /// `fn(messages=..., ground_truth=..., **sample_keys)`, one call per sample.
    RewardKit,
    /// reward-kit `mode="batch"`: `fn(rollouts_messages=[...])`, one call per batch.
    Batch,
    /// `f(response, prompt=, answer=, **kwargs) -> float`.
    Simple,
    /// TRL: `f(prompts=, completions=, **columns) -> list[float | None]`, one call per
    /// batch of consecutive samples.
    Trl,
    /// veRL: `compute_score(data_source, solution_str, ground_truth, extra_info)`.
    Verl,
    /// A verifiers Rubric reward function: by keyword, only the parameters it declares
    /// among `prompt`, `completion`, `answer`, `state`, `task`, `info`; an exception
    /// scores 0.0 and is shown on the row.
    Verifiers,
    /// Tunix's `RLLearner`: `fn(prompts=[templated prompt text], completions=[text],
    /// **columns)`, one call per batch.
    Tunix,
    /// OpenRLHF's reward file: `reward_func(queries, prompts, labels)`, one sample a
    /// call, returning `{"rewards", "scores", "extra_logs"}`.
    OpenRlhf,
    /// AReaL's `RLVRWorkflow`: `fn(prompt, completion, prompt_ids, completion_ids,
    /// **row)`, positionally, one sample a call.
    Areal,
    /// EasyR1's batch reward: `fn([{response, response_length, ground_truth}, ...])`,
    /// one call per batch, the score under `overall`.
    #[serde(rename = "easyr1")]
    EasyR1,
    /// EasyR1's sequential reward: `fn({response, response_length, ground_truth})`.
    #[serde(rename = "easyr1-sequential")]
    EasyR1Sequential,
    /// An ms-swift ORM class: constructed once with `args`, the instance called per
    /// batch with the completions' text and the batched columns.
    Swift,
    /// slime's custom reward: `async def fn(args, sample)`, one sample a call.
    Slime,
    /// slime's group reward: `fn(args, samples)`, one call per group (batch).
    SlimeGroup,
    /// SkyRL's gym reward helper: `compute_score(action, ground_truth)`.
    Skyrl,
    /// A verifiers 1.x `vf.Task`: its rewards and metrics scored on the sample's trace.
    VerifiersTask,
    /// `call = { ... }` in rwb.toml, one sample a call.
    Call,
    /// `call = { ..., per = "batch" }` in rwb.toml, one call per batch.
    CallBatch,
    /// An OpenAI grader object (`grader = "FILE.json"`, SPEC §17), scored by rwb.
    Grader,
}

impl Style {
    pub fn as_str(self) -> &'static str {
        match self {
            Style::RewardKit => "reward-kit",
            Style::Batch => "batch",
            Style::Simple => "simple",
            Style::Trl => "trl",
            Style::Verl => "verl",
            Style::Verifiers => "verifiers",
            Style::Tunix => "tunix",
            Style::OpenRlhf => "openrlhf",
            Style::Areal => "areal",
            Style::EasyR1 => "easyr1",
            Style::EasyR1Sequential => "easyr1-sequential",
            Style::Swift => "swift",
            Style::Slime => "slime",
            Style::SlimeGroup => "slime-group",
            Style::Skyrl => "skyrl",
            Style::VerifiersTask => "verifiers-task",
            Style::Call => "call",
            Style::CallBatch => "call-batch",
            Style::Grader => "grader",
        }
    }

    /// Every style's name, as `rwb.toml` accepts them.
    pub const NAMES: &'static str =
        "reward-kit, batch, simple, trl, verl, verifiers, tunix, openrlhf, areal, easyr1, easyr1-sequential, swift, slime, slime-group, skyrl, verifiers-task";

    pub fn parse(text: &str) -> Option<Style> {
        Some(match text {
            "reward-kit" | "reward_kit" | "pointwise" => Style::RewardKit,
            "batch" => Style::Batch,
            "simple" => Style::Simple,
            "trl" => Style::Trl,
            "verl" => Style::Verl,
            "verifiers" => Style::Verifiers,
            "tunix" => Style::Tunix,
            "openrlhf" => Style::OpenRlhf,
            "areal" => Style::Areal,
            "easyr1" => Style::EasyR1,
            "easyr1-sequential" => Style::EasyR1Sequential,
            "swift" => Style::Swift,
            "slime" => Style::Slime,
            "slime-group" => Style::SlimeGroup,
            "skyrl" => Style::Skyrl,
            "verifiers-task" => Style::VerifiersTask,
            "call" => Style::Call,
            "call-batch" => Style::CallBatch,
            "grader" => Style::Grader,
            _ => return None,
        })
    }

    /// Whether the evaluator is called once per rollout group (the samples of one
    /// prompt, in file order) rather than per batch of `batch_size`: slime's group
    /// reward, and a `call` described `per = "group"`.
    pub fn per_group(style: Option<Style>, spec: &EvaluatorSpec) -> bool {
        match style {
            Some(Style::SlimeGroup) => true,
            Some(Style::CallBatch) => spec
                .call
                .as_ref()
                .is_some_and(|c| c.per == crate::model::Per::Group),
            _ => false,
        }
    }

    pub fn is_batched(self) -> bool {
        matches!(
            self,
            Style::Trl
                | Style::Batch
                | Style::Tunix
                | Style::EasyR1
                | Style::Swift
                | Style::SlimeGroup
                | Style::CallBatch
        )
    }

    /// Whether its trainer hands the function the prompt as templated text (Tunix's
    /// `prompts`, OpenRLHF's `queries` and `prompts`, AReaL's and slime's prompt; a
    /// `call` may name the `prompt` source).
    pub fn takes_templated_prompt(self) -> bool {
        matches!(
            self,
            Style::Tunix
                | Style::OpenRlhf
                | Style::Areal
                | Style::Slime
                | Style::SlimeGroup
                | Style::Call
                | Style::CallBatch
        )
    }
}

/// Where an evaluator's chat template comes from (`chat_template` in `rwb.toml`): how
/// its trainer turned the prompt turns into the text it hands the function.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum TemplateSource {
    /// `<|im_start|>role\ncontent<|im_end|>\n` per turn, then the assistant's opening.
    #[default]
    ChatMl,
    /// The prompt turns' contents joined by a newline, no markers.
    Raw,
    /// A Jinja template read from `origin` (a template file, or a
    /// `tokenizer_config.json`'s `chat_template` with its special tokens:
    /// `bos_token`, `eos_token`, `pad_token`, ... as `special_tokens_map` has them).
    Jinja {
        origin: String,
        text: String,
        special_tokens: Vec<(String, String)>,
    },
}

impl TemplateSource {
    /// How `rwb check` names it.
    pub fn describe(&self) -> String {
        match self {
            TemplateSource::ChatMl => "chatml (the default)".into(),
            TemplateSource::Raw => "raw (the turns' contents, no markers)".into(),
            TemplateSource::Jinja { origin, .. } => format!("the Jinja template in {origin}"),
        }
    }

    /// What the worker is told: "chatml", "raw" or "jinja" (rendered by rwb).
    pub fn kind(&self) -> &'static str {
        match self {
            TemplateSource::ChatMl => "chatml",
            TemplateSource::Raw => "raw",
            TemplateSource::Jinja { .. } => "jinja",
        }
    }

    /// What the cache key covers of it: the template's whole text and tokens.
    pub fn identity(&self) -> String {
        match self {
            TemplateSource::Jinja {
                text,
                special_tokens,
                ..
            } => {
                let mut id = format!("jinja\0{text}");
                for (name, token) in special_tokens {
                    id.push_str(&format!("\0{name}={token}"));
                }
                id
            }
            other => other.kind().to_string(),
        }
    }
}

impl fmt::Display for Style {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an evaluator's code lives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// A reward-kit metric folder: `main.py` defining `evaluate`.
    Folder(PathBuf),
    /// `FILE.py::FUNC`.
    Function { file: PathBuf, function: String },
    /// `package.module:FUNC`, imported by name with the workspace root on `sys.path`
    /// (so relative imports inside the package work). `file` is the module's file
    /// (`package/module.py` or `package/module/__init__.py`), resolved by the workspace.
    Module {
        module: String,
        function: String,
        file: PathBuf,
    },
    /// A reward-kit `generic_server`-compatible endpoint (`url` in `rwb.toml`): an
    /// `rwb serve`, a reward-kit server, a Cloud Run service. No code here to run.
    Remote {
        url: String,
        /// What is sent as `X-Api-Key` (none: no key).
        key: Option<RemoteKey>,
    },
    /// An evaluator deployed to Fireworks (`fireworks = "ID"` in `rwb.toml`).
    Fireworks { id: String },
    /// An OpenAI grader object (SPEC §17): `grader = "FILE.json"` in rwb.toml or
    /// `--grader NAME=FILE.json` (the worker reads the file at each load, and reports
    /// it as the evaluator's code), or one a graders API request holds (`inline`).
    Grader {
        file: PathBuf,
        inline: Option<String>,
        /// `[graders]` of rwb.toml as JSON (endpoints, models, the key's variable
        /// name: never a key).
        settings: String,
        /// `grader:` and a digest of `inline` and `settings`: the "function" the
        /// cache keys hold, so that what is not in a file is in the key.
        digest: String,
    },
}

/// Where a remote evaluator's key comes from.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum RemoteKey {
    /// The value of this environment variable (`api_key_env` in `rwb.toml`).
    Env(String),
    /// The key itself, held in memory for this session only: a deploy's key, given to
    /// the column that scores through the deployed service. Never written to a file,
    /// the cache or a log, and never shown (its `Debug` says `<redacted>`).
    Held(String),
}

impl fmt::Debug for RemoteKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteKey::Env(var) => f.debug_tuple("Env").field(var).finish(),
            RemoteKey::Held(_) => f.write_str("Held(<redacted>)"),
        }
    }
}

impl Source {
    /// The file that defines the evaluator; empty for one that runs elsewhere (see
    /// [`Source::is_remote`]: callers that read or watch files skip those).
    pub fn file(&self) -> PathBuf {
        match self {
            Source::Folder(dir) => dir.join("main.py"),
            Source::Function { file, .. }
            | Source::Module { file, .. }
            | Source::Grader { file, .. } => file.clone(),
            Source::Remote { .. } | Source::Fireworks { .. } => PathBuf::new(),
        }
    }

    pub fn folder(&self) -> PathBuf {
        match self {
            Source::Folder(dir) => dir.clone(),
            Source::Function { file, .. }
            | Source::Module { file, .. }
            | Source::Grader { file, .. } => file
                .parent()
                .map(|p| p.to_path_buf())
                .unwrap_or_else(|| PathBuf::from(".")),
            Source::Remote { .. } | Source::Fireworks { .. } => PathBuf::new(),
        }
    }

    pub fn function(&self) -> &str {
        match self {
            Source::Folder(_) | Source::Remote { .. } | Source::Fireworks { .. } => "evaluate",
            Source::Function { function, .. } | Source::Module { function, .. } => function,
            Source::Grader { digest, .. } => digest,
        }
    }

    /// Whether it scores somewhere else (an endpoint, Fireworks): no file, no worker,
    /// never cached.
    pub fn is_remote(&self) -> bool {
        matches!(self, Source::Remote { .. } | Source::Fireworks { .. })
    }

    /// Where it scores, for the source pane and messages: the URL, `fireworks:ID`, or
    /// the file.
    pub fn location(&self) -> String {
        match self {
            Source::Remote { url, .. } => url.clone(),
            Source::Fireworks { id } => format!("fireworks:{id}"),
            _ => self.file().display().to_string(),
        }
    }

    /// A grader source: `file` (for messages), the grader object when it is held
    /// inline, and the `[graders]` settings as JSON. `settings` must not hold a key.
    pub fn grader(file: PathBuf, inline: Option<String>, settings: String) -> Source {
        let mut h = blake3::Hasher::new();
        h.update(inline.as_deref().unwrap_or("").as_bytes());
        h.update(&[0]);
        h.update(settings.as_bytes());
        let digest = format!("grader:{}", &h.finalize().to_hex()[..32]);
        Source::Grader {
            file,
            inline,
            settings,
            digest,
        }
    }

    /// The dotted module name of a package function.
    pub fn module(&self) -> Option<&str> {
        match self {
            Source::Module { module, .. } => Some(module),
            _ => None,
        }
    }
}

/// What a veRL evaluator gets as `solution_str` (`solution_str` in `rwb.toml`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SolutionStr {
    /// The response only, as modern veRL passes it.
    #[default]
    Response,
    /// The prompt as the model saw it followed by the response, as older veRL
    /// (TinyZero, DeepScaleR) passes it.
    PromptAndResponse,
}

impl SolutionStr {
    pub fn as_str(self) -> &'static str {
        match self {
            SolutionStr::Response => "response",
            SolutionStr::PromptAndResponse => "prompt+response",
        }
    }

    pub fn parse(text: &str) -> Option<SolutionStr> {
        match text {
            "response" => Some(SolutionStr::Response),
            "prompt+response" => Some(SolutionStr::PromptAndResponse),
            _ => None,
        }
    }
}

/// One evaluator as the workspace defines it.
#[derive(Clone, Debug, PartialEq)]
pub struct EvaluatorSpec {
    pub name: String,
    pub source: Source,
    /// `None`: detected from the signature.
    pub style: Option<Style>,
    /// Per-evaluation timeout in seconds.
    pub timeout: f64,
    /// Extra keyword arguments passed on every call.
    pub kwargs: Map<String, Value>,
    /// Samples per call for batched styles.
    pub batch_size: usize,
    /// veRL only: what `solution_str` holds.
    pub solution_str: SolutionStr,
    /// Evaluations kept in flight per worker (`concurrency = N`, `--concurrency N`;
    /// 1: one at a time). Pointwise styles only; not part of the cache key.
    pub concurrency: usize,
    /// The trainer the user trains with, when `rwb.toml` says.
    pub trainer: Option<Trainer>,
    /// How the trainer templated the prompt.
    pub chat_template: TemplateSource,
    /// `call = { ... }`: the user's own description of how the function is called.
    pub call: Option<CallSpec>,
    /// `trainer_args = { ... }`: the trainer's own arguments a reward reads (handed
    /// as a namespace to ms-swift's constructors and slime's rewards).
    pub trainer_args: Map<String, Value>,
    /// What makes samples one rollout group for a call made once per group (slime's
    /// `--group-rm`, `call = { per = "group" }`): a column (`group = "uid"` for the
    /// evaluator, or the workspace's `[training] group`), or `None` for the prompt.
    pub group: Option<String>,
    /// `network = false` under the evaluator: its worker has no network (SPEC §18).
    pub network: Option<bool>,
    /// `repeat = K` / `--repeat K`: separate calls per sample (SPEC §16; 1: once).
    pub repeat: usize,
    /// Which of the K calls this spec makes (0 for the first, and for a spec that is
    /// not repeated): part of the code key from 1 on, so each repeat is cached apart.
    pub repeat_index: usize,
    /// Each call watched for exceptions swallowed in the project's files (the
    /// workbench's `R`, SPEC §16): the worker is sent `B n 1 w` batches. Never part
    /// of the code key: the scores are the same.
    pub watch: bool,
}

/// An exception raised and handled inside the evaluator's own files while a sample
/// was scored (SPEC §16): its type and where it was caught (`file:line`).
pub type Caught = (String, String);

/// The most evaluations one worker keeps in flight (the slots of its mark page).
pub const MAX_CONCURRENCY: usize = 256;

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

/// One (sample, evaluator) row as `rwb run --format jsonl` prints it (SPEC §4).
#[derive(Debug, Serialize)]
pub struct ResultRow<'a> {
    pub sample: usize,
    /// The samples file's label; for a folder or glob source, the file in it.
    pub file: std::borrow::Cow<'a, str>,
    pub line: usize,
    pub evaluator: &'a str,
    pub score: Option<f64>,
    pub is_score_valid: bool,
    pub reason: &'a Option<CompactString>,
    pub metrics: &'a Map<String, Value>,
    pub step_outputs: &'a Option<Box<Value>>,
    pub error: &'a Option<Box<EvalError>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_error: &'a Option<String>,
    pub duration_ms: f64,
    /// The evaluation's time in seconds (SPEC §16).
    pub seconds: f64,
    /// `"batch"` when `seconds` is the sample's share of a batch call's time (SPEC
    /// §3): not its own time, so no slowest list ranks it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_of: Option<&'static str>,
    /// What the evaluator printed for this sample (only when it printed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: &'a Option<String>,
    /// With `repeat = K`: the K scores, their population std and whether they flip
    /// (plain fields, not a flattened struct: serde writes a flattened row slower).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<&'a [Option<f64>]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score_std: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flips: Option<bool>,
}

impl<'a> ResultRow<'a> {
    pub fn new(sample: &SampleRef, file: &'a str, evaluator: &'a str, o: &'a Outcome) -> Self {
        ResultRow {
            sample: sample.index,
            file: std::borrow::Cow::Borrowed(file),
            line: sample.line,
            evaluator,
            score: o.score,
            is_score_valid: o.is_score_valid,
            reason: &o.reason,
            metrics: &o.metrics,
            step_outputs: &o.step_outputs,
            error: &o.error,
            result_error: &o.result_error,
            duration_ms: o.duration_ms,
            seconds: o.duration_ms / 1000.0,
            seconds_of: None,
            output: &o.output,
            scores: o.repeat.as_ref().map(|r| &r.scores[..]),
            score_std: o.repeat.as_ref().map(|r| r.score_std),
            flips: o.repeat.as_ref().map(|r| r.flips),
        }
    }

    /// Appends the row's JSON to `out`: the bytes its `Serialize` writes, with the
    /// keys written as they are (serde escapes every key of every row again, which is
    /// most of what printing a cached row costs) and each value through serde_json.
    ///
    /// The common values (numbers, plain strings, an empty map, `null`) are written
    /// here directly: through serde each was a few small copies of its own. `known`
    /// has the row's file and evaluator already written, when they are.
    pub fn write_json(&self, out: &mut Vec<u8>, known: Known) {
        fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, key: &[u8], value: &T) {
            out.extend_from_slice(key);
            let _ = serde_json::to_writer(&mut *out, value);
        }
        out.reserve(192 + self.file.len() + self.evaluator.len());
        out.extend_from_slice(b"{\"sample\":");
        out.extend_from_slice(itoa::Buffer::new().format(self.sample).as_bytes());
        match known.file {
            Some(file) => out.extend_from_slice(file),
            None => file_part(out, &self.file),
        }
        out.extend_from_slice(itoa::Buffer::new().format(self.line).as_bytes());
        match known.evaluator {
            Some(evaluator) => out.extend_from_slice(evaluator),
            None => evaluator_part(out, self.evaluator),
        }
        let _ = serde_json::to_writer(&mut *out, &self.score);
        out.extend_from_slice(match self.is_score_valid {
            true => b",\"is_score_valid\":true,\"reason\":",
            false => b",\"is_score_valid\":false,\"reason\":",
        });
        match self.reason {
            Some(reason) => json_str(out, reason),
            None => out.extend_from_slice(b"null"),
        }
        match self.metrics.is_empty() {
            true => out.extend_from_slice(b",\"metrics\":{}"),
            false => value(out, b",\"metrics\":", self.metrics),
        }
        match (self.step_outputs, self.error) {
            (None, None) => out.extend_from_slice(b",\"step_outputs\":null,\"error\":null"),
            (steps, error) => {
                value(out, b",\"step_outputs\":", steps);
                value(out, b",\"error\":", error);
            }
        }
        if let Some(e) = self.result_error {
            value(out, b",\"result_error\":", e);
        }
        value(out, b",\"duration_ms\":", &self.duration_ms);
        value(out, b",\"seconds\":", &self.seconds);
        if let Some(of) = self.seconds_of {
            value(out, b",\"seconds_of\":", of);
        }
        if let Some(o) = self.output {
            value(out, b",\"output\":", o);
        }
        if let Some(scores) = self.scores {
            value(out, b",\"scores\":", scores);
        }
        if let Some(std) = &self.score_std {
            value(out, b",\"score_std\":", std);
        }
        if let Some(flips) = &self.flips {
            value(out, b",\"flips\":", flips);
        }
        out.push(b'}');
    }
}

/// A row's file and evaluator as [`ResultRow::write_json`] writes them, with the keys
/// around them ([`Known::file`], [`Known::evaluator`]): written once for all the rows
/// that share them, where escaping them again was a tenth of writing each row.
#[derive(Clone, Copy, Default)]
pub struct Known<'a> {
    pub file: Option<&'a [u8]>,
    pub evaluator: Option<&'a [u8]>,
}

impl Known<'_> {
    /// `,"file":"LABEL","line":`: what comes between a row's sample and line numbers.
    pub fn file(label: &str) -> Vec<u8> {
        let mut out = Vec::new();
        file_part(&mut out, label);
        out
    }

    /// `,"evaluator":"NAME","score":`: between a row's line number and its score.
    pub fn evaluator(name: &str) -> Vec<u8> {
        let mut out = Vec::new();
        evaluator_part(&mut out, name);
        out
    }
}

/// Appends [`Known::file`]'s bytes for `label`.
fn file_part(out: &mut Vec<u8>, label: &str) {
    out.extend_from_slice(b",\"file\":");
    json_str(out, label);
    out.extend_from_slice(b",\"line\":");
}

/// Appends [`Known::evaluator`]'s bytes for `name`.
fn evaluator_part(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(b",\"evaluator\":");
    json_str(out, name);
    out.extend_from_slice(b",\"score\":");
}

/// Appends `s` as a JSON string, as serde_json writes it: a string with nothing to
/// escape (most file labels, names and reasons) is copied in one piece.
fn json_str(out: &mut Vec<u8>, s: &str) {
    if !needs_escape(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// Eight bytes at once: `ONES * b` is the word of eight bytes `b`.
pub(crate) const ONES: u64 = u64::from_ne_bytes([1; 8]);

/// Non-zero when some byte of the word `x` is below `n` (`n` at most 0x80): the
/// subtraction borrows into that byte's high bit. A borrow may mark a byte above it
/// too, so the answer is exact for "some byte", not for which one.
pub(crate) fn some_byte_below(x: u64, n: u8) -> u64 {
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    x.wrapping_sub(ONES * n as u64) & !x & HIGH
}

/// The high bit of each byte of the word `x` that a JSON string escapes (a control
/// character, `"` or `\\`; a byte at 0x80 or over never is): none is set when none is
/// (one above the lowest found may be set falsely, see [`some_byte_below`]).
pub(crate) fn json_escapes(x: u64) -> u64 {
    let quote = some_byte_below(x ^ (ONES * b'"' as u64), 1);
    let backslash = some_byte_below(x ^ (ONES * b'\\' as u64), 1);
    some_byte_below(x, 0x20) | quote | backslash
}

/// Whether `s` has a byte JSON escapes (a control character, `"` or `\\`), checked
/// eight bytes at a time.
fn needs_escape(s: &[u8]) -> bool {
    let mut words = s.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_ne_bytes(word.try_into().expect("eight bytes"));
        if json_escapes(x) != 0 {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// A float as Python's `repr` writes it: the shortest digits that read back as the
/// same number, fixed notation for exponents from -4 to 15, else `1e-05` style.
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("integer exponent");
    let sign = if mantissa.starts_with('-') { "-" } else { "" };
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                format!("{sign}{digits}{}.0", "0".repeat(int_len - digits.len()))
            } else {
                format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
        }
    } else {
        let rest = if digits.len() > 1 {
            format!(".{}", &digits[1..])
        } else {
            String::new()
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{}{rest}e{esign}{:02}", &digits[..1], exp.abs())
    }
}

/// Mean, spread and error count of one evaluator's scores.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub count: usize,
    pub errors: usize,
    /// Scored results that carry an error beside their score (`result_error`): an
    /// exception the trainer scores (`call.on_error`), or one the result reports.
    #[serde(skip_serializing_if = "is_zero")]
    pub warned: usize,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Accumulates a [`Summary`] one outcome at a time (Welford's algorithm).
#[derive(Clone, Debug, Default)]
pub struct SummaryBuilder {
    count: usize,
    errors: usize,
    warned: usize,
    scored: usize,
    mean: f64,
    m2: f64,
    min: Option<f64>,
    max: Option<f64>,
}

impl SummaryBuilder {
    pub fn add(&mut self, outcome: &Outcome) {
        self.count += 1;
        if outcome.is_error() {
            self.errors += 1;
            return;
        }
        self.warned += usize::from(outcome.result_error.is_some());
        if let Some(x) = outcome.score {
            self.scored += 1;
            let delta = x - self.mean;
            self.mean += delta / self.scored as f64;
            self.m2 += delta * (x - self.mean);
            self.min = Some(self.min.map_or(x, |m| m.min(x)));
            self.max = Some(self.max.map_or(x, |m| m.max(x)));
        }
    }

    pub fn finish(&self) -> Summary {
        let has = self.scored > 0;
        Summary {
            count: self.count,
            errors: self.errors,
            warned: self.warned,
            mean: has.then_some(self.mean),
            std: has.then(|| (self.m2 / self.scored as f64).sqrt()),
            min: self.min,
            max: self.max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(x: f64) -> Outcome {
        Outcome::scored(x, Map::new())
    }

    #[test]
    fn strings_are_written_as_serde_writes_them() {
        // every ASCII byte at every place of a word and of the tail after the words,
        // and text outside ASCII (never escaped)
        let mut texts = vec![String::new(), "é 😀 \u{7f} \u{2028}".to_string()];
        for len in [1, 7, 8, 9, 16, 19] {
            for at in 0..len {
                for b in 0u8..0x80 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    texts.push(String::from_utf8(bytes).unwrap());
                }
            }
        }
        for text in &texts {
            let mut ours = Vec::new();
            json_str(&mut ours, text);
            assert_eq!(ours, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn summary_counts_errors_apart_from_scores() {
        let mut b = SummaryBuilder::default();
        for x in [0.0, 0.5, 1.0] {
            b.add(&scored(x));
        }
        b.add(&Outcome::failed(EvalError::new("ValueError", "boom")));
        let s = b.finish();
        assert_eq!(s.count, 4);
        assert_eq!(s.errors, 1);
        assert_eq!(s.mean, Some(0.5));
        assert!((s.std.unwrap() - (1.0f64 / 6.0).sqrt()).abs() < 1e-12);
        assert_eq!((s.min, s.max), (Some(0.0), Some(1.0)));
    }

    #[test]
    fn styles_round_trip_through_their_names() {
        for s in [
            Style::RewardKit,
            Style::Batch,
            Style::Simple,
            Style::Trl,
            Style::Verl,
            Style::Verifiers,
            Style::Tunix,
            Style::OpenRlhf,
            Style::Areal,
            Style::EasyR1,
            Style::EasyR1Sequential,
            Style::Swift,
            Style::Slime,
            Style::SlimeGroup,
            Style::Skyrl,
            Style::VerifiersTask,
            Style::Call,
            Style::CallBatch,
            Style::Grader,
        ] {
            assert_eq!(Style::parse(s.as_str()), Some(s));
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<Style>(&json).unwrap(), s);
            if !matches!(s, Style::Call | Style::CallBatch | Style::Grader) {
                assert!(Style::NAMES.contains(s.as_str()), "{s}");
            }
        }
        assert_eq!(Style::parse("nope"), None);
    }

    #[test]
    fn solution_str_modes_round_trip_through_their_names() {
        for m in [SolutionStr::Response, SolutionStr::PromptAndResponse] {
            assert_eq!(SolutionStr::parse(m.as_str()), Some(m));
        }
        assert_eq!(SolutionStr::parse("prompt"), None);
    }
}

/// One recorded version of an evaluator's code (the store keeps them; the history
/// view lists them).
#[derive(Clone, Debug, PartialEq)]
pub struct Version {
    /// Unix seconds.
    pub first_seen: f64,
    pub last_seen: f64,
    /// Samples it scored (the mean is theirs) and samples on which it failed.
    pub count: usize,
    pub mean: Option<f64>,
    pub errors: usize,
    /// (file, text) of every project file it imported.
    pub sources: Vec<(String, String)>,
}

/// The score at or above which a sample passes, unless `[insight] threshold` says
/// otherwise: crossing it is a flip.
pub const DEFAULT_THRESHOLD: f64 = 0.5;
