//! Plain data shared by every part: evaluator specs, sample references and results.
//!
//! Owns the shapes and their JSON forms (SPEC §4), and what a sample must hold
//! ([`check_sample`]: `sources/` and `workspace/` both ask it). Does no I/O: reading files,
//! running Python and storing results belong to `workspace/`, `engine/` and `store/`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::path::PathBuf;

pub mod calendar;
mod call;
mod facts;
mod forms;
pub mod grader;
mod logged;
mod outcome;
mod placement;
mod row;
pub(crate) use row::json_str;
mod summary;
mod trainer;
pub use call::{CallSpec, Per, SOURCES as CALL_SOURCES};
pub use facts::{Facts, Label, Logged, Recorded, Seen, SEEN_RECORD};
pub use forms::check_sample;
pub use logged::{flipped, moved, unpaired_hint, Counts, LoggedCmp, StepDrift};
pub use outcome::{
    kinds, EvalError, Metric, Outcome, Repeated, SampleRef, SandboxSummary, Sandboxed,
};
pub use placement::Placement;
pub(crate) use row::{json_escapes, some_byte_below, ONES};
pub use row::{py_float, Known, ResultRow};
pub use summary::{Summary, SummaryBuilder};
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

impl EvaluatorSpec {
    /// How a worker is told to call this evaluator (its name, the file and folder it
    /// is imported from, and how it is called): the fields rwb's worker reads, for the
    /// zygote's fork command and for a package that calls the function as rwb does.
    pub fn worker_fields(
        &self,
        file: serde_json::Value,
        folder: serde_json::Value,
    ) -> serde_json::Map<String, serde_json::Value> {
        let fields = serde_json::json!({
            "name": self.name,
            "file": file,
            "folder": folder,
            "module": self.source.module(),
            "function": self.source.function(),
            "style": self.style.map(|s| s.as_str()),
            "solution_str": self.solution_str.as_str(),
            "trainer": self.trainer.map(|t| t.as_str()),
            "chat_template": self.chat_template.kind(),
            "kwargs": self.kwargs,
            "call": self.call.as_ref().map(|c| c.to_json()),
            "trainer_args": self.trainer_args,
        });
        match fields {
            serde_json::Value::Object(map) => map,
            _ => unreachable!("a JSON object"),
        }
    }
}

/// An exception raised and handled inside the evaluator's own files while a sample
/// was scored (SPEC §16): its type and where it was caught (`file:line`).
pub type Caught = (String, String);

/// The most evaluations one worker keeps in flight (the slots of its mark page).
pub const MAX_CONCURRENCY: usize = 256;

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

#[cfg(test)]
mod tests {
    use super::*;

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
