//! AReaL's rollout dumps: `{fileroot}/logs/{user}/{experiment}/{trial}/rollout/
//! {version}/{task_id}.jsonl` (`eval-rollout/` for evaluation).
//!
//! Facts from inclusionAI/AReaL@4aef98d8 `areal/infra/workflow_executor.py:879-920`
//! (appended, one `json.dumps(record)` a line per sample of the group: `task_id`,
//! `sample_idx`, `seqlen`, `prompt_len`, `head_version`, `tail_version`, `reward` —
//! `rewards[i].item()`, a float32's value —, `prompt` and `completion` — decoded with
//! `skip_special_tokens=False` —; the folder is `tail_version`) and
//! `areal/utils/stats_logger.py:179`. The texts are used as written; the dataset row
//! (its answer) is not dumped; the step is `tail_version` (the policy version that
//! finished the sample); one task's samples are a group.

use super::{json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{Map, Value};
use std::path::Path;

pub struct ArealDump;

impl Format for ArealDump {
    fn name(&self) -> &'static str {
        "AReaL rollout dump"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl
            && peek.has_all(&[
                "task_id",
                "sample_idx",
                "tail_version",
                "prompt",
                "completion",
            ])
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let paths = options.logged_paths.clone();
        json_rows::map_lines_or_bad(path, move |line, object| row(line, object, &paths))
    }
}

fn row(line: usize, object: Map<String, Value>, paths: &[String]) -> Result<Row, String> {
    let mut facts = Facts::default();
    let whole = Value::Object(object.clone()); // its own logged names come first
    for key in ["prompt", "completion"] {
        if !object.get(key).is_some_and(Value::is_string) {
            return Err(format!("\"{key}\" is not the decoded text"));
        }
    }
    facts.step = match object.get("tail_version") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(other) => {
            return Err(format!(
                "\"tail_version\" is {}, not the policy version",
                super::wandb::kind(other)
            ))
        }
        None => None,
    };
    facts.group = object.get("task_id").map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let mut sample = Map::new();
    for (key, value) in object {
        if key == "reward" {
            if !(value.is_number() || value.is_null()) {
                return Err(format!(
                    "\"reward\" is {}, not a number",
                    super::wandb::kind(&value)
                ));
            }
            facts.logged.push((key, Logged::of_json(&value)));
        } else {
            sample.insert(key, value);
        }
    }
    json_rows::add_logged_paths(&whole, paths, &mut facts);
    Ok(json_rows::row(line, sample, facts, &Default::default()))
}
