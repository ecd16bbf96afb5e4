//! Tables (Parquet, Arrow, Hugging Face folders) as rows: each record batch's
//! sample columns are encoded as JSON objects a row by `arrow-json`, and the
//! source's facts (step, group, logged scores) are read from their own columns.
//! [`AnyTable`] takes any table with `messages`, or `prompt` and `completion`.

use super::row_json::RowJson;
use super::{group_id, Container, Format, Options, Peek, Row, Rows};
use crate::model::{Facts, Logged};
use arrow_array::{cast::AsArray, Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::path::Path;
use std::sync::Arc;

/// A table's record batches, streamed, and the split they belong to (a
/// `DatasetDict`'s).
pub struct Batches {
    pub schema: SchemaRef,
    pub batches: Box<dyn Iterator<Item = Result<RecordBatch, String>> + Send>,
    pub split: Option<String>,
}

/// The batches of whatever table `path` is.
pub fn open_batches(path: &Path) -> Result<Vec<Batches>, String> {
    if path.is_dir() {
        return super::arrow::hf_batches(path);
    }
    // a file that cannot be read is named by the Arrow reader's error
    if super::parquet::is_parquet(path) {
        Ok(vec![super::parquet::batches(path)?])
    } else {
        Ok(vec![super::arrow::batches(path)?])
    }
}

/// What each column of a table is for.
#[derive(Clone, Debug, Default)]
pub struct Roles {
    /// Columns of the sample: (column name in the table, key in the sample).
    pub sample: Vec<(String, String)>,
    pub step: Option<String>,
    /// The group is the value of this column (with the step, when there is one).
    pub group: Option<String>,
    /// Logged scores: (column, logged name).
    pub logged: Vec<(String, String)>,
    /// A text completion is handed on as one assistant message.
    pub conversational: bool,
}

pub struct AnyTable;

impl Format for AnyTable {
    fn name(&self) -> &'static str {
        "table"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        matches!(
            peek.container,
            Container::Parquet | Container::Arrow | Container::HfFolder
        ) && (peek.has("messages") || peek.has_all(&["prompt", "completion"]))
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let batches = open_batches(path)?;
        let columns: Vec<String> = batches
            .first()
            .map(|b| b.schema.fields().iter().map(|f| f.name().clone()).collect())
            .unwrap_or_default();
        let group = if columns.iter().any(|c| c == "messages") {
            None
        } else {
            Some("prompt".to_string())
        };
        let roles = Roles {
            sample: columns.iter().map(|c| (c.clone(), c.clone())).collect(),
            group,
            conversational: options.conversational,
            logged: options
                .logged_paths
                .iter()
                .filter(|p| columns.contains(p))
                .map(|p| (p.clone(), p.clone()))
                .collect(),
            ..Roles::default()
        };
        Ok(table_rows(batches, roles))
    }

    fn checks_form(&self) -> bool {
        true
    }
}

/// The rows of `batches` with the columns' `roles`.
pub fn table_rows(batches: Vec<Batches>, roles: Roles) -> Rows {
    let mut line = 0;
    let rows = batches.into_iter().flat_map(move |b| {
        let split = b.split.clone();
        let roles = roles.clone();
        b.batches.flat_map(move |batch| match batch {
            Ok(batch) => batch_rows(&batch, &roles, split.as_deref()),
            Err(e) => vec![Err(e)],
        })
    });
    // numbered across shards; an error ends the rows
    let mut failed = false;
    Box::new(rows.map_while(move |r| {
        if failed {
            return None;
        }
        failed = r.is_err();
        Some(r.map(|mut row| {
            line += 1;
            row.line = line;
            row
        }))
    }))
}

