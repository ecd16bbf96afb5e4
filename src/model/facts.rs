//! What a trainer's or eval tool's log says about a sample beside the sample itself
//! (SPEC §13): its rollout group, step, epoch, split and file, and the scores the tool
//! logged. Facts travel with the sample's place ([`super::SampleRef::facts`]), never
//! in its text: they are no part of what an evaluator is given or of the cache key.

use serde::{Deserialize, Serialize};

/// A source's facts about one sample (all optional: JSONL samples have none).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    /// The rollout group, as an id stable across runs (the trainer's group: the
    /// same prompt within a step, verifiers' `example_id`, an Inspect sample id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// The file of a folder or glob source the sample came from (relative to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The scores the tool logged, by name, in the source's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logged: Vec<(String, Logged)>,
    /// Why the row is no sample, as its reader said when it converted it (kept in
    /// the row file, so a later run that reads the row file names it the same way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad: Option<String>,
    /// What rwb read off the sample's own line as its reader built it (never the
    /// tool's word): see [`Seen`]. Only carried from a source's reader to the row's
    /// conversion, which takes it out: the row's facts are then those of its whole
    /// file, shared by its rows, and this goes beside them (the run's column of what
    /// was seen, `sources::seen`; the row file keeps it apart too).
    #[serde(skip)]
    pub seen: Option<Seen>,
    /// Why the source's row holds no sample and is skipped, counted and named but not
    /// a bad row (SPEC §13: a prime-rl episode that failed before any trace). Only
    /// carried from its reader to the conversion, which writes no row for it.
    #[serde(skip)]
    pub skipped: Option<String>,
}

/// What rwb read off a converted sample's line, once, as it wrote the row file: the
/// figures SPEC §19 and §20 take of every sample, so that a run gets them with the
/// facts it reads anyway instead of reading and parsing every line a second time.
/// Short names: a row file holds one of these a line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Seen {
    /// The completion's length in characters (chat form: the last assistant turn's).
    #[serde(default, rename = "c", skip_serializing_if = "Option::is_none")]
    pub chars: Option<u32>,
    /// Its length in tokens, as the sample's `response_length` logs it.
    #[serde(default, rename = "t", skip_serializing_if = "Option::is_none")]
    pub tokens: Option<f64>,
    /// A quick key of what groups the line by prompt (`training::quick_key`: its
    /// prompt and its own step), in hex; none when the source logged its group.
    #[serde(
        default,
        rename = "p",
        skip_serializing_if = "Option::is_none",
        with = "hex_key"
    )]
    pub prompt: Option<[u8; 16]>,
    /// The sample's correctness, from its file's `label = "COLUMN"` (SPEC §20).
    #[serde(default, rename = "l", skip_serializing_if = "Option::is_none")]
    pub label: Option<Label>,
    /// A RewardBench completion's place (the row's `rewardbench` column as written).
    #[serde(default, rename = "rb", skip_serializing_if = "Option::is_none")]
    pub rewardbench: Option<Box<serde_json::Value>>,
}

impl Seen {
    /// What was seen of a row, read back from the JSON text rwb wrote of it (`None`:
    /// not such a text). The common case (lengths, prompt key, a bool label) is read
    /// directly, the rest through serde: a run that wants it reads one a row.
    pub fn read(text: &[u8]) -> Option<Seen> {
        Seen::read_plain(text).or_else(|| serde_json::from_slice(text).ok())
    }

    /// [`Seen::read`] of a text of only numbers, a key and a bool, as rwb writes them
    /// (`{"c":12,"t":3.0,"p":"…","l":true}`); `None` for anything else.
    fn read_plain(text: &[u8]) -> Option<Seen> {
        let inner = text.strip_prefix(b"{")?.strip_suffix(b"}")?;
        let mut seen = Seen::default();
        if inner.is_empty() {
            return Some(seen);
        }
        for field in inner.split(|&b| b == b',') {
            match field {
                [b'"', b'c', b'"', b':', v @ ..] => seen.chars = Some(digits(v)?),
                [b'"', b't', b'"', b':', v @ ..] => {
                    seen.tokens = Some(number(v).filter(|t: &f64| t.is_finite())?)
                }
                [b'"', b'p', b'"', b':', b'"', v @ .., b'"'] => seen.prompt = Some(hex_key::of(v)?),
                b"\"l\":true" => seen.label = Some(Label::Read(true)),
                b"\"l\":false" => seen.label = Some(Label::Read(false)),
                _ => return None,
            }
        }
        Some(seen)
    }
}

/// A number as JSON text writes it.
fn number<T: std::str::FromStr>(text: &[u8]) -> Option<T> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// A count as JSON text writes it (decimal digits, no sign), read without the
/// general parser: a run that reads what was seen of each row reads one a row.
fn digits(text: &[u8]) -> Option<u32> {
    if text.is_empty() || text.len() > 10 {
        return None;
    }
    let mut n: u64 = 0;
    for &b in text {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n * 10 + u64::from(d);
    }
    u32::try_from(n).ok()
}

/// A correctness label as its column holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Label {
    Read(bool),
    /// A value that is neither a bool nor `correct`/`incorrect` (its JSON text).
    Unreadable {
        unreadable: Box<str>,
    },
}

/// One logged score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Logged {
    /// A number (`None`: the log says NaN or null, i.e. "no score": TRL's NaN for a
    /// reward function that returned `None`).
    Score(Option<f64>),
    /// A value that is not a number (a string, a list): kept to be named, never
    /// guessed at. Holds a short description of it.
    NotNumeric { not_numeric: String },
}

