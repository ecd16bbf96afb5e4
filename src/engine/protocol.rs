//! The messages a worker sends back over its socket (see `python/rwb_worker.py`).

use crate::model::{EvalError, Outcome};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// The first line a forked worker writes after connecting.
#[derive(Debug, Deserialize)]
pub struct Hello {
    pub hello: u64,
    pub pid: i32,
}

/// The worker's answer once it imported (or failed to import) its evaluator.
#[derive(Debug, Deserialize)]
pub struct LoadReply {
    #[serde(default)]
    pub style: Option<String>,
    /// Why the worker chose that style ("declares completions and **kwargs, ...").
    #[serde(default)]
    pub style_reason: Option<String>,
    #[serde(default)]
    pub decorated: bool,
    /// The call a described caller makes (a trainer preset or `call`), in words.
    #[serde(default)]
    pub call: Option<String>,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub third_party: Vec<String>,
    #[serde(default)]
    pub packages: ThirdParty,
    #[serde(default)]
    pub import_error: Option<ImportError>,
}

/// One argument of a call as `rwb check` shows it: its position (`"0"`) or keyword,
/// its Python type and the first characters of its value.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct CallArg {
    pub arg: String,
    pub kind: String,
    pub value: String,
}

/// Third-party code a worker imported (neither the standard library nor the project):
/// its module files and the installed distributions they belong to.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct ThirdParty {
    #[serde(default)]
    pub modules: Vec<PathBuf>,
    #[serde(default)]
    pub dists: Vec<Dist>,
}

/// One installed distribution, as its metadata file names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
pub struct Dist {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
    /// Its `METADATA` (or `PKG-INFO`) file: an upgrade replaces it.
    pub metadata: PathBuf,
}

#[derive(Debug, Deserialize)]
pub struct ImportError {
    #[serde(flatten)]
    pub error: EvalError,
    #[serde(default)]
    pub files: Vec<String>,
}

/// A result as the worker reads it off the user's return value.
#[derive(Debug, Deserialize)]
pub struct WireResult {
    pub score: Option<f64>,
    #[serde(default = "yes")]
    pub is_score_valid: bool,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub metrics: Map<String, Value>,
    #[serde(default)]
    pub step_outputs: Option<Value>,
    #[serde(default)]
    pub error: Option<String>,
}

fn yes() -> bool {
    true
}

/// One line of a batch's answer: a result for sample `i`, or the end of the batch.
#[derive(Debug, Deserialize)]
pub struct BatchLine {
    #[serde(default)]
    pub i: Option<u64>,
    #[serde(default)]
    pub ms: f64,
    /// The call's time in whole nanoseconds, in place of `ms` (a plain result's line
    /// that serde reads, its reason having escapes: see [`plain_result`]).
    #[serde(default)]
    pub ns: Option<u64>,
    #[serde(default)]
    pub ok: Option<WireResult>,
    #[serde(default)]
    pub err: Option<EvalError>,
    #[serde(default)]
    pub out: Option<String>,
    #[serde(default)]
    pub done: Option<usize>,
    #[serde(default)]
    pub files: Option<Vec<String>>,
    /// Third-party code first imported during this batch.
    #[serde(default)]
    pub packages: Option<ThirdParty>,
    /// Contract breaks found for sample `i` (check mode).
    #[serde(default)]
    pub issues: Option<Vec<String>>,
    /// The call made for sample `i` (check mode, the first sample of a batch).
    #[serde(default)]
    pub call: Option<Vec<CallArg>>,
    /// What the checked call of sample `i` scored, reached and swallowed (check
    /// mode, SPEC §16): `{"score", "reaches": [...], "swallowed": [[type, at]]}`.
    #[serde(default)]
    pub trust: Option<serde_json::Value>,
    /// The exceptions the call swallowed in the project's files (a watched batch).
    #[serde(default)]
    pub swallowed: Option<Box<[crate::model::Caught]>>,
    /// The worker is leaving after an interrupted evaluation (why, e.g. "timeout").
    #[serde(default)]
    pub retire: Option<String>,
    /// What rwb's sandbox ran for this evaluation (`rwb.sandbox`'s count).
    #[serde(default)]
    pub sandbox: Option<Box<crate::model::Sandboxed>>,
}

