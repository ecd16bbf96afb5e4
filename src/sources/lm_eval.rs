//! lm-evaluation-harness `--log_samples` files: `{output_path}/{model_name_sanitized}/
//! samples_{task}_{date_id}.jsonl`.
//!
//! Facts from EleutherAI/lm-evaluation-harness@4e7e0d47: `lm_eval/evaluator.py:636-667`
//! (a logged sample: `doc_id`, `doc`, `target` (`doc_to_target(doc)`), `arguments`
//! (each request's args), `resps`, `filtered_resps` (per request, after the filter),
//! `filter`, `metrics` (the names), `doc_hash`, `prompt_hash`, `target_hash`, then
//! each metric's value; one per document and filter) and
//! `lm_eval/loggers/evaluation_tracker.py:336-374` (`save_results_samples`: the
//! arguments become `{"gen_args_0": {"arg_0": context, "arg_1": gen_kwargs}}`,
//! `resps` and `filtered_resps` are `sanitize_list`ed, `target` is `str()`ed; one
//! `json.dumps(sample, default=handle_non_serializable, ensure_ascii=False)` a line).
//!
//! The prompt is `arg_0` as one user turn, or, for a chat model run with
//! `--apply_chat_template`, the messages it holds (a one-element list holding the chat
//! as JSON: lm-eval's `JsonChatStr`; or the list itself). The completion is
//! `resps[0][0]`, the generation as written (never `filtered_resps`, a column).
//! `target` is the ground truth; each metric named in `metrics` with a number or
//! boolean value is logged; one document's lines (one per filter) are a group.

use super::{json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{json, Map, Value};
use std::path::Path;

pub struct LmEvalSamples;

impl Format for LmEvalSamples {
    fn name(&self) -> &'static str {
        "lm-evaluation-harness samples"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl
            && peek.has_all(&[
                "doc_id",
                "doc",
                "target",
                "arguments",
                "resps",
                "filtered_resps",
            ])
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let paths = options.logged_paths.clone();
        json_rows::map_lines_or_bad(path, move |line, object| row(line, object, &paths))
    }
}

/// The prompt's turns from `arguments.gen_args_0.arg_0`.
fn prompt_turns(context: &Value) -> Result<Value, String> {
    match context {
        Value::String(s) => Ok(json!([{"role": "user", "content": s}])),
        // JsonChatStr, a NamedTuple of one string: the chat as JSON
        Value::Array(items) if items.len() == 1 && items[0].is_string() => {
            let text = items[0].as_str().unwrap_or_default();
            match serde_json::from_str::<Value>(text) {
                Ok(chat @ Value::Array(_)) => Ok(chat),
                _ => Ok(json!([{"role": "user", "content": text}])),
            }
        }
        Value::Array(items) if items.iter().all(|m| m.get("role").is_some()) => Ok(context.clone()),
        other => Err(format!(
            "\"arguments.gen_args_0.arg_0\" is {}, not the rendered context",
            super::wandb::kind(other)
        )),
    }
}

fn row(line: usize, object: Map<String, Value>, paths: &[String]) -> Result<Row, String> {
    let whole = Value::Object(object);
    let mut facts = Facts::default();
    let args = &whole["arguments"]["gen_args_0"];
    let prompt = prompt_turns(&args["arg_0"])?;
    let completion = match &whole["resps"][0][0] {
        Value::String(s) => s.clone(),
        Value::Null => return Err("no generation at \"resps\"[0][0]".into()),
        other => other.to_string(),
    };
    let metrics: Vec<String> = whole["metrics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m.as_str().map(str::to_string))
        .collect();
    for name in &metrics {
        if let Some(v) = whole.get(name).filter(|v| v.is_number() || v.is_boolean()) {
            facts.logged.push((name.clone(), Logged::of_json(v)));
        }
    }
    facts.group = whole.get("doc_id").map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    json_rows::add_logged_paths(&whole, paths, &mut facts);
    let mut sample = Map::new();
    sample.insert("prompt".into(), prompt);
    sample.insert("completion".into(), Value::String(completion));
    sample.insert("ground_truth".into(), whole["target"].clone());
    for key in ["doc_id", "doc", "filter", "filtered_resps"] {
        if let Some(v) = whole.get(key) {
            sample.insert(key.into(), v.clone());
        }
    }
    if let Some(kwargs) = args.get("arg_1") {
        sample.insert("gen_kwargs".into(), kwargs.clone());
    }
    Ok(json_rows::row(line, sample, facts, &Default::default()))
}
