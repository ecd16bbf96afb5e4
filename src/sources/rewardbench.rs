//! RewardBench preference rows as samples (SPEC §13, §20), JSONL as the datasets'
//! rows are written (`allenai/reward-bench` v1: `{prompt, chosen, rejected, subset,
//! id}`, one chosen and one rejected string; `allenai/reward-bench-2`: `{id, prompt,
//! chosen: [..], rejected: [..], num_correct, total_completions, subset}`).
//!
//! Each completion is a sample of its prompt, in reward-bench's order: chosen then
//! rejected (allenai/reward-bench@05a9005 `rewardbench/utils.py:627-638` unrolls a v2
//! row so), all of one row one rollout group. Each sample carries a `rewardbench`
//! column `{version, id, subset, role, index, num_correct}` that the scoring
//! (`trust::rewardbench`) reads back; the row's `id` and `subset` stay columns. A row
//! missing a field is one bad sample naming the row and the field.

use super::{json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::Facts;
use serde_json::{json, Map, Value};
use std::path::Path;

pub struct RewardBench;

/// The column each completion's sample carries.
pub const COLUMN: &str = "rewardbench";

impl Format for RewardBench {
    fn name(&self) -> &'static str {
        "RewardBench rows"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl
            && peek.has_all(&["prompt", "chosen", "rejected", "subset", "id"])
    }

    fn open(&self, path: &Path, _options: &Options) -> Result<Rows, String> {
        let shown = path.display().to_string();
        let lines = json_rows::JsonLines::open(path)?;
        // samples are numbered by completion: a row holds several
        let mut number = 0;
        Ok(Box::new(lines.flat_map(move |line| {
            let rows = match line {
                Ok((n, Ok(row))) => {
                    completions(&row, n).unwrap_or_else(|why| vec![json_rows::bad_row(0, &why)])
                }
                Ok((n, Err(why))) => {
                    vec![json_rows::bad_row(0, &format!("line {n}: {why}"))]
                }
                Err(e) => return vec![Err(format!("cannot read {shown}: {e}"))],
            };
            json_rows::numbered(rows, &mut number)
        })))
    }
}

/// The samples of one row, or what is missing from it.
fn completions(row: &Map<String, Value>, line: usize) -> Result<Vec<Row>, String> {
    let field = |name: &str| row.get(name).filter(|v| !v.is_null());
    for name in ["id", "prompt", "chosen", "rejected", "subset"] {
        if field(name).is_none() {
            return Err(format!(
                "the RewardBench row on line {line} has no \"{name}\""
            ));
        }
    }
    let texts = |name: &str| -> Result<Vec<Value>, String> {
        match &row[name] {
            Value::String(_) => Ok(vec![row[name].clone()]),
            Value::Array(items) if !items.is_empty() => Ok(items.clone()),
            Value::Array(_) => Err(format!("\"{name}\" of the RewardBench row on line {line} is empty")),
            other => Err(format!(
                "\"{name}\" of the RewardBench row on line {line} is {other}, not a completion or a list of them"
            )),
        }
    };
    let version = if row["chosen"].is_array() { 2 } else { 1 };
    if version == 2 {
        for name in ["num_correct", "total_completions"] {
            if field(name).and_then(Value::as_u64).is_none() {
                return Err(format!(
                    "the RewardBench 2 row on line {line} has no \"{name}\" (a count)"
                ));
            }
        }
    }
    let (chosen, rejected) = (texts("chosen")?, texts("rejected")?);
    let id = row["id"].clone();
    let subset = row["subset"].clone();
    let num_correct = row
        .get("num_correct")
        .cloned()
        .unwrap_or(json!(chosen.len()));
    let group = match &id {
        Value::String(s) => format!("rewardbench:{s}"),
        other => format!("rewardbench:{other}"),
    };
    let all = chosen
        .into_iter()
        .map(|c| ("chosen", c))
        .chain(rejected.into_iter().map(|r| ("rejected", r)));
    Ok(all
        .enumerate()
        .map(|(index, (role, completion))| {
            let mut sample = Map::new();
            sample.insert("prompt".into(), row["prompt"].clone());
            sample.insert("completion".into(), completion);
            for (k, v) in row {
                if !matches!(k.as_str(), "prompt" | "chosen" | "rejected") {
                    sample.insert(k.clone(), v.clone());
                }
            }
            sample.insert(
                COLUMN.into(),
                json!({"version": version, "id": id, "subset": subset, "role": role,
                       "index": index, "num_correct": num_correct}),
            );
            Row {
                line: 0,
                facts: json_rows::with_seen(
                    &sample,
                    Facts {
                        group: Some(group.clone()),
                        ..Facts::default()
                    },
                    &super::seen::Wanted {
                        label: None,
                        rewardbench: true,
                    },
                ),
                sample: json_rows::sample_text(&sample),
                bad: None,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v2_row_is_its_completions_chosen_first() {
        let row: Value = serde_json::from_str(
            r#"{"id":"7","prompt":"2+2?","chosen":["4"],"rejected":["5","22"],"num_correct":1,"total_completions":3,"subset":"Math"}"#,
        )
        .unwrap();
        let rows = completions(row.as_object().unwrap(), 4).unwrap();
        assert_eq!(rows.len(), 3);
        let first: Value = serde_json::from_str(&rows[0].sample).unwrap();
        assert_eq!(first["completion"], "4");
        assert_eq!(first[COLUMN]["role"], "chosen");
        assert_eq!(first[COLUMN]["version"], 2);
        let last: Value = serde_json::from_str(&rows[2].sample).unwrap();
        assert_eq!(
            (last[COLUMN]["index"].clone(), last["completion"].clone()),
            (json!(2), json!("22"))
        );
        assert_eq!(rows[0].facts.group, rows[2].facts.group);
    }

    #[test]
    fn a_row_missing_a_field_names_it() {
        let row: Value =
            serde_json::from_str(r#"{"id":1,"prompt":"p","chosen":"a","rejected":"b"}"#).unwrap();
        assert_eq!(
            completions(row.as_object().unwrap(), 4).err().unwrap(),
            "the RewardBench row on line 4 has no \"subset\""
        );
    }
}
