//! Weights & Biases tables, local: `wandb/{run,offline-run}-*/files/media/table/
//! {key}_{step}_{id}.table.json`, and the TRL completion rows they (and trackio's
//! tables) hold.
//!
//! Facts from wandb/wandb@b6e29505 `wandb/sdk/data_types/table.py:687-701`
//! (`Table.bind_to_run`: `util.json_dump_safer({"columns": [...], "data": [[...], ...]})`,
//! so a NaN is a bare `NaN`) and `wandb/sdk/data_types/base_types/media.py:23-45`
//! (`_wb_filename`: `f"{key}_{step}_{id}{extension}"`). The `{step}` in the name is
//! wandb's own counter when the file was bound, not the step given to `wandb.log`: in
//! the fixture wandb 0.31 itself wrote (tests/fixtures/sources/wandb_trackio_make.py)
//! the tables logged at steps 2 and 4 are `completions_0_…` and `completions_2_…`. So
//! a table's own `step` column (TRL's) wins; the name's is used only without one.
//!
//! TRL logs its completions as such a table (huggingface/trl@f2cd5771
//! `trl/trainer/grpo_trainer.py:3311-3349`: `pd.DataFrame({"step", "prompt",
//! "completion", **rewards, **extra, "advantage"})`, then
//! `backend.log({"completions": backend.Table(dataframe=df)})` for wandb and trackio
//! alike). A row with `prompt` and `completion` is a text sample; each column whose
//! values are all numbers (NaN included) is a logged score (each reward function,
//! `advantage`); the other columns (`log_extra`'s, e.g. `solution`) are the sample's.
//! The rollouts of one prompt within a step are a group.

use super::{group_id, json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::path::Path;

pub struct WandbTable;

impl Format for WandbTable {
    fn name(&self) -> &'static str {
        "W&B table"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::JsonDoc
            && peek.has_all(&["columns", "data"])
            && peek.file_name().ends_with(".table.json")
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let shown = path.display().to_string();
        let doc = json_rows::read_doc(path)?;
        let columns: Vec<String> = match &doc["columns"] {
            Value::Array(c) => c
                .iter()
                .map(|c| match c {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            other => {
                return Err(format!(
                    "{shown}: \"columns\" is {}, not a list of column names: is this a W&B table?",
                    kind(other)
                ))
            }
        };
        let Value::Array(data) = doc["data"].clone() else {
            return Err(format!(
                "{shown}: \"data\" is {}, not a list of rows: is this a W&B table?",
                kind(&doc["data"])
            ));
        };
        let objects: Vec<Result<Map<String, Value>, String>> = data
            .into_iter()
            .map(|row| match row {
                Value::Array(values) if values.len() == columns.len() => {
                    Ok(columns.iter().cloned().zip(values).collect())
                }
                Value::Array(values) => Err(format!(
                    "{} values for {} columns ({}): the row is cut short or the file was edited; fix or remove that row",
                    values.len(),
                    columns.len(),
                    columns.join(", ")
                )),
                other => Err(format!("{}, not a list of values", kind(&other))),
            })
            .collect();
        let scores = score_columns(objects.iter().filter_map(|o| o.as_ref().ok()));
        let step = name_step(path);
        let paths = options.logged_paths.clone();
        Ok(Box::new(objects.into_iter().enumerate().map(
            move |(i, object)| {
                Ok(match object {
                    Ok(object) => trl_row(i + 1, object, &scores, step, &paths),
                    Err(why) => json_rows::bad_row(i + 1, &format!("{shown} row {}: {why}", i + 1)),
                })
            },
        )))
    }
}

/// What a JSON value is, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The `{step}` of `{key}_{step}_{id}.table.json`.
fn name_step(path: &Path) -> Option<i64> {
    let name = path.file_name()?.to_string_lossy();
    let stem = name.strip_suffix(".table.json")?;
    let mut parts = stem.rsplitn(3, '_');
    let (_id, step) = (parts.next()?, parts.next()?);
    step.parse().ok()
}

/// A non-finite float as trackio's `serialize_values` writes it (a string).
fn non_finite(v: &Value) -> bool {
    matches!(v.as_str(), Some("NaN" | "Infinity" | "-Infinity"))
}

/// The columns (besides `step`) whose every value is a number, or no number (null,
/// NaN), with at least one number: the logged scores.
pub fn score_columns<'a>(rows: impl Iterator<Item = &'a Map<String, Value>>) -> HashSet<String> {
    let mut numeric: Option<HashSet<String>> = None;
    let mut seen_number = HashSet::new();
    for row in rows {
        let here: HashSet<String> = row
            .iter()
            .filter(|(k, v)| {
                k.as_str() != "step" && (v.is_number() || v.is_null() || non_finite(v))
            })
            .map(|(k, v)| {
                if v.is_number() {
                    seen_number.insert(k.clone());
                }
                k.clone()
            })
            .collect();
        numeric = Some(match numeric {
            None => here,
            Some(n) => n.intersection(&here).cloned().collect(),
        });
    }
    numeric
        .unwrap_or_default()
        .into_iter()
        .filter(|k| seen_number.contains(k))
        .collect()
}

/// A TRL completions row (a table row as a JSON object) as a sample: `prompt` and
/// `completion` (or `messages`) and the other columns; its step (`step`, else
/// `fallback_step`), the group of its prompt within the step, the `scores` logged.
pub fn trl_row(
    line: usize,
    object: Map<String, Value>,
    scores: &HashSet<String>,
    fallback_step: Option<i64>,
    paths: &[String],
) -> Row {
    let mut facts = Facts::default();
    let whole = Value::Object(object.clone()); // its own logged names come first
    let mut sample = Map::new();
    for key in ["messages", "prompt", "completion"] {
        if let Some(v) = object.get(key) {
            sample.insert(key.into(), v.clone());
        }
    }
    facts.step = match object.get("step") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    }
    .or(fallback_step);
    for (key, value) in object {
        if matches!(key.as_str(), "messages" | "prompt" | "completion" | "step") {
            continue;
        }
        if scores.contains(&key) {
            let logged = if non_finite(&value) {
                Logged::Score(None)
            } else {
                Logged::of_json(&value)
            };
            facts.logged.push((key, logged));
        } else {
            sample.insert(key, value);
        }
    }
    let prompt = match sample.get("prompt").or_else(|| sample.get("messages")) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let step = facts.step.unwrap_or(0).to_string();
    facts.group = Some(group_id(&[step.as_bytes(), prompt.as_bytes()]));
    json_rows::add_logged_paths(&whole, paths, &mut facts);
    json_rows::row(line, sample, facts, &Default::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_gives_wandbs_step_and_numeric_columns_are_scores() {
        assert_eq!(
            name_step(Path::new("t/completions_2_a59166b858c59eff4d74.table.json")),
            Some(2)
        );
        assert_eq!(name_step(Path::new("a_b_c_7_ff.table.json")), Some(7));
        let rows: Vec<Map<String, Value>> = [
            r#"{"step": 2, "prompt": "p", "r": 1.0, "s": "4", "n": null}"#,
            r#"{"step": 2, "prompt": "p", "r": "NaN", "s": "5", "n": null}"#,
        ]
        .iter()
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
        let scores = score_columns(rows.iter());
        assert_eq!(scores, HashSet::from(["r".to_string()]));
    }
}
