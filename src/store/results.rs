//! The results table: how outcomes are laid out on disk, written and read back.
//!
//! Each code key gets a small integer id (`codes`). A result's row id is that id in the
//! high bits and a per-code sequence number in the low [`SEQ_BITS`], so a code's rows
//! sit together in the order they were written, and the writer stores a run's results
//! in the order of their samples in the files (results arrive from the workers out of
//! order: see [`Pending`]). A rerun then reads them back as one sequential scan
//! ([`CacheReader::lookup`]), matching each row against the line it is asked about;
//! a line that does not match (edited, inserted, moved) is looked up by (code id,
//! sample hash) in a small index instead.

use super::{CodeKey, SampleHash};
use crate::model::{EvalError, Outcome};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// Bits of a row id that number the rows of one code (the rest is the code's id).
const SEQ_BITS: u32 = 40;
/// How long queued rows wait for more before they are committed. A positioned row
/// may wait one interval more (see [`Pending`]), so a kill loses at most about
/// twice this much work; it never corrupts the file.
const WRITE_EVERY: Duration = Duration::from_millis(500);
/// Rows a sequential reader fetches at a time.
const SCAN_CHUNK: i64 = 256;
/// Lookups per read transaction: one transaction per lookup costs a file lock each;
/// one for a whole run would hold every commit of the run's writer in the WAL.
pub(super) const READS_PER_SNAPSHOT: usize = 4096;

/// The schema step that creates the tables (a cache is thrown away on upgrade; the
/// other tables stay).
///
/// The index by sample holds the first 8 bytes of the sample hash as an integer
/// (`prefix`), not the 16-byte blob: integer keys are compared without a memcmp and
/// the index is about half as large, so a cold run's inserts (each at a random place
/// in it) cost less and fewer of its pages are written per commit. Lookups check the
/// full hash. Two samples whose hashes share a prefix (about 1 in 10^7 in a cache of
/// a million rows) replace each other's row: one of them is evaluated again, never
/// answered with the other's outcome.
pub(super) const CREATE: &str = "
    DROP TABLE IF EXISTS results;
    CREATE TABLE IF NOT EXISTS codes (
        id INTEGER PRIMARY KEY,
        code_key BLOB NOT NULL UNIQUE
    );
    CREATE TABLE results (
        row INTEGER PRIMARY KEY,
        code INTEGER NOT NULL,
        prefix INTEGER NOT NULL,
        sample_hash BLOB NOT NULL,
        score REAL,
        valid INTEGER NOT NULL,
        reason TEXT,
        duration REAL NOT NULL,
        rest TEXT
    );
    CREATE UNIQUE INDEX results_by_sample ON results (code, prefix);";

/// The columns a result is read from, in [`decode`]'s order.
const COLUMNS: &str = "row, sample_hash, score, valid, reason, duration, rest";

/// The index key of a sample hash: its first 8 bytes as an integer.
fn prefix(hash: &SampleHash) -> i64 {
    i64::from_le_bytes(hash[..8].try_into().expect("8 bytes"))
}

