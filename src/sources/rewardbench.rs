//! RewardBench preference rows as samples (SPEC §13, §20), as the datasets' rows are
//! published (`allenai/reward-bench` v1, split `filtered`: `{prompt, chosen,
//! chosen_model, rejected, rejected_model, subset, id}`, one chosen and one rejected
//! string; `allenai/reward-bench-2`, split `test`: `{id, prompt, chosen: [..],
//! rejected: [..], num_correct, num_incorrect, total_completions, models, subset,
//! additional_metadata}`), in any of the containers they come in: JSONL, the Hub's
//! Parquet files, an Arrow file, or the folder `datasets`' `save_to_disk` writes.
//!
//! A table's row is first the JSON object its line would be (arrow-json's encoding,
//! nulls written out, the columns in the table's order) and then goes the JSONL row's
//! way: the same row gives the same samples, whichever container held it.
//!
//! Each completion is a sample of its prompt, in reward-bench's order: chosen then
//! rejected (allenai/reward-bench@05a9005 `rewardbench/utils.py:627-638` unrolls a v2
//! row so), all of one row one rollout group. Each sample carries a `rewardbench`
//! column `{version, id, subset, role, index, num_correct}` that the scoring
//! (`trust::rewardbench`) reads back; the row's `id` and `subset` stay columns. A row
//! missing a field (absent, or null in a table) is one bad sample naming the row and
//! the field.

use super::row_json::RowJson;
use super::table::Batches;
use super::{json_rows, Container, Format, Options, Peek, Row, Rows};
use crate::model::Facts;
use serde_json::{json, Map, Value};
use std::fmt;
use std::path::Path;

pub struct RewardBench;

/// The column each completion's sample carries.
pub const COLUMN: &str = "rewardbench";

/// Where a row is, as its messages name it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum At {
    /// The line of a JSONL file.
    Line(usize),
    /// The row of a table (1-based, across its shards and splits).
    Row(usize),
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Line(n) => write!(f, "on line {n}"),
            At::Row(n) => write!(f, "number {n}"),
        }
    }
}

impl Format for RewardBench {
    fn name(&self) -> &'static str {
        "RewardBench rows"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        matches!(
            peek.container,
            Container::Jsonl | Container::Parquet | Container::Arrow | Container::HfFolder
        ) && peek.has_all(&["prompt", "chosen", "rejected", "subset", "id"])
    }

    fn open(&self, path: &Path, _options: &Options) -> Result<Rows, String> {
        if super::peek(path)?.container != Container::Jsonl {
            return Ok(table_rows(super::table::open_batches(path)?));
        }
        let shown = path.display().to_string();
        let lines = json_rows::JsonLines::open(path)?;
        // samples are numbered by completion: a row holds several
        let mut number = 0;
        Ok(Box::new(lines.flat_map(move |line| {
            let rows = match line {
                Ok((n, Ok(row))) => completions(&row, At::Line(n))
                    .unwrap_or_else(|why| vec![json_rows::bad_row(0, &why)]),
                Ok((n, Err(why))) => {
                    vec![json_rows::bad_row(0, &format!("line {n}: {why}"))]
                }
                Err(e) => return vec![Err(format!("cannot read {shown}: {e}"))],
            };
            json_rows::numbered(rows, &mut number)
        })))
    }
}

/// The samples of a table's rows (Parquet, Arrow, a `save_to_disk` folder), streamed
/// a record batch at a time; a batch that cannot be read ends them.
fn table_rows(tables: Vec<Batches>) -> Rows {
    let mut row_number = 0;
    let rows = tables.into_iter().flat_map(move |table| {
        let split = table.split;
        table.batches.map(move |batch| (batch, split.clone()))
    });
    let mut number = 0;
    let mut failed = false;
    Box::new(
        rows.map_while(move |(batch, split)| {
            if failed {
                return None;
            }
            let batch = match batch {
                Ok(batch) => batch,
                Err(e) => {
                    failed = true;
                    return Some(vec![Err(e)]);
                }
            };
            let samples = batch_completions(&batch, split.as_deref(), &mut row_number);
            Some(json_rows::numbered(samples, &mut number))
        })
        .flatten(),
    )
}

