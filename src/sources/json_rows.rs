//! JSON as Python writes it: objects a line (JSONL) or one document, where
//! `json.dumps` puts bare `NaN`, `Infinity` and `-Infinity` tokens for non-finite
//! floats (veRL's scores, TRL's rewards of `None`). Those read as `null` ("no
//! score"), never as an error.

use serde_json::{Map, Value};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Parses JSON text, reading Python's non-finite tokens outside strings as `null`.
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => match without_non_finite(text) {
            Some(fixed) => serde_json::from_str(&fixed),
            None => Err(e),
        },
    }
}

/// `text` with every bare `NaN`, `Infinity` and `-Infinity` outside strings
/// replaced by `null`; `None` when it has none.
fn without_non_finite(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        let token = [&b"-Infinity"[..], b"Infinity", b"NaN"]
            .into_iter()
            .find(|t| bytes[i..].starts_with(t));
        match token {
            Some(t) => {
                out.push_str(&text[copied..i]);
                out.push_str("null");
                i += t.len();
                copied = i;
                changed = true;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    changed.then_some(out)
}

/// The keys of the first non-blank line of a JSONL file (none when it is not an
/// object: rwb's own reader then says what is wrong with each line).
pub fn first_line_keys(path: &Path) -> Result<Vec<String>, String> {
    let file = File::open(path)
        .map_err(|e| format!("cannot read samples file {}: {e}", path.display()))?;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return Ok(Vec::new()),
            Ok(_) => {}
            Err(e) => return Err(format!("cannot read samples file {}: {e}", path.display())),
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_start_matches('\u{feff}').trim();
        if text.is_empty() {
            continue;
        }
        return Ok(match parse(text) {
            Ok(Value::Object(m)) => m.keys().cloned().collect(),
            _ => Vec::new(),
        });
    }
}

/// The top-level keys of a JSON document, read without keeping its values.
pub fn top_keys(path: &Path) -> Result<Vec<String>, String> {
    let doc = read_doc(path)?;
    Ok(match doc {
        Value::Object(m) => m.keys().cloned().collect(),
        _ => Vec::new(),
    })
}

/// A whole JSON document (Inspect's `.json` and promptfoo's `results.json` are one
/// document each).
pub fn read_doc(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read samples file {}: {e}", path.display()))?;
    parse(text.trim_start_matches('\u{feff}')).map_err(|e| {
        format!(
            "{}: not a whole JSON document ({e}): is it truncated?",
            path.display()
        )
    })
}

/// The objects of a JSONL file with their 1-based line numbers, streamed; a line
/// that is not a JSON object comes as `Err((line, why))` and the rest go on.
pub struct JsonLines {
    reader: BufReader<File>,
    line_no: usize,
    buf: Vec<u8>,
}

impl JsonLines {
    pub fn open(path: &Path) -> Result<JsonLines, String> {
        let file = File::open(path)
            .map_err(|e| format!("cannot read samples file {}: {e}", path.display()))?;
        Ok(JsonLines {
            reader: BufReader::with_capacity(1 << 16, file),
            line_no: 0,
            buf: Vec::new(),
        })
    }
}

/// A JSONL line: its number and object, or why it is none.
pub type JsonLine = (usize, Result<Map<String, Value>, String>);

impl Iterator for JsonLines {
    type Item = Result<JsonLine, String>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => self.line_no += 1,
                Err(e) => return Some(Err(e.to_string())),
            }
            let text = String::from_utf8_lossy(&self.buf);
            let text = text.trim_start_matches('\u{feff}').trim();
            if text.is_empty() {
                continue;
            }
            let row = match parse(text) {
                Ok(Value::Object(m)) => Ok(m),
                Ok(_) => Err("the line is not a JSON object".to_string()),
                Err(e) => Err(format!("not JSON: {e}")),
            };
            return Some(Ok((self.line_no, row)));
        }
    }
}

/// The row of a sample built as an object (numbered `line`) with its `facts`: its
/// text, and what is seen of it (`sources::seen::of_map`) given with it, so that its
/// text is not read again for that.
pub fn row(
    line: usize,
    sample: Map<String, Value>,
    mut facts: crate::model::Facts,
    wanted: &super::seen::Wanted,
) -> super::Row {
    let text = sample_text(&sample);
    let (grouped, stepped) = (facts.group.is_some(), facts.step.is_some());
    facts.seen = super::seen::of_map(sample, wanted, grouped, stepped);
    super::Row {
        line,
        sample: text,
        facts,
        bad: None,
    }
}

/// The text of a sample object (keys in the order given).
pub fn sample_text(sample: &Map<String, Value>) -> String {
    serde_json::to_string(sample).expect("a JSON map serializes")
}

