//! Inspect's eval logs: the `.eval` zip and the single-document `.json`.
//!
//! Facts from files inspect_ai 0.3.285 wrote (`tests/fixtures/sources/make.py`):
//! an `.eval` is a zip of `header.json`, `_journal/…`, `summaries.json`,
//! `reductions.json` and one `samples/{id}_epoch_{n}.json` per sample and epoch,
//! each entry Zstandard-compressed (method 93) in current versions and deflated in
//! older ones; a `.json` log is one document whose `samples` list holds the same
//! objects. A sample has `id`, `epoch`, `input` (text or messages), `target` (text
//! or a list), `messages` (the conversation, the model's turns included), `output`
//! (`completion`: the last answer's text), `scores` (`{scorer: {value, answer,
//! explanation}}`) and `metadata`. A score's value is read as Inspect's
//! `value_to_float` reads it (`inspect_ai/scorer/_metric.py`): "C" 1, "P" 0.5, "I"
//! and "N" 0, numbers and booleans as numbers, "yes"/"true" 1, "no"/"false" 0,
//! numeric strings as numbers, other strings 0 (Inspect's own fallback); a list or
//! an object is not guessed at.

use super::{json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{json, Map, Value};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

pub struct InspectEval;

impl Format for InspectEval {
    fn name(&self) -> &'static str {
        "Inspect log (.eval)"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Zip
            && peek
                .keys
                .iter()
                .any(|k| k == "header.json" || k.starts_with("_journal/") || is_sample(k))
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let shown = path.display().to_string();
        let paths = options.logged_paths.clone();
        let file =
            File::open(path).map_err(|e| format!("cannot read samples file {shown}: {e}"))?;
        let entries: Box<dyn Iterator<Item = Result<String, String>> + Send> =
            match zip::ZipArchive::new(file) {
                Ok(archive) => Box::new(ArchiveSamples {
                    archive,
                    next: 0,
                    shown: shown.clone(),
                }),
                // no readable central directory (a log cut short): its entries are read
                // front to back as far as they go, and the damage is said after them
                Err(e) => Box::new(StreamSamples {
                    reader: BufReader::new(File::open(path).map_err(|e| e.to_string())?),
                    shown: shown.clone(),
                    damage: Some(format!("{shown}: the zip directory is missing or damaged ({e}): is the log truncated?")),
                    done: false,
                }),
            };
        let mut line = 0;
        Ok(Box::new(entries.map(move |text| {
            let text = text?;
            line += 1;
            Ok(match json_rows::parse(&text) {
                Ok(Value::Object(sample)) => row(line, &sample, &paths),
                _ => json_rows::bad_row(line, "its sample entry is not a JSON object"),
            })
        })))
    }
}

fn is_sample(name: &str) -> bool {
    name.starts_with("samples/") && name.ends_with(".json")
}

/// The names of a zip's entries (what it is recognised by); a zip whose directory
/// cannot be read names none (its entries are read front to back later).
pub fn entry_names(path: &Path) -> Result<Vec<String>, String> {
    let file = File::open(path)
        .map_err(|e| format!("cannot read samples file {}: {e}", path.display()))?;
    match zip::ZipArchive::new(file) {
        Ok(archive) => Ok(archive
            .file_names()
            .filter_map(|n| n.ok())
            .map(String::from)
            .collect()),
        Err(_) if path.extension().is_some_and(|x| x == "eval") => Ok(vec!["header.json".into()]),
        Err(e) => Err(format!(
            "{}: not a readable zip archive ({e})",
            path.display()
        )),
    }
}

/// Sample entries through the zip's directory, in the order it lists them.
struct ArchiveSamples {
    archive: zip::ZipArchive<File>,
    next: usize,
    shown: String,
}

impl Iterator for ArchiveSamples {
    type Item = Result<String, String>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.next < self.archive.len() {
            let index = self.next;
            self.next += 1;
            let end = self.archive.len();
            let read = match self.archive.by_index(index) {
                Ok(mut entry) => {
                    if !entry.name().is_ok_and(|n| is_sample(&n)) {
                        continue;
                    }
                    let mut text = String::new();
                    entry
                        .read_to_string(&mut text)
                        .map(|_| text)
                        .map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            return Some(read.map_err(|e| {
                self.next = end; // nothing after a damaged entry
                format!("{}: entry {index} cannot be read: {e}", self.shown)
            }));
        }
        None
    }
}

/// Sample entries read front to back without the directory (a truncated log).
struct StreamSamples {
    reader: BufReader<File>,
    shown: String,
    damage: Option<String>,
    done: bool,
}

impl Iterator for StreamSamples {
    type Item = Result<String, String>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let entry = zip::read::read_zipfile_from_stream(&mut self.reader);
            let mut entry = match entry {
                Ok(Some(entry)) => entry,
                Ok(None) | Err(_) => {
                    self.done = true;
                    break;
                }
            };
            let sample = entry.name().is_ok_and(|n| is_sample(&n));
            let mut text = String::new();
            if let Err(e) = entry.read_to_string(&mut text) {
                self.done = true;
                let _ = e;
                break;
            }
            if sample {
                return Some(Ok(text));
            }
        }
        let _ = &self.shown;
        self.damage.take().map(Err)
    }
}

