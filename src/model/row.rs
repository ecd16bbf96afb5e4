//! One (sample, evaluator) row as `rwb run --format jsonl` prints it (SPEC §4), and
//! the hand-written JSON its printing takes (strings and floats as serde and Python
//! write them).

use super::{EvalError, Outcome, SampleRef};
use compact_str::CompactString;
use serde::Serialize;
use serde_json::{Map, Value};

/// One (sample, evaluator) row as `rwb run --format jsonl` prints it (SPEC §4).
#[derive(Debug, Serialize)]
pub struct ResultRow<'a> {
    pub sample: usize,
    /// The samples file's label; for a folder or glob source, the file in it.
    pub file: std::borrow::Cow<'a, str>,
    pub line: usize,
    pub evaluator: &'a str,
    pub score: Option<f64>,
    pub is_score_valid: bool,
    pub reason: &'a Option<CompactString>,
    pub metrics: &'a Map<String, Value>,
    pub step_outputs: &'a Option<Box<Value>>,
    pub error: &'a Option<Box<EvalError>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_error: &'a Option<String>,
    pub duration_ms: f64,
    /// The evaluation's time in seconds (SPEC §16).
    pub seconds: f64,
    /// `"batch"` when `seconds` is the sample's share of a batch call's time (SPEC
    /// §3): not its own time, so no slowest list ranks it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_of: Option<&'static str>,
    /// What the evaluator printed for this sample (only when it printed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: &'a Option<String>,
    /// With `repeat = K`: the K scores, their population std and whether they flip
    /// (plain fields, not a flattened struct: serde writes a flattened row slower).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<&'a [Option<f64>]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score_std: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flips: Option<bool>,
    /// What rwb's sandbox ran for this evaluation (SPEC §18), when it ran anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<&'a super::Sandboxed>,
}

impl<'a> ResultRow<'a> {
    pub fn new(sample: &SampleRef, file: &'a str, evaluator: &'a str, o: &'a Outcome) -> Self {
        ResultRow {
            sample: sample.index,
            file: std::borrow::Cow::Borrowed(file),
            line: sample.line,
            evaluator,
            score: o.score,
            is_score_valid: o.is_score_valid,
            reason: &o.reason,
            metrics: &o.metrics,
            step_outputs: &o.step_outputs,
            error: &o.error,
            result_error: &o.result_error,
            duration_ms: o.duration_ms,
            seconds: o.duration_ms / 1000.0,
            seconds_of: None,
            output: &o.output,
            scores: o.repeat.as_ref().map(|r| &r.scores[..]),
            score_std: o.repeat.as_ref().map(|r| r.score_std),
            flips: o.repeat.as_ref().map(|r| r.flips),
            sandbox: o.sandbox.as_deref(),
        }
    }

    /// Appends the row's JSON to `out`: the bytes its `Serialize` writes, with the
    /// keys written as they are (serde escapes every key of every row again, which is
    /// most of what printing a cached row costs) and each value through serde_json.
    ///
    /// The common values (numbers, plain strings, an empty map, `null`) are written
    /// here directly: through serde each was a few small copies of its own. `known`
    /// has the row's file and evaluator already written, when they are.
    pub fn write_json(&self, out: &mut Vec<u8>, known: Known) {
        fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, key: &[u8], value: &T) {
            out.extend_from_slice(key);
            let _ = serde_json::to_writer(&mut *out, value);
        }
        out.reserve(192 + self.file.len() + self.evaluator.len());
        out.extend_from_slice(b"{\"sample\":");
        out.extend_from_slice(itoa::Buffer::new().format(self.sample).as_bytes());
        match known.file {
            Some(file) => out.extend_from_slice(file),
            None => file_part(out, &self.file),
        }
        out.extend_from_slice(itoa::Buffer::new().format(self.line).as_bytes());
        match known.evaluator {
            Some(evaluator) => out.extend_from_slice(evaluator),
            None => evaluator_part(out, self.evaluator),
        }
        let _ = serde_json::to_writer(&mut *out, &self.score);
        out.extend_from_slice(match self.is_score_valid {
            true => b",\"is_score_valid\":true,\"reason\":",
            false => b",\"is_score_valid\":false,\"reason\":",
        });
        match self.reason {
            Some(reason) => json_str(out, reason),
            None => out.extend_from_slice(b"null"),
        }
        match self.metrics.is_empty() {
            true => out.extend_from_slice(b",\"metrics\":{}"),
            false => value(out, b",\"metrics\":", self.metrics),
        }
        match (self.step_outputs, self.error) {
            (None, None) => out.extend_from_slice(b",\"step_outputs\":null,\"error\":null"),
            (steps, error) => {
                value(out, b",\"step_outputs\":", steps);
                value(out, b",\"error\":", error);
            }
        }
        if let Some(e) = self.result_error {
            value(out, b",\"result_error\":", e);
        }
        value(out, b",\"duration_ms\":", &self.duration_ms);
        value(out, b",\"seconds\":", &self.seconds);
        if let Some(of) = self.seconds_of {
            value(out, b",\"seconds_of\":", of);
        }
        if let Some(o) = self.output {
            value(out, b",\"output\":", o);
        }
        if let Some(scores) = self.scores {
            value(out, b",\"scores\":", scores);
        }
        if let Some(std) = &self.score_std {
            value(out, b",\"score_std\":", std);
        }
        if let Some(flips) = &self.flips {
            value(out, b",\"flips\":", flips);
        }
        if let Some(sandbox) = self.sandbox {
            value(out, b",\"sandbox\":", sandbox);
        }
        out.push(b'}');
    }
}

