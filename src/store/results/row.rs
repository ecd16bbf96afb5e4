//! The results table's rows: the schema, a row id's layout (code id, sequence), and
//! an outcome written as a row and read back.

use crate::model::{EvalError, Outcome};
use crate::store::{CodeKey, SampleHash};
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{Map, Value};

/// Bits of a row id that number the rows of one code (the rest is the code's id).
pub(super) const SEQ_BITS: u32 = 40;

/// The schema step (version 6) that created the tables, in the layout of that
/// version: a result's parts in columns of their own, packed into one `body` by
/// [`pack`] (a cache is thrown away on that upgrade; the other tables stay).
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

/// The columns a result is read from, in [`read_row`]'s order.
pub(super) const COLUMNS: &str = "row, sample_hash, body";

/// The first row id of code `id` (its rows are `first(id)..first(id + 1)`).
pub(super) fn first(id: i64) -> i64 {
    id << SEQ_BITS
}

/// What a row's body holds besides its duration (the first byte's bits).
const VALID: u8 = 1;
const SCORE: u8 = 2;
const REASON: u8 = 4;
const REST: u8 = 8;

/// The schema step (version 9) that packs each result's parts into one `body`:
/// reading five columns a row was most of a warm run's time in SQLite (a scan of
/// 100,000 rows took 25 ms with them and 16 ms with one). The rows are converted
/// as they are; one whose columns do not read is dropped (it would have been
/// evaluated again).
pub(in crate::store) fn pack(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE packed (
             row INTEGER PRIMARY KEY,
             sample_hash BLOB NOT NULL,
             body BLOB NOT NULL
         );",
    )?;
    {
        let mut read = conn.prepare(
            "SELECT row, sample_hash, score, valid, reason, duration, rest FROM results",
        )?;
        let mut write =
            conn.prepare("INSERT INTO packed (row, sample_hash, body) VALUES (?1, ?2, ?3)")?;
        let mut rows = read.query([])?;
        let mut body = Vec::new();
        while let Some(r) = rows.next()? {
            let columns = || -> rusqlite::Result<(i64, Vec<u8>, Parts<'_>)> {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    Parts {
                        score: r.get(2)?,
                        valid: r.get::<_, i64>(3)? != 0,
                        reason: r.get_ref(4)?.as_str_or_null()?,
                        duration: r.get(5)?,
                        rest: r.get_ref(6)?.as_str_or_null()?,
                    },
                ))
            };
            if let Ok((id, hash, parts)) = columns() {
                body.clear();
                parts.write(&mut body);
                write.execute(params![id, hash, body])?;
            }
        }
    }
    conn.execute_batch("DROP TABLE results; ALTER TABLE packed RENAME TO results;")
}

/// What an outcome stores besides score, validity, reason and duration: written as
/// JSON only when one of them is set (most outcomes have none).
#[derive(Default, serde::Deserialize)]
struct Rest {
    #[serde(default)]
    metrics: Map<String, Value>,
    #[serde(default)]
    step_outputs: Option<Box<Value>>,
    #[serde(default)]
    error: Option<Box<EvalError>>,
    #[serde(default)]
    result_error: Option<String>,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    sandbox: Option<Box<crate::model::Sandboxed>>,
}

/// [`Rest`] borrowed from an outcome, to write it without copying.
#[derive(serde::Serialize)]
struct RestOf<'a> {
    #[serde(skip_serializing_if = "no_metrics")]
    metrics: &'a Map<String, Value>,
    #[serde(skip_serializing_if = "unset")]
    step_outputs: &'a Option<Box<Value>>,
    #[serde(skip_serializing_if = "unset")]
    error: &'a Option<Box<EvalError>>,
    #[serde(skip_serializing_if = "unset")]
    result_error: &'a Option<String>,
    #[serde(skip_serializing_if = "unset")]
    output: &'a Option<String>,
    #[serde(skip_serializing_if = "unset")]
    sandbox: &'a Option<Box<crate::model::Sandboxed>>,
}

fn no_metrics(m: &&Map<String, Value>) -> bool {
    m.is_empty()
}

fn unset<T>(o: &&Option<T>) -> bool {
    o.is_none()
}

