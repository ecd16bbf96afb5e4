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
        let label = self.labels.get(&sample.hash).copied();
        label.is_some()
            && sample.cells.iter().any(|c| {
                disagrees(c.score().filter(|_| !c.is_error()), label, self.threshold) == Some(true)
            })
    }

    /// Evaluator `e`'s agreement with the labels (none while no sample has one).
    pub fn agreement(&self, e: usize) -> Option<Agreement> {
        if self.labels.is_empty() {
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
                self.labels.get(&s.hash).copied(),
            );
        }
        b.finish(self.threshold)
    }
}
