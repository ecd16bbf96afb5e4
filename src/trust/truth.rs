//! Where a sample's correctness comes from (SPEC §20): the `label = "COLUMN"` of its
//! `[samples.NAME]` (a bool, `correct` / `incorrect`, or 1 / 0), or, for RewardBench
//! rows, its completion's role (chosen is right). `rwb run` and the workbench read it
//! the same way, from the sample line as rwb reads it.

use super::rewardbench::Item;
use crate::sources::rewardbench::{RewardBench, COLUMN};
use crate::sources::Format as _;
use crate::workspace::{Reader, SamplesFile};

/// How each samples file says correctness: its `label` column, and whether its rows
/// are RewardBench's.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub columns: Vec<Option<String>>,
    pub rewardbench: Vec<bool>,
}

impl Sources {
    pub fn of(files: &[SamplesFile]) -> Sources {
        Sources {
            columns: files
                .iter()
                .map(|f| match reader(f) {
                    Some(Reader::Mapped(m)) => m.label.clone(),
                    _ => None,
                })
                .collect(),
            rewardbench: files
                .iter()
                .map(|f| matches!(reader(f), Some(Reader::Format(r)) if r.name() == RewardBench.name()))
                .collect(),
        }
    }

    /// Whether any file says anything of correctness.
    pub fn any(&self) -> bool {
        self.columns.iter().any(Option::is_some) || self.rewardbench.iter().any(|b| *b)
    }

    /// The correctness of the sample line `raw` of file `file` (`None`: none said;
    /// `Some(None)`: a label that cannot be read, with a warning naming `place`, the
    /// column and the value) and its RewardBench place. Parses the line only when its
    /// file says something.
    pub fn read(
        &self,
        file: usize,
        raw: &str,
        place: impl FnOnce() -> String,
        warnings: &mut Vec<String>,
    ) -> (Option<Option<bool>>, Option<Item>) {
        let column = self.columns.get(file).and_then(Option::as_deref);
        let is_rb = self.rewardbench.get(file).copied().unwrap_or(false);
        if column.is_none() && !is_rb {
            return (None, None);
        }
        let item = if is_rb {
            field(raw, COLUMN).and_then(|v| Item::from_json(&v))
        } else {
            None
        };
        let label = match column.map(|c| (c, field(raw, c))) {
            None | Some((_, None | Some(serde_json::Value::Null))) => None,
            Some((c, Some(v))) => {
                let l = label_of(&v);
                if l.is_none() {
                    warnings.push(format!(
                        "{}: the label {c} = {v} is neither a bool nor \"correct\"/\"incorrect\": left out of the verifier's statistics",
                        place()
                    ));
                }
                Some(l)
            }
        };
        let label = label.or_else(|| item.as_ref().map(|i| Some(i.chosen)));
        (label, item)
    }
}

/// The value of the top-level `key` of the JSON object `raw` (`None` when the line
/// is no object or has no such key), the other values skipped unread: a sample line's
/// messages are never built.
fn field(raw: &str, key: &str) -> Option<serde_json::Value> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Find<'k>(&'k str);
    impl<'de> Visitor<'de> for Find<'_> {
        type Value = Option<serde_json::Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if found.is_none() && k == self.0 {
                    found = Some(map.next_value::<serde_json::Value>()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    de.deserialize_map(Find(key)).ok().flatten()
}

fn reader(f: &SamplesFile) -> Option<&Reader> {
    f.foreign.as_ref().map(|f| &f.reader)
}

/// A label's value: a bool, `correct` / `incorrect` (any case), or 1 / 0; `None` for
/// anything else.
pub fn label_of(value: &serde_json::Value) -> Option<bool> {
    match value {
        serde_json::Value::Bool(b) => Some(*b),
        serde_json::Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "correct" => Some(true),
            "incorrect" => Some(false),
            _ => None,
        },
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(1.0) => Some(true),
            Some(0.0) => Some(false),
            _ => None,
        },
        _ => None,
    }
}
