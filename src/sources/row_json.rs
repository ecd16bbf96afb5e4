//! A table's rows as JSON object texts, one row at a time: `arrow-json`'s encoders
//! (exactly what its line-delimited writer writes for a row, nulls written out), with
//! their strings escaped a word at a time.
//!
//! A row of a chat table is mostly text, and `arrow-json` escapes text through
//! `serde_json`, a byte at a time; here eight bytes are tested at once and copied
//! whole when none of them needs escaping (most text), and the escapes written are
//! `serde_json`'s own, byte for byte, so a sample's text (its cache key) is the
//! same as before.
//!
//! Owns encoding only: which columns make the sample is the caller's.

use crate::model::json_escapes;
use arrow_array::{cast::AsArray, Array, RecordBatch, StructArray};
use arrow_json::writer::{make_encoder, EncoderOptions, NullableEncoder};
use arrow_json::{Encoder, EncoderFactory};
use arrow_schema::{ArrowError, DataType, Field, FieldRef};
use std::sync::Arc;

/// Encodes the rows of one record batch.
pub struct RowJson {
    array: StructArray,
    field: FieldRef,
    options: EncoderOptions,
}

impl RowJson {
    pub fn new(batch: &RecordBatch) -> RowJson {
        let field = Arc::new(Field::new_struct(
            "",
            batch.schema().fields().clone(),
            false,
        ));
        let options = EncoderOptions::default()
            .with_explicit_nulls(true)
            .with_encoder_factory(Arc::new(FastStrings));
        RowJson {
            array: StructArray::from(batch.clone()),
            field,
            options,
        }
    }

    /// The batch's encoder: [`RowEncoder::row`] gives each row's text.
    pub fn encoder(&self) -> Result<RowEncoder<'_>, ArrowError> {
        Ok(RowEncoder {
            encoder: make_encoder(&self.field, &self.array, &self.options)?,
            last: 0,
        })
    }
}

pub struct RowEncoder<'a> {
    encoder: NullableEncoder<'a>,
    /// The length of the row encoded last (rows of a table are much alike).
    last: usize,
}

impl RowEncoder<'_> {
    /// Row `i` as a JSON object's text.
    pub fn row(&mut self, i: usize) -> Result<String, ArrowError> {
        // a row's text given back: no allocation a row once the rows are going
        let mut text = crate::sources::files::spare_text().into_bytes();
        text.reserve(self.last + self.last / 8 + 64);
        self.encoder.encode(i, &mut text);
        self.last = text.len();
        // what the encoders write is text (arrow's strings are valid UTF-8)
        String::from_utf8(text).map_err(|e| ArrowError::JsonError(e.to_string()))
    }
}

/// Gives string columns (wherever they are: in lists, structs, dictionaries) the
/// word-at-a-time encoder; every other type is `arrow-json`'s.
#[derive(Debug)]
struct FastStrings;

impl EncoderFactory for FastStrings {
    fn make_default_encoder<'a>(
        &self,
        _field: &'a FieldRef,
        array: &'a dyn Array,
        _options: &'a EncoderOptions,
    ) -> Result<Option<NullableEncoder<'a>>, ArrowError> {
        let nulls = array.nulls().cloned();
        let encoder: Box<dyn Encoder + 'a> = match array.data_type() {
            DataType::Utf8 => Box::new(Strings(array.as_string::<i32>())),
            DataType::LargeUtf8 => Box::new(LargeStrings(array.as_string::<i64>())),
            DataType::Utf8View => Box::new(StringViews(array.as_string_view())),
            _ => return Ok(None),
        };
        Ok(Some(NullableEncoder::new(encoder, nulls)))
    }
}

struct Strings<'a>(&'a arrow_array::StringArray);
struct LargeStrings<'a>(&'a arrow_array::LargeStringArray);
struct StringViews<'a>(&'a arrow_array::StringViewArray);

impl Encoder for Strings<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        write_str(self.0.value(idx), out);
    }
}

