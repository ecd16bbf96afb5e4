//! Parquet files, read a record batch at a time: the Arrow reader decodes pages as
//! it goes, so a row group of a million rows (pyarrow's default) is never held
//! whole. A file without a readable footer (cut short) is an error naming it.

use super::table::Batches;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::fs::File;
use std::path::Path;

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

/// The file's record batches, streamed.
pub fn batches(path: &Path) -> Result<Batches, String> {
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