/// A line the worker wrote that does not read as a [`BatchLine`] (a result holding a
/// value rwb's types cannot take, nesting deeper than serde_json's limit, a number
/// beyond f64): the sample it was for, from the `{"i":N,` the worker always writes
/// first, and the `InvalidResult` that sample gets instead. `None` when the line names
/// no sample.
pub fn unreadable_line(line: &[u8], error: &serde_json::Error) -> Option<(u64, EvalError)> {
    let rest = line.strip_prefix(b"{\"i\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || rest.get(digits) != Some(&b',') {
        return None;
    }
    let id = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let error = EvalError::new(
        crate::model::kinds::INVALID_RESULT,
        format!("rwb cannot read the result the worker sent for this sample: {error}"),
    );
    Some((id, error))
}

/// The result line the worker writes for the most common result (`_plain_line` in
/// `rwb_worker.py`: a finite score, no or a plain reason, nothing else) read without
/// serde: `{"i":N,"ns":N,"ok":{"score":F,"is_score_valid":true,"reason":S|null,
/// "metrics":{},"step_outputs":null,"error":null}}`. `None` for any other line, also
/// for a reason with escapes: serde reads those, to the same outcome.
pub fn plain_result(line: &[u8]) -> Option<(u64, Outcome)> {
    let rest = line.strip_prefix(b"{\"i\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits > 1 && rest[0] == b'0' {
        return None; // not JSON
    }
    let id: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = &rest[digits..];
    let (ms, rest) = match rest.strip_prefix(b",\"ns\":") {
        Some(rest) => {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 || digits > 1 && rest[0] == b'0' {
                return None;
            }
            let ns: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
            (nanos_to_ms(ns), &rest[digits..])
        }
        None => plain_number(rest.strip_prefix(b",\"ms\":")?)?,
    };
    let rest = rest.strip_prefix(b",\"ok\":{\"score\":")?;
    let (score, rest) = plain_number(rest)?;
    let rest = rest.strip_prefix(b",\"is_score_valid\":true,\"reason\":")?;
    let (reason, rest) = match rest.strip_prefix(b"null") {
        Some(rest) => (None, rest),
        None => {
            let (text, rest) = plain_string(rest)?;
            (Some(text.into()), rest)
        }
    };
    let rest = rest.strip_prefix(b",\"metrics\":{},\"step_outputs\":null,\"error\":null}}")?;
    if !matches!(rest, b"" | b"\n") {
        return None;
    }
    let mut outcome = Outcome::scored(score, Map::new());
    outcome.reason = reason;
    outcome.duration_ms = ms;
    Some((id, outcome))
}

