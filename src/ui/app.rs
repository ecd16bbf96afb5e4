//! The workbench's state and the one function that changes it: `update(msg) -> effects`.
//!
//! Plain data: no terminal, no processes, no files. Keys and run results come in as
//! [`Msg`]s; what must happen outside (rerun, open the editor, quit) goes out as
//! [`Effect`]s for the live loop to carry out. Tests drive it exactly like the loop does.

use super::keymap::{Action, Keymap};
use crate::model::{EvalError, Metric, Outcome, SampleRef, Style, Summary, SummaryBuilder};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
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
        self.full()?.error.as_ref()
    }

    /// The whole outcome, when the cell keeps it.
    pub fn full(&self) -> Option<&Arc<Outcome>> {
        self.outcome.as_ref()?.full.as_ref()
    }

    /// Scored and not stale: what the frame trace counts.
    fn is_fresh(&self) -> bool {
        self.outcome.is_some() && !self.stale
    }
}

/// The selected cell's whole outcome and its baseline's, read from the store when the
/// selection changes (`Msg::Detail`) or kept when its result arrives.
#[derive(Clone, Debug, Default)]
pub struct Detail {
    /// Whose it is: (sample content, evaluator name).
    pub of: ([u8; 16], String),
    pub outcome: Option<Arc<Outcome>>,
    /// The pinned baseline's outcome of the same sample.
    pub before: Option<Arc<Outcome>>,
}

/// Up to this many samples, rollout groups are found as soon as the samples load;
/// beyond, when the statistics open (reading every line takes a while).
const EAGER_GROUPS: usize = 5000;

/// Where the text of sample lines comes from: the live loop reads them from the
/// samples files on demand, so a million-line file is not held in memory.
pub trait Lines: Send + Sync {
    fn line(&self, file: usize, offset: u64, len: u32) -> Option<String>;
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
    pub bad: Option<String>,
    pub cells: Vec<Cell>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    List,
    Conversation,
    Breakdown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Overlay {
    None,
    Help,
    Stats,
    /// Progress and results of serve, tunnel, deploy and remote comparison.
    Ship,
    /// The deploy confirmation: id, display name, force.
    Deploy(DeployForm),
    /// Past versions of the selected evaluator (in `App::history`).
    History,
    /// A report (probes, contract check) in `App::report`.
    Report,
}

/// An evaluator's recorded versions, newest first, and the one selected.
#[derive(Clone, Debug)]
pub struct History {
    pub evaluator: String,
    pub versions: Vec<crate::model::Version>,
    pub cursor: usize,
    /// A version marked with Space: the diff is then between it and the selected one.
    pub marked: Option<usize>,
}

impl History {
    /// The two versions to diff, (older, newer): the marked and the selected one, or
    /// the selected one and the one before it.
    pub fn pair(&self) -> Option<(usize, usize)> {
        let other = match self.marked {
            Some(m) if m != self.cursor => m,
            _ => self.cursor + 1,
        };
        (other < self.versions.len()).then(|| (self.cursor.max(other), self.cursor.min(other)))
    }
}

/// The fields of the deploy dialog; `field` is the one being edited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeployForm {
    pub id: String,
    pub display_name: String,
    pub force: bool,
    pub field: usize,
}

/// Serve, tunnel and deploy as the screen shows them.
#[derive(Clone, Debug, Default)]
pub struct Ship {
    /// The local server's URL while it runs.
    pub serving: Option<String>,
    /// (requests, p50 ms, p99 ms) of the server.
    pub requests: Option<(u64, Option<f64>, Option<f64>)>,
    /// The public URL while a tunnel is open.
    pub tunnel: Option<String>,
    /// The key the tunnel requires, while one is open or opening.
    pub tunnel_key: Option<TunnelKey>,
    /// What is under way ("opening the tunnel…").
    pub busy: Option<String>,
    /// Progress and results, newest last.
    pub log: Vec<String>,
    /// Remote scores by (sample content, evaluator name), from the last comparison.
    pub remote: HashMap<([u8; 16], String), Option<f64>>,
    /// Where the remote scores came from.
    pub remote_source: Option<String>,
    /// The id the deploy dialog proposes.
    pub default_id: String,
}

/// The key a tunnel requires (SPEC §6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TunnelKey {
    /// `RK_ENDPOINT_API_KEY` (not shown).
    FromEnv,
    /// Generated for this session: shown in the ship panel, copied with the URL.
    Generated(String),
    /// `[tunnel] no_auth`: open to anyone.
    Off,
}

/// What serve, tunnel and deploy report.
#[derive(Debug)]
pub enum ShipMsg {
    Serving(Option<String>),
    Requests(u64, Option<f64>, Option<f64>),
    Tunnel(Option<String>),
    TunnelKey(Option<TunnelKey>),
    Busy(Option<String>),
    Log(String),
    /// Remote scores from `source`: (sample hash, evaluator name, score).
    Remote {
        source: String,
        scores: Vec<([u8; 16], String, Option<f64>)>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    fn test(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => (a - b).abs() < 1e-12,
        }
    }
}

/// One term of a filter; the terms of a filter must all hold.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    /// Case-insensitive text anywhere in the sample line.
    Text(String),
    /// `score<0.5` (the selected evaluator) or `NAME>=0.8`.
    Score {
        evaluator: Option<usize>,
        op: Op,
        value: f64,
    },
    /// Any evaluator failed on the sample.
    Error,
    /// A score differs from the baseline (or, without one, is stale).
    Changed,
    /// A remote score differs from the local one.
    Remote,
}

/// Parses a filter such as `refund score<0.5 error`. Unknown evaluator names are errors.
pub fn parse_filter(text: &str, evaluators: &[EvaluatorInfo]) -> Result<Vec<Cond>, String> {
    let mut out = Vec::new();
    for word in text.split_whitespace() {
        let lower = word.to_ascii_lowercase();
        if lower == "error" || lower == "errors" {
            out.push(Cond::Error);
            continue;
        }
        if lower == "changed" {
            out.push(Cond::Changed);
            continue;
        }
        if lower == "remote" {
            out.push(Cond::Remote);
            continue;
        }
        let ops = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
            ("==", Op::Eq),
            ("=", Op::Eq),
        ];
        let split = ops
            .iter()
            .find_map(|(s, op)| word.find(s).map(|i| (i, s.len(), *op)));
        if let Some((i, len, op)) = split {
            let name = &word[..i];
            let value: f64 = word[i + len..]
                .parse()
                .map_err(|_| format!("'{word}': expected a number after the comparison"))?;
            let evaluator = if name == "score" {
                None
            } else {
                Some(
                    evaluators
                        .iter()
                        .position(|e| e.name == name)
                        .ok_or_else(|| format!("'{word}': no evaluator named '{name}'"))?,
                )
            };
            out.push(Cond::Score {
                evaluator,
                op,
                value,
            });
            continue;
        }
        out.push(Cond::Text(lower));
    }
    Ok(out)
}

