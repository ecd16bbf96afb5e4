//! Prompt sets (SPEC §13, §15): JSONL, or Parquet as a veRL dataset is written
//! (`prompt` a list of messages, `data_source`, `reward_model` {ground_truth, style},
//! `extra_info`, `ability`). Each row is a prompt — `prompt` (messages or text) or
//! `messages` — and the columns it carries into every row generated from it.
//!
//! Kept small and apart so that it can later read through the samples sources of
//! `src/sources/` (which read the same Parquet files for rollouts).

use serde_json::{Map, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;

/// What is asked: chat turns (to `/v1/chat/completions`) or a text (to
/// `/v1/completions`, unchanged).
#[derive(Clone, Debug, PartialEq)]
pub enum PromptInput {
    Chat(Vec<Value>),
    Text(String),
}

/// One prompt of a set.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    /// Where it was read (`prompts.jsonl:3`, `train.parquet row 3`).
    pub at: String,
    pub input: PromptInput,
    /// Every other column, in the row's order.
    pub columns: Map<String, Value>,
}

/// What a prompt set needs, said wherever one is missing.
const NEEDED: &str = "a prompt set needs `prompt` (a string, or a list of {\"role\", \"content\"} messages) or `messages` in every row";

/// Reads every prompt of the set at `path` (Parquet by its `.parquet` name or its
/// `PAR1` magic, JSONL otherwise). Any row that is not a prompt is an error naming
/// the file and row.
pub fn read(path: &Path) -> Result<Vec<Prompt>, String> {
    let shown = path.display().to_string();
    let mut file = std::fs::File::open(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if is_parquet(path, &mut file) {
        read_parquet(file, &shown)
    } else {
        read_jsonl(file, &shown)
    }
}

fn is_parquet(path: &Path, file: &mut std::fs::File) -> bool {
    use std::io::{Read, Seek};
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
    {
        return true;
    }
    let mut magic = [0u8; 4];
    let is = file.read_exact(&mut magic).is_ok() && &magic == b"PAR1";
    let _ = file.rewind();
    is
}

fn read_jsonl(file: std::fs::File, shown: &str) -> Result<Vec<Prompt>, String> {
    let mut prompts = Vec::new();
    for (number, line) in BufReader::new(file).lines().enumerate() {
        let at = format!("{shown}:{}", number + 1);
        let line = line.map_err(|e| format!("{at}: cannot read: {e}"))?;
        let text = line.trim_start_matches('\u{FEFF}').trim();
        if text.is_empty() {
            continue;
        }
        let row = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(row)) => row,
            Ok(_) => return Err(format!("{at}: not a JSON object; {NEEDED}")),
            Err(e) => return Err(format!("{at}: not JSON ({e}); {NEEDED}")),
        };
        prompts.push(from_row(row, at)?);
    }
    if prompts.is_empty() {
        return Err(format!("{shown} holds no prompt; {NEEDED}"));
    }
    Ok(prompts)
}

fn read_parquet(file: std::fs::File, shown: &str) -> Result<Vec<Prompt>, String> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let damaged = |e: &dyn std::fmt::Display| format!("{shown}: not a readable Parquet file: {e}");
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.with_batch_size(1024).build())
        .map_err(|e| damaged(&e))?;
    let mut prompts = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| damaged(&e))?;
        // each row as JSON, as Arrow's own writer gives it: lists, structs and maps
        // nested, nulls kept (a reward function reading the dataset sees them)
        let mut lines = Vec::new();
        let mut writer = arrow_json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, arrow_json::writer::LineDelimited>(&mut lines);
        writer.write(&batch).map_err(|e| damaged(&e))?;
        writer.finish().map_err(|e| damaged(&e))?;
        drop(writer);
        for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let at = format!("{shown} row {}", prompts.len() + 1);
            let row = match serde_json::from_slice::<Value>(line) {
                Ok(Value::Object(row)) => row,
                _ => return Err(format!("{at}: cannot read the row as JSON")),
            };
            prompts.push(from_row(row, at)?);
        }
    }
    if prompts.is_empty() {
        return Err(format!("{shown} holds no rows; {NEEDED}"));
    }
    Ok(prompts)
}

