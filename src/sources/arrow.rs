//! Arrow IPC files (`ARROW1`) and streams, and Hugging Face `save_to_disk` folders:
//! a `state.json` listing the folder's shards (`_data_files`, each an Arrow IPC
//! stream), or a `DatasetDict`'s `dataset_dict.json` listing its splits, each a
//! folder of that kind (facts from files `datasets` 5.2.0 wrote:
//! `tests/fixtures/sources/make.py`). Every split is read, in the listed order,
//! each row with a `split` column.

use super::table::Batches;
use arrow_ipc::reader::{FileReader, StreamReader};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// Batches of one Arrow IPC file or stream.
pub fn batches(path: &Path) -> Result<Batches, String> {
    let shown = path.display().to_string();
    let mut file =
        File::open(path).map_err(|e| format!("cannot read samples file {shown}: {e}"))?;
    let mut magic = [0u8; 6];
    let is_file = file.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
    let file = File::open(path).map_err(|e| format!("cannot read samples file {shown}: {e}"))?;
    let damaged = {
        let shown = shown.clone();
        move |e: arrow_schema::ArrowError| {
            format!("{shown}: damaged after the rows read so far ({e}): is it truncated?")
        }
    };
    if is_file {
        let reader = FileReader::try_new(file, None)
            .map_err(|e| format!("{shown}: not a readable Arrow file ({e}): is it truncated?"))?;
        let schema = reader.schema();
        return Ok(Batches {
            schema,
            batches: Box::new(reader.map(move |b| b.map_err(&damaged))),
            split: None,
        });
    }
    let reader = StreamReader::try_new(BufReader::with_capacity(1 << 16, file), None)
        .map_err(|e| format!("{shown}: not a readable Arrow stream ({e})"))?;
    let schema = reader.schema();
    Ok(Batches {
        schema,
        batches: Box::new(reader.map(move |b| b.map_err(&damaged))),
        split: None,
    })
}

/// The columns of an Arrow IPC file or stream.
pub fn columns(path: &Path) -> Result<Vec<String>, String> {
    let b = batches(path)?;
    Ok(b.schema.fields().iter().map(|f| f.name().clone()).collect())
}

/// The shards of a `save_to_disk` folder, each with its split (`None` for a plain
/// `Dataset`), in order.
pub fn hf_shards(dir: &Path) -> Result<Vec<(PathBuf, Option<String>)>, String> {
    let read = |p: &Path| -> Result<serde_json::Value, String> {
        let text =
            std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON ({e})", p.display()))
    };
    let files_of =
        |folder: &Path, split: Option<String>| -> Result<Vec<(PathBuf, Option<String>)>, String> {
            let state = read(&folder.join("state.json"))?;
            let files = state["_data_files"].as_array().cloned().unwrap_or_default();
            Ok(files
                .iter()
                .filter_map(|f| f["filename"].as_str())
                .map(|name| (folder.join(name), split.clone()))
                .collect())
        };
    if dir.join("state.json").is_file() {
        return files_of(dir, None);
    }
    if dir.join("dataset_dict.json").is_file() {
        let dict = read(&dir.join("dataset_dict.json"))?;
        let mut shards = Vec::new();
        for split in dict["splits"].as_array().cloned().unwrap_or_default() {
            if let Some(split) = split.as_str() {
                shards.extend(files_of(&dir.join(split), Some(split.to_string()))?);
            }
        }
        return Ok(shards);
    }
    Err(format!(
        "{} is a folder, not a samples file or a Hugging Face dataset folder (no state.json or dataset_dict.json)",
        dir.display()
    ))
}

/// The columns of a `save_to_disk` folder (its first shard's).
pub fn hf_columns(dir: &Path) -> Result<Vec<String>, String> {
    let shards = hf_shards(dir)?;
    match shards.first() {
        Some((path, split)) => {
            let mut keys = columns(path)?;
            if split.is_some() {
                keys.push("split".into());
            }
            Ok(keys)
        }
        None => Ok(Vec::new()),
    }
}

/// Every batch of a `save_to_disk` folder, shard after shard (each shard opened when
/// the one before it is done).
pub fn hf_batches(dir: &Path) -> Result<Vec<Batches>, String> {
    hf_shards(dir)?
        .into_iter()
        .map(|(path, split)| {
            let mut b = batches(&path)?;
            b.split = split;
            Ok(b)
        })
        .collect()
}