/// The rows of one batch (numbered from 0: the caller numbers them).
fn batch_rows(batch: &RecordBatch, roles: &Roles, split: Option<&str>) -> Vec<Result<Row, String>> {
    let schema = batch.schema();
    let column = |name: &str| schema.index_of(name).ok().map(|i| batch.column(i));
    // the sample's columns, renamed, encoded by arrow-json
    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    for (from, to) in &roles.sample {
        if let Some(array) = column(from) {
            let field = schema.field_with_name(from).expect("found above");
            fields.push(Field::new(to, field.data_type().clone(), true));
            arrays.push(array.clone());
        }
    }
    let projected = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        arrays,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    );
    let rows = match projected {
        Ok(projected) => RowJson::new(&projected),
        Err(e) => return vec![Err(format!("cannot turn its rows into JSON: {e}"))],
    };
    let mut texts = match rows.encoder() {
        Ok(encoder) => encoder,
        Err(e) => return vec![Err(format!("cannot turn its rows into JSON: {e}"))],
    };
    let form = Form::of(&projected_columns(batch, roles));
    let step = roles.step.as_deref().and_then(column);
    let group = roles.group.as_deref().and_then(column);
    let logged: Vec<(&String, &Arc<dyn Array>)> = roles
        .logged
        .iter()
        .filter_map(|(c, name)| Some((name, column(c)?)))
        .collect();
    (0..batch.num_rows())
        .map(|i| {
            let mut sample = texts
                .row(i)
                .map_err(|e| format!("cannot turn its rows into JSON: {e}"))?;
            let mut facts = Facts {
                step: step
                    .and_then(|a| number_at(a.as_ref(), i))
                    .map(|x| x as i64),
                split: split.map(String::from),
                ..Facts::default()
            };
            for (name, array) in &logged {
                facts
                    .logged
                    .push(((*name).clone(), logged_at(array.as_ref(), i)));
            }
            if let Some(g) = group {
                let step = facts.step.map(|s| s.to_string()).unwrap_or_default();
                let value = text_at(g.as_ref(), i).unwrap_or_default();
                facts.group = Some(group_id(&[step.as_bytes(), value.as_bytes()]));
            }
            if roles.conversational {
                sample = as_conversation(&sample);
            }
            if let Some(split) = split {
                sample = with_key(&sample, "split", &serde_json::Value::from(split));
            }
            // the form told from the columns, else checked as any line is
            let bad = match form.holds(i) {
                true => None,
                false => crate::model::check_sample(&sample).err(),
            };
            Ok(Row {
                line: 0,
                sample,
                facts,
                bad,
            })
        })
        .collect()
}

/// The sample's columns of `batch` by their keys in the sample.
fn projected_columns<'a>(
    batch: &'a RecordBatch,
    roles: &'a Roles,
) -> Vec<(&'a str, &'a dyn Array)> {
    let schema = batch.schema_ref();
    roles
        .sample
        .iter()
        .filter_map(|(from, to)| {
            let i = schema.index_of(from).ok()?;
            Some((to.as_str(), batch.column(i).as_ref()))
        })
        .collect()
}

/// Which rows of a batch are samples in one of SPEC §3's forms, as the columns'
/// types and nulls tell: a `messages` list, else `prompt` and `completion`, each text
/// or a list (what `check_sample` finds in the row's text). A row it cannot vouch
/// for is checked as a line is.
enum Form<'a> {
    /// Rows whose value in each of these columns is not null.
    NotNull(Vec<&'a dyn Array>),
    /// The text of every row is checked.
    Unknown,
}

