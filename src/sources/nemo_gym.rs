//! NeMo Gym's `rollouts.jsonl` (`ng_collect_rollouts` / `gym eval run`).
//!
//! Facts from NVIDIA-NeMo/Gym@07d6b0d0: `nemo_gym/rollout_collection.py:928-945`
//! (each finished rollout is `orjson.dumps(result) + b"\n"`; failures go to a sidecar
//! file), `nemo_gym/base_resources_server.py:88-110` (a result is the verify response:
//! `responses_create_params` (the Responses API request, `input` its turns), `response`
//! (the Responses API object, `output` its items), `reward`, and with
//! `BaseMultiRewardVerifyResponse` `reward_components`; each server adds its own
//! fields) and `nemo_gym/global_config.py:142` (`_ng_task_index`).
//!
//! The prompt is `responses_create_params.input` as chat turns (a string is one user
//! turn; a list part's `text`s are joined); the completion is the text of the last
//! assistant `message` item of `response.output` (its `output_text` parts joined with
//! no separator), the items before it (reasoning, function calls and their outputs)
//! the column `trajectory`. `expected_answer` is the ground truth; `reward`, each of
//! `reward_components` and every other numeric top-level field are logged; the
//! rollouts of one task (`_ng_task_index`) are a group.

use super::{json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{json, Map, Value};
use std::path::Path;

pub struct NemoGym;

impl Format for NemoGym {
    fn name(&self) -> &'static str {
        "NeMo Gym rollouts"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl
            && peek.has_all(&["responses_create_params", "response", "reward"])
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let paths = options.logged_paths.clone();
        json_rows::map_lines_or_bad(path, move |line, object| row(line, object, &paths))
    }
}

/// A Responses API content: a string, or parts whose `text`s are joined.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        _ => None,
    }
}

/// `responses_create_params.input` as chat turns.
fn prompt_turns(input: &Value) -> Result<Vec<Value>, String> {
    match input {
        Value::String(s) => Ok(vec![json!({"role": "user", "content": s})]),
        Value::Array(items) => Ok(items
            .iter()
            .filter_map(|item| {
                let role = item.get("role")?.as_str()?;
                let content = content_text(item.get("content")?)?;
                Some(json!({"role": role, "content": content}))
            })
            .collect()),
        other => Err(format!(
            "\"responses_create_params.input\" is {}, not text or a list of input items",
            super::wandb::kind(other)
        )),
    }
}

fn row(line: usize, object: Map<String, Value>, paths: &[String]) -> Result<Row, String> {
    let whole = Value::Object(object);
    let mut facts = Facts::default();
    let prompt = prompt_turns(&whole["responses_create_params"]["input"])?;
    let Some(output) = whole["response"]["output"].as_array() else {
        return Err("\"response.output\" is not a list of output items".into());
    };
    let last = output
        .iter()
        .rposition(|i| i["type"] == "message" && i["role"] == "assistant");
    let (completion, trajectory) = match last {
        Some(at) => (
            content_text(&output[at]["content"]).unwrap_or_default(),
            output[..at].to_vec(),
        ),
        None => (String::new(), output.clone()),
    };
    let paths_logged = {
        let mut f = Facts::default();
        json_rows::add_logged_paths(&whole, paths, &mut f);
        f.logged
    };
    let reward = &whole["reward"];
    if !(reward.is_number() || reward.is_null()) {
        return Err(format!(
            "\"reward\" is {}, not a number",
            super::wandb::kind(reward)
        ));
    }
    let Value::Object(object) = whole else {
        unreachable!("made from an object")
    };
    let mut sample = Map::new();
    sample.insert("prompt".into(), Value::Array(prompt));
    sample.insert("completion".into(), Value::String(completion));
    if let Some(truth) = object.get("expected_answer") {
        sample.insert("ground_truth".into(), truth.clone());
    }
    sample.insert("trajectory".into(), Value::Array(trajectory));
    facts.group = object.get("_ng_task_index").map(|v| v.to_string());
    for (key, value) in object {
        match key.as_str() {
            "responses_create_params" | "response" => {}
            "_ng_task_index" | "_ng_rollout_index" => {
                sample.insert(key, value);
            }
            "reward_components" => {
                for (name, v) in value.as_object().into_iter().flatten() {
                    facts.logged.push((name.clone(), Logged::of_json(v)));
                }
            }
            _ if value.is_number() || key == "reward" => {
                facts.logged.push((key, Logged::of_json(&value)));
            }
            _ => {
                sample.insert(key, value);
            }
        }
    }
    for (name, v) in paths_logged {
        if facts.logged(&name).is_none() {
            facts.logged.push((name, v));
        }
    }
    Ok(json_rows::row(line, sample, facts, &Default::default()))
}
