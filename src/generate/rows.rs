//! The samples a generation writes (SPEC §3, §15): a chat prompt's completion is a
//! chat row (`messages`: the prompt turns plus the assistant turn), a text prompt's a
//! prompt/completion row (`prompt` and `completion` strings). Each row carries the
//! prompt's columns, `ground_truth` lifted from veRL's `reward_model.ground_truth` when
//! the row has none (every style reads `ground_truth`: reward-kit's argument, veRL's
//! `compute_score`, TRL's column, `answer`'s fallback for simple and verifiers), and
//! the completion's `finish_reason`.

use super::answer::Completion;
use super::prompts::{Prompt, PromptInput};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::Path;

/// The sample line (without its newline) of one completion of `prompt`.
pub fn row(prompt: &Prompt, completion: &Completion) -> String {
    let mut row = Map::new();
    match (&prompt.input, completion) {
        (PromptInput::Chat(turns), Completion::Chat { message, .. }) => {
            let mut messages = turns.clone();
            messages.push(Value::Object(message.clone()));
            row.insert("messages".into(), Value::Array(messages));
        }
        (input, completion) => {
            // a text prompt's completion (a chat prompt is always asked for a chat one)
            let prompt_text = match input {
                PromptInput::Text(text) => text.clone(),
                PromptInput::Chat(_) => String::new(),
            };
            row.insert("prompt".into(), Value::String(prompt_text));
            row.insert(
                "completion".into(),
                Value::String(completion.text().to_string()),
            );
        }
    }
    for (key, value) in &prompt.columns {
        if !row.contains_key(key) {
            row.insert(key.clone(), value.clone());
        }
    }
    if row.get("ground_truth").is_none_or(Value::is_null) {
        if let Some(truth) = prompt
            .columns
            .get("reward_model")
            .and_then(|r| r.get("ground_truth"))
        {
            row.insert("ground_truth".into(), truth.clone());
        }
    }
    row.insert("finish_reason".into(), completion.finish_reason().clone());
    Value::Object(row).to_string()
}

/// Writes the rows of `groups` (each prompt with its completions, in order) to `out`
/// whole or not at all: into a file beside it, renamed over it once complete, so that
/// a kill at any moment leaves the old file or the new one, never half a row.
pub fn write_rows(out: &Path, groups: &[(&Prompt, &[Completion])]) -> Result<usize, String> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", out.display());
    let mut file = tempfile::Builder::new()
        .prefix(".rwb-generate-")
        .suffix(".jsonl.tmp")
        .tempfile_in(dir)
        .map_err(|e| fail(&e))?;
    let rows = {
        let mut writer = std::io::BufWriter::with_capacity(1 << 16, file.as_file_mut());
        let rows = write_rows_to(&mut writer, groups).map_err(|e| fail(&e))?;
        writer.flush().map_err(|e| fail(&e))?;
        rows
    };
    file.as_file().sync_all().map_err(|e| fail(&e))?;
    file.persist(out).map_err(|e| fail(&e.error))?;
    Ok(rows)
}

/// Writes the rows of `groups` to a stream, one line each; the number of rows.
pub fn write_rows_to(
    out: &mut impl Write,
    groups: &[(&Prompt, &[Completion])],
) -> std::io::Result<usize> {
    let mut rows = 0;
    let mut line = String::new();
    for (prompt, completions) in groups {
        for completion in completions.iter() {
            line.clear();
            line.push_str(&row(prompt, completion));
            line.push('\n');
            out.write_all(line.as_bytes())?;
            rows += 1;
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verl_prompt() -> Prompt {
        Prompt {
            at: "t row 1".into(),
            input: PromptInput::Chat(vec![json!({"role": "user", "content": "2+2?"})]),
            columns: json!({"data_source": "gsm8k", "reward_model": {"ground_truth": "4", "style": "rule"}, "extra_info": {"index": 0}})
                .as_object()
                .unwrap()
                .clone(),
        }
    }

    #[test]
    fn a_chat_completion_is_a_chat_row_with_the_prompts_columns() {
        let completion = Completion::Chat {
            message: json!({"role": "assistant", "content": "4"})
                .as_object()
                .unwrap()
                .clone(),
            finish_reason: json!("stop"),
        };
        assert_eq!(
            row(&verl_prompt(), &completion),
            r#"{"messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"4"}],"data_source":"gsm8k","reward_model":{"ground_truth":"4","style":"rule"},"extra_info":{"index":0},"ground_truth":"4","finish_reason":"stop"}"#
        );
    }

    #[test]
    fn a_text_completion_is_a_prompt_completion_row() {
        let prompt = Prompt {
            at: "p:1".into(),
            input: PromptInput::Text("2+2=".into()),
            columns: json!({"ground_truth": "4", "finish_reason": "old"})
                .as_object()
                .unwrap()
                .clone(),
        };
        let completion = Completion::Text {
            text: " 4".into(),
            finish_reason: json!("length"),
        };
        assert_eq!(
            row(&prompt, &completion),
            r#"{"prompt":"2+2=","completion":" 4","ground_truth":"4","finish_reason":"length"}"#
        );
    }

    #[test]
    fn a_written_file_replaces_the_old_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.jsonl");
        std::fs::write(&out, "old\n").unwrap();
        let prompt = verl_prompt();
        let c = Completion::Chat {
            message: json!({"role": "assistant", "content": "4"})
                .as_object()
                .unwrap()
                .clone(),
            finish_reason: json!("stop"),
        };
        let completions = [c.clone(), c];
        let rows = write_rows(&out, &[(&prompt, &completions[..])]).unwrap();
        assert_eq!(rows, 2);
        let text = std::fs::read_to_string(&out).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with("\"finish_reason\":\"stop\"}\n"));
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from("out.jsonl")]);
    }
}