/// Appends `value`'s compact JSON text to `out`, byte for byte as `serde_json` writes
/// it ([`sample_text`]), a string that needs no escape copied in one piece.
pub fn write_compact(value: &Value, out: &mut Vec<u8>) {
    use crate::model::json_str;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => serde_json::to_writer(&mut *out, n).expect("a number serializes"),
        Value::String(s) => json_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_compact(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_str(out, k);
                out.push(b':');
                write_compact(v, out);
            }
            out.push(b'}');
        }
    }
}

/// The row for a line that is not an object: a `BadSample` with the reason.
pub fn bad_row(line: usize, why: &str) -> super::Row {
    super::Row {
        line,
        sample: "{}".into(),
        facts: Default::default(),
        bad: Some(why.to_string()),
    }
}

/// `rows` numbered on from `number` (the rows one line of a file gave, where a line
/// gives several: an episode's turns, a prompt's completions).
pub fn numbered(rows: Vec<super::Row>, number: &mut usize) -> Vec<Result<super::Row, String>> {
    rows.into_iter()
        .map(|mut row| {
            *number += 1;
            row.line = *number;
            Ok(row)
        })
        .collect()
}

/// The rows of a JSONL file, each line's object made a row by `to_row` (given the
/// line number); lines that are no objects are bad rows.
pub fn map_lines<F>(path: &Path, to_row: F) -> Result<super::Rows, String>
where
    F: Fn(usize, Map<String, Value>) -> super::Row + Send + 'static,
{
    let shown = path.display().to_string();
    let lines = JsonLines::open(path)?;
    Ok(Box::new(lines.map(move |line| match line {
        Ok((n, Ok(object))) => Ok(to_row(n, object)),
        Ok((n, Err(why))) => Ok(bad_row(n, &why)),
        Err(e) => Err(format!("cannot read {shown}: {e}")),
    })))
}

/// [`map_lines`] for a reader whose conversion of a line can fail: a line it refuses
/// is a bad row naming the file and the line.
pub fn map_lines_or_bad<F>(path: &Path, to_row: F) -> Result<super::Rows, String>
where
    F: Fn(usize, Map<String, Value>) -> Result<super::Row, String> + Send + 'static,
{
    let shown = path.display().to_string();
    map_lines(path, move |line, object| {
        to_row(line, object)
            .unwrap_or_else(|why| bad_row(line, &format!("{shown} line {line}: {why}")))
    })
}

/// A logged value at a dotted path of `row`, added to `facts` under the path.
pub fn add_logged_paths(row: &Value, paths: &[String], facts: &mut crate::model::Facts) {
    for path in paths {
        if facts.logged(path).is_none() {
            if let Some(v) = super::dotted(row, path) {
                facts
                    .logged
                    .push((path.clone(), crate::model::Logged::of_json(v)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pythons_non_finite_tokens_read_as_null_outside_strings_only() {
        let v = parse(
            r#"{"score": NaN, "b": -Infinity, "c": Infinity, "s": "NaN and Infinity", "d": 1.5}"#,
        )
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"score": null, "b": null, "c": null, "s": "NaN and Infinity", "d": 1.5})
        );
        let v = parse(r#"{"s": "a \"NaN\" b", "x": NaN}"#).unwrap();
        assert_eq!(v, serde_json::json!({"s": "a \"NaN\" b", "x": null}));
        assert!(parse("{\"x\": Nope}").is_err());
    }

    #[test]
    fn compact_text_is_byte_for_byte_serde_jsons() {
        let values = [
            serde_json::json!(null),
            serde_json::json!([
                true,
                false,
                0,
                -7,
                18446744073709551615u64,
                1.5,
                -0.0,
                1e300,
                2.5e-8
            ]),
            serde_json::json!({"role": "user", "content": "what is 2 + 2?"}),
            serde_json::json!({"k": "quote \" backslash \\ slash / tab \t nl \n cr \r"}),
            serde_json::json!({"k": "bell \u{7} nul \u{0} esc \u{1b} del \u{7f} unit \u{1f}"}),
            serde_json::json!({"k": "é ü 中文 🙂 \u{2028} \u{fffd}"}),
            serde_json::json!({"nested": [{"type": "text", "text": "a"}, {"n": [1, [2, {}], []]}], "": ""}),
            serde_json::json!("\u{8}\u{c}"),
        ];
        for v in values {
            let mut mine = Vec::new();
            write_compact(&v, &mut mine);
            assert_eq!(
                String::from_utf8(mine).unwrap(),
                serde_json::to_string(&v).unwrap()
            );
        }
        // a float as Python writes it, read and written again
        let v = parse(r#"{"x": 0.1, "y": 100000000000000000000.0, "z": 1.7976931348623157e308}"#)
            .unwrap();
        let mut mine = Vec::new();
        write_compact(&v, &mut mine);
        assert_eq!(mine, serde_json::to_vec(&v).unwrap());
    }
}
