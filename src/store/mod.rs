//! The on-disk store: results cached per (evaluator code, sample, kwargs) in SQLite
//! under `DIR/.rwb/`, and what each evaluator imported last time.
//!
//! SQLite in WAL mode with every write in a transaction, so killing rwb at any moment
//! leaves the file whole. Must not spawn processes or know about Python.

use crate::model::{Outcome, Style, Version};
use rusqlite::{config::DbConfig, params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

mod checks;
mod results;
pub use checks::{CheckRecord, Finding};
pub use results::CacheReader;
use results::Write;

/// Identifies one version of an evaluator's code, style, kwargs and interpreter.
pub type CodeKey = [u8; 32];
/// Identifies one sample line's content.
pub type SampleHash = [u8; 16];
/// A stored baseline: outcomes by (evaluator name, sample hash).
pub type BaselineOutcomes = HashMap<(String, SampleHash), Outcome>;

const SCHEMA_VERSION: i64 = 10;
/// What a sample's content key is (`store_info.line_keys`): XXH3-128 of the trimmed
/// line since schema 8. A store written before keyed lines by the first 16 bytes of
/// their BLAKE3 hash ([`LEGACY_LINE_KEYS`]) until it is re-keyed (see
/// [`Store::rekey_lines`]).
pub const LINE_KEYS: &str = "xxh3-128";
/// The line keys of stores written before schema 8.
pub const LEGACY_LINE_KEYS: &str = "blake3-128";
/// Writes per commit at most. A batch (and up to one more held for ordering) is in
/// memory while it is committed (~300 bytes a row), so this bounds the writer's memory.
/// Appending rows costs about the same per row in small commits as in large ones
/// (20,000 a commit paid off for an index by hash, gone since schema 6): at 1,000,000
/// samples with 618k cached, a run's peak memory was 62 MB with 20,000 and 47 MB with
/// 4,096.
const WRITE_BATCH: usize = 4_096;
/// Writes queued for the writer thread at most: past that, `put` waits for the
/// writer to take some (a run that evaluates faster than SQLite stores would
/// otherwise queue every result of a huge file in memory).
const WRITE_QUEUE: usize = 8_192;
/// Page cache of a run's cache reader, in KiB.
const READER_CACHE_KIB: i64 = 2 * 1024;
/// Bytes of the cache file a reader maps into memory: a lookup there reads the page in
/// place (no system call, no copy). Bounded, so that a huge cache does not grow the
/// run's memory with it (its pages count in the run's RSS); lookups past it read
/// pages as usual.
const READER_MMAP_BYTES: i64 = 8 << 20;

#[derive(Debug, thiserror::Error)]
#[error("cache {path}: {message}")]
pub struct StoreError {
    pub path: PathBuf,
    pub message: String,
}

/// What an evaluator imported since a worker last loaded it (at import time and in
/// every evaluation since), with each project file's content hash and each
/// third-party file's stamp: while all of them are unchanged, the code key is known
/// without starting Python.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ImportMemo {
    pub style: Style,
    /// Project files and their content hashes.
    pub files: Vec<(PathBuf, String)>,
    /// Third-party module files and distribution metadata files.
    #[serde(default)]
    pub stamps: Vec<Stamp>,
    /// Installed distributions imported: (name, version).
    #[serde(default)]
    pub dists: Vec<(String, String)>,
}

/// A file's size and modification time: cheap to compare (one `stat`), for files
/// too many to hash on every run (site-packages).
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Stamp {
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: i128,
}

pub struct Store {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Where each code's samples are, for [`Store::outcome`] (the workbench asks for
    /// one sample at a time, and would otherwise scan the code's rows each time).
    locators: Mutex<results::Locators>,
}

impl Store {
    /// The cache file of a workspace.
    pub fn path_for(root: &Path) -> PathBuf {
        root.join(".rwb").join("cache.sqlite")
    }

