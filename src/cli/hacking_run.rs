//! `rwb run`'s `hacking` report (SPEC §19): each completed sample handed to the
//! per-step sums of [`crate::insight::hacking`], with its proxy (the logged score, or
//! the combined reward), its held-out result (a `heldout = true` evaluator, or the
//! human label), and the completion's length and rollout group: as seen when its row
//! was converted (`sources::seen`, handed with the sample's place), else (an rwb
//! JSONL file, or groups by a column) read by a second reader of the samples on a
//! thread of its own while the run goes on, as the reward rows' groups are.

use super::human::HumanLabels;
use super::output::SampleResults;
use crate::insight::hacking::sides::{self, Cell, Sides};
use crate::insight::hacking::{Obs, Params, Report, StepKey, Tracker};
use crate::model::Seen;
use crate::training::{self, GroupBy};
use crate::workspace::{SamplesFile, SamplesReader};
use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver};

/// Batches of lines the reader may be ahead of the printer by.
const AHEAD: usize = 8;
/// Lines handed over at once: one wake-up a batch, not one a line.
const BATCH: usize = 2048;

/// What the second reader finds on a sample's line.
#[derive(Clone, Copy, Debug, Default)]
struct LineInfo {
    len_chars: Option<usize>,
    len_tokens: Option<f64>,
    group: Option<[u8; 16]>,
}

pub struct HackingRun {
    tracker: Tracker,
    sides: Sides,
    /// Human labels are the held-out side (no evaluator is marked).
    labels_side: bool,
    files: Vec<SamplesFile>,
    limit: Option<usize>,
    group_by: GroupBy,
    lines: Option<Receiver<Vec<(usize, LineInfo)>>>,
    /// What the reader handed over and no sample took yet, in order.
    pending: std::collections::VecDeque<(usize, LineInfo)>,
    /// Each (samples file, member file) in order of first sight: the file-order steps.
    file_order: HashMap<(usize, Option<String>), usize>,
    /// The cells of the sample being counted (kept between samples).
    cells: Vec<Cell>,
    /// Whether the report is wanted: an evaluator marked held out, or a sample with
    /// a step (human labels alone, on samples with no step, are §16's agreement).
    wanted: bool,
}

/// What makes a report: the evaluators (names, held out, weights, logged names).
pub struct Setup {
    pub params: Params,
    pub names: Vec<String>,
    pub heldout: Vec<bool>,
    pub weights: Vec<f64>,
    pub logged: Vec<String>,
    pub labelled: bool,
    pub files: Vec<SamplesFile>,
    pub limit: Option<usize>,
    pub group_by: Option<String>,
}

impl HackingRun {
    pub fn new(setup: Setup) -> HackingRun {
        let sides = Sides {
            names: setup.names,
            heldout: setup.heldout,
            weights: setup.weights,
            logged: setup.logged,
        };
        let any_heldout = sides.any_heldout();
        let heldout_name = sides.heldout_name(setup.labelled);
        HackingRun {
            tracker: Tracker::new(setup.params, String::new(), heldout_name),
            sides,
            labels_side: !any_heldout && setup.labelled,
            files: setup.files,
            limit: setup.limit,
            group_by: GroupBy::parse(setup.group_by.as_deref().unwrap_or("prompt")),
            lines: None,
            pending: Default::default(),
            file_order: HashMap::new(),
            cells: Vec::new(),
            wanted: any_heldout,
        }
    }

    /// Whether the report is wanted for every sample from the start (an evaluator is
    /// marked held out), not only once one has a step.
    pub fn wanted_throughout(&self) -> bool {
        self.wanted
    }

