//! `[samples.NAME]` in `rwb.toml`: which column is what, for a file of a shape rwb
//! does not recognise (or to override one it does). A dotted name reaches into a
//! struct or object (`evaluation_result.score`). Any container is read: JSONL, a
//! JSON document holding a list of rows, Parquet, Arrow, Hugging Face folders.

use super::table::{open_batches, table_rows, Roles};
use super::{dotted, json_rows, peek, Container, Options, Row, Rows};
use crate::model::{Facts, Logged};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::Path;

/// One `[samples.NAME]` table.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    /// The file (or Hugging Face folder), relative to the workspace.
    pub path: String,
    pub prompt: Option<String>,
    pub completion: Option<String>,
    pub messages: Option<String>,
    pub ground_truth: Option<String>,
    pub group: Option<String>,
    pub step: Option<String>,
    pub split: Option<String>,
    pub data_source: Option<String>,
    #[serde(default)]
    pub logged: Vec<String>,
    /// `"conversational"`: a text completion is handed on as one assistant message.
    pub form: Option<String>,
    /// The column holding a human label (a bool or a number) per sample (SPEC §16).
    pub human: Option<String>,
    /// The column saying whether the sample's answer is right (a bool, or `correct` /
    /// `incorrect`): what SPEC §20 measures the verifier against.
    pub label: Option<String>,
}

impl Mapping {
    /// Whether `form` says conversational; a value that is neither is an error.
    pub fn conversational(&self) -> Result<bool, String> {
        match self.form.as_deref() {
            None | Some("standard") => Ok(false),
            Some("conversational") => Ok(true),
            Some(other) => Err(format!(
                "form = \"{other}\" is not \"conversational\" (completions handed on as one assistant message) or \"standard\" (as text)"
            )),
        }
    }

    /// Whether it maps no column (a table with only `path`, and perhaps `human` or
    /// `label`): a file of a shape rwb knows is then read as that shape is
    /// ([`carrying`]).
    pub fn maps_nothing(&self) -> bool {
        self.sample_keys().is_empty()
            && self.group.is_none()
            && self.step.is_none()
            && self.split.is_none()
            && self.logged.is_empty()
            && self.form.is_none()
    }

    /// The sample keys and the columns they come from.
    fn sample_keys(&self) -> Vec<(&'static str, &str)> {
        [
            ("messages", &self.messages),
            ("prompt", &self.prompt),
            ("completion", &self.completion),
            ("ground_truth", &self.ground_truth),
            ("data_source", &self.data_source),
        ]
        .into_iter()
        .filter_map(|(key, from)| Some((key, from.as_deref()?)))
        .collect()
    }

    /// Columns the mapping uses for something other than a same-named column. The
    /// ground truth's column is copied, not moved (SPEC §3): a scorer that reads
    /// `label` still finds it when `ground_truth = "label"` is mapped for another.
    fn used(&self) -> Vec<&str> {
        let mut used: Vec<&str> = self
            .sample_keys()
            .into_iter()
            .filter(|(key, _)| *key != "ground_truth")
            .map(|(_, c)| c)
            .collect();
        used.extend(self.group.as_deref());
        used.extend(self.step.as_deref());
        used.extend(self.split.as_deref());
        used.extend(self.logged.iter().map(String::as_str));
        used.iter()
            .map(|c| c.split('.').next().unwrap_or(c))
            .collect()
    }
}

/// The rows a format rwb knows read from a file named by a table that maps nothing,
/// each carrying the table's `human` and `label` columns in its sample, where they are
/// read. A format told of them (`Options::kept`: veRL, which takes every boolean and
/// number as a logged score) keeps them as written; one that took such a column as a
/// logged score anyway gives it back as that number.
pub fn carrying(rows: Rows, mapping: &Mapping) -> Rows {
    let columns: Vec<String> = [&mapping.human, &mapping.label]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    if columns.is_empty() {
        return rows;
    }
    let label = mapping.label.clone();
    Box::new(rows.map(move |row| {
        let mut row = row?;
        // the columns a format took as logged scores (numbers: given back as such)
        let taken: Vec<(String, Value)> = columns
            .iter()
            .filter_map(|c| match row.facts.logged(c) {
                Some(Logged::Score(x)) => Some((
                    c.clone(),
                    x.and_then(serde_json::Number::from_f64)
                        .map_or(Value::Null, Value::Number),
                )),
                _ => None,
            })
            .collect();
        // a row the format refused, or one that holds its columns and has no label
        // to be seen: as it is, not parsed again
        if row.bad.is_some() || taken.is_empty() && label.is_none() {
            return Ok(row);
        }
        if taken.is_empty() {
            // only the label is to be seen: what the format saw has none, and the
            // row's conversion sees the text itself with the table's label when the
            // run or the row file wants it (`workspace::rows`), nothing built
            row.facts.seen = None;
            return Ok(row);
        }
        let Ok(Value::Object(mut sample)) = json_rows::parse(&row.sample) else {
            return Ok(row);
        };
        let mut moved = false;
        for (c, value) in taken {
            if sample.contains_key(&c) {
                continue;
            }
            row.facts.logged.retain(|(n, _)| *n != c);
            sample.insert(c, value);
            moved = true;
        }
        if moved {
            row.sample = json_rows::sample_text(&sample);
        }
        if label.is_some() {
            let wanted = super::seen::Wanted {
                label: label.as_deref(),
                rewardbench: false,
            };
            let (grouped, stepped) = (row.facts.group.is_some(), row.facts.step.is_some());
            row.facts.seen = super::seen::of_map(sample, &wanted, grouped, stepped);
        }
        Ok(row)
    }))
}

