//! NeMo-RL's GRPO logs: `{log_dir}/train_data_step{N}.jsonl` and
//! `val_data_step{N}.jsonl`.
//!
//! Facts from NVIDIA-NeMo/RL@7ea279ab: `nemo_rl/utils/logger.py:1071-1098`
//! (`log_batched_dict_as_jsonl`: the batch cut into microbatches of one, each
//! `json.dumps({**sample, "idx": i}, default=str)`, so every value is a one-element
//! list and `idx` is bare) and `nemo_rl/algorithms/grpo.py:3630-3653` (the train log:
//! `content` = `flat_messages["content"]`, each turn's text without roles — the prompt
//! turn(s), then each generation followed by its environment's observation —
//! `rewards`, `filtered_rewards` with dynamic sampling, `input_lengths`, `token_ids`,
//! `token_loss_mask`, `sample_loss_mask`, `advantages`, `generation_logprobs`,
//! `prev_logprobs`, `agent_ref` when present; `train_data_step{total_steps + 1}`) and
//! `:4015-4021` (the validation log: `content` = the message logs as `{role,
//! content}` dicts, `rewards` the total rewards; `val_data_step{step}`).
//!
//! A train line's completion is `content[0][-2]` (the last generation), its prompt the
//! turns before joined as they are, its last observation the column `observations`;
//! a validation line's completion is its last `assistant` turn (chat form, the turns
//! before it the prompt) and the turns after it `observations`. The step is the
//! file's `N`; the logged score is `rewards[0]`; the other keys are columns, unwrapped.

use super::{group_id, json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{Map, Value};
use std::path::Path;

pub struct NemoRl;

impl Format for NemoRl {
    fn name(&self) -> &'static str {
        "NeMo-RL GRPO log"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl && peek.has_all(&["content", "rewards", "idx"])
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let step = super::files::step_in_name(Path::new(path.file_name().unwrap_or_default()));
        let paths = options.logged_paths.clone();
        json_rows::map_lines_or_bad(path, move |line, object| row(line, object, step, &paths))
    }
}

/// A one-element list's element (NeMo-RL's microbatch of one); anything else as is.
fn unwrap(v: Value) -> Value {
    match v {
        Value::Array(mut items) if items.len() == 1 => items.pop().unwrap_or(Value::Null),
        other => other,
    }
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
    let mut sample = Map::new();
    let mut columns = Map::new();
    let mut prompt_text = String::new();
    for (key, value) in object {
        match key.as_str() {
            "content" => {
                let Value::Array(turns) = unwrap(value) else {
                    return Err("\"content\" is not a list holding the turns: is this a NeMo-RL train_data/val_data log line?".into());
                };
                let (prompt, completion, observations) = split_turns(turns)?;
                prompt_text = prompt.to_string();
                sample.insert("prompt".into(), prompt);
                sample.insert("completion".into(), completion);
                columns.insert("observations".into(), observations);
            }
            "rewards" | "filtered_rewards" => {
                let v = unwrap(value);
                if !(v.is_number() || v.is_null()) {
                    return Err(format!(
                        "\"{key}\" holds {}, not a number",
                        super::wandb::kind(&v)
                    ));
                }
                facts.logged.push((key, Logged::of_json(&v)));
            }
            _ => {
                columns.insert(key, unwrap(value));
            }
        }
    }
    if !sample.contains_key("prompt") {
        return Err("no \"content\"".into());
    }
    sample.extend(columns);
    let at = facts.step.unwrap_or(0).to_string();
    facts.group = Some(group_id(&[at.as_bytes(), prompt_text.as_bytes()]));
    json_rows::add_logged_paths(&whole, paths, &mut facts);
    Ok(json_rows::row(line, sample, facts, &Default::default()))
}

/// Prompt, completion and observations of a line's turns: text turns (the train
/// log) or `{role, content}` messages (the validation log).
fn split_turns(turns: Vec<Value>) -> Result<(Value, Value, Value), String> {
    if turns.iter().all(Value::is_string) {
        if turns.len() < 2 {
            return Err(format!(
                "\"content\" holds {} turn(s); a train log line has the prompt, then each generation and its environment's observation",
                turns.len()
            ));
        }
        let n = turns.len();
        let prompt: String = turns[..n - 2].iter().filter_map(Value::as_str).collect();
        return Ok((
            Value::String(prompt),
            turns[n - 2].clone(),
            Value::Array(turns[n - 1..].to_vec()),
        ));
    }
    let Some(at) = turns.iter().rposition(|t| t["role"] == "assistant") else {
        return Err("\"content\" has no assistant turn (nor text turns)".into());
    };
    Ok((
        Value::Array(turns[..at].to_vec()),
        Value::Array(vec![turns[at].clone()]),
        Value::Array(turns[at + 1..].to_vec()),
    ))
}