    /// Starts the second reader (once).
    fn start(&mut self) {
        if self.lines.is_some() {
            return;
        }
        let (tx, rx) = sync_channel(AHEAD);
        let files = self.files.clone();
        let (limit, by) = (self.limit, self.group_by.clone());
        let spawned = std::thread::Builder::new()
            .name("rwb-hacking".into())
            .spawn(move || {
                let mut sender = Batcher {
                    tx,
                    batch: Vec::with_capacity(BATCH),
                    left: limit.unwrap_or(usize::MAX),
                };
                // the text as written (a JSONL file, or a foreign file's current row
                // file): lines are read as they are, facts left unparsed; else the
                // samples reader, converting the source again
                let direct = files
                    .iter()
                    .all(|f| f.foreign.as_ref().is_none_or(|r| r.is_current(&f.path)));
                if direct {
                    read_direct(&files, &by, &mut sender);
                } else {
                    let mut reader = SamplesReader::unhashed(&files);
                    while let Some(Ok(line)) = reader.read_next() {
                        let facts = line.at.facts.as_deref();
                        let (len_chars, len_tokens) = sides::lengths(line.raw);
                        let group = training::place_sample(facts, &by, || line.raw).key;
                        let info = LineInfo {
                            len_chars,
                            len_tokens,
                            group,
                        };
                        if !sender.send(line.at.index, info) {
                            return;
                        }
                    }
                }
                sender.flush();
            });
        if spawned.is_ok() {
            self.lines = Some(rx);
        }
    }

    /// Whether samples file `file` is another tool's (its rows come with facts).
    fn foreign(&self, file: usize) -> bool {
        self.files.get(file).is_some_and(|f| f.foreign.is_some())
    }

    /// The second reader's finding for sample `index` (the samples come in order).
    fn line_info(&mut self, index: usize) -> LineInfo {
        let Some(rx) = &self.lines else {
            return LineInfo::default();
        };
        loop {
            while let Some(&(i, info)) = self.pending.front() {
                match i.cmp(&index) {
                    std::cmp::Ordering::Less => {
                        self.pending.pop_front();
                    }
                    std::cmp::Ordering::Equal => {
                        self.pending.pop_front();
                        return info;
                    }
                    // a line the run did not complete (yet): kept for its turn
                    std::cmp::Ordering::Greater => return LineInfo::default(),
                }
            }
            match rx.recv() {
                Ok(batch) => self.pending.extend(batch),
                Err(_) => return LineInfo::default(),
            }
        }
    }

    /// Counts one completed sample (`seen`: what was seen of its row, when its run
    /// was handed it).
    pub fn add(
        &mut self,
        sample: &SampleResults,
        seen: Option<&Seen>,
        human: Option<&HumanLabels>,
    ) {
        let facts = sample.at.facts.as_deref();
        let step = facts.and_then(|f| f.step);
        if step.is_some() {
            self.wanted = true;
        }
        if !self.wanted {
            return;
        }
        if !sides::trained(facts) {
            self.tracker.left_out += 1;
            return;
        }
        let info = match (seen, &self.group_by) {
            // what was seen of the line as its row was converted: no second reading
            // (groups are counted step by step: a quick key tells them apart)
            (Some(seen), GroupBy::Prompt) => LineInfo {
                len_chars: seen.chars.map(|c| c as usize),
                len_tokens: seen.tokens,
                group: crate::sources::seen::quick_group(facts, Some(seen)),
            },
            // a foreign row with nothing seen: one its reader refused, or one with
            // nothing to see on its line (its group, if logged, is in its facts)
            (None, GroupBy::Prompt) if self.foreign(sample.at.file) => LineInfo {
                group: crate::sources::seen::quick_group(facts, None),
                ..LineInfo::default()
            },
            _ => {
                self.start();
                let mut info = self.line_info(sample.at.index);
                if let (Some(f), GroupBy::Prompt) =
                    (facts.filter(|f| f.group.is_some()), &self.group_by)
                {
                    // the group the source logged (read without the line)
                    info.group = training::place_sample(Some(f), &self.group_by, || "").key;
                }
                info
            }
        };
        let key = match step {
            Some(s) => StepKey::Step(s),
            None => {
                let member = facts.and_then(|f| f.file.clone());
                let next = self.file_order.len() + 1;
                let at = *self
                    .file_order
                    .entry((sample.at.file, member))
                    .or_insert(next);
                StepKey::File(at)
            }
        };
        // one buffer for every sample's cells
        let mut cells = std::mem::take(&mut self.cells);
        cells.clear();
        cells.extend(sample.outcomes.iter().map(|o| match o.score {
            _ if o.is_error() => Cell::Failed,
            Some(x) => Cell::Score(x),
            None => Cell::NoScore,
        }));
        let proxy = self.sides.proxy(
            facts,
            &cells,
            |e| {
                sample.outcomes[e]
                    .metrics
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.get("score")?.as_f64()?)))
                    .collect()
            },
            self.tracker.proxy_name.is_empty(),
        );
        if self.tracker.proxy_name.is_empty() && !proxy.name.is_empty() {
            self.tracker.proxy_name = proxy.name.clone();
        }
        let components = sides::spread(&proxy.parts, &mut self.tracker.components);
        let heldout = match self.labels_side {
            true => sides::label(human.and_then(|h| h.label(sample.at.index, &sample.hash))),
            false => self.sides.heldout(&cells),
        };
        let obs = Obs {
            proxy: proxy.value,
            heldout,
            len_chars: info.len_chars,
            len_tokens: info.len_tokens,
            group: info.group,
            components,
        };
        self.tracker.add(key, &obs);
        self.cells = cells;
    }

    /// The report, when one is wanted (a held-out side, or steps).
    pub fn report(self) -> Option<Report> {
        if !self.wanted || self.tracker.is_empty() {
            return None;
        }
        let mut tracker = self.tracker;
        if tracker.proxy_name.is_empty() {
            tracker.proxy_name =
                "none (no logged score and no evaluator but the held-out ones)".into();
        }
        Some(tracker.report())
    }
}

