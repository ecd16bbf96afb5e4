//! Finding a sample's row off the sequential path: a [`Locator`] per code, built by
//! one scan of the code's sample hashes, 8 bytes a row in memory.

use super::row::{fetch, first, SEQ_BITS};
use crate::model::Outcome;
use crate::store::SampleHash;
use rusqlite::{params, Connection};
use std::collections::{BTreeSet, HashMap};

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
/// id of a deleted row is given again (see `rekey` in write.rs).
pub(in crate::store) struct Locator {
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
    pub(super) fn add(&mut self, hash: &[u8], row: i64) {
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
    pub(super) fn candidates(&self, id: i64, sample: &SampleHash) -> Vec<i64> {
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
pub(in crate::store) type Locators = HashMap<i64, Locator>;

#[cfg(test)]
mod tests {
    use super::super::row::code_id;
    use super::super::tests::{hash, scored, KEY};
    use super::Locator;
    use crate::store::Store;

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
}
