//! Rollouts where they live (SPEC §13): reads the files trainers and eval tools
//! write — TRL's completion logs, veRL's dumps, verifiers (and prime-rl's rollouts),
//! Inspect, eval-protocol and promptfoo logs, W&B tables and trackio's store,
//! lm-evaluation-harness samples, NeMo-RL, NeMo Gym, SkyRL and AReaL dumps, any
//! Parquet or Arrow table, Hugging Face `save_to_disk` folders, a folder or glob of
//! any of these ([`files`]), and anything else through `[samples.NAME]` column
//! mapping — as samples. Python pickles are refused, never opened.
//!
//! Each format is one file behind [`Format`]: a shape test on what [`peek`] saw of a
//! file (its container and first row's keys) and a streaming iterator of [`Row`]s.
//! [`FORMATS`] decides which reader takes a file. A row leaves here as a sample's JSON
//! text in one of SPEC §3's forms (chat `messages`, or `prompt` and `completion`, plus
//! columns) and the source's [`Facts`] (group, step, logged scores): nothing after
//! this part knows which tool wrote it.
//!
//! Owns formats only. Must not discover or watch files (that is `workspace/`), know
//! the cache, or run Python.

mod areal;
mod arrow;
mod eval_protocol;
pub mod files;
mod inspect;
mod json_rows;
mod lm_eval;
pub mod mapping;
mod nemo_gym;
mod nemo_rl;
mod parquet;
mod peek;
mod pickle;
mod promptfoo;
pub mod rewardbench;
mod row_json;
pub mod seen;
mod skyrl;
mod table;
mod trackio;
mod trl;
pub mod unknown;
mod verifiers;
mod verl;
mod wandb;

pub use mapping::Mapping;
pub use parquet::read_ahead;
pub use peek::{peek, Container, Peek};

use crate::model::Facts;
use std::path::Path;

/// One row of a source, as a sample.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// 1-based position in the source: the line of a JSONL file, the row (sample)
    /// number of anything else.
    pub line: usize,
    /// The sample: a JSON object's text in chat or prompt/completion form.
    pub sample: String,
    pub facts: Facts,
    /// Why the row is no sample, when its reader knows (a line that is not JSON);
    /// otherwise rwb checks the sample's form.
    pub bad: Option<String>,
}

/// A source's rows, streamed. An `Err` names what is wrong with the file (truncated,
/// corrupt) and ends the rows: those before it are good.
pub type Rows = Box<dyn Iterator<Item = Result<Row, String>> + Send>;

/// What a reader is told beside the file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// Dotted paths into the row whose values are wanted as logged scores too (an
    /// evaluator's `logged = "evaluation_result.score"`).
    pub logged_paths: Vec<String>,
    /// `[samples.NAME] form = "conversational"`: a text completion is handed on as
    /// one assistant message.
    pub conversational: bool,
    /// Columns kept in the sample as written (a table's `human` and `label` columns
    /// over a file read by its shape): never taken as logged scores.
    pub kept: Vec<String>,
}

/// One foreign format.
pub trait Format: Sync {
    /// How messages name it ("TRL completion log").
    fn name(&self) -> &'static str;
    /// Whether a file of this shape is this format's.
    fn recognises(&self, peek: &Peek) -> bool;
    /// The file's rows, streamed.
    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String>;
    /// Whether every row it gives that is not a sample in one of SPEC §3's forms
    /// says why in [`Row::bad`] (rwb then checks no row's form again: a table's
    /// reader tells it from the columns' types).
    fn checks_form(&self) -> bool {
        false
    }
}

/// Every format, most particular first: the first that recognises a file reads it.
/// A JSONL file none of them takes is rwb's own samples file; any other file none of
/// them takes is an error that lists its columns ([`unrecognised`]).
pub static FORMATS: &[&dyn Format] = &[
    &trl::Trl,
    &verl::Verl,
    &verifiers::Verifiers,
    &verifiers::VerifiersTraces,
    &eval_protocol::EvalProtocolJsonl,
    &eval_protocol::EvalProtocolDb,
    &inspect::InspectEval,
    &inspect::InspectJson,
    &promptfoo::PromptfooJson,
    &promptfoo::PromptfooJsonl,
    &wandb::WandbTable,
    &lm_eval::LmEvalSamples,
    &nemo_rl::NemoRl,
    &nemo_gym::NemoGym,
    &skyrl::SkyrlEvals,
    &areal::ArealDump,
    &trackio::Trackio,
    &rewardbench::RewardBench,
    &table::AnyTable,
];

/// The format of the file at `path`: `Ok(None)` for rwb's own JSONL samples (read
/// line by line as they are), else the reader that takes it.
///
/// A folder (no Hugging Face dataset) or a glob is read by [`files::Files`], each
/// of its files as this says.
pub fn detect(path: &Path) -> Result<Option<&'static dyn Format>, String> {
    if files::is_many(path) {
        return Ok(Some(&files::Files));
    }
    let peek = peek(path)?;
    if let Some(format) = FORMATS.iter().find(|f| f.recognises(&peek)) {
        return Ok(Some(*format));
    }
    match peek.container {
        Container::Jsonl => Ok(None),
        _ => Err(unrecognised(path, &peek)),
    }
}

/// The error for a file of a shape no reader takes: the columns found, and the
/// `[samples.NAME]` lines that would map them.
pub fn unrecognised(path: &Path, peek: &Peek) -> String {
    let name = path
        .file_stem()
        .map(|s| {
            s.to_string_lossy()
                .replace(|c: char| !c.is_alphanumeric(), "_")
        })
        .unwrap_or_else(|| "mine".into());
    let columns = if peek.keys.is_empty() {
        "no columns".to_string()
    } else {
        format!("columns {}", peek.keys.join(", "))
    };
    format!(
        "{}: rwb does not recognise this {} ({columns}); map it in rwb.toml: [samples.{name}] path = \"{}\" with prompt = \"COLUMN\" and completion = \"COLUMN\" (or messages = \"COLUMN\"), and optionally ground_truth, group, step and logged = [\"COLUMN\", ...]",
        path.display(),
        peek.container.describe(),
        path.display(),
    )
}

/// How many rows a file holds, when its container says without reading them
/// (Parquet's footer).
pub fn row_count(path: &Path) -> Option<u64> {
    parquet::row_count(path)
}

/// The value at a dotted path (`evaluation_result.score`) in a JSON value.
pub fn dotted<'a>(value: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    if let Some(v) = value.get(path) {
        return Some(v); // a key with a dot in it wins
    }
    path.split('.').try_fold(value, |v, key| match v {
        serde_json::Value::Array(items) => items.get(key.parse::<usize>().ok()?),
        _ => v.get(key),
    })
}

/// A short stable id for a rollout group made of some parts (a step and a prompt).
pub fn group_id(parts: &[&[u8]]) -> String {
    let mut hasher = blake3::Hasher::new();
    for p in parts {
        hasher.update(&(p.len() as u64).to_le_bytes());
        hasher.update(p);
    }
    hasher.finalize().to_hex()[..16].to_string()
}