/// Hands the second reader's findings over a batch at a time.
struct Batcher {
    tx: std::sync::mpsc::SyncSender<Vec<(usize, LineInfo)>>,
    batch: Vec<(usize, LineInfo)>,
    /// Lines still wanted (`--max-samples`).
    left: usize,
}

impl Batcher {
    /// Takes one line's finding; false once nothing more is wanted.
    fn send(&mut self, index: usize, info: LineInfo) -> bool {
        if self.left == 0 {
            return false;
        }
        self.left -= 1;
        self.batch.push((index, info));
        if self.batch.len() == BATCH {
            let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            if self.tx.send(full).is_err() {
                return false;
            }
        }
        true
    }

    fn flush(&mut self) {
        let _ = self.tx.send(std::mem::take(&mut self.batch));
    }
}

/// Reads the samples' text as written, in the samples reader's order (a line of only
/// whitespace is no sample), without parsing their facts: the completion's length,
/// and the group of a line whose facts name none.
fn read_direct(files: &[SamplesFile], by: &GroupBy, sender: &mut Batcher) {
    use std::io::BufRead;
    let mut index = 0usize;
    for f in files {
        let Ok(file) = std::fs::File::open(f.text_path()) else {
            return;
        };
        let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
        let mut buf = Vec::new();
        let mut first = true;
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let mut line = &buf[..];
            if first {
                line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
                first = false;
            }
            let (text, facts) = match f.foreign {
                Some(_) => {
                    let parts = crate::workspace::split_line(line);
                    (parts.text, parts.facts)
                }
                None => (line, None),
            };
            if text.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            let text = String::from_utf8_lossy(text);
            let (len_chars, len_tokens) = sides::lengths(&text);
            let named = facts.is_some_and(|f| memchr::memmem::find(f, b"\"group\"").is_some());
            let group = if named {
                None
            } else {
                let facts =
                    facts.and_then(|f| serde_json::from_slice::<crate::model::Facts>(f).ok());
                training::place_sample(facts.as_ref(), by, || text.as_ref()).key
            };
            let info = LineInfo {
                len_chars,
                len_tokens,
                group,
            };
            if !sender.send(index, info) {
                return;
            }
            index += 1;
        }
    }
}