    pub fn open(root: &Path) -> Result<Store, StoreError> {
        let path = Store::path_for(root);
        let fail = |message: String| StoreError {
            path: path.clone(),
            message,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create folder: {e}")))?;
        }
        let conn = open_connection(&path).map_err(|e| {
            fail(format!(
                "{e} (delete the file to start a fresh cache, or run with --no-cache)"
            ))
        })?;
        // This connection's writes are a run's bookkeeping (its code version, an
        // import memo, a baseline); they never checkpoint the WAL: the results
        // writer's commits do (see `writer`). A process that opens the file reads
        // the WAL afresh and takes none of it as copied yet, so a WAL left past the
        // checkpoint threshold was copied into the file again, whole, by the one
        // small commit at the end of every fully cached run (about 800 page writes
        // and 3 fsyncs), and stayed past the threshold.
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Store {
            path,
            conn: Mutex::new(conn),
            locators: Mutex::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The hashes of samples files' lines remembered beside the cache (see
    /// [`crate::workspace::LineMemos`]).
    pub fn line_memos(&self) -> crate::workspace::LineMemos {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        crate::workspace::LineMemos::in_dir(dir)
    }

    /// [`Store::line_memos`] of the workspace at `root`, without opening its cache
    /// (a run without the cache still reads them).
    pub fn line_memos_of(root: &Path) -> crate::workspace::LineMemos {
        let path = Store::path_for(root);
        crate::workspace::LineMemos::in_dir(path.parent().unwrap_or(Path::new(".")))
    }

    fn fail(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    /// Every cached outcome of one code version, by sample hash (rows from another
    /// version of rwb left out: they are evaluated again).
    pub fn results_for(&self, key: &CodeKey) -> Result<HashMap<SampleHash, Outcome>, StoreError> {
        let conn = self.conn.lock().unwrap();
        results::all(&conn, key).map_err(|e| self.fail(e))
    }

    /// One cached outcome, by code version and sample hash (the workbench reads the
    /// selected sample's reasons this way instead of keeping every outcome). `None`
    /// when it is not stored, or stored by another version of rwb.
    pub fn outcome(
        &self,
        key: &CodeKey,
        sample: &SampleHash,
    ) -> Result<Option<Outcome>, StoreError> {
        let conn = self.conn.lock().unwrap();
        let mut locators = self.locators.lock().unwrap();
        results::outcome(&conn, &mut locators, key, sample).map_err(|e| self.fail(e))
    }

    /// A reader of cached outcomes with its own connection, for a run to look its
    /// samples up one at a time instead of holding every cached outcome in memory.
    pub fn reader(&self) -> Result<CacheReader, StoreError> {
        let conn = open_connection(&self.path).map_err(|e| self.fail(e))?;
        conn.pragma_update(None, "cache_size", -READER_CACHE_KIB)
            .map_err(|e| self.fail(e))?;
        conn.pragma_update(None, "mmap_size", READER_MMAP_BYTES)
            .map_err(|e| self.fail(e))?;
        Ok(CacheReader::new(conn))
    }

    /// Whether anything is stored under code `key` (a run neither opens a reader nor
    /// looks lines up for evaluators with nothing cached). A read error counts as
    /// nothing.
    pub fn holds(&self, key: &CodeKey) -> bool {
        let conn = self.conn.lock().unwrap();
        results::holds(&conn, key).unwrap_or(false)
    }

    pub fn import_memo(&self, spec_key: &CodeKey) -> Option<ImportMemo> {
        let conn = self.conn.lock().unwrap();
        let text: Option<String> = conn
            .query_row(
                "SELECT memo FROM imports WHERE spec_key = ?1",
                params![&spec_key[..]],
                |row| row.get(0),
            )
            .optional()
            .ok()
            .flatten();
        serde_json::from_str(&text?).ok()
    }

    pub fn put_import_memo(&self, spec_key: &CodeKey, memo: &ImportMemo) -> Result<(), StoreError> {
        let conn = self.conn.lock().unwrap();
        let text = serde_json::to_string(memo).expect("memo serializes");
        conn.execute(
            "INSERT OR REPLACE INTO imports (spec_key, memo) VALUES (?1, ?2)",
            params![&spec_key[..], text],
        )
        .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// SQLite's own consistency check of the file ("ok" when whole).
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        let conn = self.conn.lock().unwrap();
        conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.fail(e))
    }

    /// How many outcomes the cache holds.
    pub fn result_count(&self) -> Result<usize, StoreError> {
        let conn = self.conn.lock().unwrap();
        conn.query_row("SELECT COUNT(*) FROM results", [], |r| r.get::<_, i64>(0))
            .map(|n| n as usize)
            .map_err(|e| self.fail(e))
    }

    /// Stores `rows` (evaluator, sample hash, outcome) as baseline `name`, replacing
    /// one of the same name, with the evaluators' sources (file, text) for later diffs.
    pub fn save_baseline<'a>(
        &self,
        name: &str,
        rows: impl Iterator<Item = (&'a str, &'a SampleHash, &'a Outcome)>,
        sources: &[(String, String)],
    ) -> Result<usize, StoreError> {
        let mut conn = self.conn.lock().unwrap();
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        let mut count = 0;
        {
            tx.execute("DELETE FROM baselines WHERE name = ?1", params![name])
                .map_err(|e| self.fail(e))?;
            let mut stmt = tx
                .prepare("INSERT OR REPLACE INTO baselines (name, evaluator, sample_hash, outcome) VALUES (?1, ?2, ?3, ?4)")
                .map_err(|e| self.fail(e))?;
            for (evaluator, hash, outcome) in rows {
                let text = serde_json::to_string(outcome).expect("outcomes serialize");
                stmt.execute(params![name, evaluator, &hash[..], text])
                    .map_err(|e| self.fail(e))?;
                count += 1;
            }
            let created = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            let sources = serde_json::to_string(sources).expect("sources serialize");
            tx.execute(
                "INSERT OR REPLACE INTO baseline_info (name, created, sources) VALUES (?1, ?2, ?3)",
                params![name, created, sources],
            )
            .map_err(|e| self.fail(e))?;
        }
        tx.commit().map_err(|e| self.fail(e))?;
        Ok(count)
    }

    /// Baseline `name` by (evaluator, sample hash), or `None` when there is none.
    pub fn load_baseline(&self, name: &str) -> Result<Option<BaselineOutcomes>, StoreError> {
        let conn = self.conn.lock().unwrap();
        let exists: Option<f64> = conn
            .query_row(
                "SELECT created FROM baseline_info WHERE name = ?1",
                params![name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.fail(e))?;
        if exists.is_none() {
            return Ok(None);
        }
        let mut stmt = conn
            .prepare("SELECT evaluator, sample_hash, outcome FROM baselines WHERE name = ?1")
            .map_err(|e| self.fail(e))?;
        let rows = stmt
            .query_map(params![name], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Vec<u8>>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.fail(e))?;
        let mut out = HashMap::new();
        for row in rows {
            let (evaluator, hash, text) = row.map_err(|e| self.fail(e))?;
            if let (Ok(hash), Ok(outcome)) = (
                <SampleHash>::try_from(hash.as_slice()),
                serde_json::from_str(&text),
            ) {
                out.insert((evaluator, hash), outcome);
            }
        }
        Ok(Some(out))
    }

    /// Records a run of an evaluator's code version: its sources (file, text), how many
    /// samples it scored, their mean, and how many it failed on. A version seen
    /// before keeps its first time.
    pub fn record_version(
        &self,
        evaluator: &str,
        key: &CodeKey,
        sources: &[(String, String)],
        scored: Scored,
    ) -> Result<(), StoreError> {
        let Scored {
            count,
            mean,
            errors,
        } = scored;
        let conn = self.conn.lock().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let sources = serde_json::to_string(sources).expect("sources serialize");
        conn.execute(
            "INSERT INTO versions (evaluator, code_key, first_seen, last_seen, count, mean, sources, errors)
             VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (evaluator, code_key) DO UPDATE SET last_seen = ?3, count = ?4, mean = ?5, errors = ?7",
            params![evaluator, &key[..], now, count as i64, mean, sources, errors as i64],
        )
        .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// An evaluator's recorded versions, newest first.
    pub fn versions(&self, evaluator: &str) -> Result<Vec<Version>, StoreError> {
        let conn = self.conn.lock().unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT first_seen, last_seen, count, mean, sources, errors FROM versions
                 WHERE evaluator = ?1 ORDER BY first_seen DESC",
            )
            .map_err(|e| self.fail(e))?;
        let rows = stmt
            .query_map(params![evaluator], |r| {
                Ok(Version {
                    first_seen: r.get(0)?,
                    last_seen: r.get(1)?,
                    count: r.get::<_, i64>(2)? as usize,
                    mean: r.get(3)?,
                    errors: r.get::<_, i64>(5)? as usize,
                    sources: serde_json::from_str(&r.get::<_, String>(4)?).unwrap_or_default(),
                })
            })
            .map_err(|e| self.fail(e))?;
        Ok(rows.filter_map(|r| r.ok()).collect())
    }

    /// The names of the stored baselines, newest first.
    pub fn baselines(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.conn.lock().unwrap();
        let mut stmt = conn
            .prepare("SELECT name FROM baseline_info ORDER BY created DESC")
            .map_err(|e| self.fail(e))?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.fail(e))?
            .filter_map(|r| r.ok())
            .collect();
        Ok(names)
    }

    /// Whether the store's line keys are [`LINE_KEYS`] (else it was written by an
    /// older rwb and waits for [`Store::rekey_lines`]).
    pub fn line_keys_current(&self) -> bool {
        let conn = self.conn.lock().unwrap();
        let keys: Option<String> = conn
            .query_row(
                "SELECT value FROM store_info WHERE name = 'line_keys'",
                [],
                |r| r.get(0),
            )
            .optional()
            .ok()
            .flatten();
        keys.as_deref() == Some(LINE_KEYS)
    }

    /// Moves every cached result and baseline row stored under a line's old key
    /// (`keys` maps each old key to the new one, from the lines in hand) to the new
    /// key, in one transaction, and marks the store's keys current. Rows of lines not
    /// in `keys` keep their old key: a baseline's count of them is kept with it
    /// ([`Store::baseline_old_keys`]), so that a comparison can say why they match
    /// nothing.
    pub fn rekey_lines(
        &self,
        keys: &HashMap<SampleHash, SampleHash>,
    ) -> Result<Rekeyed, StoreError> {
        let mut conn = self.conn.lock().unwrap();
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        let mut done = Rekeyed::default();
        {
            let new_key = |old: &[u8]| {
                <SampleHash>::try_from(old)
                    .ok()
                    .and_then(|old| keys.get(&old).copied())
            };
            let mut moves = Vec::new();
            let mut read = tx
                .prepare("SELECT row, sample_hash FROM results")
                .map_err(|e| self.fail(e))?;
            let rows = read
                .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))
                .map_err(|e| self.fail(e))?;
            for row in rows {
                let (id, old) = row.map_err(|e| self.fail(e))?;
                match new_key(&old) {
                    Some(new) => moves.push((id, new)),
                    None => done.results_left += 1,
                }
            }
            let mut update = tx
                .prepare("UPDATE results SET sample_hash = ?2 WHERE row = ?1")
                .map_err(|e| self.fail(e))?;
            for (id, new) in &moves {
                update
                    .execute(params![id, &new[..]])
                    .map_err(|e| self.fail(e))?;
            }
            done.results = moves.len();

            let mut read = tx
                .prepare("SELECT name, evaluator, sample_hash FROM baselines")
                .map_err(|e| self.fail(e))?;
            let rows = read
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Vec<u8>>(2)?,
                    ))
                })
                .map_err(|e| self.fail(e))?;
            let mut moves = Vec::new();
            let mut left: std::collections::BTreeMap<String, usize> = Default::default();
            for row in rows {
                let (name, evaluator, old) = row.map_err(|e| self.fail(e))?;
                match new_key(&old) {
                    Some(new) => moves.push((name, evaluator, old, new)),
                    None => *left.entry(name).or_default() += 1,
                }
            }
            let mut update = tx
                .prepare(
                    "UPDATE OR REPLACE baselines SET sample_hash = ?4
                     WHERE name = ?1 AND evaluator = ?2 AND sample_hash = ?3",
                )
                .map_err(|e| self.fail(e))?;
            for (name, evaluator, old, new) in &moves {
                update
                    .execute(params![name, evaluator, old, &new[..]])
                    .map_err(|e| self.fail(e))?;
            }
            done.baseline_rows = moves.len();
            for (name, count) in &left {
                tx.execute(
                    "UPDATE baseline_info SET old_keys = ?2 WHERE name = ?1",
                    params![name, *count as i64],
                )
                .map_err(|e| self.fail(e))?;
            }
            done.baselines_left = left.into_iter().collect();
            tx.execute(
                "INSERT OR REPLACE INTO store_info (name, value) VALUES ('line_keys', ?1)",
                params![LINE_KEYS],
            )
            .map_err(|e| self.fail(e))?;
        }
        tx.commit().map_err(|e| self.fail(e))?;
        self.locators.lock().unwrap().clear();
        Ok(done)
    }

    /// How many rows of baseline `name` are under a line key of an older rwb that no
    /// line re-keyed (0 for a baseline saved since, or fully re-keyed).
    pub fn baseline_old_keys(&self, name: &str) -> usize {
        let conn = self.conn.lock().unwrap();
        conn.query_row(
            "SELECT old_keys FROM baseline_info WHERE name = ?1",
            params![name],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n as usize)
        .unwrap_or(0)
    }

    /// A background writer with its own connection, batching inserts into transactions.
    pub fn writer(&self) -> Result<StoreWriter, StoreError> {
        let conn = open_connection(&self.path).map_err(|e| self.fail(e))?;
        self.writer_with(conn, WRITE_QUEUE, WRITE_BATCH)
    }

    /// A writer on `conn` whose queue holds `capacity` writes at most, committing
    /// `batch` rows at most at a time.
    fn writer_with(
        &self,
        conn: Connection,
        capacity: usize,
        batch: usize,
    ) -> Result<StoreWriter, StoreError> {
        let (tx, rx) = flume::bounded::<Write>(capacity);
        let handle = std::thread::Builder::new()
            .name("rwb-store".into())
            .spawn(move || results::write_loop(results::Writer::new(conn), rx, batch))
            .map_err(|e| self.fail(e))?;
        Ok(StoreWriter {
            tx: Some(tx),
            handle: Some(handle),
            path: self.path.clone(),
        })
    }
}

fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // the last connection to close would copy the WAL into the file first, and the
    // run would wait for it: the next open reads the WAL as it is (it is as safe
    // against a kill as the file), and its writer's commits checkpoint it
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "the cache was written by a newer rwb (schema {version})"
        )));
    }
    // each step upgrades one version, in a transaction: a kill midway loses nothing
    if version < 1 {
        conn.execute_batch(
            "BEGIN;
             CREATE TABLE IF NOT EXISTS results (
                 code_key BLOB NOT NULL,
                 sample_hash BLOB NOT NULL,
                 outcome TEXT NOT NULL,
                 PRIMARY KEY (code_key, sample_hash)
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS imports (spec_key BLOB PRIMARY KEY, memo TEXT NOT NULL);
             PRAGMA user_version = 1;
             COMMIT;",
        )?;
    }
    if version < 2 {
        conn.execute_batch(
            "BEGIN;
             CREATE TABLE IF NOT EXISTS baselines (
                 name TEXT NOT NULL,
                 evaluator TEXT NOT NULL,
                 sample_hash BLOB NOT NULL,
                 outcome TEXT NOT NULL,
                 PRIMARY KEY (name, evaluator, sample_hash)
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS baseline_info (
                 name TEXT PRIMARY KEY,
                 created REAL NOT NULL,
                 sources TEXT NOT NULL
             );
             PRAGMA user_version = 2;
             COMMIT;",
        )?;
    }
    if version < 3 {
        conn.execute_batch(
            "BEGIN;
             CREATE TABLE IF NOT EXISTS versions (
                 evaluator TEXT NOT NULL,
                 code_key BLOB NOT NULL,
                 first_seen REAL NOT NULL,
                 last_seen REAL NOT NULL,
                 count INTEGER NOT NULL,
                 mean REAL,
                 sources TEXT NOT NULL,
                 PRIMARY KEY (evaluator, code_key)
             ) WITHOUT ROWID;
             PRAGMA user_version = 3;
             COMMIT;",
        )?;
    }
    if version < 6 {
        conn.execute_batch(&format!(
            "BEGIN; {} PRAGMA user_version = 6; COMMIT;",
            results::CREATE
        ))?;
    }
    if version < 7 {
        // how many samples each version failed on (a version that raised on every
        // sample reads as failed, not as no mean)
        conn.execute_batch(
            "BEGIN;
             ALTER TABLE versions ADD COLUMN errors INTEGER NOT NULL DEFAULT 0;
             PRAGMA user_version = 7;
             COMMIT;",
        )?;
    }
    if version < 8 {
        // the line key changed (BLAKE3 to XXH3): a store that holds keyed rows keeps
        // its old keys until the lines it is used with re-key it
        let keyed: bool = version > 0
            && conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM results) OR EXISTS (SELECT 1 FROM baselines)",
                [],
                |r| r.get(0),
            )?;
        let keys = if keyed { LEGACY_LINE_KEYS } else { LINE_KEYS };
        conn.execute_batch(&format!(
            "BEGIN;
             CREATE TABLE IF NOT EXISTS store_info (name TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT OR REPLACE INTO store_info (name, value) VALUES ('line_keys', '{keys}');
             ALTER TABLE baseline_info ADD COLUMN old_keys INTEGER NOT NULL DEFAULT 0;
             PRAGMA user_version = 8;
             COMMIT;"
        ))?;
    }
    if version < 9 {
        // a result's parts packed into one column (see results::pack)
        conn.execute_batch("BEGIN")?;
        let packed = results::pack(&conn)
            .and_then(|()| conn.execute_batch("PRAGMA user_version = 9; COMMIT;"));
        if let Err(e) = packed {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e);
        }
    }
    if version < 10 {
        // what `rwb check` found of each evaluator's code (see checks)
        conn.execute_batch(&format!(
            "BEGIN; {} PRAGMA user_version = 10; COMMIT;",
            checks::CREATE
        ))?;
    }
    Ok(conn)
}