pub struct InspectJson;

impl Format for InspectJson {
    fn name(&self) -> &'static str {
        "Inspect log (.json)"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::JsonDoc && peek.has_all(&["version", "eval"])
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let doc = json_rows::read_doc(path)?;
        let samples = match doc {
            Value::Object(mut m) => match m.remove("samples") {
                Some(Value::Array(samples)) => samples,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        let paths = options.logged_paths.clone();
        Ok(Box::new(samples.into_iter().enumerate().map(
            move |(i, s)| {
                Ok(match s {
                    Value::Object(sample) => row(i + 1, &sample, &paths),
                    _ => json_rows::bad_row(i + 1, "its sample is not a JSON object"),
                })
            },
        )))
    }
}

/// One Inspect sample as an rwb sample: its conversation (with the model's answer as
/// the last assistant turn), `target` as the ground truth, and its scores logged.
fn row(line: usize, s: &Map<String, Value>, paths: &[String]) -> Row {
    let mut messages: Vec<Value> = match s.get("messages") {
        Some(Value::Array(m)) => m.iter().map(plain_message).collect(),
        _ => Vec::new(),
    };
    if messages.is_empty() {
        messages = match s.get("input") {
            Some(Value::String(text)) => vec![json!({"role": "user", "content": text})],
            Some(Value::Array(m)) => m.iter().map(plain_message).collect(),
            _ => Vec::new(),
        };
    }
    let answered = messages.iter().any(|m| m["role"] == "assistant");
    if let (false, Some(Value::String(text))) =
        (answered, s.get("output").and_then(|o| o.get("completion")))
    {
        messages.push(json!({"role": "assistant", "content": text}));
    }
    let mut sample = Map::new();
    sample.insert("messages".into(), Value::Array(messages));
    if let Some(target) = s.get("target") {
        sample.insert("ground_truth".into(), target.clone());
    }
    for key in ["id", "metadata"] {
        if let Some(v) = s.get(key) {
            sample.insert(key.into(), v.clone());
        }
    }
    let mut facts = Facts {
        group: s.get("id").map(|id| match id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        epoch: s.get("epoch").and_then(Value::as_i64),
        ..Facts::default()
    };
    if let Some(Value::Object(scores)) = s.get("scores") {
        for (name, score) in scores {
            let value = score.get("value").unwrap_or(&Value::Null);
            facts.logged.push((name.clone(), value_to_float(value)));
        }
    }
    json_rows::add_logged_paths(&Value::Object(s.clone()), paths, &mut facts);
    json_rows::row(line, sample, facts, &Default::default())
}

/// A message as the functions get it: its role and content, and its tool fields
/// (not Inspect's ids, sources and model names).
fn plain_message(m: &Value) -> Value {
    let Value::Object(m) = m else {
        return m.clone();
    };
    let keep = ["role", "content", "tool_calls", "tool_call_id", "function"];
    Value::Object(
        m.iter()
            .filter(|(k, v)| keep.contains(&k.as_str()) && !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Inspect's `value_to_float` with its default sentinels.
fn value_to_float(value: &Value) -> Logged {
    let x = match value {
        Value::String(s) if s == "C" => 1.0,
        Value::String(s) if s == "P" => 0.5,
        Value::String(s) if s == "I" || s == "N" => 0.0,
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => match s.to_lowercase().as_str() {
            "yes" | "true" => 1.0,
            "no" | "false" => 0.0,
            t => t
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .unwrap_or(0.0),
        },
        Value::Null => return Logged::Score(None),
        other => return Logged::of_json(other),
    };
    Logged::of_f64(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_read_as_inspects_value_to_float() {
        let cases = [
            (json!("C"), Some(1.0)),
            (json!("P"), Some(0.5)),
            (json!("I"), Some(0.0)),
            (json!("N"), Some(0.0)),
            (json!(true), Some(1.0)),
            (json!("Yes"), Some(1.0)),
            (json!("false"), Some(0.0)),
            (json!("0.25"), Some(0.25)),
            (json!("maybe"), Some(0.0)),
            (json!(3), Some(3.0)),
        ];
        for (value, want) in cases {
            assert_eq!(value_to_float(&value), Logged::Score(want), "{value}");
        }
        assert_eq!(
            value_to_float(&json!({"a": 1})),
            Logged::NotNumeric {
                not_numeric: "an object".into()
            }
        );
    }
}
