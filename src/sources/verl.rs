//! veRL's rollout and validation dumps: `{rollout_data_dir,validation_data_dir}/{step}.jsonl`.
//!
//! Facts from `RayPPOTrainer._dump_generations` and `_log_rollout_data` in
//! volcengine/verl `verl/trainer/ppo/ray_trainer.py` (commit b178a3cd56f5): one
//! `json.dumps(entry, ensure_ascii=False)` line per sample with `input` (the prompt
//! decoded with `skip_special_tokens=True`), `output` (the response, likewise), `gts`
//! (`reward_model.ground_truth`, any JSON type), `score` (the summed token-level
//! scores), `step`, then every `reward_extra_infos_dict` key whose list has one value
//! per sample (numbers, booleans such as `acc`, strings such as `pred`, and
//! `request_id`); validation dumps carry the reward's `reward` too. Python writes a
//! NaN score as a bare `NaN` token. No `data_source`, `extra_info` or `uid` is dumped.

use super::{group_id, json_rows, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{Map, Value};
use std::path::Path;

pub struct Verl;

impl Format for Verl {
    fn name(&self) -> &'static str {
        "veRL rollout dump"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == super::Container::Jsonl
            && peek.has_all(&["input", "output"])
            && (peek.has("score") || peek.has("step"))
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let paths = options.logged_paths.clone();
        let kept = options.kept.clone();
        json_rows::map_lines(path, move |line, object| row(line, object, &paths, &kept))
    }
}

fn row(line: usize, object: Map<String, Value>, paths: &[String], kept: &[String]) -> Row {
    let mut facts = Facts::default();
    json_rows::add_logged_paths(&Value::Object(object.clone()), paths, &mut facts);
    let mut sample = Map::new();
    let mut columns = Map::new();
    let input = object.get("input").cloned().unwrap_or(Value::Null);
    for (key, value) in object {
        match key.as_str() {
            "input" => {
                sample.insert("prompt".into(), value);
            }
            "output" => {
                sample.insert("completion".into(), value);
            }
            "gts" => {
                columns.insert("ground_truth".into(), value);
            }
            "step" => facts.step = value.as_i64(),
            _ if kept.contains(&key) => {
                columns.insert(key, value);
            }
            // scores, and every numeric or boolean extra the reward returned
            _ if matches!(value, Value::Number(_) | Value::Bool(_))
                || (value.is_null() && matches!(key.as_str(), "score" | "reward")) =>
            {
                facts.logged.push((key, Logged::of_json(&value)));
            }
            _ => {
                columns.insert(key, value);
            }
        }
    }
    sample.extend(columns);
    let step = facts.step.unwrap_or(0).to_string();
    let prompt = input
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| input.to_string());
    facts.group = Some(group_id(&[step.as_bytes(), prompt.as_bytes()]));
    json_rows::row(line, sample, facts, &Default::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_line_is_a_prompt_completion_sample_with_its_scores_logged() {
        let text = r#"{"input": "user: 2+2?", "output": "4", "gts": "4", "score": 1.0, "step": 3, "acc": true, "pred": "4", "request_id": "r1"}"#;
        let Value::Object(object) = json_rows::parse(text).unwrap() else {
            panic!()
        };
        let row = row(7, object, &[], &[]);
        assert_eq!(
            row.sample,
            r#"{"prompt":"user: 2+2?","completion":"4","ground_truth":"4","pred":"4","request_id":"r1"}"#
        );
        assert_eq!(row.line, 7);
        assert_eq!(row.facts.step, Some(3));
        assert_eq!(
            row.facts.logged,
            vec![
                ("score".to_string(), Logged::Score(Some(1.0))),
                ("acc".to_string(), Logged::Score(Some(1.0))),
            ]
        );
        assert_eq!(row.facts.group, Some(group_id(&[b"3", b"user: 2+2?"])));
    }
}
