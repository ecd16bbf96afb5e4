//! Human labels in the workbench (SPEC §16): `+` (pass), `-` (fail) and `0` (clear)
//! on the selected sample, kept by its content key (the live loop writes them to
//! `labels.jsonl`); the `disagree` filter and each evaluator's agreement for `v`.

use super::{App, Effect};
use crate::trust::agreement::{disagrees, Agreement, AgreementBuilder, Label};

impl App {
    /// Labels the selected sample pass (`Some(true)`), fail, or clears its label.
    pub(super) fn label_selected(&mut self, pass: Option<bool>) -> Vec<Effect> {
        let Some(sample) = self.selected().and_then(|i| self.samples.get(i)) else {
            return Vec::new();
        };
        let (key, line) = (sample.hash, sample.at.line);
        let label = pass.map(Label::Pass);
        match label {
            Some(l) => self.labels.insert(key, l),
            None => self.labels.remove(&key),
        };
        self.notice = Some(match pass {
            Some(true) => format!("line {line} labelled pass (labels.jsonl)"),
            Some(false) => format!("line {line} labelled fail (labels.jsonl)"),
            None => format!("line {line}: label cleared"),
        });
        self.stats_stale = true;
        if self.filter.contains(&super::Cond::Disagree) {
            self.refresh_view();
        }
        vec![Effect::SaveLabel { key, label }]
    }

    /// Whether some evaluator's score and the sample's human label disagree.
    pub(super) fn disagrees(&self, index: usize) -> bool {
        let Some(sample) = self.samples.get(index) else {
            return false;
        };
        let label = self.label_of(&sample.hash);
        label.is_some()
            && sample.cells.iter().any(|c| {
                disagrees(c.score().filter(|_| !c.is_error()), label, self.threshold) == Some(true)
            })
    }

    /// Evaluator `e`'s agreement with the labels (none while no sample has one).
    pub fn agreement(&self, e: usize) -> Option<Agreement> {
        if self.labels.is_empty() && self.column_labels.is_empty() {
            return None;
        }
        let mut b = AgreementBuilder::default();
        for s in &self.samples {
            let Some(cell) = s.cells.get(e) else { continue };
            if cell.outcome.is_none() {
                continue;
            }
            b.add(
                cell.score().filter(|_| !cell.is_error()),
                self.label_of(&s.hash),
            );
        }
        b.finish(self.threshold)
    }

    /// A sample's human label: the one given here (`labels.jsonl`), else its
    /// samples file's `human` column's.
    pub fn label_of(&self, key: &[u8; 16]) -> Option<Label> {
        self.labels
            .get(key)
            .or_else(|| self.column_labels.get(key))
            .copied()
    }

    /// Where the samples' labels come from, for `v`: how many were given here (and
    /// of them, how many replace the column's) and how many come from the column.
    /// `None` while no samples file names a `human` column.
    pub fn labels_note(&self) -> Option<String> {
        if self.label_columns.is_empty() {
            return None;
        }
        let (mut given, mut over, mut column) = (0, 0, 0);
        for s in &self.samples {
            match (
                self.labels.contains_key(&s.hash),
                self.column_labels.contains_key(&s.hash),
            ) {
                (true, true) => (given, over) = (given + 1, over + 1),
                (true, false) => given += 1,
                (false, true) => column += 1,
                (false, false) => {}
            }
        }
        let names = self.label_columns.join(", ");
        let over = if over > 0 {
            format!(", {over} over the column's")
        } else {
            String::new()
        };
        Some(format!(
            "human labels: {column} from column {names} · {given} given here{over} (labels.jsonl)"
        ))
    }
}
