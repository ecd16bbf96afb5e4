//! Human labels in the workbench (SPEC §16): `+` (pass), `-` (fail) and `0` (clear)
//! on the selected sample, kept by its content key: every line of the same text
//! shares the label, and labelling one says which others it applies to. The live
//! loop loads them (`Msg::Labels`) and keeps them (`Effect::SaveLabel`); here they
//! are data only. Also the `disagree` filter, each evaluator's agreement for `v`,
//! and the marks the list, the conversation and the breakdown show.

use super::{App, Effect};
use crate::trust::agreement::{disagrees, Agreement, AgreementBuilder, Label};
use std::collections::HashMap;

/// Labels by sample content key.
pub type Labels = HashMap<[u8; 16], Label>;

/// The other lines with the selected sample's text, found for drawing (see
/// [`App::fill_twins`]): for (sample index, content key, samples known), their
/// (file, line)s.
#[derive(Debug, Default)]
pub struct Twins {
    of: Option<(usize, [u8; 16], usize)>,
    places: Vec<(String, usize)>,
}

/// The list's mark of a labelled sample: `+` pass, `-` fail, `=` and the number.
pub fn label_mark(label: Label) -> String {
    match label {
        Label::Pass(true) => "+".into(),
        Label::Pass(false) => "-".into(),
        Label::Number(x) => format!("={x:.2}"),
    }
}

impl App {
    /// Labels the selected sample pass (`Some(true)`), fail, or clears its label; the
    /// notice names the lines of the same text, which share it.
    pub(super) fn label_selected(&mut self, pass: Option<bool>) -> Vec<Effect> {
        let Some(i) = self.selected().filter(|i| *i < self.samples.len()) else {
            return Vec::new();
        };
        let sample = &self.samples[i];
        let (key, at) = (sample.hash, sample.at.clone());
        let label = pass.map(Label::Pass);
        match label {
            Some(l) => self.labels.insert(key, l),
            None => self.labels.remove(&key),
        };
        let twins = self.twins_of(i);
        let file = self.file_of(&at);
        // a folder's row: the file in it is named with its line
        let line = match at.facts.as_deref().is_some_and(|f| f.file.is_some()) {
            true => format!("{file}:{}", at.line),
            false => format!("line {}", at.line),
        };
        let shared = match twins.len() {
            0 => String::new(),
            1 if label.is_some() => format!(
                "; the same text is on {}, which shares the label",
                places_text(&file, &twins)
            ),
            _ if label.is_some() => format!(
                "; the same text is on {}, which share the label",
                places_text(&file, &twins)
            ),
            1 => format!(
                "; the same text is on {}, whose label is cleared too",
                places_text(&file, &twins)
            ),
            _ => format!(
                "; the same text is on {}, whose labels are cleared too",
                places_text(&file, &twins)
            ),
        };
        self.notice = Some(match label {
            Some(l) => format!("{line} labelled {}{shared} (labels.jsonl)", l),
            None => format!("{line}: label cleared{shared}"),
        });
        self.shown.twins = Twins::default();
        self.stats_stale = true;
        if self.filter.contains(&super::Cond::Disagree) {
            self.refresh_view();
        }
        vec![Effect::SaveLabel { key, label, at }]
    }

    /// The (file, line) of every other sample with the same text as sample `i`, the
    /// file as rows name it (a folder's row: the file in it).
    fn twins_of(&self, i: usize) -> Vec<(String, usize)> {
        let key = self.samples[i].hash;
        self.samples
            .iter()
            .enumerate()
            .filter(|(j, s)| *j != i && s.hash == key)
            .map(|(_, s)| (self.file_of(&s.at), s.at.line))
            .collect()
    }

    /// Finds the other lines of the selected sample's text when it is labelled and
    /// they are not known yet (drawing reads them with [`App::label_lines`]).
    pub(super) fn fill_twins(&mut self) {
        let Some(i) = self.selected().filter(|i| *i < self.samples.len()) else {
            self.shown.twins = Twins::default();
            return;
        };
        let key = self.samples[i].hash;
        if self.label_of(&key).is_none() {
            self.shown.twins = Twins::default();
            return;
        }
        let of = Some((i, key, self.samples.len()));
        if self.shown.twins.of != of {
            self.shown.twins = Twins {
                of,
                places: self.twins_of(i),
            };
        }
    }

    /// What the conversation says of the selected sample's label: the label and where
    /// it comes from, then the lines of the same text that share it (none when the
    /// sample has no label).
    pub fn label_lines(&self) -> Vec<String> {
        let Some(sample) = self.selected_sample() else {
            return Vec::new();
        };
        let Some(label) = self.label_of(&sample.hash) else {
            return Vec::new();
        };
        let from = if self.labels.contains_key(&sample.hash) {
            "given here, kept in labels.jsonl".to_string()
        } else {
            format!("from the column {}", self.label_columns.join(", "))
        };
        let mut lines = vec![format!("label {} ({from})", label)];
        let twins = &self.shown.twins;
        let current = twins
            .of
            .is_some_and(|(i, key, _)| Some(i) == self.selected() && key == sample.hash);
        if current && !twins.places.is_empty() {
            let verb = if twins.places.len() == 1 {
                "shares"
            } else {
                "share"
            };
            lines.push(format!(
                "the same text is on {}, which {verb} this label",
                places_text(&self.file_of(&sample.at), &twins.places)
            ));
        }
        lines
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

/// "line 5", "lines 5 and 9", "lines 5, 9, 12 and 4 more", with the file named for a
/// line of another file than `file`.
fn places_text(file: &str, places: &[(String, usize)]) -> String {
    const NAMED: usize = 3;
    let same_file = places.iter().all(|(f, _)| f == file);
    let each: Vec<String> = places
        .iter()
        .take(NAMED)
        .map(|(f, line)| match (same_file, f == file) {
            (true, _) => line.to_string(),
            (false, true) => format!("line {line}"),
            (false, false) => format!("{f}:{line}"),
        })
        .collect();
    let mut text = match each.as_slice() {
        [one] => one.clone(),
        [rest @ .., last] if places.len() <= NAMED => format!("{} and {last}", rest.join(", ")),
        all => all.join(", "),
    };
    if places.len() > NAMED {
        text += &format!(" and {} more", places.len() - NAMED);
    }
    match (same_file, places.len()) {
        (true, 1) => format!("line {text}"),
        (true, _) => format!("lines {text}"),
        (false, _) => text,
    }
}