impl Encoder for LargeStrings<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        write_str(self.0.value(idx), out);
    }
}

impl Encoder for StringViews<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        write_str(self.0.value(idx), out);
    }
}

/// The eight bytes at `at` as a word.
#[inline]
fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

/// How `serde_json` escapes a byte: 0 not at all, `u` as `\u00XX`, else `\` and it.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// `s` as a JSON string, exactly as `serde_json` writes it.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut written = 0;
    let mut i = 0;
    loop {
        // sixteen bytes at a time, then eight, while none needs escaping
        while i + 16 <= bytes.len()
            && json_escapes(word(bytes, i)) | json_escapes(word(bytes, i + 8)) == 0
        {
            i += 16;
        }
        if i + 8 <= bytes.len() && json_escapes(word(bytes, i)) == 0 {
            i += 8;
            continue;
        }
        let Some(&b) = bytes.get(i) else { break };
        let escape = ESCAPE[usize::from(b)];
        if escape != 0 {
            out.extend_from_slice(&bytes[written..i]);
            out.push(b'\\');
            out.push(escape);
            if escape == b'u' {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
            written = i + 1;
        }
        i += 1;
    }
    out.extend_from_slice(&bytes[written..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Schema;

    fn serde(s: &str) -> Vec<u8> {
        serde_json::to_vec(s).unwrap()
    }

    fn ours(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        write_str(s, &mut out);
        out
    }

    #[test]
    fn every_byte_is_escaped_as_serde_json_escapes_it_wherever_it_stands() {
        for c in (0u32..0x250).filter_map(char::from_u32) {
            for (before, after) in [(0, 0), (3, 0), (7, 1), (8, 8), (13, 21)] {
                let s = format!("{}{c}{}", "a".repeat(before), "é".repeat(after));
                assert_eq!(ours(&s), serde(&s), "{s:?}");
            }
        }
        let mixed = "line\none\t\"quoted\" back\\slash \u{1}\u{1f}\u{7f} ünï 😀\r\n";
        for cut in 0..mixed.len() {
            if let Some(s) = mixed.get(cut..) {
                assert_eq!(ours(s), serde(s), "{s:?}");
            }
        }
        assert_eq!(ours(""), b"\"\"");
    }

    #[test]
    fn a_row_is_what_the_line_delimited_writer_writes_for_it() {
        let message = DataType::Struct(
            vec![
                Field::new("role", DataType::Utf8, false),
                Field::new("content", DataType::Utf8, true),
            ]
            .into(),
        );
        let item = Arc::new(Field::new("item", message, true));
        let schema = Arc::new(Schema::new(vec![
            Field::new("messages", DataType::List(item), true),
            Field::new("score", DataType::Float64, true),
        ]));
        let input = concat!(
            r#"{"messages": [{"role": "user", "content": "hi \"there\"\n"}, {"role": "assistant", "content": null}], "score": 1}"#,
            "\n",
            r#"{"messages": null}"#,
            "\n",
            r#"{"messages": [{"role": "user", "content": "ünï \u0001"}], "score": 0.25}"#,
            "\n",
        );
        let batch = arrow_json::ReaderBuilder::new(schema)
            .build(std::io::Cursor::new(input))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let mut written = Vec::new();
        let mut writer = arrow_json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, arrow_json::writer::LineDelimited>(&mut written);
        writer.write(&batch).unwrap();
        writer.finish().unwrap();
        drop(writer);
        let want: Vec<&str> = std::str::from_utf8(&written).unwrap().lines().collect();
        let rows = RowJson::new(&batch);
        let mut encoder = rows.encoder().unwrap();
        let got: Vec<String> = (0..3).map(|i| encoder.row(i).unwrap()).collect();
        assert_eq!(got, want);
        assert_eq!(
            got[0],
            r#"{"messages":[{"role":"user","content":"hi \"there\"\n"},{"role":"assistant","content":null}],"score":1.0}"#
        );
        assert_eq!(got[1], r#"{"messages":null,"score":null}"#);
    }
}