/// The rows of `path` as `mapping` says.
pub fn open(path: &Path, mapping: &Mapping, options: &Options) -> Result<Rows, String> {
    let conversational = mapping.conversational()? || options.conversational;
    let peek = peek(path)?;
    let mut logged = mapping.logged.clone();
    logged.extend(options.logged_paths.iter().cloned());
    let direct = mapping.sample_keys().iter().all(|(_, c)| !c.contains('.'))
        && !logged.iter().any(|c| c.contains('.'));
    match peek.container {
        Container::Parquet | Container::Arrow | Container::HfFolder if direct => {
            // whole columns renamed: the table's own fast way
            let used = mapping.used();
            let mut sample: Vec<(String, String)> = mapping
                .sample_keys()
                .into_iter()
                .map(|(key, from)| (from.to_string(), key.to_string()))
                .collect();
            let rest: Vec<(String, String)> = peek
                .keys
                .iter()
                .filter(|k| !used.contains(&k.as_str()) && !sample.iter().any(|(_, to)| to == *k))
                .map(|k| (k.clone(), k.clone()))
                .collect();
            sample.extend(rest);
            let roles = Roles {
                sample,
                step: mapping.step.clone(),
                group: mapping.group.clone(),
                logged: logged.iter().map(|c| (c.clone(), c.clone())).collect(),
                conversational,
            };
            Ok(table_rows(open_batches(path)?, roles))
        }
        Container::Parquet | Container::Arrow | Container::HfFolder => {
            let all = Roles {
                sample: peek.keys.iter().map(|k| (k.clone(), k.clone())).collect(),
                ..Roles::default()
            };
            let mapping = mapping.clone();
            let rows = table_rows(open_batches(path)?, all);
            Ok(Box::new(rows.map(move |r| {
                let r = r?;
                Ok(match json_rows::parse(&r.sample) {
                    Ok(Value::Object(o)) => mapped(r.line, o, &mapping, &logged, conversational),
                    _ => r,
                })
            })))
        }
        Container::Jsonl => {
            let mapping = mapping.clone();
            json_rows::map_lines(path, move |line, o| mapped(line, o, &mapping, &logged, conversational))
        }
        Container::JsonDoc => {
            let rows = match json_rows::read_doc(path)? {
                Value::Array(rows) => rows,
                _ => return Err(format!("{}: a mapped JSON file must hold a list of rows", path.display())),
            };
            let mapping = mapping.clone();
            Ok(Box::new(rows.into_iter().enumerate().map(move |(i, r)| {
                Ok(match r {
                    Value::Object(o) => mapped(i + 1, o, &mapping, &logged, conversational),
                    _ => json_rows::bad_row(i + 1, "the row is not a JSON object"),
                })
            })))
        }
        other => Err(format!(
            "{}: a {} cannot be mapped with [samples.NAME]; give a JSONL, JSON, Parquet or Arrow file",
            path.display(),
            other.describe()
        )),
    }
}

/// One row as the mapping says.
fn mapped(
    line: usize,
    object: Map<String, Value>,
    m: &Mapping,
    logged: &[String],
    conversational: bool,
) -> Row {
    let whole = Value::Object(object);
    let mut sample = Map::new();
    for (key, from) in m.sample_keys() {
        if let Some(v) = dotted(&whole, from) {
            sample.insert(key.to_string(), v.clone());
        }
    }
    let used = m.used();
    if let Value::Object(o) = &whole {
        for (k, v) in o {
            if !used.contains(&k.as_str()) && !sample.contains_key(k) {
                sample.insert(k.clone(), v.clone());
            }
        }
    }
    if conversational {
        if let Some(Value::String(text)) = sample.get("completion").cloned() {
            sample.insert(
                "completion".into(),
                serde_json::json!([{"role": "assistant", "content": text}]),
            );
        }
    }
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let facts = Facts {
        group: m.group.as_deref().and_then(|c| dotted(&whole, c)).map(text),
        step: m
            .step
            .as_deref()
            .and_then(|c| dotted(&whole, c))
            .and_then(Value::as_i64),
        split: m.split.as_deref().and_then(|c| dotted(&whole, c)).map(text),
        logged: logged
            .iter()
            .filter_map(|c| Some((c.clone(), Logged::of_json(dotted(&whole, c)?))))
            .collect(),
        ..Facts::default()
    };
    let wanted = super::seen::Wanted {
        label: m.label.as_deref(),
        rewardbench: false,
    };
    json_rows::row(line, sample, facts, &wanted)
}
