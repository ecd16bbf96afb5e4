//! The results table: how outcomes are laid out on disk, written and read back.
//!
//! Each code key gets a small integer id (`codes`). A result's row id is that id in the
//! high bits and a per-code sequence number in the low [`SEQ_BITS`], so a code's rows
//! sit together in the order they were written, and the writer stores a run's results
//! in the order of their samples in the files (results arrive from the workers out of
//! order: see [`Pending`]). A rerun then reads them back as one sequential scan
//! ([`CacheReader::lookup`]), matching each row against the line it is asked about.
//!
//! The table has no index by sample hash. Each result would enter such an index at a
//! random place, and keeping it was most of what storing cost: in the workbench's
//! first run over 1,000,000 samples the writer thread took 13 s of CPU with it and
//! 2.7 s without (the index's pages no longer fit the cache, and every commit wrote
//! most of them to the WAL again). A lookup off the sequential path (an edited,
//! inserted or moved line, the workbench's selected sample) goes through a
//! [`Locator`] instead: the code's hashes, read in one scan the first time one is
//! needed, 8 bytes a row in memory.

use super::{CodeKey, SampleHash};
use crate::model::{EvalError, Outcome};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde_json::{Map, Value};
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::Duration;

/// Bits of a row id that number the rows of one code (the rest is the code's id).
const SEQ_BITS: u32 = 40;
/// How long queued rows wait for more before they are committed. A positioned row
/// may wait one interval more (see [`Pending`]), so a kill loses at most about
/// twice this much work; it never corrupts the file.
const WRITE_EVERY: Duration = Duration::from_millis(500);
/// How often the writer takes what was queued while it gathers a window.
const GATHER_EVERY: Duration = Duration::from_millis(10);
/// Rows a sequential reader fetches at a time.
const SCAN_CHUNK: i64 = 256;
/// Lookups per read transaction: one transaction per lookup costs a file lock each;
/// one for a whole run would hold every commit of the run's writer in the WAL.
pub(super) const READS_PER_SNAPSHOT: usize = 4096;

/// The schema step that creates the tables (a cache is thrown away on upgrade; the
/// other tables stay).
pub(super) const CREATE: &str = "
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
const COLUMNS: &str = "row, sample_hash, score, valid, reason, duration, rest";

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

/// The row `row`, when it is still `sample`'s: its outcome (`None` when it does not
/// read as one).
fn fetch(conn: &Connection, row: i64, sample: &SampleHash) -> Option<Option<Outcome>> {
    let sql = format!("SELECT {COLUMNS} FROM results WHERE row = ?1");
    let mut stmt = conn.prepare_cached(&sql).ok()?;
    let found = stmt.query_row(params![row], decode).optional().ok()??;
    (found.1.as_ref() == Some(sample)).then_some(found.2)
}

/// A locator entry: the first 4 bytes of a sample hash (high half) and the row's
/// sequence number in its code (low half), so that sorting groups a hash's rows.
fn entry(hash: &[u8], seq: i64) -> u64 {
    let head = u32::from_le_bytes(hash[..4].try_into().expect("4 bytes"));
    (u64::from(head) << 32) | (seq as u64 & u64::from(u32::MAX))
}

/// Rows added one at a time that are kept in the tail set, at least, before they
/// are merged into the sorted list.
const TAIL_LEAST: usize = 1024;

/// Where one code's stored samples are: an entry per row (see [`entry`]) in a sorted
/// list, but for the rows added one at a time since the last merge, which wait in a
/// set until there are enough to merge (a scan's rows are merged at once).
/// Built by one scan of the code's rows and extended with newer ones; a row found
/// through it is read back and its full hash checked, so two samples that share a
/// hash's first bytes, or a row deleted since, never answer for another sample.
/// Extending it scans on from the last row seen, so a code's row ids only grow: no
/// id of a deleted row is given again (see [`rekey`]).
pub(super) struct Locator {
    sorted: Vec<u64>,
    /// Entries added one at a time since the last merge (a set: a lookup finds
    /// them without walking them all, however many a rerun that replaces rows adds).
    tail: BTreeSet<u64>,
    /// The next row id a scan starts from (past every row seen).
    next: i64,
}

impl Locator {
    /// Every row of code `id`.
    pub(super) fn build(conn: &Connection, id: i64) -> Locator {
        let mut locator = Locator {
            sorted: Vec::new(),
            tail: BTreeSet::new(),
            next: first(id),
        };
        locator.refresh(conn, id);
        locator
    }

