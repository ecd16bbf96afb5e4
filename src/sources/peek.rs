//! A first look at a file: which container holds it (by its first bytes, not its
//! name) and the keys of its first row, which is what formats recognise it by.

use super::json_rows;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How a file holds its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// A JSON object a line (rwb's own samples, veRL, verifiers, eval-protocol, promptfoo).
    Jsonl,
    /// One JSON document (Inspect's `.json`, promptfoo's `results.json`).
    JsonDoc,
    Parquet,
    /// Arrow IPC, file (`ARROW1`) or stream.
    Arrow,
    /// A Hugging Face `save_to_disk` folder (`state.json`, or `dataset_dict.json`).
    HfFolder,
    /// A zip archive (Inspect's `.eval`).
    Zip,
    /// An SQLite database (eval-protocol's `logs.db`).
    Sqlite,
}

impl Container {
    pub fn describe(self) -> &'static str {
        match self {
            Container::Jsonl => "JSONL file",
            Container::JsonDoc => "JSON file",
            Container::Parquet => "Parquet file",
            Container::Arrow => "Arrow file",
            Container::HfFolder => "Hugging Face dataset folder",
            Container::Zip => "zip archive",
            Container::Sqlite => "SQLite database",
        }
    }
}

/// What formats recognise a file by.
#[derive(Clone, Debug)]
pub struct Peek {
    pub path: PathBuf,
    pub container: Container,
    /// The first row's keys (a table's columns; a zip's entry names; a database's
    /// tables; a JSON document's top-level keys), in order.
    pub keys: Vec<String>,
}

impl Peek {
    pub fn has(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }

    pub fn has_all(&self, keys: &[&str]) -> bool {
        keys.iter().all(|k| self.has(k))
    }

    /// The file's name, lower-cased.
    pub fn file_name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default()
    }
}

/// Looks at the file (or Hugging Face folder) at `path`; an error names the file
/// and what is wrong with it.
pub fn peek(path: &Path) -> Result<Peek, String> {
    let shown = path.display();
    let at = |container, keys| {
        Ok(Peek {
            path: path.to_path_buf(),
            container,
            keys,
        })
    };
    if path.is_dir() {
        let keys = super::arrow::hf_columns(path)?;
        return at(Container::HfFolder, keys);
    }
    let mut head = [0u8; 16];
    let n = std::fs::File::open(path)
        .and_then(|mut f| read_up_to(&mut f, &mut head))
        .map_err(|e| format!("cannot read samples file {shown}: {e}"))?;
    let head = &head[..n];
    if head.starts_with(b"PAR1") {
        return at(Container::Parquet, super::parquet::columns(path)?);
    }
    if head.starts_with(b"ARROW1") || head.starts_with(&[0xFF, 0xFF, 0xFF, 0xFF]) {
        return at(Container::Arrow, super::arrow::columns(path)?);
    }
    if super::pickle::is_pickle(head) {
        return Err(super::pickle::refusal(path, false));
    }
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        let entries = super::inspect::entry_names(path)?;
        if super::pickle::is_torch_zip(&entries) {
            return Err(super::pickle::refusal(path, true));
        }
        return at(Container::Zip, entries);
    }
    if head.starts_with(b"SQLite format 3\0") {
        return at(Container::Sqlite, super::eval_protocol::tables(path)?);
    }
    let json_doc = path.extension().is_some_and(|x| x == "json");
    if json_doc {
        return at(Container::JsonDoc, json_rows::top_keys(path)?);
    }
    at(Container::Jsonl, json_rows::first_line_keys(path)?)
}

fn read_up_to(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