/// What re-keying a store to [`LINE_KEYS`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rekeyed {
    /// Cached results and baseline rows moved to their line's new key.
    pub results: usize,
    pub baseline_rows: usize,
    /// Cached results of lines not among those given: kept under their old key
    /// (they match no line now, and are evaluated again should the line come back).
    pub results_left: usize,
    /// Per baseline, its rows left under their old key.
    pub baselines_left: Vec<(String, usize)>,
}

/// What a run of a code version scored: samples with a score, their mean, samples
/// it failed on.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Scored {
    pub count: usize,
    pub mean: Option<f64>,
    pub errors: usize,
}

/// An outcome in the form the store keeps it (its score, reason and duration, and
/// the JSON of anything else it says): what a run holds of an outcome until it can
/// store it, a fraction of the outcome's size and built once.
pub struct Stored(results::Row);

impl Stored {
    pub fn of(outcome: &Outcome) -> Stored {
        Stored(results::Row::of(outcome))
    }
}

/// Queues outcomes for the store; `finish` waits until they are on disk.
///
/// The queue is bounded: `put` and `rekey` wait while it is full. They never wait on
/// anything but the writer thread, which needs nothing from its callers (only the
/// cache file; a busy file fails after SQLite's timeout), so waiting cannot deadlock.
pub struct StoreWriter {
    tx: Option<flume::Sender<Write>>,
    /// The writing thread; it ends with the first error a commit met, if one did
    /// (see [`StoreWriter::finish`]).
    handle: Option<std::thread::JoinHandle<Option<String>>>,
    path: PathBuf,
}