/// A call's time in whole nanoseconds (a plain result line's `ns`) as milliseconds:
/// the nearest float to the exact quotient, the float `"ms"` with six decimals reads as.
fn nanos_to_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// A finite JSON number at the start of `bytes`, and what follows it.
fn plain_number(bytes: &[u8]) -> Option<(f64, &[u8])> {
    if !bytes
        .first()
        .is_some_and(|b| *b == b'-' || b.is_ascii_digit())
    {
        return None;
    }
    let end = bytes
        .iter()
        .take_while(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        .count();
    let unsigned = bytes[..end].strip_prefix(b"-").unwrap_or(&bytes[..end]);
    if unsigned.len() > 1 && unsigned[0] == b'0' && unsigned[1].is_ascii_digit() {
        return None; // a leading zero is not JSON
    }
    let value: f64 = std::str::from_utf8(&bytes[..end]).ok()?.parse().ok()?;
    value.is_finite().then_some((value, &bytes[end..]))
}

/// A JSON string without escapes at the start of `bytes` (its text), and what follows.
fn plain_string(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let body = bytes.strip_prefix(b"\"")?;
    let end = body
        .iter()
        .position(|b| *b == b'"' || *b == b'\\' || *b < 0x20)?;
    if body[end] != b'"' {
        return None;
    }
    Some((std::str::from_utf8(&body[..end]).ok()?, &body[end + 1..]))
}

impl BatchLine {
    pub fn into_outcome(self) -> Outcome {
        let mut outcome = match (self.ok, self.err) {
            (Some(r), _) => Outcome {
                score: r.score,
                is_score_valid: r.is_score_valid,
                reason: r.reason.map(Into::into),
                metrics: r.metrics,
                step_outputs: r.step_outputs.map(Box::new),
                error: None,
                result_error: r.error,
                duration_ms: 0.0,
                output: None,
                repeat: None,
                swallowed: None,
                sandbox: None,
            },
            (None, Some(e)) => Outcome::failed(e),
            (None, None) => Outcome::failed(EvalError::new(
                crate::model::kinds::INVALID_RESULT,
                "the worker sent neither a result nor an error",
            )),
        };
        outcome.duration_ms = self.ns.map_or(self.ms, nanos_to_ms);
        outcome.output = self.out;
        outcome.swallowed = self.swallowed;
        outcome.sandbox = self.sandbox;
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde makes of a result line (the general path).
    fn by_serde(line: &str) -> (u64, Outcome) {
        let parsed: BatchLine = serde_json::from_str(line).unwrap();
        (parsed.i.unwrap(), parsed.into_outcome())
    }

    fn line(id: &str, ms: &str, score: &str, reason: &str) -> String {
        format!(
            "{{\"i\":{id},\"ms\":{ms},\"ok\":{{\"score\":{score},\"is_score_valid\":true,\"reason\":{reason},\"metrics\":{{}},\"step_outputs\":null,\"error\":null}}}}\n"
        )
    }

    #[test]
    fn a_plain_result_line_reads_as_serde_reads_it() {
        let cases = [
            line("0", "0.013025", "0.203", "\"length\""),
            line("18446744073709551615", "1.250000", "-0.0", "null"),
            line("7", "12.5", "1e-300", "\"caf\u{e9} \u{1F600}\""),
            line("7", "0.000001", "1.7976931348623157e+308", "\"\""),
            line(
                "42",
                "3.000000",
                "0.30000000000000004",
                "\"a 'b' \u{2028}\"",
            ),
        ];
        for text in &cases {
            let fast = plain_result(text.as_bytes());
            assert_eq!(fast, Some(by_serde(text)), "{text}");
            let (_, outcome) = fast.unwrap();
            assert_eq!(
                outcome.score.map(f64::to_bits),
                by_serde(text).1.score.map(f64::to_bits)
            );
        }
        let (id, outcome) = plain_result(cases[0].as_bytes()).unwrap();
        assert_eq!(
            (id, outcome.score, outcome.duration_ms),
            (0, Some(0.203), 0.013025)
        );
        assert_eq!(outcome.reason.as_deref(), Some("length"));
    }

    #[test]
    fn a_time_in_nanoseconds_reads_as_the_same_time_in_six_decimal_milliseconds() {
        for ns in [0u64, 1, 9_925, 13_025, 1_250_000, 86_400_000_000_000] {
            let ms = format!("{}.{:06}", ns / 1_000_000, ns % 1_000_000);
            let by_ms = line("3", &ms, "0.5", "\"r\"");
            let by_ns = by_ms.replace(&format!("\"ms\":{ms}"), &format!("\"ns\":{ns}"));
            let (_, expected) = plain_result(by_ms.as_bytes()).unwrap();
            for read in [plain_result(by_ns.as_bytes()).unwrap(), by_serde(&by_ns)] {
                assert_eq!(read.1, expected, "{by_ns}");
                assert_eq!(read.1.duration_ms.to_bits(), expected.duration_ms.to_bits());
            }
        }
        // not a whole number of nanoseconds: left to serde, which refuses it
        for ns in ["01", "1.5", "-1", ""] {
            let text = line("3", "0", "0.5", "null").replace("\"ms\":0", &format!("\"ns\":{ns}"));
            assert_eq!(plain_result(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn any_other_line_is_left_to_serde() {
        let others = [
            line("1", "0.5", "0.5", "\"say \\\"hi\\\"\""),
            line("1", "0.5", "0.5", "\"tab\\there\""),
            line("1", "0.5", "1e999", "null"),
            line("1", "0.5", "NaN", "null"),
            line("-1", "0.5", "0.5", "null"),
            line("99999999999999999999", "0.5", "0.5", "null"),
            line("01", "0.5", "0.5", "null"),
            line("1", "0.5", "-01.5", "null"),
            line("1", ".5", "0.5", "null"),
            line("1", "0.5", "0.5", "\"open"),
            line("1", "0.5", "0.5", "null").replace("true", "false"),
            line("1", "0.5", "0.5", "null").replace("{}", "{\"m\":{\"score\":1.0}}"),
            line("1", "0.5", "0.5", "null").replace("}}\n", "},\"out\":\"x\"}\n"),
            "{\"i\":1,\"ms\":0.5,\"err\":{\"type\":\"ValueError\",\"message\":\"boom\"}}\n".into(),
            "{\"done\":3}\n".into(),
        ];
        for text in &others {
            assert_eq!(plain_result(text.as_bytes()), None, "{text}");
        }
        // serde still reads the ones that are valid, escapes and all
        assert_eq!(by_serde(&others[0]).1.reason.as_deref(), Some("say \"hi\""));
        assert_eq!(by_serde(&others[12]).1.output.as_deref(), Some("x"));
        let invalid = line("1", "0.5", "0.5", "null") + "x";
        assert_eq!(plain_result(invalid.as_bytes()), None);
    }
}
