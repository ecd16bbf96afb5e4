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