/// What the live loop must do after an update.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    Quit,
    /// Evaluate again without the cache: one evaluator, or all.
    Rerun {
        evaluator: Option<usize>,
    },
    /// Load the selected evaluator's past versions (answered by `Msg::History`).
    History {
        evaluator: String,
    },
    /// Run the reward-hacking probes (answered by `Msg::Report`).
    Probes,
    /// Run the contract check (answered by `Msg::Report`).
    Check,
    /// Open `$EDITOR` at this file and line, then come back.
    Edit {
        file: PathBuf,
        line: Option<u32>,
    },
    /// Write the current results to a file.
    Export,
    ToggleServe,
    ToggleTunnel,
    Deploy {
        id: String,
        display_name: String,
        force: bool,
    },
    /// Replay the samples on the tunnel or deployment and compare.
    CompareRemote,
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
}

/// Everything that can happen to the workbench.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Resized,
    /// The samples files were (re)read. Outcomes move with their sample's content.
    Samples(Vec<Sample>),
    /// The evaluators (at start and after `rwb.toml` changed). Outcomes move by name.
    Evaluators(Vec<EvaluatorInfo>),
    /// A run began for these evaluators; `stale` ones changed code.
    RunStarted {
        evaluators: Vec<usize>,
        stale: Vec<usize>,
    },
    Result {
        evaluator: usize,
        sample: usize,
        outcome: Box<Outcome>,
    },
    /// The evaluator's module failed to import (or imports again: `None`).
    ImportState {
        evaluator: usize,
        error: Option<EvalError>,
    },
    RunFinished,
    /// `rwb.toml` is broken (the last good configuration stays), or fixed (`None`).
    ConfigError(Option<String>),
    Notice(String),
    Watching(Vec<String>),
    Ship(ShipMsg),
    History(History),
    /// A titled report to show (probes, contract check).
    Report(String, Vec<String>),
    /// The selected cell's whole outcome, read from the store (see `wanted_detail`).
    Detail(Detail),
}

/// Scores pinned with `b`, by sample content and evaluator name.
#[derive(Clone, Debug, Default)]
pub struct Baseline {
    /// evaluator name -> its pinned cells
    outcomes: HashMap<String, BaselineOf>,
    /// "relevance: 12 samples changed (…), 10 through `format`", one per evaluator,
    /// recomputed when a run finishes.
    pub attribution: Vec<String>,
    /// Each evaluator's code key when pinned (where its reasons are in the store).
    pub keys: HashMap<String, [u8; 32]>,
}

/// A remembered rank change: ((sample, evaluator, revision), (rank then, rank now)).
type RankMemo = ((usize, usize, u64), Option<(usize, usize)>);

/// A pinned cell: its score, component scores, the outcome itself when the cell kept
/// it (for reasons), and whether it had an outcome at all.
type Pinned = (Option<f64>, Box<[f64]>, Option<Arc<Outcome>>, bool);

/// One evaluator's pinned scores, by sample content.
#[derive(Clone, Debug, Default)]
pub struct BaselineOf {
    cells: HashMap<[u8; 16], Pinned>,
}

impl Baseline {
    pub fn score(&self, sample: &Sample, evaluator: &str) -> Option<Option<f64>> {
        self.outcomes
            .get(evaluator)?
            .cells
            .get(&sample.hash)
            .map(|c| c.0)
    }

    /// The pinned score and component scores of a sample that had an outcome.
    pub fn pinned(&self, sample: &Sample, evaluator: &str) -> Option<(Option<f64>, &[f64])> {
        let cell = self.outcomes.get(evaluator)?.cells.get(&sample.hash)?;
        cell.3.then_some((cell.0, &cell.1))
    }

    /// The pinned outcome of a sample, when it was kept whole (see [`Kept`]).
    pub fn outcome(&self, sample: &Sample, evaluator: &str) -> Option<&Arc<Outcome>> {
        self.outcomes
            .get(evaluator)?
            .cells
            .get(&sample.hash)?
            .2
            .as_ref()
    }
}

pub struct App {
    pub root: PathBuf,
    pub lines: Arc<dyn Lines>,
    pub samples_labels: Vec<String>,
    pub evaluators: Vec<EvaluatorInfo>,
    pub samples: Vec<Sample>,
    /// Indices into `samples`, filtered and sorted.
    pub view: Vec<usize>,
    /// Position in `view`.
    pub cursor: usize,
    /// First row of the list on screen (kept by the renderer).
    pub list_offset: usize,
    pub list_height: usize,
    pub focus: Focus,
    pub evaluator: usize,
    pub conversation_scroll: u16,
    pub breakdown_scroll: u16,
    pub detail: bool,
    pub overlay: Overlay,
    /// Some while the filter is being typed.
    pub filter_input: Option<String>,
    pub filter_text: String,
    pub filter: Vec<Cond>,
    pub filter_error: Option<String>,
    /// (evaluator, descending)
    pub sort: Option<(usize, bool)>,
    pub baseline: Option<Baseline>,
    pub changed_only: bool,
    pub notice: Option<String>,
    pub config_error: Option<String>,
    pub watching: Vec<String>,
    pub keymap: Keymap,
    pub running: bool,
    pub ship: Ship,
    /// Pass threshold for flips (`[insight] threshold`).
    pub threshold: f64,
    /// Weights for the combined reward (TRL's reward_weights), when rwb.toml gives any.
    pub weights: Option<Vec<f64>>,
    pub history: Option<History>,
    pub report: Option<(String, Vec<String>)>,
    /// Bumped whenever scores or the baseline change (what derived views key on).
    revision: u64,
    /// The last rank change computed: ((sample, evaluator, revision), result).
    rank_memo: Option<RankMemo>,
    /// Component names per evaluator, in order of first appearance (cells' `parts`
    /// follow them).
    pub components: Vec<Vec<String>>,
    /// What groups rollouts (`[insight] group_by`): a sample field, or `None` for the prompt.
    pub group_by: Option<String>,
    /// Each sample's rollout-group key (its prompt), computed when the stats open.
    pub group_keys: Option<Vec<Option<[u8; 16]>>>,
    /// Failed outcomes per evaluator, kept as results arrive (the status line must
    /// not count a million cells every frame).
    pub error_counts: Vec<usize>,
    /// Something changed since the last frame.
    pub dirty: bool,
    view_stale: bool,
    /// The workbench reads outcomes back from the store: cells keep only scores (and
    /// errors); `false` (no store, tests) keeps every outcome whole.
    pub store_details: bool,
    /// The selected cell's whole outcome (see [`Detail`]).
    pub selected_detail: Option<Detail>,
    /// Each evaluator's code key, by name (where its outcomes are in the store).
    pub code_keys: HashMap<String, [u8; 32]>,
    /// Cells scored and not stale, kept as results arrive (for the frame trace).
    pub fresh: usize,
    /// Per evaluator, the last error kept: an identical one shares it (a failed
    /// import fails every sample the same way).
    last_error: Vec<Option<Arc<Outcome>>>,
}

