//! Writing results: the background writer thread, its windows of writes (one
//! transaction each), the reorder buffer that stores a code's rows in file order, and
//! a rekey that moves a code's rows to another.

use super::locator::{Locator, Locators};
use super::row::{code_id, first, Row};
use crate::store::{CodeKey, SampleHash};
use rusqlite::{params, Connection, Transaction};
use std::time::Duration;

/// How long queued rows wait for more before they are committed. A positioned row
/// may wait one interval more (see [`Pending`]), so a kill loses at most about
/// twice this much work; it never corrupts the file.
const WRITE_EVERY: Duration = Duration::from_millis(500);

/// How often the writer takes what was queued while it gathers a window.
const GATHER_EVERY: Duration = Duration::from_millis(10);

/// What the background writer does, in the order it was asked.
pub(in crate::store) enum Write {
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
pub(in crate::store) struct Writer {
    conn: Connection,
    pending: Pending,
    locators: Locators,
}

impl Writer {
    pub(in crate::store) fn new(conn: Connection) -> Writer {
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
        let mut fresh = Vec::new();
        let locators = &mut self.locators;
        let mut puts = Puts {
            tx: &tx,
            insert: tx.prepare_cached(INSERT)?,
            insert_many: None,
            queued: Vec::with_capacity(INSERT_ROWS),
            codes: Codes::default(),
        };
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
                } => puts.put(locators, &key, &hash, replaces, row)?,
                Write::Rekey(from, to) => {
                    for h in self.pending.take(std::mem::take(&mut fresh), true) {
                        puts.put(locators, &h.key, &h.hash, h.replaces, h.row)?;
                    }
                    puts.insert_queued()?; // the rekey moves rows that are in the table
                    rekey(&tx, &mut puts.codes, &from, &to)?;
                    // rows moved and went: what is known of their places is not
                    locators.clear();
                }
            }
        }
        for h in self.pending.take(fresh, last) {
            puts.put(locators, &h.key, &h.hash, h.replaces, h.row)?;
        }
        puts.insert_queued()?;
        drop(puts);
        tx.commit()
    }
}

/// The insert of a stored row (see [`Puts::put`]).
const INSERT: &str = "INSERT INTO results (row, sample_hash, body) VALUES (?1, ?2, ?3)";

/// Rows one insert statement stores at most (see [`Puts::insert_queued`]).
const INSERT_ROWS: usize = 32;

/// The insert of [`INSERT_ROWS`] rows at once.
fn insert_many() -> String {
    let values = vec!["(?, ?, ?)"; INSERT_ROWS].join(", ");
    format!("INSERT INTO results (row, sample_hash, body) VALUES {values}")
}

/// What the puts of one transaction share: its inserts, prepared once (not looked up
/// in the statement cache per row), the rows waiting to be inserted together, and
/// what it learned of code ids (afresh in each transaction: another rwb may write
/// between two).
struct Puts<'t> {
    tx: &'t Transaction<'t>,
    insert: rusqlite::CachedStatement<'t>,
    insert_many: Option<rusqlite::CachedStatement<'t>>,
    /// Rows given their ids, not inserted yet: (row id, sample hash, row).
    queued: Vec<(i64, SampleHash, Row)>,
    codes: Codes,
}

impl Puts<'_> {
    /// Stores `stored` as the newest row of code `key`. When it `replaces`, an older
    /// row of the same sample goes first: found through the code's locator, built at
    /// the first such put (a run that looked its samples up and found nothing has
    /// nothing to replace, and never builds one).
    fn put(
        &mut self,
        locators: &mut Locators,
        key: &CodeKey,
        hash: &SampleHash,
        replaces: bool,
        stored: Row,
    ) -> rusqlite::Result<()> {
        let tx = self.tx;
        let id = self.codes.id(tx, key)?;
        let row = self.codes.next_row(tx, id)?;
        if replaces {
            // the older row may be among those queued: they go in first
            self.insert_queued()?;
            let locator = locators.entry(id).or_insert_with(|| Locator::build(tx, id));
            let mut delete =
                tx.prepare_cached("DELETE FROM results WHERE row = ?1 AND sample_hash = ?2")?;
            for old in locator.candidates(id, hash) {
                delete.execute(params![old, &hash[..]])?;
            }
        }
        self.queued.push((row, *hash, stored));
        if self.queued.len() >= INSERT_ROWS {
            self.insert_queued()?;
        }
        if let Some(locator) = locators.get_mut(&id) {
            locator.add(hash, row);
        }
        Ok(())
    }

    /// Inserts the queued rows: [`INSERT_ROWS`] of them with one statement (a
    /// statement's work per row is a fraction of a statement's per execution), fewer
    /// one by one.
    fn insert_queued(&mut self) -> rusqlite::Result<()> {
        let queued = std::mem::take(&mut self.queued);
        if queued.len() == INSERT_ROWS {
            let stmt = match &mut self.insert_many {
                Some(stmt) => stmt,
                none => none.insert(self.tx.prepare_cached(&insert_many())?),
            };
            let mut at = 0;
            for (row, hash, stored) in &queued {
                stmt.raw_bind_parameter(at + 1, row)?;
                stmt.raw_bind_parameter(at + 2, &hash[..])?;
                stmt.raw_bind_parameter(at + 3, &stored.body[..])?;
                at += 3;
            }
            stmt.raw_execute()?;
        } else {
            for (row, hash, stored) in &queued {
                self.insert
                    .execute(params![row, &hash[..], &stored.body[..]])?;
            }
        }
        self.queued = queued;
        self.queued.clear(); // its memory kept for the next rows
        Ok(())
    }
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
/// first), each committed at once, until the queue is closed and drained. A window
/// that cannot be committed (a full disk) is rolled back whole, its results left
/// for a later run to evaluate again; the first such error is returned, for whoever
/// finishes the writer to say once (a message printed here would land in the middle
/// of the workbench's screen, and once a window).
pub(in crate::store) fn write_loop(
    mut writer: Writer,
    rx: flume::Receiver<Write>,
    batch: usize,
) -> Option<String> {
    let mut trouble = None;
    let mut open = true;
    while open {
        let mut window = Vec::new();
        open = collect(&rx, &mut window, batch, !writer.pending.held.is_empty());
        if let Err(e) = writer.commit(window, !open) {
            // what is known of rows' places may name rows the rollback took back
            writer.locators.clear();
            trouble.get_or_insert_with(|| e.to_string());
        }
    }
    trouble
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
        // parked, not asleep: the run's end wakes the thread (`StoreWriter::finish`),
        // which then commits at once instead of after the rest of the interval
        std::thread::park_timeout(GATHER_EVERY.min(deadline - now));
    }
}
