//! Parquet files, read a record batch at a time: the Arrow reader decodes pages as
//! it goes, so a row group of a million rows (pyarrow's default) is never held
//! whole. A file without a readable footer (cut short) is an error naming it.

use super::table::Batches;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::SystemTime;

/// Rows per record batch: small, so a batch of long completions stays small.
pub const BATCH_ROWS: usize = 512;

fn builder(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, String> {
    let shown = path.display();
    let file = File::open(path).map_err(|e| format!("cannot read samples file {shown}: {e}"))?;
    ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| {
        format!(
            "{shown}: not a readable Parquet file ({e}): is it truncated or still being written?"
        )
    })
}

/// The file's columns.
pub fn columns(path: &Path) -> Result<Vec<String>, String> {
    let builder = builder(path)?;
    Ok(builder
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect())
}

/// Whether `path` is a file that starts with Parquet's magic bytes.
pub fn is_parquet(path: &Path) -> bool {
    let mut head = [0u8; 4];
    File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && &head == b"PAR1"
}

/// A file being opened ahead of its reader, on a thread of its own.
struct Ahead {
    path: PathBuf,
    /// The file's length and modification time when the thread started.
    stamp: Option<(u64, SystemTime)>,
    opened: JoinHandle<Result<Batches, String>>,
}

static AHEAD: Mutex<Option<Ahead>> = Mutex::new(None);

fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// Starts opening the Parquet file `path` on a thread of its own (its footer read,
/// its first batch decoded) while the program does the rest of its start, so that
/// the first rows are there when [`batches`] asks for them. The workbench calls it
/// as soon as the workspace is known: decoding the first pages of a million-row
/// row group costs milliseconds the first frame need not wait for. Anything but a
/// Parquet file is left alone; the next [`batches`] of `path` takes what was read
/// (or opens the file again if it changed meanwhile).
pub fn read_ahead(path: &Path) {
    if !is_parquet(path) {
        return;
    }
    let owned = path.to_path_buf();
    let stamp = stamp(path);
    let opened = std::thread::Builder::new()
        .name("rwb-read-ahead".into())
        .spawn(move || {
            let mut opened = open(&owned)?;
            // decoding the first batch is the part worth doing early
            let first: Vec<_> = opened.batches.next().into_iter().collect();
            let rest = std::mem::replace(&mut opened.batches, Box::new(std::iter::empty()));
            opened.batches = Box::new(first.into_iter().chain(rest));
            Ok(opened)
        });
    if let (Ok(opened), Ok(mut ahead)) = (opened, AHEAD.lock()) {
        *ahead = Some(Ahead {
            path: path.to_path_buf(),
            stamp,
            opened,
        });
    }
}

/// What [`read_ahead`] read of `path`, if the file has not changed since.
fn take_ahead(path: &Path) -> Option<Result<Batches, String>> {
    let ahead = {
        let mut slot = AHEAD.lock().ok()?;
        if slot.as_ref()?.path != path {
            return None;
        }
        slot.take()?
    };
    let opened = ahead.opened.join().ok()?;
    (ahead.stamp.is_some() && ahead.stamp == stamp(path)).then_some(opened)
}

/// The file's record batches, streamed.
pub fn batches(path: &Path) -> Result<Batches, String> {
    match take_ahead(path) {
        Some(opened) => opened,
        None => open(path),
    }
}

fn open(path: &Path) -> Result<Batches, String> {
    let shown = path.display().to_string();
    let builder = builder(path)?;
    let schema = builder.schema().clone();
    let reader = builder
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| format!("{shown}: cannot read its rows: {e}"))?;
    let batches = reader
        .map(move |b| b.map_err(|e| format!("{shown}: damaged after the rows read so far ({e})")));
    Ok(Batches {
        schema,
        batches: Box::new(batches),
        split: None,
    })
}

/// The rows the footer says the file has.
pub fn row_count(path: &Path) -> Option<u64> {
    let b = builder(path).ok()?;
    u64::try_from(b.metadata().file_metadata().num_rows()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;
    use std::sync::Arc;

    fn write(path: &Path, prompts: &[&str]) {
        let column: Arc<dyn Array> = Arc::new(StringArray::from(prompts.to_vec()));
        let batch = RecordBatch::try_from_iter([("prompt", column)]).unwrap();
        let mut w =
            ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    fn prompts(b: Batches) -> Vec<String> {
        b.batches
            .flat_map(|batch| {
                let batch = batch.unwrap();
                let column = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .unwrap();
                (0..column.len())
                    .map(|i| column.value(i).to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The read-ahead slot is the process's: tests that fill it take turns.
    static TURN: Mutex<()> = Mutex::new(());

    /// Whether the slot holds what was read ahead of `path`.
    fn holds(path: &Path) -> bool {
        AHEAD
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|a| a.path == path)
    }

    #[test]
    fn rows_read_ahead_are_the_files_rows_and_a_file_changed_since_is_read_again() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollouts.parquet");
        let many: Vec<String> = (0..BATCH_ROWS * 2 + 7).map(|i| format!("q{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        write(&path, &many);
        read_ahead(&path);
        assert!(holds(&path));
        let read = prompts(batches(&path).unwrap());
        assert_eq!(
            read, many,
            "every row, the first batch (decoded ahead) included"
        );
        // taken once: the next reader opens the file itself
        assert!(!holds(&path));
        assert_eq!(prompts(batches(&path).unwrap()), many);

        // the file rewritten after the read-ahead began: its new rows, not the old
        read_ahead(&path);
        std::thread::sleep(std::time::Duration::from_millis(20));
        write(&path, &["new a", "new b", "new c"]);
        assert_eq!(
            prompts(batches(&path).unwrap()),
            ["new a", "new b", "new c"]
        );

        // another file's reader does not take it; a file that is not Parquet is left alone
        let other = dir.path().join("other.parquet");
        write(&other, &["other"]);
        read_ahead(&path);
        assert_eq!(prompts(batches(&other).unwrap()), ["other"]);
        assert!(holds(&path));
        assert_eq!(
            prompts(batches(&path).unwrap()),
            ["new a", "new b", "new c"]
        );
        let jsonl = dir.path().join("s.jsonl");
        std::fs::write(&jsonl, "{}\n").unwrap();
        read_ahead(&jsonl);
        assert!(!holds(&jsonl));
    }

    #[test]
    fn a_truncated_file_read_ahead_says_what_is_wrong() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.parquet");
        write(&path, &["a", "b"]);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
        read_ahead(&path);
        assert!(holds(&path));
        let e = batches(&path).err().unwrap();
        assert!(e.contains("cut.parquet") && e.contains("truncated"), "{e}");
    }
}
