//! A JSONL file of a shape rwb does not know (SPEC §13's last line): its columns, and
//! the `[samples.NAME]` lines that would map them, said once for the file instead of
//! a `BadSample` reason per line. The lines name the columns whose names say what
//! they hold (`question` a prompt, `answer` a ground truth, `reward` a logged score)
//! and `"COLUMN"` where none does: a first draft the user sees and edits, never a
//! mapping rwb applies by itself.

use serde_json::{Map, Value};
use std::path::Path;

/// Columns that hold a prompt, by name, most telling first.
const PROMPTS: &[&str] = &[
    "prompt",
    "question",
    "query",
    "problem",
    "instruction",
    "input",
    "input_prompt",
    "context",
    "request",
];
/// Columns that hold a completion.
const COMPLETIONS: &[&str] = &[
    "completion",
    "response",
    "output",
    "generation",
    "model_output",
    "output_response",
    "generated_text",
    "prediction",
    "model_answer",
    "reply",
    "pred",
    "text",
];
/// Columns that hold a ground truth.
const TRUTHS: &[&str] = &[
    "ground_truth",
    "answer",
    "solution",
    "target",
    "reference",
    "expected_answer",
    "gold",
    "label",
    "gts",
];
const GROUPS: &[&str] = &[
    "group",
    "group_id",
    "uid",
    "prompt_id",
    "example_id",
    "task_id",
];
const STEPS: &[&str] = &["step", "global_step", "train_step", "iteration"];
/// What a logged score's name holds: a numeric column named so is one.
const SCORES: &[&str] = &["reward", "score", "acc", "correct", "pass"];

/// The keys of rwb's own result rows (`rwb run --format jsonl`): a file of them is
/// saved output, not a shape to map.
const RESULT_ROW: &[&str] = &["sample", "score"];

/// Whether a first row with these keys is one of rwb's own result rows.
pub fn is_result_row(keys: &[String]) -> bool {
    RESULT_ROW.iter().all(|k| keys.iter().any(|c| c == k))
}

/// What to say of a JSONL file of an unknown shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Unknown {
    /// `FILE: rwb does not recognise this JSONL file (columns a, b, c)`.
    pub summary: String,
    /// The `rwb.toml` lines, `[samples.NAME]` first.
    pub lines: Vec<String>,
}

impl Unknown {
    /// The message with the lines below it, indented.
    pub fn text(&self) -> String {
        let mut text = format!(
            "{}: none of its rows is a sample; map its columns in rwb.toml:",
            self.summary
        );
        for line in &self.lines {
            text += "\n    ";
            text += line;
        }
        text
    }

    /// The message on one line (the lines after the table's name joined by `, `).
    pub fn inline(&self) -> String {
        let (table, keys) = self.lines.split_first().expect("a table line");
        let keys: Vec<&str> = keys
            .iter()
            .filter(|l| !l.starts_with('#'))
            .map(String::as_str)
            .collect();
        format!(
            "{}: map its columns in rwb.toml: {table} with {} (name it with -s to see the lines)",
            self.summary,
            keys.join(", ")
        )
    }
}