// facts are compared only to tell samples' places apart (NaN scores included)
impl Eq for Facts {}
impl Eq for Seen {}

impl Facts {
    /// The logged value named `name`.
    pub fn logged(&self, name: &str) -> Option<&Logged> {
        self.logged.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn is_empty(&self) -> bool {
        *self == Facts::default()
    }
}

impl Logged {
    /// A logged JSON value as rwb reads it: numbers and booleans (true = 1) are
    /// scores, `null` and Python's bare `NaN` are "no score", anything else is named.
    pub fn of_json(value: &serde_json::Value) -> Logged {
        use serde_json::Value;
        match value {
            Value::Number(n) => Logged::Score(n.as_f64()),
            Value::Bool(b) => Logged::Score(Some(f64::from(u8::from(*b)))),
            Value::Null => Logged::Score(None),
            Value::String(s) => Logged::NotNumeric {
                not_numeric: format!("the string {}", clip(&value.to_string(), s.len())),
            },
            Value::Array(_) => Logged::NotNumeric {
                not_numeric: "a list".into(),
            },
            Value::Object(_) => Logged::NotNumeric {
                not_numeric: "an object".into(),
            },
        }
    }

    /// A float as logged: NaN (and infinities, which no score is) are "no score".
    pub fn of_f64(x: f64) -> Logged {
        Logged::Score(x.is_finite().then_some(x))
    }
}

fn clip(text: &str, _len: usize) -> String {
    const MAX: usize = 40;
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

/// A 16-byte key as 32 hex digits.
mod hex_key {
    use serde::{Deserialize, Deserializer, Serializer};

    const DIGITS: &[u8; 16] = b"0123456789abcdef";

    pub fn serialize<S: Serializer>(key: &Option<[u8; 16]>, s: S) -> Result<S::Ok, S::Error> {
        let Some(key) = key else {
            return s.serialize_none();
        };
        let mut text = [0u8; 32];
        for (pair, b) in text.chunks_mut(2).zip(key) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 15)];
        }
        s.serialize_str(std::str::from_utf8(&text).expect("hex digits"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[u8; 16]>, D::Error> {
        let text: Option<std::borrow::Cow<str>> = Option::deserialize(d)?;
        let Some(text) = text else { return Ok(None) };
        match of(text.as_bytes()) {
            Some(key) => Ok(Some(key)),
            None => Err(serde::de::Error::custom("a key of 32 hex digits")),
        }
    }

    /// Each byte's value as a hex digit (either case), 0xFF for any other byte.
    const VALUES: [u8; 256] = {
        let mut values = [0xFF; 256];
        let mut i = 0;
        while i < 16 {
            values[DIGITS[i] as usize] = i as u8;
            values[DIGITS[i].to_ascii_uppercase() as usize] = i as u8;
            i += 1;
        }
        values
    };

    /// The key 32 hex digits write (`None`: they are not that). A run that reads
    /// what was seen of each row reads one of these a row: a table, no branch a digit.
    pub fn of(bytes: &[u8]) -> Option<[u8; 16]> {
        let bytes: &[u8; 32] = bytes.try_into().ok()?;
        let mut key = [0u8; 16];
        let mut stray = 0u8;
        for (k, pair) in key.iter_mut().zip(bytes.chunks_exact(2)) {
            let (high, low) = (VALUES[usize::from(pair[0])], VALUES[usize::from(pair[1])]);
            stray |= high | low;
            *k = high << 4 | (low & 15);
        }
        (stray & 0xF0 == 0).then_some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_seen_reads_back_as_written_the_plain_way_or_through_serde() {
        let key = [0xab; 16];
        let cases = [
            Seen::default(),
            Seen {
                chars: Some(290),
                tokens: Some(12.5),
                prompt: Some(key),
                label: Some(Label::Read(false)),
                rewardbench: None,
            },
            Seen {
                chars: Some(u32::MAX),
                prompt: Some(*b"0123456789abcdef"),
                ..Seen::default()
            },
            Seen {
                chars: Some(0),
                tokens: Some(1e20),
                label: Some(Label::Read(true)),
                ..Seen::default()
            },
            Seen {
                label: Some(Label::Unreadable {
                    unreadable: "\"a, b\"".into(),
                }),
                rewardbench: Some(Box::new(serde_json::json!({"subset": "x,y", "c": 1}))),
                ..Seen::default()
            },
        ];
        for seen in cases {
            let text = serde_json::to_vec(&seen).unwrap();
            assert_eq!(
                Seen::read(&text),
                Some(seen.clone()),
                "{}",
                String::from_utf8_lossy(&text)
            );
        }
        assert!(Seen::read_plain(br#"{"c":1,"l":{"unreadable":"x"}}"#).is_none());
        // a count too large, or not digits, and a key of other than hex digits
        for text in [&br#"{"c":4294967296}"#[..], br#"{"c":-1}"#, br#"{"c":}"#] {
            assert_eq!(
                Seen::read_plain(text),
                None,
                "{}",
                String::from_utf8_lossy(text)
            );
        }
        let upper = format!(r#"{{"p":"{}"}}"#, "AB".repeat(16));
        assert_eq!(
            Seen::read(upper.as_bytes()).and_then(|s| s.prompt),
            Some(key)
        );
        assert_eq!(
            Seen::read(format!(r#"{{"p":"{}g"}}"#, "a".repeat(31)).as_bytes()),
            None
        );
        assert_eq!(Seen::read(b"{\"p\":\"zz\"}"), None);
        assert_eq!(Seen::read(b"not json"), None);
    }
}
