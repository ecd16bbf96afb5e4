//! Where a sample's correctness comes from (SPEC §20): the `label = "COLUMN"` of its
//! `[samples.NAME]` (a bool, `correct` / `incorrect`, or 1 / 0), or, for RewardBench
//! rows, its completion's role (chosen is right). `rwb run` and the workbench read it
//! the same way, from the sample line as rwb reads it.

use super::rewardbench::Item;
use crate::sources::rewardbench::{RewardBench, COLUMN};
use crate::sources::seen::field;
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
                    warnings.push(unreadable_label(&place(), c, &v.to_string()));
                }
                Some(l)
            }
        };
        let label = label.or_else(|| item.as_ref().map(|i| Some(i.chosen)));
        (label, item)
    }
}

/// The warning of a label that cannot be read, at `place` (file:line).
pub fn unreadable_label(place: &str, column: &str, value: &str) -> String {
    format!(
        "{place}: the label {column} = {value} is neither a bool nor \"correct\"/\"incorrect\": left out of the verifier's statistics"
    )
}

fn reader(f: &SamplesFile) -> Option<&Reader> {
    f.foreign.as_ref().map(|f| &f.reader)
}

pub use crate::sources::seen::label_of;