/// The message for the JSONL file at `path` whose first row is `first` (an object),
/// `in_toml` the path as `rwb.toml` would name it.
pub fn unknown_jsonl(path: &Path, in_toml: &str, first: &Map<String, Value>) -> Unknown {
    let columns: Vec<&str> = first.keys().map(String::as_str).collect();
    let summary = format!(
        "{}: rwb does not recognise this JSONL file (columns {})",
        path.display(),
        if columns.is_empty() {
            "none".to_string()
        } else {
            columns.join(", ")
        }
    );
    let name = path
        .file_stem()
        .map(|s| {
            s.to_string_lossy()
                .replace(|c: char| !c.is_alphanumeric(), "_")
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "mine".into());
    let mut lines = vec![
        format!("[samples.{name}]"),
        format!("path = {}", quoted(in_toml)),
    ];
    let mut used: Vec<&str> = Vec::new();
    let mut take = |names: &[&str], fits: &dyn Fn(&Value) -> bool| -> Option<String> {
        let found = names.iter().find_map(|n| {
            columns
                .iter()
                .find(|c| c.eq_ignore_ascii_case(n) && !used.contains(c) && fits(&first[**c]))
        })?;
        used.push(found);
        Some(found.to_string())
    };
    let chat = columns
        .iter()
        .find(|c| is_messages(&first[**c]))
        .map(|c| c.to_string());
    let prompt = take(PROMPTS, &|v| v.is_string() || is_messages(v));
    let completion = take(COMPLETIONS, &|v| v.is_string() || is_messages(v));
    match (&prompt, &completion, &chat) {
        (None, None, Some(messages)) => {
            lines.push(format!("messages = {}", quoted(messages)));
        }
        _ => {
            let or = |c: &Option<String>| quoted(c.as_deref().unwrap_or("COLUMN"));
            lines.push(format!("prompt = {}", or(&prompt)));
            lines.push(format!("completion = {}", or(&completion)));
        }
    }
    let any = |_: &Value| true;
    if let Some(truth) = take(TRUTHS, &any) {
        lines.push(format!("ground_truth = {}", quoted(&truth)));
    }
    if let Some(group) = take(GROUPS, &any) {
        lines.push(format!("group = {}", quoted(&group)));
    }
    if let Some(step) = take(STEPS, &|v| v.is_number()) {
        lines.push(format!("step = {}", quoted(&step)));
    }
    let logged: Vec<String> = columns
        .iter()
        .filter(|c| !used.contains(c) && (first[**c].is_number() || first[**c].is_boolean()))
        .filter(|c| {
            let lower = c.to_lowercase();
            SCORES.iter().any(|s| lower.contains(s))
        })
        .map(|c| quoted(c))
        .collect();
    if !logged.is_empty() {
        lines.push(format!("logged = [{}]", logged.join(", ")));
    }
    lines.push(
        "# also: split, data_source; a dotted name (meta.score) reaches into an object".to_string(),
    );
    Unknown { summary, lines }
}

/// The first row of a JSONL file when it is an object (its first non-blank line).
pub fn first_row(path: &Path) -> Option<Map<String, Value>> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let line = std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .find(|l| !l.trim().is_empty())?;
    match super::json_rows::parse(line.trim_start_matches('\u{feff}').trim()) {
        Ok(Value::Object(row)) => Some(row),
        _ => None,
    }
}

/// Whether a value is a list of chat messages (objects with a `role`).
fn is_messages(value: &Value) -> bool {
    value
        .as_array()
        .is_some_and(|ms| !ms.is_empty() && ms.iter().all(|m| m.get("role").is_some()))
}

/// A TOML basic string.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn first(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn named_columns_are_mapped_and_the_others_left_to_fill() {
        let row = first(json!({"id": 3, "question": "2+2?", "model_output": "4",
                               "answer": "4", "reward": 1.0, "seqlen": 12}));
        let u = unknown_jsonl(Path::new("runs/out.jsonl"), "runs/out.jsonl", &row);
        assert_eq!(
            u.summary,
            "runs/out.jsonl: rwb does not recognise this JSONL file (columns id, question, model_output, answer, reward, seqlen)"
        );
        assert_eq!(
            u.lines,
            [
                "[samples.out]",
                "path = \"runs/out.jsonl\"",
                "prompt = \"question\"",
                "completion = \"model_output\"",
                "ground_truth = \"answer\"",
                "logged = [\"reward\"]",
                "# also: split, data_source; a dotted name (meta.score) reaches into an object",
            ]
        );
        let toml: toml::Value = toml::from_str(&u.lines.join("\n")).unwrap();
        assert_eq!(toml["samples"]["out"]["prompt"].as_str(), Some("question"));
        let row = first(json!({"conversation": [{"role": "user", "content": "hi"}], "x": 1}));
        let u = unknown_jsonl(Path::new("c.jsonl"), "c.jsonl", &row);
        assert_eq!(u.lines[2], "messages = \"conversation\"");
        let row = first(json!({"a": "x", "b": "y"}));
        let u = unknown_jsonl(Path::new("c.jsonl"), "c.jsonl", &row);
        assert_eq!(
            u.lines[2..4],
            ["prompt = \"COLUMN\"", "completion = \"COLUMN\""]
        );
        assert!(is_result_row(&[
            "sample".into(),
            "file".into(),
            "evaluator".into(),
            "score".into()
        ]));
    }
}
