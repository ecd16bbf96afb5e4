//! The results table's tests: written through the store's writer, read back through
//! its reader and lookups, as a run does.

use crate::model::{EvalError, Outcome};
use crate::store::{CodeKey, SampleHash, Store, StoreWriter};
use rusqlite::{params, Connection};
use std::time::Duration;

pub(super) const KEY: CodeKey = [4; 32];

pub(super) fn hash(i: u64) -> SampleHash {
    let mut h = [0u8; 16];
    h[..8].copy_from_slice(&i.to_le_bytes());
    h
}

pub(super) fn scored(i: u64) -> Outcome {
    Outcome::scored(i as f64 / 8.0, Default::default())
}

/// A writer committing `batch` writes at a time (so a few samples make many commits).
pub(super) fn small_writer(store: &Store, batch: usize) -> StoreWriter {
    let conn = super::super::open_connection(store.path()).unwrap();
    store.writer_with(conn, 4, batch).unwrap()
}

/// Stores samples `0..n` as workers would answer them: each pair out of order.
pub(super) fn store_out_of_order(store: &Store, n: u64, batch: usize) {
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
fn a_scan_stops_where_its_code_ends_though_the_next_code_stores_the_same_samples() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let other: CodeKey = [5; 32];
    let writer = store.writer().unwrap();
    // the first code's rows end at a chunk's end; the next code's rows follow them
    // in the table, for the same samples with other scores
    for i in 0..512 {
        writer.put_at(&KEY, &hash(i), i, true, &scored(i));
    }
    for i in 0..600 {
        writer.put_at(&other, &hash(i), i, true, &scored(i + 1000));
    }
    writer.finish();
    let mut reader = store.reader().unwrap();
    for i in 0..512 {
        assert_eq!(reader.lookup(&KEY, &hash(i)), Some(scored(i)), "sample {i}");
    }
    // the file again from its start: the next rows in the table are the other
    // code's, for these very samples, and must not answer for this code
    for i in 0..3 {
        assert_eq!(reader.lookup(&KEY, &hash(i)), Some(scored(i)), "again {i}");
    }
    assert_eq!(
        reader.lookup(&KEY, &hash(550)),
        None,
        "a sample only the other has"
    );
    for i in 0..600 {
        let found = reader.lookup(&other, &hash(i));
        assert_eq!(
            found,
            Some(scored(i + 1000)),
            "sample {i} of the other code"
        );
    }
}

/// One commit of 100 rows (three inserts of 32 rows and four alone), then one that
/// replaces rows inserted both ways and adds more, with a replacement of a row queued
/// in the same commit: every sample reads back as last stored, once.
#[test]
fn rows_inserted_together_and_alone_read_back_and_are_replaced_alike() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let writer = small_writer(&store, 1000);
    for i in 0..100 {
        writer.put_at(&KEY, &hash(i), i, true, &scored(i));
    }
    writer.finish();
    let again = |i: u64| Outcome::scored(1000.0 + i as f64, Default::default());
    let writer = small_writer(&store, 1000);
    for i in (0..100).step_by(7) {
        writer.put(&KEY, &hash(i), &again(i)); // replaces the stored row
    }
    for i in 100..140 {
        writer.put_at(&KEY, &hash(i), i, true, &scored(i));
    }
    // the same sample again, at the same place, replacing: its first row is still
    // queued to be inserted with others when this one comes
    writer.put_at(&KEY, &hash(120), 120, false, &again(120));
    writer.finish();
    let mut reader = store.reader().unwrap();
    for i in 0..140 {
        let expected = if (i < 100 && i % 7 == 0) || i == 120 {
            again(i)
        } else {
            scored(i)
        };
        assert_eq!(reader.lookup(&KEY, &hash(i)), Some(expected), "sample {i}");
    }
    assert_eq!(store.result_count().unwrap(), 140, "one row per sample");
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
    full.step_outputs = Some(Box::new(serde_json::json!([{"step": 1}])));
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
    let bodies: Vec<Vec<u8>> = conn
        .prepare("SELECT body FROM results")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let rests = bodies.iter().filter(|b| super::row::keeps_json(b)).count();
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

/// A cache written before results were packed (schema 8: a column for each part)
/// is packed when a newer rwb opens it: every row reads back as the same outcome,
/// sequentially too, and a row whose columns do not read is dropped (evaluated again).
#[test]
fn a_cache_with_a_column_for_each_part_reads_the_same_once_packed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let path = store.path().to_path_buf();
    drop(store);
    let old = Connection::open(&path).unwrap();
    old.execute_batch(
        "DROP TABLE results;
         CREATE TABLE results (row INTEGER PRIMARY KEY, sample_hash BLOB NOT NULL,
             score REAL, valid INTEGER NOT NULL, reason TEXT, duration REAL NOT NULL,
             rest TEXT);
         PRAGMA user_version = 8;",
    )
    .unwrap();
    old.execute(
        "INSERT INTO codes (id, code_key) VALUES (1, ?1)",
        params![&KEY[..]],
    )
    .unwrap();
    let error = EvalError {
        kind: "ValueError".into(),
        message: "bad".into(),
        traceback: Some("Traceback ...".into()),
        file: Some("metrics/a/main.py".into()),
        line: Some(7),
    };
    let rest = serde_json::json!({"metrics": {"m": {"score": 0.5}}, "error": error}).to_string();
    let insert = "INSERT INTO results VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
    let row = |i: i64| (1i64 << 40) + i;
    let long = "why ".repeat(100); // a reason longer than one byte says
    old.execute(
        insert,
        params![row(0), &hash(0)[..], 0.25, 1, long, 1.5, None::<String>],
    )
    .unwrap();
    old.execute(
        insert,
        params![
            row(1),
            &hash(1)[..],
            None::<f64>,
            0,
            None::<String>,
            2.0,
            rest
        ],
    )
    .unwrap();
    old.execute(
        insert,
        params![row(2), &hash(2)[..], 1.0, "yes", "", 0.0, None::<String>],
    )
    .unwrap();
    old.execute(
        insert,
        params![row(3), &hash(3)[..], 0.75, 1, "", 0.125, None::<String>],
    )
    .unwrap();
    drop(old);

    let store = Store::open(dir.path()).unwrap();
    let mut quarter = Outcome::scored(0.25, Default::default());
    quarter.reason = Some(long.into());
    quarter.duration_ms = 1.5;
    let mut failed = Outcome::failed(error);
    failed
        .metrics
        .insert("m".into(), serde_json::json!({"score": 0.5}));
    failed.duration_ms = 2.0;
    let mut empty_reason = Outcome::scored(0.75, Default::default());
    empty_reason.reason = Some(Default::default());
    empty_reason.duration_ms = 0.125;
    let expected = [Some(quarter), Some(failed), None, Some(empty_reason)];
    for (i, outcome) in expected.iter().enumerate() {
        assert_eq!(
            &store.outcome(&KEY, &hash(i as u64)).unwrap(),
            outcome,
            "row {i}"
        );
    }
    let mut reader = store.reader().unwrap();
    for (i, outcome) in expected.iter().enumerate() {
        assert_eq!(
            &reader.lookup(&KEY, &hash(i as u64)),
            outcome,
            "row {i} in a scan"
        );
    }
    let conn = store.conn.lock().unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, super::super::SCHEMA_VERSION);
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM results", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 3, "the row whose columns do not read is gone");
}
