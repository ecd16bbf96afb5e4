//! The results table's rows: the schema, a row id's layout (code id, sequence), and
//! an outcome written as a row and read back.

use crate::model::{EvalError, Outcome};
use crate::store::{CodeKey, SampleHash};
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{Map, Value};

/// Bits of a row id that number the rows of one code (the rest is the code's id).
pub(super) const SEQ_BITS: u32 = 40;

/// The schema step that creates the tables (a cache is thrown away on upgrade; the
/// other tables stay).
pub(in crate::store) const CREATE: &str = "
    DROP TABLE IF EXISTS results;
    DROP TABLE IF EXISTS codes;
    CREATE TABLE codes (
        id INTEGER PRIMARY KEY,
        code_key BLOB NOT NULL UNIQUE
    );
    CREATE TABLE results (
        row INTEGER PRIMARY KEY,
        sample_hash BLOB NOT NULL,
        score REAL,
        valid INTEGER NOT NULL,
        reason TEXT,
        duration REAL NOT NULL,
        rest TEXT
    );";

/// The columns a result is read from, in [`decode`]'s order.
pub(super) const COLUMNS: &str = "row, sample_hash, score, valid, reason, duration, rest";

/// The first row id of code `id` (its rows are `first(id)..first(id + 1)`).
pub(super) fn first(id: i64) -> i64 {
    id << SEQ_BITS
}

/// What an outcome stores besides score, validity, reason and duration: written as
/// JSON only when one of them is set (most outcomes have none).
#[derive(Default, serde::Deserialize)]
struct Rest {
    #[serde(default)]
    metrics: Map<String, Value>,
    #[serde(default)]
    step_outputs: Option<Value>,
    #[serde(default)]
    error: Option<EvalError>,
    #[serde(default)]
    result_error: Option<String>,
    #[serde(default)]
    output: Option<String>,
}

/// [`Rest`] borrowed from an outcome, to write it without copying.
#[derive(serde::Serialize)]
struct RestOf<'a> {
    #[serde(skip_serializing_if = "no_metrics")]
    metrics: &'a Map<String, Value>,
    #[serde(skip_serializing_if = "unset")]
    step_outputs: &'a Option<Value>,
    #[serde(skip_serializing_if = "unset")]
    error: &'a Option<EvalError>,
    #[serde(skip_serializing_if = "unset")]
    result_error: &'a Option<String>,
    #[serde(skip_serializing_if = "unset")]
    output: &'a Option<String>,
}

fn no_metrics(m: &&Map<String, Value>) -> bool {
    m.is_empty()
}

fn unset<T>(o: &&Option<T>) -> bool {
    o.is_none()
}

/// The `rest` column of an outcome: `None` when it has nothing besides its columns.
fn rest_of(o: &Outcome) -> Option<String> {
    let rest = RestOf {
        metrics: &o.metrics,
        step_outputs: &o.step_outputs,
        error: &o.error,
        result_error: &o.result_error,
        output: &o.output,
    };
    let empty = rest.metrics.is_empty()
        && unset(&rest.step_outputs)
        && unset(&rest.error)
        && unset(&rest.result_error)
        && unset(&rest.output);
    (!empty).then(|| serde_json::to_string(&rest).expect("outcomes serialize"))
}

/// An outcome as a results row stores it: what a writer holds until it is committed
/// (compact: the JSON of what else the outcome says is written here, once).
pub(in crate::store) struct Row {
    pub(super) score: Option<f64>,
    pub(super) valid: bool,
    pub(super) reason: Option<Box<str>>,
    pub(super) duration: f64,
    pub(super) rest: Option<Box<str>>,
}

impl Row {
    pub(in crate::store) fn of(o: &Outcome) -> Row {
        Row {
            score: o.score,
            valid: o.is_score_valid,
            reason: o.reason.as_deref().map(Box::from),
            duration: o.duration_ms,
            rest: rest_of(o).map(String::into_boxed_str),
        }
    }
}

/// A row read with [`COLUMNS`]: its id, sample hash and outcome (`None` when it does
/// not read as one: a row from another version of rwb, evaluated again).
pub(super) fn decode(
    row: &rusqlite::Row,
) -> rusqlite::Result<(i64, Option<SampleHash>, Option<Outcome>)> {
    let (id, hash, stored) = read_row(row)?;
    Ok((id, hash, stored.into_outcome()))
}

/// A row read with [`COLUMNS`] as it is stored: its id, sample hash and columns, the
/// outcome not built yet (a cache scan holds a chunk of these, a fifth of the size of
/// the outcomes, and builds each outcome once, as it hands it on).
pub(super) fn read_row(row: &rusqlite::Row) -> rusqlite::Result<(i64, Option<SampleHash>, Row)> {
    let id: i64 = row.get(0)?;
    let hash = <SampleHash>::try_from(row.get_ref(1)?.as_blob()?).ok();
    let stored = Row {
        score: row.get(2)?,
        valid: row.get::<_, i64>(3)? != 0,
        reason: row.get::<_, Option<String>>(4)?.map(String::into_boxed_str),
        duration: row.get(5)?,
        rest: row.get::<_, Option<String>>(6)?.map(String::into_boxed_str),
    };
    Ok((id, hash, stored))
}

impl Row {
    /// The outcome this row stores, or `None` when its `rest` does not read as one
    /// (a row from another version of rwb, evaluated again).
    pub(super) fn into_outcome(self) -> Option<Outcome> {
        let rest = match self.rest.as_deref() {
            None => Rest::default(),
            Some(text) => serde_json::from_str::<Rest>(text).ok()?,
        };
        Some(Outcome {
            score: self.score,
            is_score_valid: self.valid,
            reason: self.reason.map(String::from),
            metrics: rest.metrics,
            step_outputs: rest.step_outputs,
            error: rest.error,
            result_error: rest.result_error,
            duration_ms: self.duration,
            output: rest.output,
            repeat: None,
            swallowed: None,
        })
    }
}

/// The id of code `key`, if it has one.
pub(super) fn code_id(conn: &Connection, key: &CodeKey) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM codes WHERE code_key = ?1")?
        .query_row(params![&key[..]], |r| r.get(0))
        .optional()
}

/// The row `row`, when it is still `sample`'s: its outcome (`None` when it does not
/// read as one).
pub(super) fn fetch(conn: &Connection, row: i64, sample: &SampleHash) -> Option<Option<Outcome>> {
    let sql = format!("SELECT {COLUMNS} FROM results WHERE row = ?1");
    let mut stmt = conn.prepare_cached(&sql).ok()?;
    let found = stmt.query_row(params![row], decode).optional().ok()??;
    (found.1.as_ref() == Some(sample)).then_some(found.2)
}
