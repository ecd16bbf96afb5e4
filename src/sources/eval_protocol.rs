//! eval-protocol's `EvaluationRow`s: its JSONL logger's files and its `logs.db`.
//!
//! Facts from eval-protocol 0.3.33 (PyPI): `LocalFSDatasetLoggerAdapter.log` writes
//! `row.model_dump_json(exclude_none=True)` a line to `~/.eval_protocol/datasets/
//! {date}.jsonl`, keeping one line per `input_metadata.row_id` (a row logged again
//! replaces its line); `SqliteDatasetLoggerAdapter` upserts `model_dump(mode="json")`
//! into `logs.db`'s table `evaluationrow(id, rollout_id, data)` keyed by
//! `execution_metadata.rollout_id` (`dataset_logger/sqlite_evaluation_row_store.py`).
//! A row holds `messages`, `ground_truth`, `input_metadata`, `evaluation_result`
//! (`score`, `reason`, `metrics: {name: {score, ...}}`), `rollout_status`,
//! `execution_metadata` and `created_at`.

use super::{json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use serde_json::{Map, Value};
use std::path::Path;

/// Keys of a row that are the tool's bookkeeping, not the sample's columns.
const BOOKKEEPING: &[&str] = &[
    "evaluation_result",
    "rollout_status",
    "execution_metadata",
    "created_at",
    "eval_metadata",
    "pid",
];

pub struct EvalProtocolJsonl;

impl Format for EvalProtocolJsonl {
    fn name(&self) -> &'static str {
        "eval-protocol rows"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Jsonl
            && peek.has("messages")
            && (peek.has("input_metadata") || peek.has("execution_metadata"))
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let paths = options.logged_paths.clone();
        json_rows::map_lines(path, move |line, object| row(line, object, &paths))
    }
}

pub struct EvalProtocolDb;

impl Format for EvalProtocolDb {
    fn name(&self) -> &'static str {
        "eval-protocol logs.db"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Sqlite && peek.has("evaluationrow")
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let conn = open_db(path)?;
        Ok(Box::new(DbRows {
            conn,
            shown: path.display().to_string(),
            after: i64::MIN,
            page: Vec::new().into_iter(),
            line: 0,
            paths: options.logged_paths.clone(),
            done: false,
        }))
    }
}

pub(super) fn open_db(path: &Path) -> Result<rusqlite::Connection, String> {
    rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| format!("{}: cannot open the database: {e}", path.display()))
}

/// The tables of an SQLite database (what it is recognised by).
pub fn tables(path: &Path) -> Result<Vec<String>, String> {
    let conn = open_db(path)?;
    let names = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut s| {
            s.query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| format!("{}: not a readable SQLite database: {e}", path.display()))?;
    Ok(names)
}

/// Rows read a page at a time, in `id` order.
struct DbRows {
    conn: rusqlite::Connection,
    shown: String,
    after: i64,
    page: std::vec::IntoIter<(i64, String)>,
    line: usize,
    paths: Vec<String>,
    done: bool,
}

const PAGE: i64 = 256;

impl Iterator for DbRows {
    type Item = Result<Row, String>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((id, data)) = self.page.next() {
                self.after = id;
                self.line += 1;
                return Some(Ok(match json_rows::parse(&data) {
                    Ok(Value::Object(object)) => row(self.line, object, &self.paths),
                    _ => json_rows::bad_row(self.line, "its data is not a JSON object"),
                }));
            }
            if self.done {
                return None;
            }
            let page = self
                .conn
                .prepare_cached(
                    "SELECT id, data FROM evaluationrow WHERE id > ?1 ORDER BY id LIMIT ?2",
                )
                .and_then(|mut s| {
                    s.query_map([self.after, PAGE], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect::<Result<Vec<(i64, String)>, _>>()
                });
            match page {
                Ok(page) => {
                    self.done = (page.len() as i64) < PAGE;
                    self.page = page.into_iter();
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(format!("{}: cannot read its rows: {e}", self.shown)));
                }
            }
        }
    }
}

fn row(line: usize, object: Map<String, Value>, paths: &[String]) -> Row {
    let whole = Value::Object(object);
    let mut facts = Facts::default();
    if let Some(result) = whole.get("evaluation_result") {
        if let Some(score) = result.get("score") {
            facts.logged.push(("score".into(), Logged::of_json(score)));
        }
        if let Some(Value::Object(metrics)) = result.get("metrics") {
            for (name, metric) in metrics {
                if let Some(score) = metric.get("score") {
                    facts.logged.push((name.clone(), Logged::of_json(score)));
                }
            }
        }
    }
    json_rows::add_logged_paths(&whole, paths, &mut facts);
    facts.group = super::dotted(&whole, "input_metadata.row_id").map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let Value::Object(object) = whole else {
        unreachable!("made from an object")
    };
    let sample: Map<String, Value> = object
        .into_iter()
        .filter(|(k, _)| !BOOKKEEPING.contains(&k.as_str()))
        .collect();
    json_rows::row(line, sample, facts, &Default::default())
}
