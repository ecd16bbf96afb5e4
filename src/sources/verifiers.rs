//! verifiers' saved evaluations: `results.jsonl` (beside a `metadata.json`).
//!
//! Facts from `make_dataset` and `save_to_disk` in verifiers 0.1.9's
//! `verifiers/utils/eval_utils.py` (the wheel on PyPI): a Hugging Face
//! `Dataset.to_json` of the columns `example_id`, `prompt` and `completion`
//! (message lists, or text for completion environments), `task`, `reward`, `error`,
//! `generation_ms`, `scoring_ms`, `total_ms`, then `info` and `answer` only when
//! some row has one, then one column per reward function and metric (the rubric's
//! `metrics`), then any state columns asked for. A row is already a prompt and
//! completion sample (a chat one, `messages`, when both are message lists, with
//! `prompt` and `completion` kept as columns); `reward` and the metric columns are what was logged, and the
//! rollouts of one example (`example_id`) are a group.

use super::{json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{Map, Value};
use std::path::Path;

/// Numeric columns that are timings and counts, not scores.
const NOT_SCORES: &[&str] = &[
    "example_id",
    "generation_ms",
    "scoring_ms",
    "total_ms",
    "num_turns",
];

pub struct Verifiers;

impl Format for Verifiers {
    fn name(&self) -> &'static str {
        "verifiers results"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl
            && peek.has_all(&["prompt", "completion", "reward"])
            && (peek.has("example_id") || peek.file_name() == "results.jsonl")
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let paths = options.logged_paths.clone();
        json_rows::map_lines(path, move |line, object| row(line, object, &paths))
    }
}

fn row(line: usize, object: Map<String, Value>, paths: &[String]) -> Row {
    let mut facts = Facts::default();
    json_rows::add_logged_paths(&Value::Object(object.clone()), paths, &mut facts);
    let mut sample = Map::new();
    // a chat rollout is in chat form (SPEC §3): the prompt's turns then the
    // completion's, with `prompt` and `completion` kept as columns
    if let (Some(Value::Array(p)), Some(Value::Array(c))) =
        (object.get("prompt"), object.get("completion"))
    {
        let turns: Vec<Value> = p.iter().chain(c).cloned().collect();
        sample.insert("messages".into(), Value::Array(turns));
    }
    for (key, value) in object {
        let score = !NOT_SCORES.contains(&key.as_str())
            && (value.is_number() || (key == "reward" && value.is_null()));
        if key == "example_id" {
            facts.group = Some(match &value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        }
        if score {
            facts.logged.push((key, Logged::of_json(&value)));
        } else {
            sample.insert(key, value);
        }
    }
    Row {
        line,
        sample: json_rows::sample_text(&sample),
        facts,
        bad: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_keeps_its_conversation_and_logs_reward_and_metrics() {
        let text = r#"{"example_id": 2, "prompt": [{"role": "user", "content": "2+2?"}], "completion": [{"role": "assistant", "content": "4"}], "task": "default", "reward": 1.0, "error": null, "generation_ms": 5.0, "scoring_ms": 1.0, "total_ms": 6.0, "answer": "4", "correct_answer_reward_func": 1.0, "num_turns": 1}"#;
        let Value::Object(object) = json_rows::parse(text).unwrap() else {
            panic!()
        };
        let row = row(1, object, &[]);
        assert_eq!(
            row.sample,
            r#"{"messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"4"}],"example_id":2,"prompt":[{"role":"user","content":"2+2?"}],"completion":[{"role":"assistant","content":"4"}],"task":"default","error":null,"generation_ms":5.0,"scoring_ms":1.0,"total_ms":6.0,"answer":"4","num_turns":1}"#
        );
        assert_eq!(row.facts.group.as_deref(), Some("2"));
        assert_eq!(
            row.facts.logged,
            vec![
                ("reward".to_string(), Logged::Score(Some(1.0))),
                (
                    "correct_answer_reward_func".to_string(),
                    Logged::Score(Some(1.0))
                ),
            ]
        );
    }
}
