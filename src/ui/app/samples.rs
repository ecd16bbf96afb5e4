//! What the list holds: samples, evaluators and their cells, and how new samples or
//! evaluators are taken in (outcomes follow a line's content and an evaluator's name).

use super::stats::EAGER_GROUPS;
use super::{logged_sort_evaluator, logged_sort_index, App, SignalColumn};
use crate::model::{EvalError, Outcome, SampleRef, Style};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// An evaluator as the workbench shows it.
#[derive(Clone, Debug)]
pub struct EvaluatorInfo {
    pub name: String,
    /// The file that defines it (main.py), for the source pane and the editor.
    pub source: PathBuf,
    pub style: Option<Style>,
    pub state: RunState,
    /// Set while its module does not import.
    pub import_error: Option<EvalError>,
    /// Where it runs (local workers, an endpoint, Ray); `None`: not shown.
    pub placement: Option<crate::model::Placement>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Idle,
    Running { done: usize, total: usize },
}

/// One evaluator's latest outcome for one sample, as the list needs it.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    /// `None` until evaluated.
    pub outcome: Option<Kept>,
    /// The evaluator changed and this sample has not been rerun yet.
    pub stale: bool,
    /// Component scores along the evaluator's component names (NaN: none), for fast
    /// comparison and statistics over many samples.
    pub parts: Box<[f64]>,
}

/// What a cell keeps of an outcome: its score, and the whole outcome only where it
/// cannot be read back from the store (an error, an evaluator called in batches, a
/// workbench without a store). A million reasons are not kept for a list that shows
/// scores: the selected cell's whole outcome is [`App::selected_detail`], read on selection.
#[derive(Clone, Debug)]
pub struct Kept {
    pub score: Option<f64>,
    /// The evaluation's seconds ([`crate::trust::seconds_of`]: infinite for a timeout).
    pub seconds: f64,
    pub full: Option<Arc<Outcome>>,
}

impl Cell {
    pub fn score(&self) -> Option<f64> {
        self.outcome.as_ref().and_then(|o| o.score)
    }

    pub fn is_error(&self) -> bool {
        self.error().is_some()
    }

    /// The error instead of a result (errors are always kept whole).
    pub fn error(&self) -> Option<&EvalError> {
        self.full()?.error.as_deref()
    }

    /// The whole outcome, when the cell keeps it.
    pub fn full(&self) -> Option<&Arc<Outcome>> {
        self.outcome.as_ref()?.full.as_ref()
    }

    /// Scored and not stale: what the frame trace counts.
    pub(super) fn is_fresh(&self) -> bool {
        self.outcome.is_some() && !self.stale
    }
}

/// Where the text of sample lines comes from: the live loop reads them from the
/// samples files on demand, so a million-line file is not held in memory.
pub trait Lines: Send + Sync {
    fn line(&self, file: usize, offset: u64, len: u32) -> Option<String>;
}

/// The lines' source shows as its kind only (for `Msg`'s `Debug`).
impl std::fmt::Debug for dyn Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("Lines")
    }
}

/// Lines kept in memory, by (file, offset): for tests and small inputs.
#[derive(Default)]
pub struct MemoryLines(pub HashMap<(usize, u64), String>);

impl Lines for MemoryLines {
    fn line(&self, file: usize, offset: u64, _len: u32) -> Option<String> {
        self.0.get(&(file, offset)).cloned()
    }
}

/// One sample line and its outcomes.
#[derive(Clone, Debug)]
pub struct Sample {
    pub at: SampleRef,
    /// Where the line is in its file.
    pub offset: u64,
    pub len: u32,
    pub hash: [u8; 16],
    pub bad: Option<Box<str>>,
    pub cells: Cells,
}

/// A sample's cells, one an evaluator: the first is held in the sample itself, so that
/// a million samples scored by one evaluator cost no allocation each (issue 36).
pub type Cells = smallvec::SmallVec<[Cell; 1]>;

impl App {
    /// The file a sample's rows name (`rwb run`'s `file`): its samples file's label,
    /// or for a folder's or glob's row, the file in it (`logs/exp/steps/2.jsonl`).
    pub fn file_of(&self, at: &crate::model::SampleRef) -> String {
        let label = self.samples_labels.get(at.file).map_or("", String::as_str);
        match at.facts.as_deref().and_then(|f| f.file.as_deref()) {
            Some(member) => crate::sources::files::member_label(label, member),
            None => label.to_string(),
        }
    }

    /// Where a sample is, as the panes name it: its file ([`App::file_of`]) and its
    /// line in that file (`logs/exp/steps/2.jsonl:1`).
    pub fn place(&self, at: &crate::model::SampleRef) -> String {
        format!("{}:{}", self.file_of(at), at.line)
    }

    pub(super) fn count_fresh(&mut self) {
        self.fresh = self
            .samples
            .iter()
            .flat_map(|s| s.cells.iter())
            .filter(|c| c.is_fresh())
            .count();
    }