/// The samples of one record batch's rows; `row_number` counts the table's rows.
fn batch_completions(
    batch: &arrow_array::RecordBatch,
    split: Option<&str>,
    row_number: &mut usize,
) -> Vec<Row> {
    let encoded = RowJson::new(batch);
    let mut encoder = encoded.encoder();
    let mut samples = Vec::new();
    for i in 0..batch.num_rows() {
        *row_number += 1;
        let at = At::Row(*row_number);
        let object = match &mut encoder {
            Ok(encoder) => encoder.row(i).map_err(|e| e.to_string()).and_then(|text| {
                match json_rows::parse(&text) {
                    Ok(Value::Object(object)) => Ok(object),
                    Ok(_) => Err("not a JSON object".to_string()),
                    Err(e) => Err(e.to_string()),
                }
            }),
            Err(e) => Err(e.to_string()),
        };
        let mut row = match object {
            Ok(row) => row,
            Err(why) => {
                let why = format!("the RewardBench row {at} cannot be read as JSON: {why}");
                samples.push(json_rows::bad_row(0, &why));
                continue;
            }
        };
        if let Some(split) = split {
            // a `DatasetDict`'s split, a column as every table's reader gives it
            row.insert("split".into(), Value::from(split));
        }
        match completions(&row, at) {
            Ok(rows) => samples.extend(rows.into_iter().map(|mut sample| {
                if let Some(split) = split {
                    sample.facts.split = Some(split.to_string());
                    // a rollout group within its split (the scoring keys a prompt
                    // by subset and id alone: splits sharing ids are scored together)
                    sample.facts.group = sample.facts.group.map(|g| format!("{g}@{split}"));
                }
                sample
            })),
            Err(why) => samples.push(json_rows::bad_row(0, &why)),
        }
    }
    samples
}