    /// Adds the rows of code `id` stored since the last scan (a read error adds none).
    pub(super) fn refresh(&mut self, conn: &Connection, id: i64) {
        let Ok(mut stmt) = conn
            .prepare_cached("SELECT row, sample_hash FROM results WHERE row >= ?1 AND row < ?2")
        else {
            return;
        };
        let Ok(mut rows) = stmt.query(params![self.next, first(id + 1)]) else {
            return;
        };
        let mut scanned = Vec::new();
        while let Ok(Some(r)) = rows.next() {
            let Ok(row) = r.get::<_, i64>(0) else {
                continue;
            };
            if let Ok(Ok(hash)) = r.get_ref(1).map(|v| v.as_blob()) {
                if hash.len() >= 4 {
                    scanned.push(entry(hash, row & ((1 << SEQ_BITS) - 1)));
                }
            }
            self.next = self.next.max(row + 1);
        }
        scanned.sort_unstable();
        if self.sorted.is_empty() {
            self.sorted = scanned; // a first scan: no second list
        } else {
            self.merge(&scanned);
        }
    }

    /// Adds a row (newer than every row added before).
    fn add(&mut self, hash: &[u8], row: i64) {
        self.tail.insert(entry(hash, row & ((1 << SEQ_BITS) - 1)));
        self.next = self.next.max(row + 1);
        if self.tail.len() > TAIL_LEAST + self.sorted.len() / 8 {
            let tail: Vec<u64> = std::mem::take(&mut self.tail).into_iter().collect();
            self.merge(&tail);
        }
    }

    /// Merges the sorted entries `new` into the sorted entries, from the back, in
    /// place (no scratch list the size of the entries).
    fn merge(&mut self, new: &[u64]) {
        let (n, m) = (self.sorted.len(), new.len());
        self.sorted.reserve_exact(m);
        self.sorted.resize(n + m, 0);
        let (mut i, mut j) = (n, m);
        for k in (0..n + m).rev() {
            if j == 0 {
                break; // what is left of the sorted entries is in place
            }
            if i > 0 && self.sorted[i - 1] > new[j - 1] {
                self.sorted[k] = self.sorted[i - 1];
                i -= 1;
            } else {
                self.sorted[k] = new[j - 1];
                j -= 1;
            }
        }
    }

    /// The rows that may hold `sample`, newest first (row ids of code `id`).
    fn candidates(&self, id: i64, sample: &SampleHash) -> Vec<i64> {
        let low = entry(sample, 0);
        let high = low | u64::from(u32::MAX);
        let from = self.sorted.partition_point(|e| *e < low);
        let to = self.sorted.partition_point(|e| *e <= high);
        let mut seqs: Vec<u64> = self.sorted[from..to].to_vec();
        seqs.extend(self.tail.range(low..=high));
        seqs.sort_unstable_by(|a, b| b.cmp(a));
        let base = first(id) as u64;
        seqs.into_iter()
            .map(|e| (base + (e & u64::from(u32::MAX))) as i64)
            .collect()
    }

    /// The newest row of code `id` that holds `sample`, with its outcome.
    pub(super) fn find(
        &self,
        conn: &Connection,
        id: i64,
        sample: &SampleHash,
    ) -> Option<(i64, Option<Outcome>)> {
        self.candidates(id, sample)
            .into_iter()
            .find_map(|row| fetch(conn, row, sample).map(|o| (row, o)))
    }
}

/// The locators a connection has built, by code id.
pub(super) type Locators = HashMap<i64, Locator>;