impl StoreWriter {
    /// Stores an outcome after those queued before it, replacing an older one of
    /// the same sample.
    pub fn put(&self, key: &CodeKey, sample: &SampleHash, outcome: &Outcome) {
        self.send_row(*key, *sample, None, true, results::Row::of(outcome));
    }

    /// Stores the outcome of the sample at position `at` of a run's files (its
    /// index): a code's rows are stored in this order, so that the next run over the
    /// same files reads them back sequentially. `replaces_nothing`: no older row of
    /// this sample can be stored (nothing was under `key` when the run started, or
    /// the run looked the sample up and found none), so the writer does not search
    /// for one; else an older row of the sample goes.
    pub fn put_at(
        &self,
        key: &CodeKey,
        sample: &SampleHash,
        at: u64,
        replaces_nothing: bool,
        outcome: &Outcome,
    ) {
        self.put_stored_at(key, sample, at, replaces_nothing, Stored::of(outcome));
    }

    /// [`StoreWriter::put_at`] of an outcome already in the form it is stored in.
    pub fn put_stored_at(
        &self,
        key: &CodeKey,
        sample: &SampleHash,
        at: u64,
        replaces_nothing: bool,
        stored: Stored,
    ) {
        self.send_row(*key, *sample, Some(at), !replaces_nothing, stored.0);
    }