impl App {
    pub fn new(
        root: PathBuf,
        samples_labels: Vec<String>,
        keymap: Keymap,
        lines: Arc<dyn Lines>,
    ) -> App {
        App {
            root,
            lines,
            samples_labels,
            evaluators: Vec::new(),
            samples: Vec::new(),
            view: Vec::new(),
            cursor: 0,
            list_offset: 0,
            list_height: 20,
            focus: Focus::List,
            evaluator: 0,
            conversation_scroll: 0,
            breakdown_scroll: 0,
            detail: false,
            overlay: Overlay::None,
            filter_input: None,
            filter_text: String::new(),
            filter: Vec::new(),
            filter_error: None,
            sort: None,
            baseline: None,
            changed_only: false,
            notice: None,
            config_error: None,
            watching: Vec::new(),
            keymap,
            running: false,
            ship: Ship::default(),
            threshold: crate::insight::DEFAULT_THRESHOLD,
            weights: None,
            history: None,
            report: None,
            revision: 0,
            rank_memo: None,
            group_keys: None,
            group_by: None,
            components: Vec::new(),
            error_counts: Vec::new(),
            dirty: true,
            view_stale: true,
            store_details: false,
            selected_detail: None,
            code_keys: HashMap::new(),
            fresh: 0,
            last_error: Vec::new(),
        }
    }

    /// The text of a sample line.
    pub fn text(&self, sample: &Sample) -> String {
        self.lines
            .line(sample.at.file, sample.offset, sample.len)
            .unwrap_or_default()
    }

    /// The selected sample's index into `samples`.
    pub fn selected(&self) -> Option<usize> {
        self.view.get(self.cursor).copied()
    }

    pub fn selected_sample(&self) -> Option<&Sample> {
        self.selected().map(|i| &self.samples[i])
    }

    pub fn selected_cell(&self) -> Option<&Cell> {
        self.selected_sample()
            .and_then(|s| s.cells.get(self.evaluator))
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        self.dirty = true;
        if !matches!(msg, Msg::Key(_) | Msg::Resized | Msg::Detail(_)) {
            self.revision += 1;
        }
        let effects = match msg {
            Msg::Key(key) => self.on_key(key),
            Msg::Resized => Vec::new(),
            Msg::Samples(samples) => {
                self.replace_samples(samples);
                Vec::new()
            }
            Msg::Evaluators(evaluators) => {
                self.replace_evaluators(evaluators);
                Vec::new()
            }
            Msg::RunStarted { evaluators, stale } => {
                self.running = true;
                let total = self.samples.len();
                for &e in &evaluators {
                    if let Some(info) = self.evaluators.get_mut(e) {
                        info.state = RunState::Running { done: 0, total };
                    }
                }
                for &e in &stale {
                    for s in &mut self.samples {
                        if let Some(c) = s.cells.get_mut(e) {
                            c.stale = c.outcome.is_some();
                        }
                    }
                }
                self.count_fresh();
                Vec::new()
            }
            Msg::Result {
                evaluator,
                sample,
                outcome,
            } => {
                self.take_result(evaluator, sample, *outcome);
                if let Some(info) = self.evaluators.get_mut(evaluator) {
                    if let RunState::Running { done, total } = &mut info.state {
                        *done += 1;
                        if *done >= *total {
                            info.state = RunState::Idle;
                        }
                    }
                }
                if self.sort.is_some() || !self.filter.is_empty() || self.changed_only {
                    self.view_stale = true;
                }
                Vec::new()
            }
            Msg::ImportState { evaluator, error } => {
                if let Some(info) = self.evaluators.get_mut(evaluator) {
                    info.import_error = error;
                }
                Vec::new()
            }
            Msg::RunFinished => {
                self.running = false;
                for info in &mut self.evaluators {
                    info.state = RunState::Idle;
                }
                self.attribute();
                Vec::new()
            }
            Msg::ConfigError(e) => {
                self.config_error = e;
                Vec::new()
            }
            Msg::Notice(text) => {
                self.notice = Some(text);
                Vec::new()
            }
            Msg::Watching(paths) => {
                self.watching = paths;
                Vec::new()
            }
            Msg::Ship(m) => {
                self.on_ship(m);
                Vec::new()
            }
            Msg::History(h) => {
                self.history = Some(h);
                self.overlay = Overlay::History;
                Vec::new()
            }
            Msg::Report(title, lines) => {
                self.report = Some((title, lines));
                self.overlay = Overlay::Report;
                Vec::new()
            }
            Msg::Detail(mut detail) => {
                // what was kept as its result arrived stays when the store lags behind
                if let Some(old) = self.selected_detail.take().filter(|d| d.of == detail.of) {
                    detail.outcome = detail.outcome.or(old.outcome);
                    detail.before = detail.before.or(old.before);
                }
                self.selected_detail = Some(detail);
                Vec::new()
            }
        };
        if self.view_stale {
            self.refresh_view();
        }
        effects
    }

