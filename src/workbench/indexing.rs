//! Indexing the samples files off the UI thread, once per change: one pass gives the
//! app its list (positions, hashes, verdicts) and the [`SampleIndex`] that runs are
//! fed from. A run waits for the index so that results land on the right lines.

use super::follow::{follow, Chunk, ChunkSender};
use super::Live;
use crate::ui::app::{Lines, Msg, Sample};
use crate::workspace::{LineFiles, LineMemos, LineView, SampleIndex, SamplesFile, SamplesReader};
use std::sync::Arc;

/// On first open, the list shows after as many samples are indexed as the terminal
/// has rows (at least [`FIRST_CHUNK_MIN`], at most [`FIRST_CHUNK`]; this many when
/// its size is not known); the rest follows. A million-line file must not hold back
/// the first frame, and a Parquet file's rows cost a decode and an encode each: no
/// more are read first than the screen can show.
pub(super) const FIRST_CHUNK: usize = 256;
const FIRST_CHUNK_MIN: usize = 32;

impl Lines for LineFiles {
    fn line(&self, file: usize, offset: u64, len: u32) -> Option<String> {
        self.read(file, offset, len)
    }
}

/// How many times in a row a run may find the samples files changed behind the
/// index (and index them again) before the workbench stops chasing them.
pub(super) const MAX_RESYNCS: u32 = 3;

/// After the first chunk, a first load hands the list and its run this many samples
/// at a time.
pub(super) const MORE_CHUNK: usize = 16_384;

/// What the indexer (reading the samples files off the UI thread) reports.
pub(super) enum Indexed {
    /// The next samples of a first load, in order: the list grows as they are read.
    More(Vec<Sample>),
    /// Every sample (`None`: a first load gave them as `More`), the index and lines,
    /// and the human labels of the samples files' `human` columns.
    Done(Option<Vec<Sample>>, SampleIndex, LineFiles, Box<Column>),
    Failed(String),
}

/// The labels read from the samples files' `human = "COLUMN"` columns (SPEC §16)
/// by content key, the columns' names and what could not be read.
#[derive(Default)]
pub(super) struct Column {
    pub(super) labels: crate::trust::labels::Labels,
    pub(super) names: Vec<String>,
    pub(super) warnings: Vec<String>,
    /// SPEC §20: each sample's correctness its file says, by content key.
    pub(super) correct: crate::ui::app::Correct,
}

/// A run waiting for the samples index.
#[derive(Debug, Default)]
pub(super) struct PendingRun {
    /// Evaluators whose code changed.
    pub(super) stale: Vec<usize>,
    /// Evaluators asked to be evaluated again without the cache meanwhile.
    pub(super) fresh: Vec<usize>,
    /// A first run follows the indexer (see `follow.rs`): when the index is done it
    /// goes on, unless a save or a rerun asked for another run meanwhile.
    pub(super) following: bool,
    /// The run that followed the indexer was stopped (see `Live::stop_following`).
    pub(super) stopped: bool,
}

/// How a first load hands over what it read: samples to the list, their positions
/// to the run that follows it.
struct Stream<F: FnMut(Vec<Sample>)> {
    more: F,
    /// `None` once the run stopped following (a save, a rerun, a new index).
    run: Option<ChunkSender>,
    samples: Vec<Sample>,
    chunk: Chunk,
    /// How many samples the first chunk holds.
    first: usize,
}

impl<F: FnMut(Vec<Sample>)> Stream<F> {
    /// Takes a line; whether a chunk is due to be handed over ([`Stream::flush`]).
    fn push(&mut self, line: &LineView, index: &SampleIndex) -> bool {
        let entry = *index.entry(line.at.index).expect("pushed before");
        if let Some(why) = &line.bad {
            self.chunk.bad.push((line.at.index, why.clone()));
        }
        if let Some(facts) = &line.at.facts {
            self.chunk.facts.push((line.at.index, facts.clone()));
        }
        self.chunk.entries.push(entry);
        self.samples.push(sample_of(line));
        // the first rows show at once; then larger chunks
        let size = if line.at.index < self.first {
            self.first
        } else {
            MORE_CHUNK
        };
        self.samples.len() >= size
    }