/// The samples of one row, or what is missing from it.
fn completions(row: &Map<String, Value>, at: At) -> Result<Vec<Row>, String> {
    let field = |name: &str| row.get(name).filter(|v| !v.is_null());
    for name in ["id", "prompt", "chosen", "rejected", "subset"] {
        if field(name).is_none() {
            return Err(format!("the RewardBench row {at} has no \"{name}\""));
        }
    }
    let texts = |name: &str| -> Result<Vec<Value>, String> {
        match &row[name] {
            Value::String(_) => Ok(vec![row[name].clone()]),
            Value::Array(items) if !items.is_empty() => Ok(items.clone()),
            Value::Array(_) => Err(format!("\"{name}\" of the RewardBench row {at} is empty")),
            other => Err(format!(
                "\"{name}\" of the RewardBench row {at} is {other}, not a completion or a list of them"
            )),
        }
    };
    let version = if row["chosen"].is_array() { 2 } else { 1 };
    if version == 2 {
        for name in ["num_correct", "total_completions"] {
            if field(name).and_then(Value::as_u64).is_none() {
                return Err(format!(
                    "the RewardBench 2 row {at} has no \"{name}\" (a count)"
                ));
            }
        }
    }
    let (chosen, rejected) = (texts("chosen")?, texts("rejected")?);
    let id = row["id"].clone();
    let subset = row["subset"].clone();
    let num_correct = row
        .get("num_correct")
        .cloned()
        .unwrap_or(json!(chosen.len()));
    let group = match &id {
        Value::String(s) => format!("rewardbench:{s}"),
        other => format!("rewardbench:{other}"),
    };
    let all = chosen
        .into_iter()
        .map(|c| ("chosen", c))
        .chain(rejected.into_iter().map(|r| ("rejected", r)));
    Ok(all
        .enumerate()
        .map(|(index, (role, completion))| {
            let mut sample = Map::new();
            sample.insert("prompt".into(), row["prompt"].clone());
            sample.insert("completion".into(), completion);
            for (k, v) in row {
                if !matches!(k.as_str(), "prompt" | "chosen" | "rejected") {
                    sample.insert(k.clone(), v.clone());
                }
            }
            sample.insert(
                COLUMN.into(),
                json!({"version": version, "id": id, "subset": subset, "role": role,
                       "index": index, "num_correct": num_correct}),
            );
            let facts = Facts {
                group: Some(group.clone()),
                ..Facts::default()
            };
            let wanted = super::seen::Wanted {
                label: None,
                rewardbench: true,
            };
            json_rows::row(0, sample, facts, &wanted)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v2_row_is_its_completions_chosen_first() {
        let row: Value = serde_json::from_str(
            r#"{"id":"7","prompt":"2+2?","chosen":["4"],"rejected":["5","22"],"num_correct":1,"total_completions":3,"subset":"Math"}"#,
        )
        .unwrap();
        let rows = completions(row.as_object().unwrap(), At::Line(4)).unwrap();
        assert_eq!(rows.len(), 3);
        let first: Value = serde_json::from_str(&rows[0].sample).unwrap();
        assert_eq!(first["completion"], "4");
        assert_eq!(first[COLUMN]["role"], "chosen");
        assert_eq!(first[COLUMN]["version"], 2);
        let last: Value = serde_json::from_str(&rows[2].sample).unwrap();
        assert_eq!(
            (last[COLUMN]["index"].clone(), last["completion"].clone()),
            (json!(2), json!("22"))
        );
        assert_eq!(rows[0].facts.group, rows[2].facts.group);
    }

    #[test]
    fn a_row_missing_a_field_names_it() {
        let row: Value =
            serde_json::from_str(r#"{"id":1,"prompt":"p","chosen":"a","rejected":"b"}"#).unwrap();
        assert_eq!(
            completions(row.as_object().unwrap(), At::Line(4))
                .err()
                .unwrap(),
            "the RewardBench row on line 4 has no \"subset\""
        );
    }

    /// Rows of RewardBench 2's shape (its columns' types as the Hub's Parquet has
    /// them), one with a null `subset` and one with a NaN in its metadata.
    const V2_LINES: [&str; 3] = [
        r#"{"id":"ref:1","prompt":"colour?","chosen":["red","blue"],"rejected":["7"],"num_correct":2,"num_incorrect":1,"total_completions":3,"models":["a","b","c"],"subset":"Ties","additional_metadata":{"index":1.0,"valid":null}}"#,
        r#"{"id":"2","prompt":"2+2?","chosen":["4"],"rejected":["5","22","4.0"],"num_correct":1,"num_incorrect":3,"total_completions":4,"models":["a","b","c","d"],"subset":null,"additional_metadata":{"index":2.5,"valid":1.0}}"#,
        r#"{"id":"3","prompt":"say \"hi\"\n","chosen":["hi"],"rejected":["ünï"],"num_correct":1,"num_incorrect":1,"total_completions":2,"models":["a","b"],"subset":"Focus","additional_metadata":{"index":NaN,"valid":0.0}}"#,
    ];

    fn v2_batch() -> arrow_array::RecordBatch {
        use arrow_schema::{DataType, Field, Schema};
        use std::sync::Arc;
        let strings = || DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
        let metadata = DataType::Struct(
            vec![
                Field::new("index", DataType::Float64, true),
                Field::new("valid", DataType::Float64, true),
            ]
            .into(),
        );
        let schema = Schema::new(vec![
            Field::new("id", DataType::Utf8, true),
            Field::new("prompt", DataType::Utf8, true),
            Field::new("chosen", strings(), true),
            Field::new("rejected", strings(), true),
            Field::new("num_correct", DataType::Int64, true),
            Field::new("num_incorrect", DataType::Int64, true),
            Field::new("total_completions", DataType::Int64, true),
            Field::new("models", strings(), true),
            Field::new("subset", DataType::Utf8, true),
            Field::new("additional_metadata", metadata, true),
        ]);
        // arrow-json reads no NaN token: the NaN goes into the array afterwards
        let text = V2_LINES.join("\n").replace("NaN", "null");
        let batch = arrow_json::ReaderBuilder::new(Arc::new(schema))
            .build(std::io::Cursor::new(text))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let metadata = batch
            .column(9)
            .as_any()
            .downcast_ref::<arrow_array::StructArray>()
            .unwrap();
        let index = arrow_array::Float64Array::from(vec![Some(1.0), Some(2.5), Some(f64::NAN)]);
        let metadata = arrow_array::StructArray::new(
            metadata.fields().clone(),
            vec![Arc::new(index), metadata.column(1).clone()],
            arrow_array::Array::nulls(metadata).cloned(),
        );
        let mut columns = batch.columns().to_vec();
        columns[9] = Arc::new(metadata);
        arrow_array::RecordBatch::try_new(batch.schema(), columns).unwrap()
    }

    fn read(path: &Path) -> Vec<Row> {
        RewardBench
            .open(path, &Options::default())
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn a_parquet_or_arrow_file_of_rows_gives_the_samples_their_jsonl_gives() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("rb.jsonl");
        std::fs::write(&jsonl, V2_LINES.join("\n") + "\n").unwrap();
        let batch = v2_batch();
        let parquet = dir.path().join("rb.parquet");
        let file = std::fs::File::create(&parquet).unwrap();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let arrow = dir.path().join("rb.arrow");
        let file = std::fs::File::create(&arrow).unwrap();
        let mut writer = arrow_ipc::writer::FileWriter::try_new(file, &batch.schema()).unwrap();
        writer.write(&batch).unwrap();
        writer.finish().unwrap();

        let want = read(&jsonl);
        // 3 + 1 (the row without a subset) + 2 samples
        assert_eq!(want.len(), 6);
        assert_eq!(
            want[3].bad.as_deref(),
            Some("the RewardBench row on line 2 has no \"subset\"")
        );
        for path in [&parquet, &arrow] {
            let peek = super::super::peek(path).unwrap();
            assert!(RewardBench.recognises(&peek), "{}", path.display());
            let got = read(path);
            assert_eq!(got.len(), want.len(), "{}", path.display());
            for (g, w) in got.iter().zip(&want) {
                assert_eq!((&g.sample, g.line, &g.facts), (&w.sample, w.line, &w.facts));
                if w.bad.is_some() {
                    assert_eq!(
                        g.bad.as_deref(),
                        Some("the RewardBench row number 2 has no \"subset\"")
                    );
                }
            }
        }
        // the NaN (Python's JSON token, a float in the table) is a null in both
        let last: Value = serde_json::from_str(&want[5].sample).unwrap();
        assert_eq!(
            last["additional_metadata"],
            json!({"index": null, "valid": 0.0})
        );
    }
}