/// The first row id of code `id` (its rows are `first(id)..first(id + 1)`).
fn first(id: i64) -> i64 {
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
pub(super) struct Row {
    score: Option<f64>,
    valid: bool,
    reason: Option<Box<str>>,
    duration: f64,
    rest: Option<Box<str>>,
}

impl Row {
    pub(super) fn of(o: &Outcome) -> Row {
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
fn decode(row: &rusqlite::Row) -> rusqlite::Result<(i64, Option<SampleHash>, Option<Outcome>)> {
    let id: i64 = row.get(0)?;
    let hash = <SampleHash>::try_from(row.get_ref(1)?.as_blob()?).ok();
    let rest = match row.get_ref(6)?.as_str_or_null()? {
        None => Some(Rest::default()),
        Some(text) => serde_json::from_str::<Rest>(text).ok(),
    };
    let outcome = rest.map(|rest| -> rusqlite::Result<Outcome> {
        Ok(Outcome {
            score: row.get(2)?,
            is_score_valid: row.get::<_, i64>(3)? != 0,
            reason: row.get(4)?,
            metrics: rest.metrics,
            step_outputs: rest.step_outputs,
            error: rest.error,
            result_error: rest.result_error,
            duration_ms: row.get(5)?,
            output: rest.output,
        })
    });
    Ok((id, hash, outcome.transpose()?))
}

/// The id of code `key`, if it has one.
pub(super) fn code_id(conn: &Connection, key: &CodeKey) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM codes WHERE code_key = ?1")?
        .query_row(params![&key[..]], |r| r.get(0))
        .optional()
}

/// One stored outcome of code `id`, by sample hash, with its row id.
fn point(conn: &Connection, id: i64, sample: &SampleHash) -> Option<(i64, Option<Outcome>)> {
    let sql = format!("SELECT {COLUMNS} FROM results WHERE code = ?1 AND prefix = ?2");
    let mut stmt = conn.prepare_cached(&sql).ok()?;
    let found = stmt
        .query_row(params![id, prefix(sample)], decode)
        .optional()
        .ok()??;
    // another sample with the same prefix is not this one's
    (found.1.as_ref() == Some(sample)).then_some((found.0, found.2))
}

/// One stored outcome, by code key and sample hash (`None` also for an unreadable row).
pub(super) fn outcome(
    conn: &Connection,
    key: &CodeKey,
    sample: &SampleHash,
) -> rusqlite::Result<Option<Outcome>> {
    let Some(id) = code_id(conn, key)? else {
        return Ok(None);
    };
    Ok(point(conn, id, sample).and_then(|(_, o)| o))
}

/// Every readable stored outcome of code `key`, by sample hash.
pub(super) fn all(
    conn: &Connection,
    key: &CodeKey,
) -> rusqlite::Result<HashMap<SampleHash, Outcome>> {
    let mut out = HashMap::new();
    let Some(id) = code_id(conn, key)? else {
        return Ok(out);
    };
    let sql = format!("SELECT {COLUMNS} FROM results WHERE row >= ?1 AND row < ?2");
    let mut stmt = conn.prepare_cached(&sql)?;
    for row in stmt.query_map(params![first(id), first(id + 1)], decode)? {
        if let (_, Some(hash), Some(outcome)) = row? {
            out.insert(hash, outcome);
        }
    }
    Ok(out)
}

/// Whether anything is stored under code `key`.
pub(super) fn holds(conn: &Connection, key: &CodeKey) -> rusqlite::Result<bool> {
    let Some(id) = code_id(conn, key)? else {
        return Ok(false);
    };
    conn.prepare_cached("SELECT 1 FROM results WHERE row >= ?1 AND row < ?2 LIMIT 1")?
        .query_row(params![first(id), first(id + 1)], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

/// What the background writer does, in the order it was asked.
pub(super) enum Write {
    /// An outcome, with its sample's position in the run's files when known.
    Put {
        key: CodeKey,
        hash: SampleHash,
        at: Option<u64>,
        row: Row,
    },
    /// Every result stored under the first key moves to the second.
    Rekey(CodeKey, CodeKey),
}

/// A positioned result waiting to be written.
struct Held {
    key: CodeKey,
    at: u64,
    hash: SampleHash,
    row: Row,
}

/// The reorder buffer: positioned results held so that each code's rows are written
/// in file order although the workers answer out of order. A commit writes what was
/// held over from the previous commit and, with it, every newer result that belongs
/// before one of those (same code, earlier position); the rest waits for the next
/// commit. So rows are in order as long as no result is later than one commit
/// interval, and at most about one interval of results is held in memory.
#[derive(Default)]
struct Pending {
    held: Vec<Held>,
}

impl Pending {
    /// Takes `fresh` in, and returns what to write now, sorted (everything when `all`).
    fn take(&mut self, fresh: Vec<Held>, all: bool) -> Vec<Held> {
        let mut old = std::mem::take(&mut self.held);
        if all {
            old.extend(fresh);
            old.sort_by_key(|h| (h.key, h.at));
            return old;
        }
        let mut cut: HashMap<CodeKey, u64> = HashMap::new();
        for h in &old {
            let c = cut.entry(h.key).or_default();
            *c = (*c).max(h.at);
        }
        for h in fresh {
            if cut.get(&h.key).is_some_and(|c| h.at <= *c) {
                old.push(h);
            } else {
                self.held.push(h);
            }
        }
        old.sort_by_key(|h| (h.key, h.at));
        old
    }
}

/// What one transaction of the writer knows of code ids and each code's next
/// sequence number.
#[derive(Default)]
struct Codes {
    ids: HashMap<CodeKey, i64>,
    next: HashMap<i64, i64>,
}

impl Codes {
    /// The id of `key`, if it has one.
    fn find(&mut self, tx: &Transaction, key: &CodeKey) -> rusqlite::Result<Option<i64>> {
        if let Some(id) = self.ids.get(key) {
            return Ok(Some(*id));
        }
        let id = code_id(tx, key)?;
        if let Some(id) = id {
            self.ids.insert(*key, id);
        }
        Ok(id)
    }

    /// The id of `key`, given one when it has none.
    fn id(&mut self, tx: &Transaction, key: &CodeKey) -> rusqlite::Result<i64> {
        if let Some(id) = self.find(tx, key)? {
            return Ok(id);
        }
        tx.prepare_cached("INSERT INTO codes (code_key) VALUES (?1)")?
            .execute(params![&key[..]])?;
        let id = tx.last_insert_rowid();
        self.ids.insert(*key, id);
        Ok(id)
    }

    /// The next row id of code `id` (past every stored one).
    fn next_row(&mut self, tx: &Transaction, id: i64) -> rusqlite::Result<i64> {
        if let Some(next) = self.next.get_mut(&id) {
            *next += 1;
            return Ok(*next - 1);
        }
        let last: Option<i64> = tx
            .prepare_cached("SELECT max(row) FROM results WHERE row >= ?1 AND row < ?2")?
            .query_row(params![first(id), first(id + 1)], |r| r.get(0))?;
        let next = last.map_or(first(id), |l| l + 1);
        self.next.insert(id, next + 1);
        Ok(next)
    }

    /// Stores `outcome` as the newest row of code `key`, replacing an older row of
    /// the same sample. (A plain insert first: `INSERT OR REPLACE` would make SQLite
    /// journal every statement in case the replace fails halfway; a sample stored
    /// already is rare, as a run stores what it did not find.)
    fn put(
        &mut self,
        tx: &Transaction,
        key: &CodeKey,
        hash: &SampleHash,
        stored: &Row,
    ) -> rusqlite::Result<()> {
        let id = self.id(tx, key)?;
        let row = self.next_row(tx, id)?;
        let insert = |tx: &Transaction| {
            tx.prepare_cached(
                "INSERT INTO results (row, code, prefix, sample_hash, score, valid, reason, duration, rest)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                row,
                id,
                prefix(hash),
                &hash[..],
                stored.score,
                stored.valid,
                stored.reason.as_deref(),
                stored.duration,
                stored.rest.as_deref(),
            ])
        };
        match insert(tx) {
            Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) => {
                tx.prepare_cached("DELETE FROM results WHERE code = ?1 AND prefix = ?2")?
                    .execute(params![id, prefix(hash)])?;
                insert(tx)?;
            }
            done => {
                done?;
            }
        }
        Ok(())
    }

    /// Moves every row of `from` to `to`: `from`'s id is renamed when `to` has none,
    /// else its rows follow `to`'s (in their order), replacing those of the same samples.
    fn rekey(&mut self, tx: &Transaction, from: &CodeKey, to: &CodeKey) -> rusqlite::Result<()> {
        let Some(source) = self.find(tx, from)? else {
            return Ok(()); // nothing stored under `from`
        };
        if from == to {
            return Ok(());
        }
        let Some(target) = self.find(tx, to)? else {
            tx.execute(
                "UPDATE codes SET code_key = ?2 WHERE id = ?1",
                params![source, &to[..]],
            )?;
            self.ids.remove(from);
            self.ids.insert(*to, source);
            return Ok(());
        };
        tx.execute(
            "DELETE FROM results WHERE code = ?2 AND prefix IN
                 (SELECT prefix FROM results WHERE code = ?1)",
            params![source, target],
        )?;
        let lowest: Option<i64> = tx.query_row(
            "SELECT min(row) FROM results WHERE row >= ?1 AND row < ?2",
            params![first(source), first(source + 1)],
            |r| r.get(0),
        )?;
        if let Some(lowest) = lowest {
            let shift = self.next_row(tx, target)? - lowest;
            tx.execute(
                "UPDATE results SET row = row + ?2, code = ?3 WHERE code = ?1",
                params![source, shift, target],
            )?;
        }
        self.next.remove(&source);
        self.next.remove(&target);
        Ok(())
    }
}

/// The background writer: its connection and what it holds.
pub(super) struct Writer {
    conn: Connection,
    pending: Pending,
}

impl Writer {
    pub(super) fn new(conn: Connection) -> Writer {
        Writer {
            conn,
            pending: Pending::default(),
        }
    }

    /// Writes one window of writes in one transaction (everything held too when
    /// `last`). Unpositioned puts are written as they come; a rekey first writes
    /// everything queued before it.
    fn commit(&mut self, window: Vec<Write>, last: bool) -> rusqlite::Result<()> {
        // immediate: takes the write lock first (waiting for it), as a read first
        // could not wait for it later
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // learned afresh in each transaction: another rwb may write between two
        let mut codes = Codes::default();
        let mut fresh = Vec::new();
        for write in window {
            match write {
                Write::Put {
                    key,
                    hash,
                    at: Some(at),
                    row,
                } => fresh.push(Held { key, at, hash, row }),
                Write::Put { key, hash, row, .. } => codes.put(&tx, &key, &hash, &row)?,
                Write::Rekey(from, to) => {
                    for h in self.pending.take(std::mem::take(&mut fresh), true) {
                        codes.put(&tx, &h.key, &h.hash, &h.row)?;
                    }
                    codes.rekey(&tx, &from, &to)?;
                }
            }
        }
        for h in self.pending.take(fresh, last) {
            codes.put(&tx, &h.key, &h.hash, &h.row)?;
        }
        tx.commit()
    }
}

/// The writer thread: windows of up to `batch` writes (or [`WRITE_EVERY`] after the
/// first), each committed at once, until the queue is closed and drained.
pub(super) fn write_loop(mut writer: Writer, rx: flume::Receiver<Write>, batch: usize) {
    let mut open = true;
    while open {
        let mut window = Vec::new();
        open = collect(&rx, &mut window, batch, !writer.pending.held.is_empty());
        if let Err(e) = writer.commit(window, !open) {
            eprintln!("rwb: could not write to the cache: {e}");
        }
    }
}

/// Waits for the next window of writes; `holding` rows, it waits at most
/// [`WRITE_EVERY`] for the first (so held rows are committed while the run is quiet).
/// Returns false once the queue is closed and drained.
fn collect(
    rx: &flume::Receiver<Write>,
    window: &mut Vec<Write>,
    batch: usize,
    holding: bool,
) -> bool {
    use flume::RecvTimeoutError::{Disconnected, Timeout};
    let first = if holding {
        rx.recv_timeout(WRITE_EVERY)
    } else {
        rx.recv().map_err(|_| Disconnected)
    };
    match first {
        Ok(write) => window.push(write),
        Err(Timeout) => return true,
        Err(Disconnected) => return false,
    }
    let deadline = std::time::Instant::now() + WRITE_EVERY;
    while window.len() < batch {
        match rx.recv_deadline(deadline) {
            Ok(write) => window.push(write),
            Err(Timeout) => return true,
            Err(Disconnected) => return false,
        }
    }
    true
}

/// Where a reader is in one code's rows.
struct Cursor {
    /// The code's id (`None`: nothing stored under it).
    id: Option<i64>,
    /// The next row id to fetch.
    next: i64,
    /// Rows fetched and not yet matched: (row id, sample hash, outcome).
    ahead: VecDeque<(i64, Option<SampleHash>, Option<Outcome>)>,
    /// Whether the code's rows from `next` on are all fetched.
    done: bool,
}

impl Cursor {
    fn new(id: Option<i64>) -> Cursor {
        Cursor {
            id,
            next: id.map_or(0, first),
            ahead: VecDeque::new(),
            done: id.is_none(),
        }
    }

    /// Continues after row `row`.
    fn seek(&mut self, row: i64) {
        self.ahead.clear();
        self.next = row + 1;
        self.done = false;
    }

    /// Fetches the next chunk of rows when none is left.
    fn fill(&mut self, conn: &Connection) {
        let (Some(id), true, false) = (self.id, self.ahead.is_empty(), self.done) else {
            return;
        };
        let sql = format!(
            "SELECT {COLUMNS} FROM results WHERE row >= ?1 AND row < ?2 ORDER BY row LIMIT {SCAN_CHUNK}"
        );
        let fetched = conn.prepare_cached(&sql).and_then(|mut stmt| {
            stmt.query_map(params![self.next, first(id + 1)], decode)?
                .collect::<rusqlite::Result<VecDeque<_>>>()
        });
        match fetched {
            Ok(rows) => {
                self.done = (rows.len() as i64) < SCAN_CHUNK;
                self.next = rows.back().map_or(self.next, |r| r.0 + 1);
                self.ahead = rows;
            }
            Err(_) => self.done = true, // a read error: every lookup falls back
        }
    }

    /// The next row's outcome when it is `sample`'s (then the cursor moves past it).
    fn take(&mut self, conn: &Connection, sample: &SampleHash) -> Option<Option<Outcome>> {
        self.fill(conn);
        match self.ahead.front() {
            Some((_, Some(hash), _)) if hash == sample => self.ahead.pop_front().map(|r| r.2),
            _ => None,
        }
    }
}

/// Looks cached outcomes up on its own connection, one at a time, as a run reads its
/// lines: a run keeps no cached outcome in memory longer than it takes to hand it on.
pub struct CacheReader {
    conn: Connection,
    /// Lookups left in the current read transaction (0: none is open).
    left: std::cell::Cell<usize>,
    cursors: HashMap<CodeKey, Cursor>,
    /// Lookups that did not find their row at the cursor.
    fallbacks: usize,
}

impl CacheReader {
    pub(super) fn new(conn: Connection) -> CacheReader {
        CacheReader {
            conn,
            left: std::cell::Cell::new(0),
            cursors: HashMap::new(),
            fallbacks: 0,
        }
    }

    /// The outcome stored for `sample` under code `key`, or `None` (also for a row
    /// that does not read as an outcome, which is then evaluated again; a read error
    /// counts as a miss). Made for a run asking about its lines in file order: the rows
    /// of `key` are read sequentially, in the order they were stored, as long as they
    /// match; a sample that does not match is looked up by its hash (a fallback), and
    /// the scan goes on after the row found.
    pub fn lookup(&mut self, key: &CodeKey, sample: &SampleHash) -> Option<Outcome> {
        self.renew_snapshot();
        let conn = &self.conn;
        let cursor = match self.cursors.get_mut(key) {
            Some(cursor) => cursor,
            None => {
                let id = code_id(conn, key).ok().flatten();
                self.cursors.entry(*key).or_insert(Cursor::new(id))
            }
        };
        let id = cursor.id?;
        if let Some(found) = cursor.take(conn, sample) {
            return found;
        }
        self.fallbacks += 1;
        let (row, found) = point(conn, id, sample)?;
        cursor.seek(row);
        found
    }

    /// How many of the [`CacheReader::lookup`]s so far were not on the scan's path.
    pub fn fallbacks(&self) -> usize {
        self.fallbacks
    }

    /// Ends the read transaction after [`READS_PER_SNAPSHOT`] lookups and opens the
    /// next, so the writer's commits become visible and can be checkpointed.
    fn renew_snapshot(&self) {
        match self.left.get() {
            0 => {
                if self.conn.execute_batch("BEGIN").is_ok() {
                    self.left.set(READS_PER_SNAPSHOT);
                }
            }
            1 => {
                let _ = self.conn.execute_batch("COMMIT");
                self.left.set(0);
            }
            n => self.left.set(n - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Store, StoreWriter};

    const KEY: CodeKey = [4; 32];

    fn hash(i: u64) -> SampleHash {
        let mut h = [0u8; 16];
        h[..8].copy_from_slice(&i.to_le_bytes());
        h
    }

    fn scored(i: u64) -> Outcome {
        Outcome::scored(i as f64 / 8.0, Default::default())
    }

    /// A writer committing `batch` writes at a time (so a few samples make many commits).
    fn small_writer(store: &Store, batch: usize) -> StoreWriter {
        let conn = super::super::open_connection(store.path()).unwrap();
        store.writer_with(conn, 4, batch).unwrap()
    }

    /// Stores samples `0..n` as workers would answer them: each pair out of order.
    fn store_out_of_order(store: &Store, n: u64, batch: usize) {
        let writer = small_writer(store, batch);
        for pair in (0..n).step_by(2) {
            for i in [pair + 1, pair].into_iter().filter(|i| *i < n) {
                writer.put_at(&KEY, &hash(i), i, &scored(i));
            }
        }
        writer.finish();
    }

    #[test]
    fn results_answered_out_of_order_are_read_back_as_one_scan() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // 3 writes a commit: pairs straddle commits, which hold rows back to order them
        store_out_of_order(&store, 200, 3);
        let mut reader = store.reader().unwrap();
        for i in 0..200 {
            assert_eq!(reader.lookup(&KEY, &hash(i)), Some(scored(i)), "sample {i}");
        }
        assert_eq!(
            reader.fallbacks(),
            0,
            "an unchanged file is read sequentially"
        );
        assert_eq!(reader.lookup(&KEY, &hash(500)), None);
        assert_eq!(reader.lookup(&[5; 32], &hash(1)), None, "another code");
    }

    #[test]
    fn edited_inserted_moved_and_deleted_lines_are_found_by_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store_out_of_order(&store, 2000, 64);
        // line 10 deleted, 500 edited (a new hash), a new line before 1000, 1500 and
        // 1501 swapped
        let mut lines: Vec<u64> = (0..2000).filter(|i| *i != 10).collect();
        let edited = lines.iter().position(|i| *i == 500).unwrap();
        lines[edited] = 90_500;
        let before = lines.iter().position(|i| *i == 1000).unwrap();
        lines.insert(before, 91_000);
        let moved = lines.iter().position(|i| *i == 1500).unwrap();
        lines.swap(moved, moved + 1);
        let mut reader = store.reader().unwrap();
        for i in &lines {
            let expected = (*i < 2000).then(|| scored(*i));
            assert_eq!(reader.lookup(&KEY, &hash(*i)), expected, "sample {i}");
        }
        // each change costs a lookup or two by hash, then the scan goes on
        assert!(reader.fallbacks() <= 8, "{} fallbacks", reader.fallbacks());
    }

    #[test]
    fn every_field_of_an_outcome_survives_and_plain_ones_store_no_json() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut full = Outcome::failed(EvalError {
            kind: "ValueError".into(),
            message: "bad".into(),
            traceback: Some("Traceback ...".into()),
            file: Some("metrics/a/main.py".into()),
            line: Some(7),
        });
        full.reason = Some("why".into());
        full.metrics
            .insert("m".into(), serde_json::json!({"score": 0.5}));
        full.step_outputs = Some(serde_json::json!([{"step": 1}]));
        full.result_error = Some("said so".into());
        full.output = Some("printed\n".into());
        full.duration_ms = 2.5;
        let mut plain = scored(3);
        plain.reason = Some("fine".into());
        plain.duration_ms = 0.125;
        let writer = store.writer().unwrap();
        writer.put(&KEY, &hash(1), &full);
        writer.put_at(&KEY, &hash(2), 2, &plain);
        writer.finish();
        assert_eq!(store.outcome(&KEY, &hash(1)).unwrap(), Some(full));
        assert_eq!(store.outcome(&KEY, &hash(2)).unwrap(), Some(plain));
        let conn = store.conn.lock().unwrap();
        let rests: i64 = conn
            .query_row("SELECT count(rest) FROM results", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            rests, 1,
            "only the outcome with more than a score keeps JSON"
        );
    }

    #[test]
    fn two_writers_taking_turns_on_one_code_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // as a workbench and an `rwb run` in another terminal: each commits a row at a time
        let (first, second) = (small_writer(&store, 1), small_writer(&store, 1));
        let stored = |n: usize| {
            let give_up = std::time::Instant::now() + Duration::from_secs(20);
            while store.result_count().unwrap() < n && std::time::Instant::now() < give_up {
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        first.put_at(&KEY, &hash(0), 0, &scored(0));
        stored(1);
        second.put_at(&KEY, &hash(1), 1, &scored(1));
        second.finish();
        first.put_at(&KEY, &hash(2), 2, &scored(2));
        first.finish();
        let all = store.results_for(&KEY).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[&hash(2)], scored(2));
    }

    #[test]
    fn a_rekey_into_a_stored_code_keeps_both_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let other: CodeKey = [6; 32];
        let writer = store.writer().unwrap();
        for i in 0..10 {
            writer.put_at(&other, &hash(i), i, &scored(100));
        }
        for i in 5..20 {
            writer.put_at(&KEY, &hash(i), i, &scored(i));
        }
        writer.rekey(&KEY, &other);
        writer.finish();
        assert!(!store.holds(&KEY));
        let mut reader = store.reader().unwrap();
        for i in 0..20 {
            let expected = if i < 5 { scored(100) } else { scored(i) };
            assert_eq!(
                reader.lookup(&other, &hash(i)),
                Some(expected),
                "sample {i}"
            );
        }
        // 0..5 stay first (5..10 were replaced), the moved 5..20 follow in order
        assert_eq!(reader.fallbacks(), 0);
    }

    #[test]
    fn a_cache_of_the_previous_schema_is_emptied_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = Store::path_for(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE results (code_key BLOB NOT NULL, sample_hash BLOB NOT NULL,
                 outcome TEXT NOT NULL, PRIMARY KEY (code_key, sample_hash)) WITHOUT ROWID;
             CREATE TABLE imports (spec_key BLOB PRIMARY KEY, memo TEXT NOT NULL);
             CREATE TABLE baselines (name TEXT NOT NULL, evaluator TEXT NOT NULL,
                 sample_hash BLOB NOT NULL, outcome TEXT NOT NULL,
                 PRIMARY KEY (name, evaluator, sample_hash)) WITHOUT ROWID;
             CREATE TABLE baseline_info (name TEXT PRIMARY KEY, created REAL NOT NULL,
                 sources TEXT NOT NULL);
             CREATE TABLE versions (evaluator TEXT NOT NULL, code_key BLOB NOT NULL,
                 first_seen REAL NOT NULL, last_seen REAL NOT NULL, count INTEGER NOT NULL,
                 mean REAL, sources TEXT NOT NULL, PRIMARY KEY (evaluator, code_key)) WITHOUT ROWID;
             PRAGMA user_version = 3;",
        )
        .unwrap();
        let text = serde_json::to_string(&scored(2)).unwrap();
        old.execute(
            "INSERT INTO results VALUES (?1, ?2, ?3)",
            params![&KEY[..], &hash(1)[..], text],
        )
        .unwrap();
        old.execute(
            "INSERT INTO baselines VALUES ('before', 'length', ?1, ?2)",
            params![&hash(1)[..], text],
        )
        .unwrap();
        old.execute_batch(
            "INSERT INTO baseline_info VALUES ('before', 1.0, '[]');
             INSERT INTO versions VALUES ('length', x'01', 1.0, 2.0, 3, 0.25, '[]');",
        )
        .unwrap();
        drop(old);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.result_count().unwrap(),
            0,
            "the old cache is thrown away"
        );
        assert!(!store.holds(&KEY));
        let baseline = store.load_baseline("before").unwrap().unwrap();
        assert_eq!(baseline[&("length".to_string(), hash(1))], scored(2));
        let versions = store.versions("length").unwrap();
        assert_eq!((versions.len(), versions[0].count), (1, 3));
        let writer = store.writer().unwrap();
        writer.put_at(&KEY, &hash(1), 0, &scored(5));
        writer.finish();
        assert_eq!(store.outcome(&KEY, &hash(1)).unwrap(), Some(scored(5)));
        let conn = store.conn.lock().unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, super::super::SCHEMA_VERSION);
    }

    #[test]
    fn samples_sharing_a_hash_prefix_never_answer_for_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (a, mut b) = (hash(9), hash(9));
        b[15] = 1; // same first 8 bytes: the same index key
        let writer = store.writer().unwrap();
        writer.put_at(&KEY, &a, 0, &scored(1));
        writer.put_at(&KEY, &b, 1, &scored(2));
        writer.finish();
        assert_eq!(store.result_count().unwrap(), 1, "b replaced a");
        assert_eq!(
            store.outcome(&KEY, &a).unwrap(),
            None,
            "a is evaluated again"
        );
        assert_eq!(store.outcome(&KEY, &b).unwrap(), Some(scored(2)));
        let mut reader = store.reader().unwrap();
        assert_eq!(reader.lookup(&KEY, &a), None);
        assert_eq!(reader.lookup(&KEY, &b), Some(scored(2)));
    }

    #[test]
    fn a_cache_closed_without_a_checkpoint_opens_and_reads_back_everything() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let writer = store.writer().unwrap();
        for i in 0..3000 {
            writer.put_at(&KEY, &hash(i), i, &scored(i));
        }
        writer.finish();
        let path = store.path().to_path_buf();
        drop(store);
        let wal = std::fs::metadata(path.with_extension("sqlite-wal")).unwrap();
        assert!(wal.len() > 0, "closing left the WAL to the next open");
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok");
        assert_eq!(store.result_count().unwrap(), 3000);
        let mut reader = store.reader().unwrap();
        for i in 0..3000 {
            assert_eq!(reader.lookup(&KEY, &hash(i)), Some(scored(i)), "sample {i}");
        }
        assert_eq!(reader.fallbacks(), 0);
    }
}