    /// Hands over the samples read since the last chunk: the list first, so that no
    /// result of the run arrives for a row the list does not hold yet.
    fn flush(&mut self) {
        if self.samples.is_empty() {
            return;
        }
        (self.more)(std::mem::take(&mut self.samples));
        let start = self.chunk.start + self.chunk.entries.len();
        let chunk = std::mem::replace(
            &mut self.chunk,
            Chunk {
                start,
                ..Chunk::default()
            },
        );
        if self
            .run
            .as_ref()
            .is_some_and(|run| run.send(chunk).is_err())
        {
            self.run = None; // the run stopped: index on at full speed
        }
    }
}

fn sample_of(l: &LineView) -> Sample {
    Sample {
        at: l.at.clone(),
        offset: l.offset,
        len: l.raw.len() as u32,
        hash: l.hash,
        bad: l.bad.as_deref().map(Box::from),
        cells: Default::default(),
    }
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
        self.stop_following();
        // a first load, with no run asked for yet, is run as it is read
        let first_load = self.app.samples.is_empty();
        let follow = (first_load && self.pending_run.is_none())
            .then(|| follow(&self.session.workspace.samples));
        let pending = self.pending_run.get_or_insert_with(PendingRun::default);
        pending.stale.extend(stale);
        pending.following = follow.is_some();
        self.index_generation += 1;
        let generation = self.index_generation;
        let files = self.session.workspace.samples.clone();
        let memos = self.session.runner.store().map(|s| s.line_memos());
        let tx = self.index_tx.clone();
        let (run, lines) = follow.unzip();
        let first = self.app.size.map_or(FIRST_CHUNK, |(_, rows)| {
            usize::from(rows).clamp(FIRST_CHUNK_MIN, FIRST_CHUNK)
        });
        tokio::task::spawn_blocking(move || {
            let send = |m: Indexed| {
                let _ = tx.send((generation, m));
            };
            let stream = first_load.then(|| Stream {
                more: |samples| send(Indexed::More(samples)),
                run,
                samples: Vec::new(),
                chunk: Chunk::default(),
                first,
            });
            match index_samples(&files, memos, stream) {
                Ok((samples, index, lines, column)) => {
                    send(Indexed::Done(samples, index, lines, Box::new(column)))
                }
                Err(e) => send(Indexed::Failed(e.to_string())),
            }
        });
        // its run starts when the first rows are on screen (see the event loop)
        self.follow_later = lines;
    }

    pub(super) fn on_indexed(&mut self, indexed: Indexed) {
        match indexed {
            Indexed::More(samples) => {
                if self.app.samples.is_empty() {
                    if let Ok(lines) = LineFiles::open(&self.session.workspace.samples) {
                        self.app.update(Msg::Lines {
                            lines: Arc::new(lines),
                            labels: self.samples_labels(),
                        });
                    }
                }
                self.app.update(Msg::MoreSamples(samples));
            }
            Indexed::Done(samples, index, lines, column) => {
                self.index = Arc::new(index);
                if let Some(w) = column.warnings.first() {
                    let more = column.warnings.len() - 1;
                    let more = if more > 0 {
                        format!(" (and {more} more)")
                    } else {
                        String::new()
                    };
                    self.app.update(Msg::Notice(format!("{w}{more}")));
                }
                self.app.update(Msg::Correct(column.correct));
                self.app.update(Msg::HumanColumn {
                    labels: column.labels,
                    names: column.names,
                });
                self.app.update(Msg::Lines {
                    lines: Arc::new(lines),
                    labels: self.samples_labels(),
                });
                match samples {
                    Some(samples) => self.app.update(Msg::Samples(samples)),
                    None => self.app.update(Msg::Loaded),
                };
                self.say_waiting();
                let Some(pending) = self.pending_run.take() else {
                    return;
                };
                if pending.following && pending.stale.is_empty() && pending.fresh.is_empty() {
                    return; // the run that followed the indexer goes on
                }
                // the index may hold new lines: every evaluator runs on it
                let all = (0..self.session.workspace.evaluators.len()).collect();
                self.start_run(pending.stale, all, pending.fresh);
            }
            Indexed::Failed(e) => {
                // a run that followed the indexer ends on its own; a stopped one
                // has nothing to end it
                if self.pending_run.take().is_some_and(|p| p.stopped) {
                    self.app.update(Msg::RunFinished);
                }
                self.app.update(Msg::Notice(e));
            }
        }
    }

    /// Starts the first load's run held back by [`Self::reload_samples`]: the loop
    /// calls it once the indexer has said something and that frame is drawn.
    pub(super) fn start_follow_later(&mut self) {
        if let Some(lines) = self.follow_later.take() {
            self.start_following(lines);
        }
    }

    /// Stops the first run that follows the indexer (a save or a rerun asked for
    /// another run, or the files are read again): the indexer goes on at full speed
    /// and the run asked for starts on its index.
    pub(super) fn stop_following(&mut self) {
        self.follow_later = None;
        if let Some(pending) = self.pending_run.as_mut().filter(|p| p.following) {
            pending.following = false;
            pending.stopped = true;
            self.runs.stop();
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

/// Reads every samples line into the app's list and the index (no text is kept). A
/// first load hands its samples over in chunks as they are read (`stream`) and
/// gives back no list; a reload gives back the whole list.
/// With `memos`, an unchanged file's line hashes are taken from its memo (and a
/// file read without one gets one). A file whose `[samples.NAME]` names a `human`
/// column has each line's label read as it passes (no other line is parsed).
fn index_samples<F: FnMut(Vec<Sample>)>(
    files: &[SamplesFile],
    memos: Option<LineMemos>,
    mut stream: Option<Stream<F>>,
) -> std::io::Result<(Option<Vec<Sample>>, SampleIndex, LineFiles, Column)> {
    let named = crate::trust::labels::human_columns(files);
    let truth = crate::trust::truth::Sources::of(files);
    let mut column = Column::default();
    for name in named.iter().flatten() {
        if !column.names.contains(name) {
            column.names.push(name.clone());
        }
    }
    let lines = LineFiles::open(files)?;
    let mut index = SampleIndex::start(files);
    let mut samples = Vec::new();
    // each line's text is borrowed from the reader: the index keeps none of it;
    // foreign files' rows are written to their row files, where the text is read
    let mut reader = SamplesReader::new(files).writing_rows();
    if let Some(memos) = memos {
        reader = reader.with_memos(memos);
    }
    while let Some(line) = reader.read_next() {
        let l = line?;
        index.push(&l);
        if let Some(c) = named.get(l.at.file).and_then(Option::as_deref) {
            let place = || format!("{}:{}", files[l.at.file].label, l.at.line);
            if let Some(label) =
                crate::trust::labels::column_label(l.raw, c, place, &mut column.warnings)
            {
                column.labels.insert(l.hash, label);
            }
        }
        // SPEC §20: what the file says of the answer's correctness
        let place = || format!("{}:{}", files[l.at.file].label, l.at.line);
        if let (Some(Some(right)), _) = truth.read(l.at.file, l.raw, place, &mut column.warnings) {
            column.correct.insert(l.hash, right);
        }
        let due = match stream.as_mut() {
            Some(stream) => stream.push(&l, &index),
            None => {
                samples.push(sample_of(&l));
                false
            }
        };
        if let (true, Some(stream)) = (due, stream.as_mut()) {
            reader.flush_rows(); // the rows handed over are readable at their offsets
            stream.flush();
        }
    }
    index.shrink();
    if let Some(mut stream) = stream {
        stream.flush();
        return Ok((None, index, lines, column));
    }
    samples.shrink_to_fit();
    Ok((Some(samples), index, lines, column))
}
