//! trackio's local store: `{TRACKIO_DIR or ~/.cache/huggingface/trackio}/{project}.db`,
//! whose logged tables are TRL's completions as W&B logs them ([`super::wandb`]).
//!
//! Facts from gradio-app/trackio@2a027522: `trackio/sqlite_storage.py:495-503` (the
//! table `metrics(id, run_id, timestamp, run_name, step, metrics)`, `log_id` and
//! `space_id` added later) and `:1573-1600` (`INSERT INTO metrics ... metrics =
//! orjson.dumps(serialize_values(clean_metrics))`: bytes, so SQLite keeps a BLOB);
//! `trackio/utils.py:1041-1070` (`serialize_values`: a NaN is the string `"NaN"`,
//! infinities `"Infinity"`/`"-Infinity"`); `trackio/table.py:185-201` (a table is
//! `{"_type": "trackio.table", "_value": [row dicts]}`). The fixture is a store the
//! real trackio 0.43 wrote (tests/fixtures/sources/wandb_trackio_make.py).
//!
//! Every `trackio.table` of every logged row, in `id` order, is read row by row: a
//! TRL row as [`super::wandb::trl_row`] reads it (its `step` column, else the logged
//! row's `step`), with `run_name` a column. Rows are numbered across tables.

use super::eval_protocol::open_db;
use super::wandb::{score_columns, trl_row};
use super::{json_rows, Container, Format, Options, Peek, Row, Rows};
use serde_json::{Map, Value};
use std::path::Path;

pub struct Trackio;

impl Format for Trackio {
    fn name(&self) -> &'static str {
        "trackio store"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        peek.container == Container::Sqlite && peek.has_all(&["metrics", "configs"])
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        Ok(Box::new(StoreRows {
            conn: open_db(path)?,
            shown: path.display().to_string(),
            after: i64::MIN,
            pending: Vec::new().into_iter(),
            line: 0,
            paths: options.logged_paths.clone(),
            done: false,
        }))
    }
}

struct StoreRows {
    conn: rusqlite::Connection,
    shown: String,
    after: i64,
    pending: std::vec::IntoIter<Row>,
    line: usize,
    paths: Vec<String>,
    done: bool,
}

/// The `metrics` cell as text: a BLOB (orjson's bytes) or TEXT (older stores).
fn cell_text(v: rusqlite::types::ValueRef) -> Option<String> {
    match v {
        rusqlite::types::ValueRef::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
        rusqlite::types::ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    }
}

impl StoreRows {
    /// The rows of the tables in the next logged row; `Ok(false)` after the last.
    fn fill(&mut self) -> Result<bool, String> {
        let next = self
            .conn
            .prepare_cached(
                "SELECT id, run_name, step, metrics FROM metrics WHERE id > ?1 ORDER BY id LIMIT 1",
            )
            .and_then(|mut s| {
                let mut rows = s.query([self.after])?;
                match rows.next()? {
                    Some(r) => Ok(Some((
                        r.get::<_, i64>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        cell_text(r.get_ref(3)?),
                    ))),
                    None => Ok(None),
                }
            })
            .map_err(|e| format!("{}: cannot read its metrics: {e}", self.shown))?;
        let Some((id, run, step, text)) = next else {
            return Ok(false);
        };
        self.after = id;
        let mut rows = Vec::new();
        let metrics = match text.as_deref().map(json_rows::parse) {
            Some(Ok(Value::Object(m))) => m,
            _ => {
                self.line += 1;
                let why = format!(
                    "{} metrics row id {id}: its metrics are not a JSON object",
                    self.shown
                );
                self.pending = vec![json_rows::bad_row(self.line, &why)].into_iter();
                return Ok(true);
            }
        };
        for (key, value) in metrics {
            if value["_type"] != "trackio.table" {
                continue;
            }
            let Some(items) = value["_value"].as_array() else {
                self.line += 1;
                let why = format!(
                    "{} metrics row id {id}: table {key} has no list of rows (\"_value\")",
                    self.shown
                );
                rows.push(json_rows::bad_row(self.line, &why));
                continue;
            };
            let objects: Vec<Option<Map<String, Value>>> =
                items.iter().map(|r| r.as_object().cloned()).collect();
            let scores = score_columns(objects.iter().flatten());
            for (i, object) in objects.into_iter().enumerate() {
                self.line += 1;
                rows.push(match object {
                    Some(mut object) => {
                        if let Some(run) = &run {
                            object.insert("run_name".into(), Value::String(run.clone()));
                        }
                        trl_row(self.line, object, &scores, step, &self.paths)
                    }
                    None => json_rows::bad_row(
                        self.line,
                        &format!(
                            "{} metrics row id {id}: table {key} row {}: not an object",
                            self.shown,
                            i + 1
                        ),
                    ),
                });
            }
        }
        self.pending = rows.into_iter();
        Ok(true)
    }
}

impl Iterator for StoreRows {
    type Item = Result<Row, String>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(row) = self.pending.next() {
                return Some(Ok(row));
            }
            if self.done {
                return None;
            }
            match self.fill() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
