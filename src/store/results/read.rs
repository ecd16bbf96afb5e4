//! Reading results back: one outcome or all of a code's through the store's
//! connection, and the [`CacheReader`] a run asks about its lines in file order.

use super::locator::{Locator, Locators};
use super::row::{code_id, decode, first, outcome_of, COLUMNS};
use super::scan::{Failed, Scan};
use crate::model::Outcome;
use crate::store::{CodeKey, SampleHash};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// The map a fallback lookup consults: foldhash, not SipHash.
type FastMap<K, V> = foldhash::HashMap<K, V>;

/// Rows a sequential reader fetches at a time.
const SCAN_CHUNK: i64 = 256;

/// Lookups per read transaction: one transaction per lookup costs a file lock each;
/// one for a whole run would hold every commit of the run's writer in the WAL.
pub(in crate::store) const READS_PER_SNAPSHOT: usize = 4096;

/// One stored outcome, by code key and sample hash (`None` also for an unreadable
/// row). `locators` keeps what was learned of each code's rows for the next call.
pub(in crate::store) fn outcome(
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
pub(in crate::store) fn all(
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
pub(in crate::store) fn holds(conn: &Connection, key: &CodeKey) -> rusqlite::Result<bool> {
    let Some(id) = code_id(conn, key)? else {
        return Ok(false);
    };
    conn.prepare_cached("SELECT 1 FROM results WHERE row >= ?1 AND row < ?2 LIMIT 1")?
        .query_row(params![first(id), first(id + 1)], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

/// Where a reader is in one code's rows.
struct Cursor {
    /// The code's id (`None`: nothing stored under it).
    id: Option<i64>,
    /// The next row id to fetch.
    next: i64,
    /// Rows fetched and not yet matched, from `ahead.at` on.
    ahead: Chunk,
    /// Whether the code's rows from `next` on are all fetched.
    done: bool,
}

impl Cursor {
    fn new(id: Option<i64>) -> Cursor {
        Cursor {
            id,
            next: id.map_or(0, first),
            ahead: Chunk::default(),
            done: id.is_none(),
        }
    }

    /// Continues after row `row`.
    fn seek(&mut self, row: i64) {
        self.ahead.clear();
        self.next = row + 1;
        self.done = false;
    }

    /// Fetches the next chunk of rows when none is left (through `scan`, `None` when
    /// it could not be prepared: then every lookup falls back).
    fn fill(&mut self, scan: Option<&mut Scan>) {
        let (Some(id), true, false) = (self.id, self.ahead.is_empty(), self.done) else {
            return;
        };
        let chunk = &mut self.ahead;
        chunk.clear();
        let Some(scan) = scan else {
            self.done = true; // no scan: every lookup falls back
            return;
        };
        let fetched = scan.rows(self.next, first(id + 1), SCAN_CHUNK, |row, hash, body| {
            chunk.push(row, hash, body)
        });
        match fetched {
            Ok(()) => {
                self.done = (chunk.rows.len() as i64) < SCAN_CHUNK;
                self.next = chunk.rows.last().map_or(self.next, |r| r.0 + 1);
            }
            Err(_) => {
                chunk.clear();
                self.done = true; // a read error: every lookup falls back
            }
        }
    }

    /// The next row's outcome when it is `sample`'s (then the cursor moves past it).
    fn take(&mut self, scan: Option<&mut Scan>, sample: &SampleHash) -> Option<Option<Outcome>> {
        self.fill(scan);
        self.ahead.take(sample)
    }
}

/// A chunk of rows as they are stored, their outcomes built one at a time as they
/// are taken: (row id, sample hash, where its body is in `bodies`) a row, the bodies
/// one after another (reused from chunk to chunk).
#[derive(Default)]
struct Chunk {
    rows: Vec<(i64, Option<SampleHash>, std::ops::Range<usize>)>,
    bodies: Vec<u8>,
    /// The first row not taken yet.
    at: usize,
}

impl Chunk {
    fn is_empty(&self) -> bool {
        self.at == self.rows.len()
    }

    fn clear(&mut self) {
        self.rows.clear();
        self.bodies.clear();
        self.at = 0;
    }

    fn push(&mut self, row: i64, hash: &[u8], body: &[u8]) {
        let start = self.bodies.len();
        self.bodies.extend_from_slice(body);
        let hash = <SampleHash>::try_from(hash).ok();
        self.rows.push((row, hash, start..self.bodies.len()));
    }

    /// The next row's outcome (`None` inside when it does not read as one), when
    /// that row is `sample`'s.
    fn take(&mut self, sample: &SampleHash) -> Option<Option<Outcome>> {
        match self.rows.get(self.at) {
            Some((_, Some(hash), body)) if hash == sample => {
                self.at += 1;
                Some(outcome_of(&self.bodies[body.clone()]))
            }
            _ => None,
        }
    }
}

/// Looks cached outcomes up on its own connection, one at a time, as a run reads its
/// lines: a run keeps no cached outcome in memory longer than it takes to hand it on.
pub struct CacheReader {
    /// The sequential scan's statement, on `conn` (declared first: it must be
    /// dropped before the connection).
    scan: Option<Scan>,
    conn: Connection,
    /// Lookups left in the current read transaction (0: none is open).
    left: usize,
    /// Per code looked up, where its scan is: a list, not a map (a run looks up
    /// under a few codes, and comparing keys costs less than hashing one a lookup).
    cursors: Vec<(CodeKey, Cursor)>,
    /// Built at the first lookup of a code that is off the sequential path, with
    /// the read transaction they have seen every row of.
    locators: FastMap<i64, (Locator, u64)>,
    /// Read transactions begun or ended so far (each may see newer rows).
    snapshots: u64,
    /// Lookups that did not find their row at the cursor.
    fallbacks: usize,
}

impl CacheReader {
    pub(in crate::store) fn new(conn: Connection) -> CacheReader {
        // SAFETY: the scan is kept beside the connection, and dropped before it
        // (see the field order); both are used on the thread that has the reader.
        let scan = unsafe { Scan::prepare(&conn) }
            .map_err(|Failed(rc)| {
                eprintln!("rwb: cannot read the cache in order (SQLite code {rc})")
            })
            .ok();
        CacheReader {
            scan,
            conn,
            left: 0,
            cursors: Vec::new(),
            locators: FastMap::default(),
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
        let at = match self.cursors.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                let id = code_id(conn, key).ok().flatten();
                self.cursors.push((*key, Cursor::new(id)));
                self.cursors.len() - 1
            }
        };
        let cursor = &mut self.cursors[at].1;
        let id = cursor.id?;
        if let Some(found) = cursor.take(self.scan.as_mut(), sample) {
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
