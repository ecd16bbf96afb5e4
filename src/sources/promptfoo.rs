//! promptfoo's `eval -o results.json` (rows at `results.results[]`) and
//! `-o results.jsonl` (a row a line).
//!
//! Facts from files promptfoo 0.121.20 wrote with its `echo` provider
//! (`tests/fixtures/sources/make.py`): a row has `prompt.raw` (the rendered prompt
//! text), `response.output` (the provider's answer), `vars` (the test's variables),
//! `testCase`, `score` and `gradingResult` (`score`, `pass`, `reason`,
//! `namedScores: {metric: score}`), `success`, `error`, `latencyMs`, `cost`, ids.

use super::{json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{Map, Value};
use std::path::Path;

pub struct PromptfooJson;

impl Format for PromptfooJson {
    fn name(&self) -> &'static str {
        "promptfoo results"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::JsonDoc && peek.has("results") && peek.has("evalId")
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let doc = json_rows::read_doc(path)?;
        let rows = match super::dotted(&doc, "results.results") {
            Some(Value::Array(rows)) => rows.clone(),
            _ => return Err(format!("{}: has no results.results list", path.display())),
        };
        let paths = options.logged_paths.clone();
        Ok(Box::new(rows.into_iter().enumerate().map(move |(i, r)| {
            Ok(match r {
                Value::Object(r) => row(i + 1, r, &paths),
                _ => json_rows::bad_row(i + 1, "the result is not a JSON object"),
            })
        })))
    }
}

pub struct PromptfooJsonl;

impl Format for PromptfooJsonl {
    fn name(&self) -> &'static str {
        "promptfoo results (JSONL)"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl
            && peek.has_all(&["prompt", "response"])
            && (peek.has("gradingResult") || peek.has("testCase"))
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let paths = options.logged_paths.clone();
        json_rows::map_lines(path, move |line, object| row(line, object, &paths))
    }
}

fn text_of(value: Option<&Value>) -> Value {
    match value {
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Null) | None => Value::String(String::new()),
        Some(other) => Value::String(other.to_string()),
    }
}

fn row(line: usize, r: Map<String, Value>, paths: &[String]) -> Row {
    let whole = Value::Object(r);
    let mut sample = Map::new();
    sample.insert(
        "prompt".into(),
        text_of(super::dotted(&whole, "prompt.raw")),
    );
    sample.insert(
        "completion".into(),
        text_of(super::dotted(&whole, "response.output")),
    );
    if let Some(Value::Object(vars)) = whole.get("vars") {
        for (k, v) in vars {
            if !sample.contains_key(k) {
                sample.insert(k.clone(), v.clone());
            }
        }
    }
    let mut facts = Facts::default();
    let score = super::dotted(&whole, "gradingResult.score").or_else(|| whole.get("score"));
    if let Some(score) = score {
        facts.logged.push(("score".into(), Logged::of_json(score)));
    }
    if let Some(Value::Object(named)) =
        super::dotted(&whole, "gradingResult.namedScores").or_else(|| whole.get("namedScores"))
    {
        for (name, v) in named {
            facts.logged.push((name.clone(), Logged::of_json(v)));
        }
    }
    json_rows::add_logged_paths(&whole, paths, &mut facts);
    json_rows::row(line, sample, facts, &Default::default())
}
