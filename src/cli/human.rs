//! `rwb run`'s human labels (SPEC §16): the workspace's `labels.jsonl` by sample
//! content key, over the `human = "COLUMN"` of each `[samples.NAME]` (read on a
//! thread of its own while the run goes on), and each evaluator's agreement.

use crate::trust::agreement::{disagrees, Agreement, AgreementBuilder, Label};
use crate::trust::labels::{self, Labels};
use crate::workspace::{SamplesFile, SamplesReader};
use std::path::Path;
use std::thread::JoinHandle;

type Column = (Vec<Option<Label>>, Vec<String>);

pub struct HumanLabels {
    given: Labels,
    reading: Option<JoinHandle<Column>>,
    column: Vec<Option<Label>>,
    builders: Vec<AgreementBuilder>,
    pub threshold: f64,
}

impl HumanLabels {
    /// `None` when the workspace has no labels and no samples file a `human` column;
    /// else the labels, with the warnings of what could not be read on stderr.
    pub fn start(
        root: &Path,
        files: &[SamplesFile],
        limit: Option<usize>,
        evaluators: usize,
        threshold: f64,
    ) -> Option<HumanLabels> {
        let (given, warnings) = labels::load(root);
        for w in warnings {
            eprintln!("rwb: warning: {w}");
        }
        let named = labels::human_columns(files);
        let exists = root.join(labels::LABELS_FILE).is_file();
        if !exists && named.iter().all(Option::is_none) {
            return None;
        }
        let reading = named.iter().any(Option::is_some).then(|| {
            let files = files.to_vec();
            std::thread::spawn(move || read_column(&files, &named, limit))
        });
        Some(HumanLabels {
            given,
            reading,
            column: Vec::new(),
            builders: vec![AgreementBuilder::default(); evaluators],
            threshold,
        })
    }

    /// The column's labels, once read (the first call waits for the thread).
    fn ready(&mut self) {
        if let Some(handle) = self.reading.take() {
            let (column, warnings) = handle.join().unwrap_or_default();
            for w in warnings {
                eprintln!("rwb: warning: {w}");
            }
            self.column = column;
        }
    }

    /// The label of sample `index` with content key `key`: the workbench's, else the
    /// column's.
    pub fn label(&self, index: usize, key: &[u8; 16]) -> Option<Label> {
        self.given
            .get(key)
            .copied()
            .or_else(|| self.column.get(index).copied().flatten())
    }

    /// Counts one completed sample's outcomes.
    pub fn add(&mut self, index: usize, key: &[u8; 16], outcomes: &[crate::model::Outcome]) {
        self.ready();
        let label = self.label(index, key);
        for (b, o) in self.builders.iter_mut().zip(outcomes) {
            b.add(o.score.filter(|_| !o.is_error()), label);
        }
    }

    pub fn disagrees(&self, index: usize, key: &[u8; 16], score: Option<f64>) -> Option<bool> {
        disagrees(score, self.label(index, key), self.threshold)
    }

    pub fn agreements(&self) -> Vec<Option<Agreement>> {
        self.builders
            .iter()
            .map(|b| b.finish(self.threshold))
            .collect()
    }
}

/// Each sample's label from its file's `human` column: missing or null is no label;
/// another value is a warning naming the file, line and value.
fn read_column(files: &[SamplesFile], named: &[Option<String>], limit: Option<usize>) -> Column {
    let mut labels = Vec::new();
    let mut warnings = Vec::new();
    let mut reader = SamplesReader::unhashed(files);
    while labels.len() < limit.unwrap_or(usize::MAX) {
        let Some(Ok(line)) = reader.read_next() else {
            break;
        };
        let column = named.get(line.at.file).and_then(Option::as_deref);
        let label = column.and_then(|c| {
            let place = || format!("{}:{}", files[line.at.file].label, line.at.line);
            labels::column_label(line.raw, c, place, &mut warnings)
        });
        labels.push(label);
    }
    (labels, warnings)
}