    pub(super) fn count_errors(&mut self) {
        self.count_fresh();
        self.error_counts = (0..self.evaluators.len())
            .map(|e| {
                self.samples
                    .iter()
                    .filter(|s| s.cells.get(e).is_some_and(|c| c.is_error()))
                    .count()
            })
            .collect();
    }

    pub(super) fn replace_samples(&mut self, mut samples: Vec<Sample>) {
        let n = self.evaluators.len();
        let keep = self
            .selected_sample()
            .map(|s| (s.at.file, s.hash, s.at.index));
        // outcomes follow content: the same line, wherever it moved, keeps its scores
        let mut old: HashMap<[u8; 16], Cells> = HashMap::new();
        for s in self.samples.drain(..) {
            old.entry(s.hash).or_insert(s.cells);
        }
        for s in &mut samples {
            s.cells = old
                .get(&s.hash)
                .cloned()
                .unwrap_or_else(|| smallvec::smallvec![Cell::default(); n]);
            s.cells.resize(n, Cell::default());
        }
        self.samples = samples;
        self.see_logged(true);
        self.forget_shown(); // the titles and text were of the old rows
        self.groups = None;
        self.forget_text_matches();
        if self.samples.len() <= EAGER_GROUPS || self.training.is_some() {
            self.compute_groups();
        }
        self.count_errors();
        self.refresh_view();
        if let Some((file, hash, index)) = keep {
            let same = self
                .view
                .iter()
                .position(|&i| self.samples[i].hash == hash && self.samples[i].at.file == file)
                .or_else(|| {
                    // the line itself changed: stay at the nearest sample
                    self.view
                        .iter()
                        .position(|&i| self.samples[i].at.index >= index)
                });
            if let Some(p) = same {
                self.cursor = p;
            } else {
                self.cursor = self.view.len().saturating_sub(1);
            }
        }
    }

    /// Appends the next samples of a first load: the list grows without walking the
    /// samples it holds (unless it is sorted or filtered), and a run in flight counts
    /// them in its progress.
    pub(super) fn append_samples(&mut self, mut samples: Vec<Sample>) {
        let n = self.evaluators.len();
        for s in &mut samples {
            s.cells = smallvec::smallvec![Cell::default(); n];
        }
        let before = self.samples.len();
        self.samples.append(&mut samples);
        self.see_logged(false);
        let total = self.samples.len();
        // the keys of the samples read so far stay: only the new ones are read
        if total <= EAGER_GROUPS || self.training.is_some() {
            self.compute_groups();
        }
        if self.sort.is_some() || !self.filter.is_empty() || self.changed_only {
            self.forget_text_matches();
            self.view_stale = true;
        } else {
            self.view.extend(before..total);
        }
        if self.running {
            for info in &mut self.evaluators {
                match &mut info.state {
                    RunState::Running { total: t, .. } => *t = total,
                    RunState::Idle => {} // not in this run
                }
            }
        }
    }

    /// A first load is complete: evaluators whose run has scored every sample are
    /// done.
    pub(super) fn loaded(&mut self) {
        self.loading = false;
        // the groups are whole now: their sizes can be checked (see `fill_signal`)
        self.signal_stale = true;
        for info in &mut self.evaluators {
            if let RunState::Running { done, total } = info.state {
                if done >= total {
                    info.state = RunState::Idle;
                }
            }
        }
    }

    pub(super) fn replace_evaluators(&mut self, evaluators: Vec<EvaluatorInfo>) {
        let old_names: Vec<String> = self.evaluators.iter().map(|e| e.name.clone()).collect();
        let selected_name = old_names.get(self.evaluator).cloned();
        for s in &mut self.samples {
            let mut by_name: HashMap<&str, Cell> = old_names
                .iter()
                .map(|n| n.as_str())
                .zip(s.cells.drain(..))
                .collect();
            s.cells = evaluators
                .iter()
                .map(|e| by_name.remove(e.name.as_str()).unwrap_or_default())
                .collect();
        }
        // component names move with their evaluator, as its cells' parts follow them
        let mut components: HashMap<&str, Vec<String>> = old_names
            .iter()
            .map(|n| n.as_str())
            .zip(std::mem::take(&mut self.components))
            .collect();
        self.components = evaluators
            .iter()
            .map(|e| components.remove(e.name.as_str()).unwrap_or_default())
            .collect();
        self.evaluators = evaluators;
        self.count_errors();
        self.evaluator = selected_name
            .and_then(|n| self.evaluators.iter().position(|e| e.name == n))
            .unwrap_or(0);
        if let Some((key, d)) = self
            .sort
            .filter(|(key, _)| SignalColumn::from_sort_index(*key).is_none())
        {
            // by an evaluator's score, or its |Δ| against the log: the same one's
            let logged = logged_sort_evaluator(key);
            let name = old_names.get(logged.unwrap_or(key));
            self.sort = name
                .and_then(|n| self.evaluators.iter().position(|x| &x.name == n))
                .map(|e| match logged {
                    Some(_) => (logged_sort_index(e), d),
                    None => (e, d),
                });
        }
        self.pair_logged();
        self.refresh_view();
    }
}