    fn send_row(
        &self,
        key: CodeKey,
        hash: SampleHash,
        at: Option<u64>,
        replaces: bool,
        row: results::Row,
    ) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Write::Put {
                key,
                hash,
                at,
                replaces,
                row,
            });
        }
    }

    /// Moves every result stored under `from` (also those still queued) to `to`.
    pub fn rekey(&self, from: &CodeKey, to: &CodeKey) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Write::Rekey(*from, *to));
        }
    }

    /// Waits until everything queued is committed; then says what could not be
    /// (the first error, with the cache's path), if anything.
    pub fn finish(mut self) -> Option<StoreError> {
        self.tx.take();
        let h = self.handle.take()?;
        // it may be gathering a window: it sees the closed queue now
        h.thread().unpark();
        let message = h.join().ok().flatten()?;
        Some(StoreError {
            path: self.path.clone(),
            message,
        })
    }
}

impl Drop for StoreWriter {
    /// Dropped without `finish` (a cancelled run): the thread commits what is queued
    /// and ends by itself; nobody waits for it.
    fn drop(&mut self) {
        self.tx.take();
        if let Some(h) = &self.handle {
            h.thread().unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EvalError, Outcome};
    use results::READS_PER_SNAPSHOT;

    #[test]
    fn outcomes_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = [7u8; 32];
        let mut outcome = Outcome::failed(EvalError::new("ValueError", "boom"));
        outcome.duration_ms = 1.5;
        let writer = store.writer().unwrap();
        writer.put(&key, &[1u8; 16], &outcome);
        writer.finish();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        let got = store.results_for(&key).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[&[1u8; 16]], outcome);
        assert!(store.results_for(&[8u8; 32]).unwrap().is_empty());
    }

    #[test]
    fn one_outcome_is_read_back_by_code_key_and_sample_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut outcome = Outcome::scored(0.25, serde_json::Map::new());
        outcome.reason = Some("a quarter".into());
        let writer = store.writer().unwrap();
        writer.put(&[1; 32], &[2; 16], &outcome);
        writer.finish();
        assert_eq!(store.outcome(&[1; 32], &[2; 16]).unwrap(), Some(outcome));
        assert_eq!(store.outcome(&[1; 32], &[3; 16]).unwrap(), None);
        assert_eq!(store.outcome(&[9; 32], &[2; 16]).unwrap(), None);
    }

    #[test]
    fn rekey_moves_stored_and_queued_results_and_replaces_older_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (old, new, other) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let scored = |score: f64| Outcome::scored(score, Default::default());
        let first = store.writer().unwrap();
        first.put(&old, &[1u8; 16], &scored(0.1));
        first.put(&new, &[2u8; 16], &scored(0.9));
        first.put(&other, &[1u8; 16], &scored(0.5));
        first.finish();
        let writer = store.writer().unwrap();
        writer.put(&old, &[2u8; 16], &scored(0.2));
        writer.rekey(&old, &new);
        writer.finish();
        assert!(store.results_for(&old).unwrap().is_empty());
        let moved = store.results_for(&new).unwrap();
        assert_eq!(moved.len(), 2);
        assert_eq!(moved[&[1u8; 16]], scored(0.1));
        assert_eq!(
            moved[&[2u8; 16]],
            scored(0.2),
            "the moved result replaces the older one"
        );
        assert_eq!(store.results_for(&other).unwrap()[&[1u8; 16]], scored(0.5));
    }

    #[test]
    fn one_commit_keeps_the_later_of_two_puts_and_the_order_around_a_rekey() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (old, new) = ([1u8; 32], [2u8; 32]);
        let scored = |score: f64| Outcome::scored(score, Default::default());
        let writer = store.writer().unwrap();
        // many rows in one commit, queued in descending key order (sorted on write)
        for i in (0..200u8).rev() {
            writer.put(&old, &[i; 16], &scored(f64::from(i)));
        }
        writer.put(&old, &[7u8; 16], &scored(0.25)); // the same row again: this one stays
        writer.rekey(&old, &new);
        writer.put(&old, &[3u8; 16], &scored(0.75)); // after the rekey: stays under `old`
        writer.finish();
        let mut reader = store.reader().unwrap();
        assert_eq!(reader.lookup(&new, &[7u8; 16]), Some(scored(0.25)));
        assert_eq!(reader.lookup(&new, &[199u8; 16]), Some(scored(199.0)));
        assert_eq!(reader.lookup(&new, &[3u8; 16]), Some(scored(3.0)));
        assert_eq!(reader.lookup(&old, &[3u8; 16]), Some(scored(0.75)));
        assert_eq!(reader.lookup(&old, &[4u8; 16]), None);
        assert_eq!(store.results_for(&new).unwrap().len(), 200);
        assert_eq!(store.results_for(&old).unwrap().len(), 1);
    }

    #[test]
    fn a_reader_skips_rows_it_cannot_read_and_sees_later_commits() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = [5u8; 32];
        let scored = Outcome::scored(0.5, Default::default());
        let writer = store.writer().unwrap();
        writer.put(&key, &[1u8; 16], &scored);
        writer.put(&key, &[2u8; 16], &scored);
        writer.finish();
        // a row another version of rwb wrote, which this one cannot read
        let conn = store.conn.lock().unwrap();
        let mut body = vec![1 | 8]; // valid, with JSON after its duration
        body.extend(0.5f64.to_le_bytes());
        body.extend(br#"{"metrics": 5}"#);
        conn.execute(
            "UPDATE results SET body = ?2 WHERE sample_hash = ?1",
            params![&[2u8; 16][..], body],
        )
        .unwrap();
        drop(conn);
        let mut reader = store.reader().unwrap();
        assert_eq!(reader.lookup(&key, &[1u8; 16]), Some(scored.clone()));
        assert_eq!(reader.lookup(&key, &[2u8; 16]), None, "evaluated again");
        assert_eq!(reader.lookup(&key, &[3u8; 16]), None);
        assert!(store.holds(&key) && !store.holds(&[6u8; 32]));
        let writer = store.writer().unwrap();
        writer.put(&key, &[3u8; 16], &scored);
        writer.finish();
        // a read transaction lasts READS_PER_SNAPSHOT lookups, then the next one
        // sees what was committed meanwhile
        let seen = (0..READS_PER_SNAPSHOT + 1).find(|_| reader.lookup(&key, &[3u8; 16]).is_some());
        assert_eq!(seen, Some(READS_PER_SNAPSHOT - 3));
    }

    #[test]
    fn a_slow_writer_makes_put_wait_and_loses_nothing() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // another connection holds the write lock: the writer cannot commit
        let blocker = open_connection(store.path()).unwrap();
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
        let conn = open_connection(store.path()).unwrap();
        let (capacity, batch) = (4, 8);
        let writer = Arc::new(store.writer_with(conn, capacity, batch).unwrap());
        let queued = Arc::new(AtomicUsize::new(0));
        let producer = {
            let (writer, queued) = (writer.clone(), queued.clone());
            std::thread::spawn(move || {
                for i in 0..100u8 {
                    let outcome = Outcome::scored(f64::from(i), Default::default());
                    writer.put(&[1; 32], &[i; 16], &outcome);
                    queued.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        std::thread::sleep(Duration::from_millis(1500));
        // one batch is being committed, the queue is full and one put waits
        assert_eq!(queued.load(Ordering::SeqCst), batch + capacity);
        assert!(!producer.is_finished());
        blocker.execute_batch("COMMIT").unwrap();
        producer.join().unwrap();
        Arc::try_unwrap(writer).ok().unwrap().finish();
        let stored = store.results_for(&[1; 32]).unwrap();
        assert_eq!(stored.len(), 100);
        assert_eq!(stored[&[42u8; 16]].score, Some(42.0));
    }

    #[test]
    fn a_file_that_is_not_sqlite_is_reported_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".rwb")).unwrap();
        std::fs::write(
            Store::path_for(dir.path()),
            b"this is not a database, just text ".repeat(100),
        )
        .unwrap();
        let e = Store::open(dir.path()).err().expect("must fail");
        let text = e.to_string();
        assert!(text.contains("cache.sqlite"), "{text}");
        assert!(text.contains("--no-cache"), "{text}");
    }
}
