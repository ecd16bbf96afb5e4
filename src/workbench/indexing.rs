//! Indexing the samples files off the UI thread; a run waits for the index so that
//! results land on the right lines.

use super::Live;
use crate::ui::app::{Lines, Msg, Sample};
use crate::workspace::{LineFiles, SamplesFile, SamplesReader};
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
    Done(Vec<Sample>, LineFiles),
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
            match index_samples(&files, first_load, |first| send(Indexed::First(first))) {
                Ok((samples, lines)) => send(Indexed::Done(samples, lines)),
                Err(e) => send(Indexed::Failed(e.to_string())),
            }
        });
    }

    pub(super) fn on_indexed(&mut self, indexed: Indexed) {
        match indexed {
            Indexed::First(samples) => {
                if let Ok(lines) = LineFiles::open(&self.session.workspace.samples) {
                    self.app.lines = Arc::new(lines);
                }
                self.app.update(Msg::Samples(samples));
            }
            Indexed::Done(samples, lines) => {
                self.app.samples_labels = self
                    .session
                    .workspace
                    .samples
                    .iter()
                    .map(|f| f.label.clone())
                    .collect();
                self.app.lines = Arc::new(lines);
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

/// Reads every samples line into a list of positions and hashes (no text is kept).
/// On a first load, `first` gets the first few thousand at once.
pub(super) fn index_samples(
    files: &[SamplesFile],
    first_load: bool,
    first: impl FnOnce(Vec<Sample>),
) -> std::io::Result<(Vec<Sample>, LineFiles)> {
    let lines = LineFiles::open(files)?;
    let mut samples = Vec::new();
    let mut first = first_load.then_some(first);
    for line in SamplesReader::new(files) {
        let l = line?;
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
    Ok((samples, lines))
}