    /// Puts a result on its cell, keeping the whole outcome only where it cannot be
    /// read back from the store, and as the detail when the cell is selected.
    fn take_result(&mut self, evaluator: usize, sample: usize, outcome: Outcome) {
        if self.components.len() < self.evaluators.len() {
            self.components.resize(self.evaluators.len(), Vec::new());
        }
        let Some(hash) = self
            .samples
            .get(sample)
            .filter(|s| evaluator < s.cells.len())
            .map(|s| s.hash)
        else {
            return;
        };
        let parts = match self.components.get_mut(evaluator) {
            Some(names) => crate::insight::component_scores(&outcome, names),
            None => Box::default(),
        };
        let score = outcome.score;
        let whole = self.keeps_whole(evaluator, &outcome);
        let selected = self.selected() == Some(sample) && self.evaluator == evaluator;
        let outcome = (whole || selected).then(|| self.share_error(evaluator, outcome));
        if selected && !whole {
            let name = self.evaluators[evaluator].name.clone();
            let of = (hash, name);
            let before = self
                .selected_detail
                .take()
                .filter(|d| d.of == of)
                .and_then(|d| d.before);
            self.selected_detail = Some(Detail {
                of,
                outcome: outcome.clone(),
                before,
            });
        }
        let cell = &mut self.samples[sample].cells[evaluator];
        let (was_error, was_fresh) = (cell.is_error(), cell.is_fresh());
        cell.parts = parts;
        cell.outcome = Some(Kept {
            score,
            full: outcome.filter(|_| whole),
        });
        cell.stale = false;
        if let Some(count) = self.error_counts.get_mut(evaluator) {
            *count = *count + usize::from(cell.is_error()) - usize::from(was_error);
        }
        self.fresh += usize::from(!was_fresh);
    }

    /// Whether a cell keeps this outcome whole: without a store, for an error (not
    /// always stored), and for an evaluator called in batches (stored under its
    /// batch's key) or whose style is not known yet.
    fn keeps_whole(&self, evaluator: usize, outcome: &Outcome) -> bool {
        !self.store_details
            || outcome.is_error()
            || self
                .evaluators
                .get(evaluator)
                .is_none_or(|e| e.style.is_none_or(|s| s.is_batched()))
    }

    /// The outcome to keep; an error identical to the evaluator's last one shares it.
    fn share_error(&mut self, evaluator: usize, outcome: Outcome) -> Arc<Outcome> {
        if !outcome.is_error() {
            return Arc::new(outcome);
        }
        if self.last_error.len() <= evaluator {
            self.last_error.resize(evaluator + 1, None);
        }
        match &self.last_error[evaluator] {
            Some(last) if **last == outcome => last.clone(),
            _ => {
                let kept = Arc::new(outcome);
                self.last_error[evaluator] = Some(kept.clone());
                kept
            }
        }
    }

    fn detail_for(&self, hash: [u8; 16], evaluator: &str) -> Option<&Detail> {
        self.selected_detail
            .as_ref()
            .filter(|d| d.of.0 == hash && d.of.1 == evaluator)
    }

    /// The selected (sample, evaluator) whose whole outcome, or pinned baseline
    /// outcome, is neither kept nor read yet: the live loop reads it from the store
    /// and answers with `Msg::Detail`. `None` without a store.
    pub fn wanted_detail(&self) -> Option<(usize, usize)> {
        if !self.store_details {
            return None;
        }
        let sample = self.selected()?;
        let e = self.evaluator;
        let s = self.samples.get(sample)?;
        let name = &self.evaluators.get(e)?.name;
        let cell = s.cells.get(e)?;
        let needs_now = cell.outcome.as_ref().is_some_and(|k| k.full.is_none());
        let needs_before = self
            .baseline
            .as_ref()
            .is_some_and(|b| b.outcome(s, name).is_none() && b.pinned(s, name).is_some());
        let detail = self.detail_for(s.hash, name);
        let missing = |d: Option<&Detail>| {
            (needs_now && d.is_none_or(|d| d.outcome.is_none()))
                || (needs_before && d.is_none_or(|d| d.before.is_none()))
        };
        missing(detail).then_some((sample, e))
    }

    /// An outcome made of what a cell keeps: its score and component scores.
    fn sketch(&self, evaluator: usize, score: Option<f64>, parts: &[f64]) -> Outcome {
        let names = self
            .components
            .get(evaluator)
            .map(|c| c.as_slice())
            .unwrap_or(&[]);
        let metrics = names
            .iter()
            .zip(parts)
            .filter(|(_, x)| !x.is_nan())
            .map(|(n, x)| {
                let metric = Metric {
                    score: Some(*x),
                    is_score_valid: true,
                    reason: None,
                };
                (n.clone(), serde_json::to_value(metric).unwrap_or_default())
            })
            .collect();
        Outcome {
            score,
            is_score_valid: score.is_some(),
            ..Outcome::scored(0.0, metrics)
        }
    }

    /// The whole outcome of a cell: kept, or read for the selection, or (until it is
    /// read) sketched from its score and component scores.
    pub fn outcome_of(&self, sample: usize, evaluator: usize) -> Option<Arc<Outcome>> {
        let s = self.samples.get(sample)?;
        let cell = s.cells.get(evaluator)?;
        let kept = cell.outcome.as_ref()?;
        if let Some(full) = &kept.full {
            return Some(full.clone());
        }
        let name = &self.evaluators.get(evaluator)?.name;
        if let Some(o) = self
            .detail_for(s.hash, name)
            .and_then(|d| d.outcome.clone())
        {
            return Some(o);
        }
        Some(Arc::new(self.sketch(evaluator, kept.score, &cell.parts)))
    }

    /// The selected cell's whole outcome (see [`App::outcome_of`]).
    pub fn selected_outcome(&self) -> Option<Arc<Outcome>> {
        self.outcome_of(self.selected()?, self.evaluator)
    }

    /// The pinned baseline's outcome of a sample: kept, read, or (until it is read)
    /// sketched from the pinned scores with `now`'s reason, so that no change of
    /// reason is claimed that was not seen.
    pub fn baseline_outcome(
        &self,
        sample: usize,
        evaluator: usize,
        now: &Outcome,
    ) -> Option<Arc<Outcome>> {
        let baseline = self.baseline.as_ref()?;
        let s = self.samples.get(sample)?;
        let name = &self.evaluators.get(evaluator)?.name;
        if let Some(o) = baseline.outcome(s, name) {
            return Some(o.clone());
        }
        let (score, parts) = baseline.pinned(s, name)?;
        if let Some(o) = self.detail_for(s.hash, name).and_then(|d| d.before.clone()) {
            return Some(o);
        }
        let mut sketch = self.sketch(evaluator, score, parts);
        sketch.reason = now.reason.clone();
        Some(Arc::new(sketch))
    }

    fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if self.overlay == Overlay::History && key.code == KeyCode::Char(' ') {
            if let Some(h) = self.history.as_mut() {
                h.marked = if h.marked == Some(h.cursor) {
                    None
                } else {
                    Some(h.cursor)
                };
            }
            return Vec::new();
        }
        if let Some(input) = self.filter_input.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    self.filter_input = None;
                }
                KeyCode::Esc => {
                    self.filter_input = None;
                    self.set_filter(String::new());
                }
                KeyCode::Backspace => {
                    input.pop();
                    let text = input.clone();
                    self.set_filter(text);
                }
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                    self.filter_input = None;
                    self.set_filter(String::new());
                }
                KeyCode::Char(c) => {
                    input.push(c);
                    let text = input.clone();
                    self.set_filter(text);
                }
                _ => {}
            }
            return Vec::new();
        }
        if let Overlay::Deploy(form) = &mut self.overlay {
            return match deploy_form_key(form, key) {
                Ok(effect) => {
                    self.overlay = Overlay::Ship;
                    vec![effect]
                }
                Err(close) => {
                    if close {
                        self.overlay = Overlay::None;
                    }
                    Vec::new()
                }
            };
        }
        let Some(action) = self.keymap.action(&key) else {
            return Vec::new();
        };
        let ship_action = matches!(
            action,
            Action::Serve
                | Action::Tunnel
                | Action::Deploy
                | Action::CompareRemote
                | Action::CopyUrl
        );
        let keep_open = (self.overlay == Overlay::Ship && ship_action)
            || (self.overlay == Overlay::History && matches!(action, Action::Down | Action::Up));
        if self.overlay == Overlay::History && keep_open {
            if let Some(h) = self.history.as_mut() {
                let last = h.versions.len().saturating_sub(1);
                h.cursor = if action == Action::Down {
                    (h.cursor + 1).min(last)
                } else {
                    h.cursor.saturating_sub(1)
                };
            }
            return Vec::new();
        }
        if self.overlay != Overlay::None && !matches!(action, Action::Quit) && !keep_open {
            // any key closes an overlay (the ship panel stays for its own actions)
            self.overlay = Overlay::None;
            return Vec::new();
        }
        self.notice = None;
        match action {
            Action::Quit => return vec![Effect::Quit],
            Action::Down => self.scroll(1),
            Action::Up => self.scroll(-1),
            Action::PageDown => self.scroll(self.list_height.max(1) as isize),
            Action::PageUp => self.scroll(-(self.list_height.max(1) as isize)),
            Action::Top => self.jump(0),
            Action::Bottom => self.jump(usize::MAX),
            Action::NextPane => self.cycle_focus(1),
            Action::PrevPane => self.cycle_focus(-1),
            Action::NextEvaluator => self.pick_evaluator(1),
            Action::PrevEvaluator => self.pick_evaluator(-1),
            Action::Detail => self.detail = !self.detail,
            Action::Filter => self.filter_input = Some(self.filter_text.clone()),
            Action::Sort => {
                self.sort = match self.sort {
                    Some((e, true)) if e == self.evaluator => Some((e, false)),
                    Some((e, false)) if e == self.evaluator => None,
                    _ => Some((self.evaluator, true)),
                };
                self.refresh_view();
            }
            Action::Rerun => {
                if !self.evaluators.is_empty() {
                    return vec![Effect::Rerun {
                        evaluator: Some(self.evaluator),
                    }];
                }
            }
            Action::RerunAll => return vec![Effect::Rerun { evaluator: None }],
            Action::Baseline => self.pin_baseline(),
            Action::ChangedOnly => {
                self.changed_only = !self.changed_only;
                self.refresh_view();
            }
            Action::Stats => {
                self.compute_group_keys();
                self.overlay = Overlay::Stats;
            }
            Action::Help => self.overlay = Overlay::Help,
            Action::Edit => {
                if let Some(effect) = self.edit_target() {
                    return vec![effect];
                }
            }
            Action::Export => return vec![Effect::Export],
            Action::History => {
                if let Some(info) = self.evaluators.get(self.evaluator) {
                    return vec![Effect::History {
                        evaluator: info.name.clone(),
                    }];
                }
            }
            Action::Probes => {
                self.report = Some(("Probes".into(), vec!["scoring the probes…".into()]));
                self.overlay = Overlay::Report;
                return vec![Effect::Probes];
            }
            Action::Check => {
                self.report = Some(("Contract check".into(), vec!["checking…".into()]));
                self.overlay = Overlay::Report;
                return vec![Effect::Check];
            }
            Action::Serve => return vec![Effect::ToggleServe],
            Action::Tunnel => {
                self.overlay = Overlay::Ship;
                return vec![Effect::ToggleTunnel];
            }
            Action::Deploy => {
                self.overlay = Overlay::Deploy(DeployForm {
                    id: self.ship.default_id.clone(),
                    display_name: String::new(),
                    force: false,
                    field: 0,
                });
            }
            Action::CompareRemote => return vec![Effect::CompareRemote],
            Action::CopyUrl => match self
                .ship
                .tunnel
                .clone()
                .or_else(|| self.ship.serving.clone())
            {
                Some(url) => match (&self.ship.tunnel, &self.ship.tunnel_key) {
                    (Some(_), Some(TunnelKey::Generated(key))) => {
                        self.notice = Some(format!("copied {url} and its key"));
                        return vec![Effect::Copy(format!("{url}\nX-Api-Key: {key}"))];
                    }
                    _ => {
                        self.notice = Some(format!("copied {url}"));
                        return vec![Effect::Copy(url)];
                    }
                },
                None => {
                    self.notice =
                        Some("nothing to copy: start the server (S) or a tunnel (t)".into())
                }
            },
            Action::Back => {
                if self.detail {
                    self.detail = false;
                } else if !self.filter_text.is_empty() {
                    self.set_filter(String::new());
                } else {
                    self.focus = Focus::List;
                }
            }
        }
        Vec::new()
    }

    fn scroll(&mut self, by: isize) {
        match self.focus {
            Focus::List => {
                let target = (self.cursor as isize + by)
                    .clamp(0, self.view.len().saturating_sub(1) as isize);
                self.select_position(target as usize);
            }
            Focus::Conversation => {
                self.conversation_scroll =
                    (self.conversation_scroll as isize + by).clamp(0, u16::MAX as isize) as u16
            }
            Focus::Breakdown => {
                self.breakdown_scroll =
                    (self.breakdown_scroll as isize + by).clamp(0, u16::MAX as isize) as u16
            }
        }
    }

    fn jump(&mut self, to: usize) {
        match self.focus {
            Focus::List => self.select_position(to.min(self.view.len().saturating_sub(1))),
            Focus::Conversation => {
                self.conversation_scroll = if to == 0 { 0 } else { u16::MAX / 2 }
            }
            Focus::Breakdown => self.breakdown_scroll = if to == 0 { 0 } else { u16::MAX / 2 },
        }
    }

    fn select_position(&mut self, position: usize) {
        if position != self.cursor {
            self.conversation_scroll = 0;
            self.breakdown_scroll = 0;
        }
        self.cursor = position;
    }

    fn cycle_focus(&mut self, by: i32) {
        let order = [Focus::List, Focus::Conversation, Focus::Breakdown];
        let at = order.iter().position(|f| *f == self.focus).unwrap_or(0) as i32;
        self.focus = order[((at + by).rem_euclid(3)) as usize];
    }

    fn pick_evaluator(&mut self, by: i32) {
        let n = self.evaluators.len() as i32;
        if n > 0 {
            self.evaluator = ((self.evaluator as i32 + by).rem_euclid(n)) as usize;
            self.breakdown_scroll = 0;
        }
    }

    fn set_filter(&mut self, text: String) {
        match parse_filter(&text, &self.evaluators) {
            Ok(conds) => {
                self.filter = conds;
                self.filter_error = None;
            }
            Err(e) => self.filter_error = Some(e),
        }
        self.filter_text = text;
        self.refresh_view();
    }

    fn pin_baseline(&mut self) {
        let mut outcomes: HashMap<String, BaselineOf> = HashMap::new();
        for (e, info) in self.evaluators.iter().enumerate() {
            let of = outcomes.entry(info.name.clone()).or_default();
            for s in &self.samples {
                if let Some(cell) = s.cells.get(e) {
                    let whole = cell.full().cloned().or_else(|| {
                        let d = self.detail_for(s.hash, &info.name)?;
                        d.outcome.clone()
                    });
                    let pinned = (cell.score(), cell.parts.clone(), whole);
                    of.cells.insert(
                        s.hash,
                        (pinned.0, pinned.1, pinned.2, cell.outcome.is_some()),
                    );
                }
            }
        }
        let count = self.samples.len();
        self.revision += 1;
        self.baseline = Some(Baseline {
            outcomes,
            attribution: Vec::new(),
            keys: self.code_keys.clone(),
        });
        self.attribute();
        self.notice = Some(format!(
            "baseline pinned: {count} samples; Δ shows the change from here"
        ));
        self.refresh_view();
    }

    fn edit_target(&self) -> Option<Effect> {
        let info = self.evaluators.get(self.evaluator)?;
        let from_error = |e: &EvalError| {
            e.file.as_ref().map(|f| {
                let path = PathBuf::from(f);
                let path = if path.is_relative() {
                    self.root.join(path)
                } else {
                    path
                };
                (path, e.line)
            })
        };
        let target = self
            .selected_cell()
            .and_then(|c| c.error())
            .and_then(from_error)
            .or_else(|| info.import_error.as_ref().and_then(from_error))
            .unwrap_or((info.source.clone(), None));
        Some(Effect::Edit {
            file: target.0,
            line: target.1,
        })
    }

    fn on_ship(&mut self, m: ShipMsg) {
        match m {
            ShipMsg::Serving(url) => {
                if url.is_none() {
                    self.ship.requests = None;
                }
                self.ship.serving = url;
            }
            ShipMsg::Requests(n, p50, p99) => self.ship.requests = Some((n, p50, p99)),
            ShipMsg::Tunnel(url) => self.ship.tunnel = url,
            ShipMsg::TunnelKey(key) => self.ship.tunnel_key = key,
            ShipMsg::Busy(what) => self.ship.busy = what,
            ShipMsg::Log(line) => {
                self.ship.log.push(line);
                let excess = self.ship.log.len().saturating_sub(200);
                self.ship.log.drain(..excess);
            }
            ShipMsg::Remote { source, scores } => {
                self.ship.remote = scores.into_iter().map(|(h, e, s)| ((h, e), s)).collect();
                let differ = self
                    .samples
                    .iter()
                    .filter(|s| {
                        (0..self.evaluators.len()).any(|e| self.remote_differs(s, e) == Some(true))
                    })
                    .count();
                self.ship.log.push(format!("{source}: {differ} of {} samples differ from the local scores (filter: remote)", self.samples.len()));
                self.ship.remote_source = Some(source);
                self.view_stale = true;
            }
        }
    }

    /// Recomputes, per evaluator, what changed since the baseline and through which
    /// components (shown under the list while a baseline is pinned).
    pub fn attribute(&mut self) {
        let Some(baseline) = &self.baseline else {
            return;
        };
        let threshold = self.threshold;
        let lines = self
            .evaluators
            .iter()
            .enumerate()
            .map(|(e, info)| {
                let of = baseline.outcomes.get(&info.name);
                let pairs = self.samples.iter().filter_map(|s| {
                    let (score, parts, _, _) = of?.cells.get(&s.hash)?;
                    let cell = s.cells.get(e).filter(|c| c.outcome.is_some())?;
                    Some(((*score, &parts[..]), (cell.score(), &cell.parts[..])))
                });
                let names = self.components.get(e).map(|c| c.as_slice()).unwrap_or(&[]);
                format!(
                    "{}: {}",
                    info.name,
                    crate::insight::attribute_compact(pairs, names, threshold)
                )
            })
            .collect();
        if let Some(b) = self.baseline.as_mut() {
            b.attribution = lines;
        }
    }

    /// A sample's rank among all samples in the baseline and now (1 = best score),
    /// remembered until the scores change (the breakdown asks for it every frame).
    pub fn rank_change(&mut self, sample: usize, evaluator: usize) -> Option<(usize, usize)> {
        let key = (sample, evaluator, self.revision);
        if let Some((k, v)) = self.rank_memo {
            if k == key {
                return v;
            }
        }
        let v = self.count_rank_change(sample, evaluator);
        self.rank_memo = Some((key, v));
        v
    }

    /// Counts the better scores: one pass over the samples.
    fn count_rank_change(&self, sample: usize, evaluator: usize) -> Option<(usize, usize)> {
        let baseline = self.baseline.as_ref()?;
        let name = &self.evaluators.get(evaluator)?.name;
        let of = baseline.outcomes.get(name)?;
        let own = self.samples.get(sample)?;
        let was = of.cells.get(&own.hash)?.0?;
        let now = own.cells.get(evaluator)?.score()?;
        let (mut before, mut after) = (1, 1);
        for s in &self.samples {
            if of
                .cells
                .get(&s.hash)
                .and_then(|c| c.0)
                .is_some_and(|x| x > was)
            {
                before += 1;
            }
            if s.cells
                .get(evaluator)
                .and_then(|c| c.score())
                .is_some_and(|x| x > now)
            {
                after += 1;
            }
        }
        Some((before, after))
    }

    /// The selected evaluator's rollout group of a sample (samples sharing its prompt):
    /// (members, mean, std, this sample's advantage). `None` until the stats computed
    /// the group keys, or when the sample is alone.
    pub fn group_of(&self, sample: usize, evaluator: usize) -> Option<(usize, f64, f64, f64)> {
        let keys = self.group_keys.as_ref()?;
        let key = (*keys.get(sample)?)?;
        let scores: Vec<f64> = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| **k == Some(key))
            .filter_map(|(i, _)| self.samples.get(i)?.cells.get(evaluator)?.score())
            .collect();
        if scores.len() < 2 {
            return None;
        }
        let n = scores.len() as f64;
        let mean = scores.iter().sum::<f64>() / n;
        let std = (scores.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        let own = self.samples.get(sample)?.cells.get(evaluator)?.score()?;
        Some((scores.len(), mean, std, (own - mean) / (std + 1e-4)))
    }

    /// Whether the remote score of a sample differs from the local one (None: no
    /// remote score for it).
    pub fn remote_differs(&self, sample: &Sample, evaluator: usize) -> Option<bool> {
        let name = &self.evaluators.get(evaluator)?.name;
        let remote = *self.ship.remote.get(&(sample.hash, name.clone()))?;
        let local = sample.cells.get(evaluator).and_then(|c| c.score());
        Some(match (remote, local) {
            (Some(r), Some(l)) => (r - l).abs() > 1e-6,
            (r, l) => r.is_some() != l.is_some(),
        })
    }

    /// The combined reward of a sample: the weighted sum of its evaluators' scores, as
    /// TRL combines reward functions. `None` when weights are not configured or a score
    /// is missing.
    pub fn combined(&self, sample: &Sample) -> Option<f64> {
        let weights = self.weights.as_ref()?;
        let mut total = 0.0;
        for (e, w) in weights.iter().enumerate() {
            total += w * sample.cells.get(e)?.score()?;
        }
        Some(total)
    }

    /// The change of a sample's score from the baseline.
    pub fn delta(&self, sample: &Sample, evaluator: usize) -> Option<f64> {
        let baseline = self.baseline.as_ref()?;
        let name = &self.evaluators.get(evaluator)?.name;
        let before = baseline.score(sample, name)??;
        Some(sample.cells.get(evaluator)?.score()? - before)
    }

    fn changed(&self, sample: &Sample) -> bool {
        match &self.baseline {
            Some(baseline) => self.evaluators.iter().enumerate().any(|(e, info)| {
                let now = sample.cells.get(e).and_then(|c| c.score());
                match baseline.score(sample, &info.name) {
                    Some(before) => match (before, now) {
                        (Some(a), Some(b)) => (a - b).abs() > 1e-12,
                        (a, b) => a.is_some() != b.is_some(),
                    },
                    None => true,
                }
            }),
            None => sample.cells.iter().any(|c| c.stale),
        }
    }

    fn matches(&self, sample: &Sample) -> bool {
        if self.changed_only && !self.changed(sample) {
            return false;
        }
        self.filter.iter().all(|cond| match cond {
            Cond::Text(t) => self.text(sample).to_ascii_lowercase().contains(t.as_str()),
            Cond::Error => sample.bad.is_some() || sample.cells.iter().any(|c| c.is_error()),
            Cond::Changed => self.changed(sample),
            Cond::Remote => {
                (0..self.evaluators.len()).any(|e| self.remote_differs(sample, e) == Some(true))
            }
            Cond::Score {
                evaluator,
                op,
                value,
            } => {
                let e = evaluator.unwrap_or(self.evaluator);
                sample
                    .cells
                    .get(e)
                    .and_then(|c| c.score())
                    .is_some_and(|s| op.test(s, *value))
            }
        })
    }

    /// Each sample's rollout-group key (its prompt), read from the sample lines.
    fn compute_group_keys(&mut self) {
        if self
            .group_keys
            .as_ref()
            .is_some_and(|k| k.len() == self.samples.len())
        {
            return;
        }
        let keys = self
            .samples
            .iter()
            .map(|s| {
                let value: serde_json::Value = serde_json::from_str(&self.text(s)).ok()?;
                crate::insight::group_key(&value, self.group_by.as_deref())
            })
            .collect();
        self.group_keys = Some(keys);
    }

    fn count_fresh(&mut self) {
        self.fresh = self
            .samples
            .iter()
            .flat_map(|s| s.cells.iter())
            .filter(|c| c.is_fresh())
            .count();
    }

    fn count_errors(&mut self) {
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

    /// Recomputes the filtered, sorted list, keeping the same sample selected.
    pub fn refresh_view(&mut self) {
        self.view_stale = false;
        let keep = self.selected();
        let mut view: Vec<usize> = (0..self.samples.len())
            .filter(|&i| self.matches(&self.samples[i]))
            .collect();
        if let Some((e, descending)) = self.sort {
            view.sort_by(|&a, &b| {
                let sa = self.samples[a].cells.get(e).and_then(|c| c.score());
                let sb = self.samples[b].cells.get(e).and_then(|c| c.score());
                match (sa, sb) {
                    (Some(x), Some(y)) => {
                        let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
                        if descending {
                            o.reverse()
                        } else {
                            o
                        }
                    }
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                }
                .then(a.cmp(&b))
            });
        }
        self.view = view;
        self.cursor = keep
            .and_then(|k| self.view.iter().position(|&i| i == k))
            .unwrap_or_else(|| self.cursor.min(self.view.len().saturating_sub(1)));
    }

    fn replace_samples(&mut self, mut samples: Vec<Sample>) {
        let n = self.evaluators.len();
        let keep = self
            .selected_sample()
            .map(|s| (s.at.file, s.hash, s.at.index));
        // outcomes follow content: the same line, wherever it moved, keeps its scores
        let mut old: HashMap<[u8; 16], Vec<Cell>> = HashMap::new();
        for s in self.samples.drain(..) {
            old.entry(s.hash).or_insert(s.cells);
        }
        for s in &mut samples {
            s.cells = old
                .get(&s.hash)
                .cloned()
                .unwrap_or_else(|| vec![Cell::default(); n]);
            s.cells.resize(n, Cell::default());
        }
        self.samples = samples;
        self.group_keys = None;
        if self.samples.len() <= EAGER_GROUPS {
            self.compute_group_keys();
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

    fn replace_evaluators(&mut self, evaluators: Vec<EvaluatorInfo>) {
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
        if let Some((e, d)) = self.sort {
            let name = old_names.get(e);
            self.sort = name
                .and_then(|n| self.evaluators.iter().position(|x| &x.name == n))
                .map(|e| (e, d));
        }
        self.refresh_view();
    }

    /// Summary of one evaluator over every sample.
    pub fn summary(&self, evaluator: usize) -> Summary {
        let mut b = SummaryBuilder::default();
        for s in &self.samples {
            let Some(cell) = s.cells.get(evaluator) else {
                continue;
            };
            match (&cell.outcome, cell.full()) {
                (_, Some(o)) => b.add(o),
                (Some(kept), None) => b.add(&Outcome {
                    score: kept.score,
                    ..Outcome::scored(0.0, Default::default())
                }),
                (None, None) => {}
            }
        }
        b.finish()
    }

    /// Scores of one evaluator (for the histogram).
    pub fn scores(&self, evaluator: usize) -> Vec<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.cells.get(evaluator).and_then(|c| c.score()))
            .collect()
    }

    /// Rollout groups of one evaluator's scores: (groups of two or more, of which with
    /// zero variance). `None` until the group keys are computed.
    pub fn group_summary(&self, evaluator: usize) -> Option<(usize, usize)> {
        let keys = self.group_keys.as_ref()?;
        let scores: Vec<Option<f64>> = self
            .samples
            .iter()
            .map(|s| s.cells.get(evaluator).and_then(|c| c.score()))
            .collect();
        let groups = crate::insight::groups(keys, &scores);
        Some((
            groups.len(),
            groups.iter().filter(|g| g.zero_variance).count(),
        ))
    }

    /// Each component's share of how the evaluator's score varies.
    pub fn variance_shares(&self, evaluator: usize) -> Vec<(String, f64)> {
        let names = self
            .components
            .get(evaluator)
            .map(|c| c.as_slice())
            .unwrap_or(&[]);
        let cells = self
            .samples
            .iter()
            .filter_map(|s| s.cells.get(evaluator).filter(|c| !c.is_error()))
            .map(|c| (c.score(), &c.parts[..]));
        crate::insight::variance_shares_compact(cells, names)
    }

    /// Component metrics whose score is the same on every sample that has them.
    pub fn constant_metrics(&self, evaluator: usize) -> Vec<(String, f64)> {
        let mut seen: Vec<(String, Option<f64>, bool)> = Vec::new();
        let names = self
            .components
            .get(evaluator)
            .map(|c| c.as_slice())
            .unwrap_or(&[]);
        for s in &self.samples {
            let Some(cell) = s.cells.get(evaluator).filter(|c| c.outcome.is_some()) else {
                continue;
            };
            // a kept outcome says which metrics it has; else its component scores do
            let metrics = match cell.full() {
                Some(o) => o.metric_list(),
                None => names
                    .iter()
                    .zip(&cell.parts[..])
                    .filter(|(_, x)| !x.is_nan())
                    .map(|(n, x)| {
                        let m = Metric {
                            score: Some(*x),
                            is_score_valid: true,
                            reason: None,
                        };
                        (n.clone(), m)
                    })
                    .collect(),
            };
            for (name, Metric { score, .. }) in metrics {
                match seen.iter_mut().find(|(n, _, _)| *n == name) {
                    Some((_, first, varies)) => {
                        if *first != score {
                            *varies = true;
                        }
                    }
                    None => seen.push((name, score, false)),
                }
            }
        }
        seen.into_iter()
            .filter(|(_, _, varies)| !varies)
            .filter_map(|(n, s, _)| Some((n, s?)))
            .collect()
    }
}

/// Handles a key in the deploy dialog: `Ok(effect)` to deploy, `Err(true)` to close,
/// `Err(false)` to stay open.
fn deploy_form_key(form: &mut DeployForm, key: KeyEvent) -> Result<Effect, bool> {
    match key.code {
        KeyCode::Esc => return Err(true),
        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return Err(true),
        KeyCode::Enter => {
            let id = form.id.trim().to_string();
            if !id.is_empty() {
                return Ok(Effect::Deploy {
                    id,
                    display_name: form.display_name.trim().to_string(),
                    force: form.force,
                });
            }
        }
        KeyCode::Tab | KeyCode::Down => form.field = (form.field + 1) % 3,
        KeyCode::BackTab | KeyCode::Up => form.field = (form.field + 2) % 3,
        KeyCode::Char(' ') if form.field == 2 => form.force = !form.force,
        KeyCode::Backspace => {
            match form.field {
                0 => form.id.pop(),
                1 => form.display_name.pop(),
                _ => None,
            };
        }
        KeyCode::Char(c) => match form.field {
            0 => form.id.push(c),
            1 => form.display_name.push(c),
            _ => {}
        },
        _ => {}
    }
    Err(false)
}

#[cfg(test)]
mod tests;
