//! SkyRL's eval dumps: `{export_path}/dumped_evals/global_step_{N}_evals/
//! {data_source}.jsonl` (`eval_only/` for a standalone eval).
//!
//! Facts from NovaSky-AI/SkyRL@a9564572 `skyrl/train/utils/trainer_utils.py:324-373`
//! (`dump_per_dataset_eval_results`: one `json.dumps(entry, ensure_ascii=False)` a
//! line of `input_prompt`, `output_response` — both `tokenizer.decode(ids)`, special
//! tokens kept —, `score` (`generator_output["rewards"][i]`: a float, or the per-token
//! rewards whose last element is the trajectory's), `stop_reason`, `env_class`,
//! `env_extras`, `data_source`; `aggregated_results.jsonl` beside them holds metrics)
//! and `skyrl/train/evaluate.py:147-163` (the folder). The texts are used as written;
//! the ground truth is `env_extras.reward_spec.ground_truth`; the step is the folder's
//! `N`; the rollouts of one prompt (`eval_n_samples_per_prompt`) are a group.

use super::{group_id, json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{Map, Value};
use std::path::Path;

pub struct SkyrlEvals;

impl Format for SkyrlEvals {
    fn name(&self) -> &'static str {
        "SkyRL eval dump"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl
            && peek.has_all(&["input_prompt", "output_response", "score"])
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let step = folder_step(path);
        let paths = options.logged_paths.clone();
        json_rows::map_lines_or_bad(path, move |line, object| row(line, object, step, &paths))
    }
}

/// `N` of a `global_step_{N}_evals` folder.
fn folder_step(path: &Path) -> Option<i64> {
    let folder = path.parent()?.file_name()?.to_string_lossy();
    folder
        .strip_prefix("global_step_")?
        .strip_suffix("_evals")?
        .parse()
        .ok()
}

fn row(
    line: usize,
    object: Map<String, Value>,
    step: Option<i64>,
    paths: &[String],
) -> Result<Row, String> {
    let mut facts = Facts {
        step,
        ..Facts::default()
    };
    let whole = Value::Object(object.clone()); // its own logged names come first
    let text = |key: &str| match object.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "\"{key}\" is {}, not the decoded text",
            super::wandb::kind(other)
        )),
        None => Err(format!("no \"{key}\"")),
    };
    let (prompt, completion) = (text("input_prompt")?, text("output_response")?);
    let score = match object.get("score") {
        // per-token rewards: the trajectory's is the last (SkyRL's pass_at_n)
        Some(Value::Array(tokens)) => tokens.last().cloned().unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    if !(score.is_number() || score.is_null()) {
        return Err(format!(
            "\"score\" is {}, not a number or a list of per-token rewards",
            super::wandb::kind(&score)
        ));
    }
    facts.logged.push(("score".into(), Logged::of_json(&score)));
    let mut sample = Map::new();
    sample.insert("prompt".into(), Value::String(prompt.clone()));
    sample.insert("completion".into(), Value::String(completion));
    if let Some(truth) = super::dotted(&object["env_extras"], "reward_spec.ground_truth") {
        sample.insert("ground_truth".into(), truth.clone());
    }
    for (key, value) in object {
        if !matches!(key.as_str(), "input_prompt" | "output_response" | "score") {
            sample.insert(key, value);
        }
    }
    let at = facts.step.map(|s| s.to_string()).unwrap_or_default();
    facts.group = Some(group_id(&[at.as_bytes(), prompt.as_bytes()]));
    json_rows::add_logged_paths(&whole, paths, &mut facts);
    Ok(json_rows::row(line, sample, facts, &Default::default()))
}