/// One row as a prompt: `messages` (a list) wins; else `prompt`, a list of messages or
/// a string. Trailing assistant turns are what a samples file completed, not the
/// prompt: they are left out (and `completion` with them), so that a samples file is a
/// prompt set too.
pub fn from_row(mut row: Map<String, Value>, at: String) -> Result<Prompt, String> {
    let input = if let Some(Value::Array(turns)) = row.get("messages") {
        let turns = prompt_turns(turns);
        row.remove("messages");
        // a chat row's `prompt` is a column of its own (SPEC §3): kept
        chat(turns, &at)?
    } else {
        match row.remove("prompt") {
            Some(Value::Array(turns)) => chat(prompt_turns(&turns), &at)?,
            Some(Value::String(text)) => PromptInput::Text(text),
            Some(other) => {
                return Err(format!(
                    "{at}: `prompt` is {}, not a string or a list of messages; {NEEDED}",
                    kind(&other)
                ))
            }
            None => {
                let found: Vec<&str> = row.keys().map(String::as_str).collect();
                let found = if found.is_empty() {
                    "none".to_string()
                } else {
                    found.join(", ")
                };
                let messages_note = match row.get("messages") {
                    Some(m) => format!(" (`messages` is {}, not a list)", kind(m)),
                    None => String::new(),
                };
                return Err(format!(
                    "{at}: no `prompt` or `messages`{messages_note}; columns found: {found}; {NEEDED}"
                ));
            }
        }
    };
    row.remove("completion");
    Ok(Prompt {
        at,
        input,
        columns: row,
    })
}

/// The turns before the trailing assistant turns.
fn prompt_turns(turns: &[Value]) -> Vec<Value> {
    let end = turns
        .iter()
        .rposition(|t| t.get("role").and_then(Value::as_str) != Some("assistant"))
        .map_or(0, |i| i + 1);
    turns[..end].to_vec()
}

fn chat(turns: Vec<Value>, at: &str) -> Result<PromptInput, String> {
    if turns.is_empty() {
        return Err(format!(
            "{at}: the prompt has no turn before the assistant's; {NEEDED}"
        ));
    }
    if let Some(bad) = turns
        .iter()
        .position(|t| t.get("role").and_then(Value::as_str).is_none())
    {
        return Err(format!(
            "{at}: prompt turn {} has no \"role\" string (each turn is {{\"role\": ..., \"content\": ...}})",
            bad + 1
        ));
    }
    Ok(PromptInput::Chat(turns))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_verl_row_is_a_chat_prompt_with_its_columns() {
        let p = from_row(
            row(json!({"data_source": "gsm8k", "prompt": [{"role": "user", "content": "2+2?"}], "ability": "math",
                       "reward_model": {"ground_truth": "4", "style": "rule"}, "extra_info": {"index": 0}})),
            "t row 1".into(),
        )
        .unwrap();
        assert_eq!(
            p.input,
            PromptInput::Chat(vec![json!({"role": "user", "content": "2+2?"})])
        );
        assert_eq!(
            Value::Object(p.columns),
            json!({"data_source": "gsm8k", "ability": "math", "reward_model": {"ground_truth": "4", "style": "rule"}, "extra_info": {"index": 0}})
        );
    }

    #[test]
    fn a_samples_row_is_its_prompt() {
        let p = from_row(
            row(json!({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "ground_truth": "4"})),
            "s:1".into(),
        )
        .unwrap();
        assert_eq!(
            p.input,
            PromptInput::Chat(vec![
                json!({"role": "system", "content": "s"}),
                json!({"role": "user", "content": "q"})
            ])
        );
        let text = from_row(
            row(json!({"prompt": "2+2=", "completion": "5", "answer": "4"})),
            "s:2".into(),
        )
        .unwrap();
        assert_eq!(text.input, PromptInput::Text("2+2=".into()));
        assert_eq!(Value::Object(text.columns), json!({"answer": "4"}));
    }

    #[test]
    fn a_row_without_a_prompt_lists_what_it_has() {
        assert_eq!(
            from_row(row(json!({"question": "q", "answer": "4"})), "p.jsonl:2".into()).unwrap_err(),
            "p.jsonl:2: no `prompt` or `messages`; columns found: question, answer; a prompt set needs `prompt` (a string, or a list of {\"role\", \"content\"} messages) or `messages` in every row"
        );
        assert!(from_row(row(json!({"prompt": 3})), "p:1".into())
            .unwrap_err()
            .starts_with("p:1: `prompt` is a number, not a string or a list of messages"));
        assert!(from_row(
            row(json!({"messages": [{"role": "assistant", "content": "a"}]})),
            "p:1".into()
        )
        .unwrap_err()
        .starts_with("p:1: the prompt has no turn before the assistant's"));
    }

    #[test]
    fn a_jsonl_set_names_its_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        std::fs::write(&path, "{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\"\n").unwrap();
        let e = read(&path).unwrap_err();
        assert!(
            e.starts_with(&format!("{}:3: not JSON (", path.display())),
            "{e}"
        );
        std::fs::write(
            &path,
            "\u{FEFF}{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\"}\n",
        )
        .unwrap();
        let set = read(&path).unwrap();
        assert_eq!(set.len(), 2);
        assert_eq!(set[1].at, format!("{}:3", path.display()));
    }
}