/// The JSON of what an outcome says besides its columns: `None` when it says nothing
/// more.
fn rest_of(o: &Outcome) -> Option<String> {
    let rest = RestOf {
        metrics: &o.metrics,
        step_outputs: &o.step_outputs,
        error: &o.error,
        result_error: &o.result_error,
        output: &o.output,
        sandbox: &o.sandbox,
    };
    let empty = rest.metrics.is_empty()
        && unset(&rest.step_outputs)
        && unset(&rest.error)
        && unset(&rest.result_error)
        && unset(&rest.output)
        && unset(&rest.sandbox);
    (!empty).then(|| serde_json::to_string(&rest).expect("outcomes serialize"))
}

/// A result's parts, as a body holds them.
#[derive(Debug, PartialEq)]
struct Parts<'a> {
    score: Option<f64>,
    valid: bool,
    reason: Option<&'a str>,
    duration: f64,
    rest: Option<&'a str>,
}

impl<'a> Parts<'a> {
    /// The body: a byte of flags, the score (8 bytes, little-endian, when there is
    /// one), the duration (8 bytes), the reason (its length as a LEB128 number, then
    /// its UTF-8, when there is one), and the rest's JSON to the end (when there is
    /// any). A float's bits are kept as they are.
    fn write(&self, out: &mut Vec<u8>) {
        let mut flags = 0;
        for (set, flag) in [
            (self.valid, VALID),
            (self.score.is_some(), SCORE),
            (self.reason.is_some(), REASON),
            (self.rest.is_some(), REST),
        ] {
            if set {
                flags |= flag;
            }
        }
        out.push(flags);
        if let Some(score) = self.score {
            out.extend_from_slice(&score.to_le_bytes());
        }
        out.extend_from_slice(&self.duration.to_le_bytes());
        if let Some(reason) = self.reason {
            let mut len = reason.len();
            while len >= 0x80 {
                out.push((len & 0x7f) as u8 | 0x80);
                len >>= 7;
            }
            out.push(len as u8);
            out.extend_from_slice(reason.as_bytes());
        }
        if let Some(rest) = self.rest {
            out.extend_from_slice(rest.as_bytes());
        }
    }