/// A row's file and evaluator as [`ResultRow::write_json`] writes them, with the keys
/// around them ([`Known::file`], [`Known::evaluator`]): written once for all the rows
/// that share them, where escaping them again was a tenth of writing each row.
#[derive(Clone, Copy, Default)]
pub struct Known<'a> {
    pub file: Option<&'a [u8]>,
    pub evaluator: Option<&'a [u8]>,
}

impl Known<'_> {
    /// `,"file":"LABEL","line":`: what comes between a row's sample and line numbers.
    pub fn file(label: &str) -> Vec<u8> {
        let mut out = Vec::new();
        file_part(&mut out, label);
        out
    }

    /// `,"evaluator":"NAME","score":`: between a row's line number and its score.
    pub fn evaluator(name: &str) -> Vec<u8> {
        let mut out = Vec::new();
        evaluator_part(&mut out, name);
        out
    }
}

/// Appends [`Known::file`]'s bytes for `label`.
fn file_part(out: &mut Vec<u8>, label: &str) {
    out.extend_from_slice(b",\"file\":");
    json_str(out, label);
    out.extend_from_slice(b",\"line\":");
}

/// Appends [`Known::evaluator`]'s bytes for `name`.
fn evaluator_part(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(b",\"evaluator\":");
    json_str(out, name);
    out.extend_from_slice(b",\"score\":");
}

/// Appends `s` as a JSON string, as serde_json writes it: a string with nothing to
/// escape (most file labels, names and reasons) is copied in one piece.
pub(crate) fn json_str(out: &mut Vec<u8>, s: &str) {
    if !needs_escape(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// Eight bytes at once: `ONES * b` is the word of eight bytes `b`.
pub(crate) const ONES: u64 = u64::from_ne_bytes([1; 8]);

/// Non-zero when some byte of the word `x` is below `n` (`n` at most 0x80): the
/// subtraction borrows into that byte's high bit. A borrow may mark a byte above it
/// too, so the answer is exact for "some byte", not for which one.
pub(crate) fn some_byte_below(x: u64, n: u8) -> u64 {
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    x.wrapping_sub(ONES * n as u64) & !x & HIGH
}

/// The high bit of each byte of the word `x` that a JSON string escapes (a control
/// character, `"` or `\\`; a byte at 0x80 or over never is): none is set when none is
/// (one above the lowest found may be set falsely, see [`some_byte_below`]).
pub(crate) fn json_escapes(x: u64) -> u64 {
    let quote = some_byte_below(x ^ (ONES * b'"' as u64), 1);
    let backslash = some_byte_below(x ^ (ONES * b'\\' as u64), 1);
    some_byte_below(x, 0x20) | quote | backslash
}

/// Whether `s` has a byte JSON escapes (a control character, `"` or `\\`), checked
/// eight bytes at a time.
fn needs_escape(s: &[u8]) -> bool {
    let mut words = s.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_ne_bytes(word.try_into().expect("eight bytes"));
        if json_escapes(x) != 0 {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// A float as Python's `repr` writes it: the shortest digits that read back as the
/// same number, fixed notation for exponents from -4 to 15, else `1e-05` style.
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("integer exponent");
    let sign = if mantissa.starts_with('-') { "-" } else { "" };
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                format!("{sign}{digits}{}.0", "0".repeat(int_len - digits.len()))
            } else {
                format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
        }
    } else {
        let rest = if digits.len() > 1 {
            format!(".{}", &digits[1..])
        } else {
            String::new()
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{}{rest}e{esign}{:02}", &digits[..1], exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_written_as_serde_writes_them() {
        // every ASCII byte at every place of a word and of the tail after the words,
        // and text outside ASCII (never escaped)
        let mut texts = vec![String::new(), "é 😀 \u{7f} \u{2028}".to_string()];
        for len in [1, 7, 8, 9, 16, 19] {
            for at in 0..len {
                for b in 0u8..0x80 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    texts.push(String::from_utf8(bytes).unwrap());
                }
            }
        }
        for text in &texts {
            let mut ours = Vec::new();
            json_str(&mut ours, text);
            assert_eq!(ours, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
    }
}
