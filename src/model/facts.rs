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
/// figures SPEC §19 and §20 take of every sample, so that a run gets them beside the
/// rows it reads instead of reading and parsing every line a second time. A row file
/// keeps one a line in its column ([`Seen::record`]); one that fits no record is
/// written on its line as JSON, with these short names.
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
    /// What was seen of a row, read back from the JSON text rwb wrote of it in its
    /// row file line (`None`: not such a text): only a `Seen` that does not fit its
    /// record ([`Seen::fits_record`]) is written so.
    pub fn read(text: &[u8]) -> Option<Seen> {
        serde_json::from_slice(text).ok()
    }

    /// Whether it is all in its record of the row file's column: everything but an
    /// unreadable label's text and a RewardBench place, which go in the row's line.
    pub fn fits_record(&self) -> bool {
        self.rewardbench.is_none() && !matches!(self.label, Some(Label::Unreadable { .. }))
    }

    /// Its record in its row file's column (see [`Recorded`]); a row with nothing
    /// seen (`None`, or nothing in it) has a record of zeros.
    pub fn record(seen: Option<&Seen>) -> [u8; SEEN_RECORD] {
        let mut r = [0u8; SEEN_RECORD];
        let Some(seen) = seen.filter(|s| **s != Seen::default()) else {
            return r;
        };
        if !seen.fits_record() {
            r[0] = record::SEEN | record::IN_TEXT;
            return r;
        }
        let mut flags = record::SEEN;
        if let Some(chars) = seen.chars {
            flags |= record::CHARS;
            r[4..8].copy_from_slice(&chars.to_le_bytes());
        }
        if let Some(tokens) = seen.tokens {
            flags |= record::TOKENS;
            r[8..16].copy_from_slice(&tokens.to_le_bytes());
        }
        if let Some(prompt) = seen.prompt {
            flags |= record::PROMPT;
            r[16..32].copy_from_slice(&prompt);
        }
        match seen.label {
            Some(Label::Read(true)) => flags |= record::LABEL | record::RIGHT,
            Some(Label::Read(false)) => flags |= record::LABEL,
            _ => {}
        }
        r[0] = flags;
        r
    }

    /// What a record of a row file's column says (anything but a record rwb wrote
    /// is [`Recorded::Nothing`]).
    pub fn of_record(r: &[u8; SEEN_RECORD]) -> Recorded {
        let flags = r[0];
        if flags & record::SEEN == 0 || flags & !record::ALL != 0 {
            return Recorded::Nothing;
        }
        if flags & record::IN_TEXT != 0 {
            return Recorded::InText;
        }
        let has = |bit: u8| flags & bit != 0;
        let bytes = |from: usize, to: usize| &r[from..to];
        Recorded::Seen(Seen {
            chars: has(record::CHARS)
                .then(|| u32::from_le_bytes(bytes(4, 8).try_into().expect("4 bytes"))),
            tokens: has(record::TOKENS)
                .then(|| f64::from_le_bytes(bytes(8, 16).try_into().expect("8 bytes"))),
            prompt: has(record::PROMPT).then(|| bytes(16, 32).try_into().expect("16 bytes")),
            label: has(record::LABEL).then_some(Label::Read(has(record::RIGHT))),
            rewardbench: None,
        })
    }
}

/// The size of a row's record in its row file's column of what was seen (the
/// `.seen` file beside it): a flags byte, three bytes of nothing, the completion's
/// characters (u32), its tokens (f64) and the prompt key, little-endian.
pub const SEEN_RECORD: usize = 32;

/// What a row's record in its row file's column says.
#[derive(Clone, Debug, PartialEq)]
pub enum Recorded {
    /// Nothing was seen of the row (or the record is none rwb wrote).
    Nothing,
    Seen(Seen),
    /// What was seen is in the row's line, after its text and facts.
    InText,
}

/// The bits of a record's flags byte.
mod record {
    /// A record of a row something was seen of.
    pub const SEEN: u8 = 1;
    /// What was seen is in the row's line instead.
    pub const IN_TEXT: u8 = 2;
    pub const CHARS: u8 = 4;
    pub const TOKENS: u8 = 8;
    pub const PROMPT: u8 = 16;
    pub const LABEL: u8 = 32;
    /// The label says right.
    pub const RIGHT: u8 = 64;
    pub const ALL: u8 = 127;
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

    /// The key 32 hex digits write (`None`: they are not that).
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
    fn what_was_seen_reads_back_from_its_record_or_its_text() {
        let key = [0xab; 16];
        let fitting = [
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
                tokens: Some(-0.5),
                ..Seen::default()
            },
        ];
        for seen in fitting {
            assert!(seen.fits_record());
            let r = Seen::record(Some(&seen));
            assert_eq!(
                Seen::of_record(&r),
                Recorded::Seen(seen.clone()),
                "{seen:?}"
            );
        }
        // nothing seen: zeros, read as nothing
        assert_eq!(Seen::record(None), [0; SEEN_RECORD]);
        assert_eq!(Seen::record(Some(&Seen::default())), [0; SEEN_RECORD]);
        assert_eq!(Seen::of_record(&[0; SEEN_RECORD]), Recorded::Nothing);
        // a record rwb did not write (unknown flags) is nothing either
        let mut stray = [0; SEEN_RECORD];
        stray[0] = 0x81;
        assert_eq!(Seen::of_record(&stray), Recorded::Nothing);
        // what does not fit a record is in the row's text, and reads back from it
        let rich = Seen {
            chars: Some(3),
            label: Some(Label::Unreadable {
                unreadable: "\"a, b\"".into(),
            }),
            rewardbench: Some(Box::new(serde_json::json!({"subset": "x,y", "c": 1}))),
            ..Seen::default()
        };
        assert!(!rich.fits_record());
        assert_eq!(
            Seen::of_record(&Seen::record(Some(&rich))),
            Recorded::InText
        );
        let text = serde_json::to_vec(&rich).unwrap();
        assert_eq!(Seen::read(&text), Some(rich));
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