impl<'a> Form<'a> {
    fn of(columns: &[(&str, &'a dyn Array)]) -> Form<'a> {
        let keyed = |key: &str| {
            let mut found = columns.iter().filter(|(k, _)| *k == key);
            match (found.next(), found.next()) {
                (Some((_, a)), None) => Some(Some(*a)),
                (None, _) => Some(None),
                (Some(_), Some(_)) => None, // a key twice: the text is checked
            }
        };
        let list = |a: &dyn Array| {
            matches!(
                a.data_type(),
                DataType::List(_)
                    | DataType::LargeList(_)
                    | DataType::FixedSizeList(..)
                    | DataType::ListView(_)
                    | DataType::LargeListView(_)
            )
        };
        let text = |a: &dyn Array| {
            matches!(
                a.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            )
        };
        let (Some(messages), Some(prompt), Some(completion)) =
            (keyed("messages"), keyed("prompt"), keyed("completion"))
        else {
            return Form::Unknown;
        };
        match (messages, prompt, completion) {
            (Some(m), _, _) if list(m) => Form::NotNull(vec![m]),
            (None, Some(p), Some(c)) if (text(p) || list(p)) && (text(c) || list(c)) => {
                Form::NotNull(vec![p, c])
            }
            _ => Form::Unknown,
        }
    }

    /// Whether row `i` is known to be in form.
    fn holds(&self, i: usize) -> bool {
        match self {
            Form::NotNull(columns) => columns.iter().all(|a| a.is_valid(i)),
            Form::Unknown => false,
        }
    }
}

/// A sample text with `key` set to `value` (added at the end).
fn with_key(sample: &str, key: &str, value: &serde_json::Value) -> String {
    match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(sample) {
        Ok(mut m) => {
            m.insert(key.to_string(), value.clone());
            serde_json::to_string(&m).expect("serializes")
        }
        Err(_) => sample.to_string(),
    }
}

/// A sample whose text completion becomes one assistant message.
fn as_conversation(sample: &str) -> String {
    let Ok(mut m) = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(sample)
    else {
        return sample.to_string();
    };
    if let Some(serde_json::Value::String(text)) = m.get("completion").cloned() {
        m.insert(
            "completion".into(),
            serde_json::json!([{"role": "assistant", "content": text}]),
        );
    }
    serde_json::to_string(&m).expect("serializes")
}

/// A number in `array` at row `i` (integers, floats, booleans as 1/0).
pub fn number_at(array: &dyn Array, i: usize) -> Option<f64> {
    if array.is_null(i) {
        return None;
    }
    use arrow_array::types::*;
    Some(match array.data_type() {
        DataType::Float64 => array.as_primitive::<Float64Type>().value(i),
        DataType::Float32 => f64::from(array.as_primitive::<Float32Type>().value(i)),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(i) as f64,
        DataType::Int32 => f64::from(array.as_primitive::<Int32Type>().value(i)),
        DataType::Int16 => f64::from(array.as_primitive::<Int16Type>().value(i)),
        DataType::Int8 => f64::from(array.as_primitive::<Int8Type>().value(i)),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(i) as f64,
        DataType::UInt32 => f64::from(array.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt16 => f64::from(array.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt8 => f64::from(array.as_primitive::<UInt8Type>().value(i)),
        DataType::Boolean => f64::from(u8::from(array.as_boolean().value(i))),
        _ => return None,
    })
}

/// Whether a column holds numbers (what a logged score column holds).
pub fn is_numeric(t: &DataType) -> bool {
    t.is_numeric() || *t == DataType::Boolean
}

/// A logged score at row `i`: a number (NaN and null: no score), or what it is.
fn logged_at(array: &dyn Array, i: usize) -> Logged {
    if array.is_null(i) {
        return Logged::Score(None);
    }
    if is_numeric(array.data_type()) {
        return match number_at(array, i) {
            Some(x) => Logged::of_f64(x),
            None => Logged::NotNumeric {
                not_numeric: format!("a value of type {}", array.data_type()),
            },
        };
    }
    Logged::NotNumeric {
        not_numeric: match text_at(array, i) {
            Some(t) => format!("the string {}", serde_json::Value::from(t)),
            None => format!("a value of type {}", array.data_type()),
        },
    }
}

/// A text value at row `i` (any other type as arrow displays it).
pub fn text_at(array: &dyn Array, i: usize) -> Option<String> {
    if array.is_null(i) {
        return None;
    }
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().value(i).to_string()),
        DataType::Utf8View => Some(array.as_string_view().value(i).to_string()),
        _ => arrow_cast_display(array, i),
    }
}

fn arrow_cast_display(array: &dyn Array, i: usize) -> Option<String> {
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "v",
            array.data_type().clone(),
            true,
        )])),
        vec![array.slice(i, 1)],
    )
    .ok()?;
    RowJson::new(&batch).encoder().ok()?.row(0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows of a table read from JSON lines with `schema`.
    fn batch(schema: Schema, lines: &[&str]) -> RecordBatch {
        arrow_json::ReaderBuilder::new(Arc::new(schema))
            .build(std::io::Cursor::new(lines.join("\n")))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
    }

    fn roles_of(batch: &RecordBatch) -> Roles {
        let names = batch.schema_ref().fields().iter().map(|f| f.name().clone());
        Roles {
            sample: names.map(|n| (n.clone(), n)).collect(),
            ..Roles::default()
        }
    }

    /// Every row's verdict, checked to be what `check_sample` says of its text.
    fn verdicts(batch: &RecordBatch, roles: &Roles) -> Vec<Option<String>> {
        batch_rows(batch, roles, None)
            .into_iter()
            .map(|row| {
                let row = row.unwrap();
                let checked = crate::model::check_sample(&row.sample).err();
                assert_eq!(row.bad, checked, "{}", row.sample);
                row.bad
            })
            .collect()
    }

    #[test]
    fn a_row_s_form_told_from_its_columns_is_what_its_text_shows() {
        let message = DataType::Struct(
            vec![
                Field::new("role", DataType::Utf8, true),
                Field::new("content", DataType::Utf8, true),
            ]
            .into(),
        );
        let messages = DataType::List(Arc::new(Field::new("item", message, true)));
        let chat = batch(
            Schema::new(vec![
                Field::new("messages", messages, true),
                Field::new("prompt", DataType::Utf8, true),
            ]),
            &[
                r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
                r#"{"messages": null, "prompt": "a prompt beside no messages"}"#,
                r#"{"messages": [], "prompt": null}"#,
            ],
        );
        let got = verdicts(&chat, &roles_of(&chat));
        assert_eq!(got[0], None);
        assert_eq!(
            got[1].as_deref(),
            Some("\"messages\" is null, not a list of messages")
        );
        assert_eq!(got[2], None);

        let text = batch(
            Schema::new(vec![
                Field::new("prompt", DataType::Utf8, true),
                Field::new("completion", DataType::Utf8, true),
                Field::new("n", DataType::Int64, true),
            ]),
            &[
                r#"{"prompt": "p", "completion": "c", "n": 1}"#,
                r#"{"prompt": "p", "completion": null}"#,
                r#"{"prompt": null, "completion": "c"}"#,
            ],
        );
        let got = verdicts(&text, &roles_of(&text));
        assert_eq!(got[0], None);
        assert!(got[1]
            .as_deref()
            .unwrap()
            .starts_with("\"completion\" is null"));
        assert!(got[2].as_deref().unwrap().starts_with("\"prompt\" is null"));

        // columns the types cannot vouch for: a number as the completion, a key
        // given twice, no prompt at all; each row's text is checked
        let numbers = batch(
            Schema::new(vec![
                Field::new("prompt", DataType::Utf8, true),
                Field::new("completion", DataType::Int64, true),
            ]),
            &[r#"{"prompt": "p", "completion": 3}"#],
        );
        let got = verdicts(&numbers, &roles_of(&numbers));
        assert!(got[0]
            .as_deref()
            .unwrap()
            .starts_with("\"completion\" is a number"));
        let mut twice = roles_of(&text);
        twice.sample.push(("n".into(), "prompt".into()));
        assert_eq!(
            verdicts(&text, &twice)[0].as_deref(),
            Some("not JSON: duplicate field `prompt` at column 45")
        );
        let mut no_prompt = roles_of(&text);
        no_prompt.sample.remove(0);
        assert!(verdicts(&text, &no_prompt)[0]
            .as_deref()
            .unwrap()
            .starts_with("no \"messages\", and \"completion\" without \"prompt\""));
    }
}
