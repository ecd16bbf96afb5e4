//! Indexing the samples files off the UI thread, once per change: one pass gives the
//! app its list (positions, hashes, verdicts) and the [`SampleIndex`] that runs are
//! fed from. A run waits for the index so that results land on the right lines.

use super::Live;
use crate::ui::app::{Lines, Msg, Sample};
use crate::workspace::{LineFiles, SampleIndex, SamplesFile, SamplesReader};
use std::sync::Arc;

/// On first open, the list shows after this many samples are indexed; the rest
/// follows (a million-line file must not hold back the first frame).
pub(super) const FIRST_CHUNK: usize = 2000;

impl Lines for LineFiles {
    fn line(&self, file: usize, offset: u64, len: u32) -> Option<String> {
        self.read(file, offset, len)
    }
}

/// How many times in a row a run may find the samples files changed behind the
/// index (and index them again) before the workbench stops chasing them.
pub(super) const MAX_RESYNCS: u32 = 3;

/// What the indexer (reading the samples files off the UI thread) reports.
pub(super) enum Indexed {
    /// The first samples of a first load, to show at once.
    First(Vec<Sample>),
    Done(Vec<Sample>, SampleIndex, LineFiles),
    Failed(String),
}

/// A run waiting for the samples index.
#[derive(Debug, Default)]
pub(super) struct PendingRun {
    /// Evaluators whose code changed.
    pub(super) stale: Vec<usize>,
    /// Evaluators asked to be evaluated again without the cache meanwhile.
    pub(super) fresh: Vec<usize>,
}

impl Live {
    /// Indexes the samples files off the UI thread, then runs (`stale` evaluators
    /// changed code). Runs wait for the index so results land on the right lines.
    /// The samples files' labels, as the list's panes name them.
    fn samples_labels(&self) -> Vec<String> {
        let files = &self.session.workspace.samples;
        files.iter().map(|f| f.label.clone()).collect()
    }

    pub(super) fn reload_samples(&mut self, stale: Vec<usize>) {
        self.pending_run
            .get_or_insert_with(PendingRun::default)
            .stale
            .extend(stale);
        self.index_generation += 1;
        let generation = self.index_generation;
        let files = self.session.workspace.samples.clone();
        let first_load = self.app.samples.is_empty();
        let tx = self.index_tx.clone();
        tokio::task::spawn_blocking(move || {
            let send = |m: Indexed| {
                let _ = tx.send((generation, m));
            };
            let first = |first| send(Indexed::First(first));
            match index_samples(&files, first_load, first) {
                Ok((samples, index, lines)) => send(Indexed::Done(samples, index, lines)),
                Err(e) => send(Indexed::Failed(e.to_string())),
            }
        });
    }

    pub(super) fn on_indexed(&mut self, indexed: Indexed) {
        match indexed {
            Indexed::First(samples) => {
                if let Ok(lines) = LineFiles::open(&self.session.workspace.samples) {
                    self.app.update(Msg::Lines {
                        lines: Arc::new(lines),
                        labels: self.samples_labels(),
                    });
                }
                self.app.update(Msg::Samples(samples));
            }
            Indexed::Done(samples, index, lines) => {
                self.index = Arc::new(index);
                self.app.update(Msg::Lines {
                    lines: Arc::new(lines),
                    labels: self.samples_labels(),
                });
                self.app.update(Msg::Samples(samples));
                if let Some(pending) = self.pending_run.take() {
                    // the index may hold new lines: every evaluator runs on it
                    let all = (0..self.session.workspace.evaluators.len()).collect();
                    self.start_run(pending.stale, all, pending.fresh);
                }
            }
            Indexed::Failed(e) => {
                self.pending_run = None;
                self.app.update(Msg::Notice(e));
            }
        }
    }

    /// Whether the samples files changed behind the index (no watcher said so): then
    /// they are indexed again and the run asked for (`stale`, `fresh`) waits for it.
    /// After [`MAX_RESYNCS`] in a row, the run goes ahead and reports the change.
    pub(super) fn index_is_behind(&mut self, stale: &[usize], fresh: &[usize]) -> bool {
        if self.index.is_current() || self.resyncs >= MAX_RESYNCS {
            return false;
        }
        self.resyncs += 1;
        self.reload_samples(stale.to_vec());
        if let Some(pending) = self.pending_run.as_mut() {
            pending.fresh.extend(fresh);
        }
        true
    }

    /// The run stopped on a samples file changed since it was indexed: index again
    /// (the run restarts on the new index), unless the files keep changing.
    pub(super) fn on_changed(&mut self) {
        self.app.update(Msg::RunFinished);
        self.resync();
        if self.pending_run.is_none() {
            self.app.update(Msg::Notice(
                "the samples files keep changing while they are read; press R to run again".into(),
            ));
        }
    }

    /// A result came for a line the index does not hold as the run read it: the
    /// samples files changed since they were indexed and no watcher said so (it may
    /// be down). Index them again; the run restarts, as it was asked, on the new index.
    pub(super) fn resync(&mut self) {
        self.mismatched = true;
        if self.pending_run.is_some() || self.resyncs >= MAX_RESYNCS {
            return; // an index is on its way, or the files keep changing: stop chasing
        }
        self.resyncs += 1;
        self.reload_samples(Vec::new());
        if let Some(pending) = self.pending_run.as_mut() {
            pending.fresh.extend(self.running_fresh.iter().copied());
        }
    }
}

/// Reads every samples line into the app's list and the index (no text is kept).
/// On a first load, `first` gets the first few thousand at once.
pub(super) fn index_samples(
    files: &[SamplesFile],
    first_load: bool,
    first: impl FnOnce(Vec<Sample>),
) -> std::io::Result<(Vec<Sample>, SampleIndex, LineFiles)> {
    let lines = LineFiles::open(files)?;
    let mut index = SampleIndex::start(files);
    let mut samples = Vec::new();
    let mut first = first_load.then_some(first);
    for line in SamplesReader::new(files) {
        let l = line?;
        index.push(&l);
        samples.push(Sample {
            at: l.at,
            offset: l.offset,
            len: l.raw.len() as u32,
            hash: l.hash,
            bad: l.bad,
            cells: Vec::new(),
        });
        if samples.len() == FIRST_CHUNK {
            if let Some(f) = first.take() {
                f(samples.clone());
            }
        }
    }
    index.shrink();
    samples.shrink_to_fit();
    Ok((samples, index, lines))
}