    /// A body's parts, or `None` when it is not one [`Parts::write`] writes.
    fn read(body: &'a [u8]) -> Option<Parts<'a>> {
        let (&flags, mut at) = body.split_first()?;
        if flags & !(VALID | SCORE | REASON | REST) != 0 {
            return None;
        }
        let mut float = || -> Option<f64> {
            let (bytes, after) = at.split_first_chunk::<8>()?;
            at = after;
            Some(f64::from_le_bytes(*bytes))
        };
        let score = match flags & SCORE {
            0 => None,
            _ => Some(float()?),
        };
        let duration = float()?;
        let reason = match flags & REASON {
            0 => None,
            _ => {
                let (mut len, mut shift) = (0usize, 0);
                loop {
                    let (&byte, after) = at.split_first()?;
                    at = after;
                    len |= usize::from(byte & 0x7f).checked_shl(shift)?;
                    if byte & 0x80 == 0 {
                        break;
                    }
                    shift += 7;
                    if shift > 28 {
                        return None;
                    }
                }
                let (text, after) = at.split_at_checked(len)?;
                at = after;
                Some(utf8(text)?)
            }
        };
        let rest = match flags & REST {
            0 if at.is_empty() => None,
            0 => return None,
            _ => Some(utf8(at)?),
        };
        Some(Parts {
            score,
            valid: flags & VALID != 0,
            reason,
            duration,
            rest,
        })
    }
}

/// `bytes` as text, when they are UTF-8. Most reasons are a few ASCII letters, which
/// are checked inline: the general check was a twentieth of a warm run's reading.
fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// Whether a body holds JSON besides its columns' parts (for tests of what is kept).
#[cfg(test)]
pub(super) fn keeps_json(body: &[u8]) -> bool {
    Parts::read(body).is_some_and(|p| p.rest.is_some())
}

/// An outcome as a results row stores it: its body, built once, where the outcome
/// is (what a writer holds until it is committed, a fraction of the outcome's size).
pub(in crate::store) struct Row {
    pub(super) body: Box<[u8]>,
}

impl Row {
    pub(in crate::store) fn of(o: &Outcome) -> Row {
        let rest = rest_of(o);
        let parts = Parts {
            score: o.score,
            valid: o.is_score_valid,
            reason: o.reason.as_deref(),
            duration: o.duration_ms,
            rest: rest.as_deref(),
        };
        let mut body = Vec::with_capacity(
            18 + parts.reason.map_or(0, |r| r.len() + 3) + parts.rest.map_or(0, str::len),
        );
        parts.write(&mut body);
        Row {
            body: body.into_boxed_slice(),
        }
    }
}

/// A row read with [`COLUMNS`]: its id, sample hash and outcome (`None` when it does
/// not read as one: a row from another version of rwb, evaluated again).
pub(super) fn decode(
    row: &rusqlite::Row,
) -> rusqlite::Result<(i64, Option<SampleHash>, Option<Outcome>)> {
    let id: i64 = row.get(0)?;
    let hash = <SampleHash>::try_from(row.get_ref(1)?.as_blob().unwrap_or_default()).ok();
    let body = row.get_ref(2)?.as_blob().unwrap_or_default();
    Ok((id, hash, outcome_of(body)))
}

/// The outcome a row's body stores, or `None` when it does not read as one (a row
/// from another version of rwb, evaluated again).
pub(super) fn outcome_of(body: &[u8]) -> Option<Outcome> {
    let parts = Parts::read(body)?;
    let rest = match parts.rest {
        None => Rest::default(),
        Some(text) => serde_json::from_str::<Rest>(text).ok()?,
    };
    Some(Outcome {
        score: parts.score,
        is_score_valid: parts.valid,
        reason: parts.reason.map(Into::into),
        metrics: rest.metrics,
        step_outputs: rest.step_outputs,
        error: rest.error,
        result_error: rest.result_error,
        duration_ms: parts.duration,
        output: rest.output,
        repeat: None,
        swallowed: None,
        sandbox: rest.sandbox,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn written(parts: &Parts) -> Vec<u8> {
        let mut body = Vec::new();
        parts.write(&mut body);
        body
    }

    #[test]
    fn a_body_reads_back_as_the_parts_it_was_written_from() {
        let long = "é".repeat(100); // 200 bytes: a length of two LEB128 bytes
        let cases = [
            Parts {
                score: Some(0.25),
                valid: true,
                reason: Some("fine"),
                duration: 1.5,
                rest: None,
            },
            Parts {
                score: None,
                valid: false,
                reason: None,
                duration: 0.0,
                rest: Some("{}"),
            },
            Parts {
                score: Some(-0.0),
                valid: true,
                reason: Some(""),
                duration: 2.0,
                rest: None,
            },
            Parts {
                score: Some(1e300),
                valid: false,
                reason: Some(&long),
                duration: 3.0,
                rest: Some("[1]"),
            },
        ];
        for parts in &cases {
            let body = written(parts);
            assert_eq!(Parts::read(&body).as_ref(), Some(parts));
        }
        let body = written(&cases[3]);
        assert_eq!(&body[1 + 8 + 8..][..2], &[0xc8, 0x01], "200 as LEB128");
        let negative = Parts::read(&written(&cases[2])).and_then(|p| p.score);
        assert!(
            negative.is_some_and(|s| s == 0.0 && s.is_sign_negative()),
            "bits kept"
        );
        let nan = written(&Parts {
            score: Some(f64::NAN),
            ..cases[1]
        });
        assert!(Parts::read(&nan)
            .and_then(|p| p.score)
            .is_some_and(f64::is_nan));
    }

    #[test]
    fn a_body_that_is_not_one_reads_as_none() {
        let good = written(&Parts {
            score: Some(0.5),
            valid: true,
            reason: Some("why"),
            duration: 1.0,
            rest: None,
        });
        let mut extra = good.clone();
        extra.push(b'x'); // bytes after the reason, with no rest said
        let mut long = good.clone();
        long[17] = 9; // a reason longer than what follows
        let mut bad_utf8 = good.clone();
        bad_utf8[18] = 0xff;
        let mut endless = vec![VALID | REASON];
        endless.extend(0.0f64.to_le_bytes());
        endless.extend([0xff; 6]); // a length that never ends
        for (body, why) in [
            (&[][..], "empty"),
            (&[0x10][..], "an unknown flag"),
            (&good[..12], "a cut float"),
            (&extra[..], "trailing bytes"),
            (&long[..], "a cut reason"),
            (&bad_utf8[..], "a reason that is not UTF-8"),
            (&endless[..], "an endless length"),
        ] {
            assert_eq!(Parts::read(body), None, "{why}");
        }
    }
}