/// One stored outcome, by code key and sample hash (`None` also for an unreadable
/// row). `locators` keeps what was learned of each code's rows for the next call.
pub(super) fn outcome(
    conn: &Connection,
    locators: &mut Locators,
    key: &CodeKey,
    sample: &SampleHash,
) -> rusqlite::Result<Option<Outcome>> {
    let Some(id) = code_id(conn, key)? else {
        return Ok(None);
    };
    let locator = match locators.entry(id) {
        Entry::Occupied(known) => {
            let locator = known.into_mut();
            locator.refresh(conn, id);
            locator
        }
        Entry::Vacant(new) => new.insert(Locator::build(conn, id)),
    };
    Ok(locator.find(conn, id, sample).and_then(|(_, o)| o))
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
    /// `replaces`: an older row of the same sample may be stored (the run did not
    /// look it up), and goes; else the run looked it up and found none.
    Put {
        key: CodeKey,
        hash: SampleHash,
        at: Option<u64>,
        replaces: bool,
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
    replaces: bool,
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
        let mut cut: foldhash::HashMap<CodeKey, u64> = Default::default();
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
    ids: foldhash::HashMap<CodeKey, i64>,
    next: foldhash::HashMap<i64, i64>,
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
}

/// The background writer: its connection, what it holds, and the locators of the
/// codes it replaced rows of (kept up with its own rows).
pub(super) struct Writer {
    conn: Connection,
    pending: Pending,
    locators: Locators,
}

impl Writer {
    pub(super) fn new(conn: Connection) -> Writer {
        Writer {
            conn,
            pending: Pending::default(),
            locators: Locators::new(),
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
        let locators = &mut self.locators;
        for write in window {
            match write {
                Write::Put {
                    key,
                    hash,
                    at: Some(at),
                    replaces,
                    row,
                } => fresh.push(Held {
                    key,
                    at,
                    hash,
                    replaces,
                    row,
                }),
                Write::Put {
                    key,
                    hash,
                    replaces,
                    row,
                    ..
                } => put(&tx, &mut codes, locators, &key, &hash, replaces, &row)?,
                Write::Rekey(from, to) => {
                    for h in self.pending.take(std::mem::take(&mut fresh), true) {
                        put(
                            &tx, &mut codes, locators, &h.key, &h.hash, h.replaces, &h.row,
                        )?;
                    }
                    rekey(&tx, &mut codes, &from, &to)?;
                    // rows moved and went: what is known of their places is not
                    locators.clear();
                }
            }
        }
        for h in self.pending.take(fresh, last) {
            put(
                &tx, &mut codes, locators, &h.key, &h.hash, h.replaces, &h.row,
            )?;
        }
        tx.commit()
    }
}

/// Stores `stored` as the newest row of code `key`. When it `replaces`, an older row
/// of the same sample goes first: found through the code's locator, built at the
/// first such put (a run that looked its samples up and found nothing has nothing
/// to replace, and never builds one).
fn put(
    tx: &Transaction,
    codes: &mut Codes,
    locators: &mut Locators,
    key: &CodeKey,
    hash: &SampleHash,
    replaces: bool,
    stored: &Row,
) -> rusqlite::Result<()> {
    let id = codes.id(tx, key)?;
    let row = codes.next_row(tx, id)?;
    if replaces {
        let locator = locators.entry(id).or_insert_with(|| Locator::build(tx, id));
        let mut delete =
            tx.prepare_cached("DELETE FROM results WHERE row = ?1 AND sample_hash = ?2")?;
        for old in locator.candidates(id, hash) {
            delete.execute(params![old, &hash[..]])?;
        }
    }
    tx.prepare_cached(
        "INSERT INTO results (row, sample_hash, score, valid, reason, duration, rest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        row,
        &hash[..],
        stored.score,
        stored.valid,
        stored.reason.as_deref(),
        stored.duration,
        stored.rest.as_deref(),
    ])?;
    if let Some(locator) = locators.get_mut(&id) {
        locator.add(hash, row);
    }
    Ok(())
}

/// The sample hashes of code `id`'s rows, with their row ids.
fn hashes_of(tx: &Transaction, id: i64) -> rusqlite::Result<Vec<(i64, Vec<u8>)>> {
    tx.prepare_cached("SELECT row, sample_hash FROM results WHERE row >= ?1 AND row < ?2")?
        .query_map(params![first(id), first(id + 1)], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect()
}

/// Moves every row of `from` to `to`: `from`'s id is renamed when `to` has none,
/// else its rows follow `to`'s (in their order), replacing those of the same samples.
fn rekey(
    tx: &Transaction,
    codes: &mut Codes,
    from: &CodeKey,
    to: &CodeKey,
) -> rusqlite::Result<()> {
    let Some(source) = codes.find(tx, from)? else {
        return Ok(()); // nothing stored under `from`
    };
    if from == to {
        return Ok(());
    }
    let Some(target) = codes.find(tx, to)? else {
        tx.execute(
            "UPDATE codes SET code_key = ?2 WHERE id = ?1",
            params![source, &to[..]],
        )?;
        codes.ids.remove(from);
        codes.ids.insert(*to, source);
        return Ok(());
    };
    let moved = hashes_of(tx, source)?;
    if moved.is_empty() {
        return Ok(());
    }
    // past `to`'s last row before any of its rows goes: a code's row ids only grow
    // (locators scan on from the last row they saw)
    let shift = codes.next_row(tx, target)? - moved[0].0;
    let samples: std::collections::HashSet<&[u8]> =
        moved.iter().map(|(_, h)| h.as_slice()).collect();
    for (row, hash) in hashes_of(tx, target)? {
        if samples.contains(hash.as_slice()) {
            tx.execute("DELETE FROM results WHERE row = ?1", params![row])?;
        }
    }
    tx.execute(
        "UPDATE results SET row = row + ?3 WHERE row >= ?1 AND row < ?2",
        params![first(source), first(source + 1), shift],
    )?;
    codes.next.remove(&source);
    codes.next.remove(&target);
    Ok(())
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
/// Then it takes what is queued every [`GATHER_EVERY`] rather than each write as it
/// comes: a thread woken for every result cost more than storing it. Returns false
/// once the queue is closed and drained.
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
    loop {
        while window.len() < batch {
            match rx.try_recv() {
                Ok(write) => window.push(write),
                Err(flume::TryRecvError::Empty) => break,
                Err(flume::TryRecvError::Disconnected) => return false,
            }
        }
        let now = std::time::Instant::now();
        if window.len() >= batch || now >= deadline {
            return true;
        }
        std::thread::sleep(GATHER_EVERY.min(deadline - now));
    }
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
    left: usize,
    cursors: HashMap<CodeKey, Cursor>,
    /// Built at the first lookup of a code that is off the sequential path, with
    /// the read transaction they have seen every row of.
    locators: HashMap<i64, (Locator, u64)>,
    /// Read transactions begun or ended so far (each may see newer rows).
    snapshots: u64,
    /// Lookups that did not find their row at the cursor.
    fallbacks: usize,
}

impl CacheReader {
    pub(super) fn new(conn: Connection) -> CacheReader {
        CacheReader {
            conn,
            left: 0,
            cursors: HashMap::new(),
            locators: HashMap::new(),
            snapshots: 0,
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
        let snapshot = self.snapshots;
        let (locator, seen) = self
            .locators
            .entry(id)
            .or_insert_with(|| (Locator::build(conn, id), snapshot));
        if *seen != snapshot {
            locator.refresh(conn, id); // rows committed since
            *seen = snapshot;
        }
        let (row, found) = locator.find(conn, id, sample)?;
        cursor.seek(row);
        found
    }

    /// How many of the [`CacheReader::lookup`]s so far were not on the scan's path.
    pub fn fallbacks(&self) -> usize {
        self.fallbacks
    }

    /// Ends the read transaction after [`READS_PER_SNAPSHOT`] lookups and opens the
    /// next, so the writer's commits become visible and can be checkpointed.
    fn renew_snapshot(&mut self) {
        match self.left {
            0 => {
                if self.conn.execute_batch("BEGIN").is_ok() {
                    self.left = READS_PER_SNAPSHOT;
                    self.snapshots += 1;
                }
            }
            1 => {
                let _ = self.conn.execute_batch("COMMIT");
                self.left = 0;
                self.snapshots += 1; // this lookup reads outside a transaction
            }
            n => self.left = n - 1,
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
                writer.put_at(&KEY, &hash(i), i, true, &scored(i));
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
        writer.put_at(&KEY, &hash(2), 2, true, &plain);
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
        first.put_at(&KEY, &hash(0), 0, true, &scored(0));
        stored(1);
        second.put_at(&KEY, &hash(1), 1, true, &scored(1));
        second.finish();
        first.put_at(&KEY, &hash(2), 2, true, &scored(2));
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
            writer.put_at(&other, &hash(i), i, true, &scored(100));
        }
        for i in 5..20 {
            writer.put_at(&KEY, &hash(i), i, true, &scored(i));
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
    fn a_locator_keeps_its_entries_sorted_through_scans_and_added_rows() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let writer = store.writer().unwrap();
        for i in 0..20_000 {
            writer.put_at(&KEY, &hash(i), i, true, &scored(i));
        }
        writer.finish();
        let conn = store.conn.lock().unwrap();
        let id = code_id(&conn, &KEY).unwrap().unwrap();
        let mut locator = Locator::build(&conn, id);
        assert!(locator.tail.is_empty(), "{}", locator.tail.len());
        assert_eq!(locator.sorted.len(), 20_000);
        assert!(locator.sorted.is_sorted());
        assert_eq!(locator.candidates(id, &hash(12_345)).len(), 1);
        drop(conn);
        let writer = store.writer().unwrap();
        for i in 20_000..25_000 {
            writer.put_at(&KEY, &hash(i), i, true, &scored(i));
        }
        writer.finish();
        locator.refresh(&store.conn.lock().unwrap(), id);
        assert!(locator.tail.is_empty(), "{}", locator.tail.len());
        assert_eq!(locator.sorted.len(), 25_000);
        assert!(locator.sorted.is_sorted());
        assert_eq!(locator.candidates(id, &hash(24_999)).len(), 1);
        // rows added one at a time (a rerun that replaces rows) merge in order too
        for i in 0..10_000u64 {
            locator.add(&hash(i % 7 * 1000 + 30_000), (i + 25_000) as i64);
        }
        assert_eq!(locator.sorted.len() + locator.tail.len(), 35_000);
        assert!(locator.sorted.is_sorted());
        assert_eq!(locator.candidates(id, &hash(30_000)).len(), 1429);
    }

    #[test]
    fn rows_a_rekey_moves_are_found_by_a_locator_built_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let other: CodeKey = [6; 32];
        let writer = store.writer().unwrap();
        for i in 0..10 {
            writer.put_at(&other, &hash(i), i, true, &scored(100 + i));
        }
        writer.finish();
        // the store's locator of `other` learns its rows
        assert_eq!(store.outcome(&other, &hash(9)).unwrap(), Some(scored(109)));
        // the moved 9 replaces `other`'s last row: the moved rows come after it
        let writer = store.writer().unwrap();
        writer.put_at(&KEY, &hash(20), 0, true, &scored(20));
        writer.put_at(&KEY, &hash(9), 1, true, &scored(9));
        writer.rekey(&KEY, &other);
        writer.finish();
        assert_eq!(store.outcome(&other, &hash(20)).unwrap(), Some(scored(20)));
        assert_eq!(store.outcome(&other, &hash(9)).unwrap(), Some(scored(9)));
        assert_eq!(store.outcome(&other, &hash(8)).unwrap(), Some(scored(108)));
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
        writer.put_at(&KEY, &hash(1), 0, true, &scored(5));
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
        b[15] = 1; // the same first 8 bytes: the same locator entry
        let writer = store.writer().unwrap();
        writer.put_at(&KEY, &a, 0, true, &scored(1));
        writer.put_at(&KEY, &b, 1, true, &scored(2));
        writer.finish();
        assert_eq!(store.result_count().unwrap(), 2);
        assert_eq!(store.outcome(&KEY, &a).unwrap(), Some(scored(1)));
        assert_eq!(store.outcome(&KEY, &b).unwrap(), Some(scored(2)));
        // b first: off the sequential path, both are found through the locator
        let mut reader = store.reader().unwrap();
        assert_eq!(reader.lookup(&KEY, &b), Some(scored(2)));
        assert_eq!(reader.lookup(&KEY, &a), Some(scored(1)));
        assert_eq!(reader.fallbacks(), 2);
        // a newer outcome of b replaces b's row only
        let writer = store.writer().unwrap();
        writer.put(&KEY, &b, &scored(3));
        writer.finish();
        assert_eq!(store.result_count().unwrap(), 2);
        assert_eq!(store.outcome(&KEY, &a).unwrap(), Some(scored(1)));
        assert_eq!(store.outcome(&KEY, &b).unwrap(), Some(scored(3)));
    }

    #[test]
    fn a_rerun_that_did_not_look_its_samples_up_replaces_their_rows_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store_out_of_order(&store, 1000, 64);
        // a rerun without the cache: every sample again, with a new outcome
        let writer = store.writer().unwrap();
        for i in 0..1000 {
            writer.put_at(&KEY, &hash(i), i, false, &scored(i + 1));
        }
        writer.finish();
        assert_eq!(store.result_count().unwrap(), 1000, "the old rows went");
        let mut reader = store.reader().unwrap();
        for i in 0..1000 {
            assert_eq!(
                reader.lookup(&KEY, &hash(i)),
                Some(scored(i + 1)),
                "sample {i}"
            );
        }
        assert_eq!(reader.fallbacks(), 0, "the new rows are one scan");
    }

    #[test]
    fn the_selected_sample_is_found_among_rows_stored_after_the_first_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store_out_of_order(&store, 3000, 500);
        assert_eq!(
            store.outcome(&KEY, &hash(2999)).unwrap(),
            Some(scored(2999))
        );
        // more rows, then a replaced one: the store's locator learns both
        let writer = store.writer().unwrap();
        for i in 3000..6000 {
            writer.put_at(&KEY, &hash(i), i, true, &scored(i));
        }
        writer.put(&KEY, &hash(5), &scored(7));
        writer.finish();
        assert_eq!(
            store.outcome(&KEY, &hash(5999)).unwrap(),
            Some(scored(5999))
        );
        assert_eq!(store.outcome(&KEY, &hash(5)).unwrap(), Some(scored(7)));
        assert_eq!(store.outcome(&KEY, &hash(6000)).unwrap(), None);
    }

    #[test]
    fn a_cache_closed_without_a_checkpoint_opens_and_reads_back_everything() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let writer = store.writer().unwrap();
        for i in 0..3000 {
            writer.put_at(&KEY, &hash(i), i, true, &scored(i));
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
