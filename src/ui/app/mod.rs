//! The workbench's state and the one function that changes it: `update(msg) -> effects`.
//!
//! Plain data: no terminal, no processes, no files. Keys and run results come in as
//! [`Msg`]s; what must happen outside (rerun, open the editor, quit) goes out as
//! [`Effect`]s for the live loop to carry out. Tests drive it exactly like the loop does.

mod baseline;
mod filter;
mod generation;
#[cfg(test)]
mod generation_tests;
mod hacking;
mod keys;
mod labels;
mod logged;
mod message;
mod overlays;
mod results;
mod samples;
mod screen;
mod ship;
mod signal;
mod slow;
mod stats;
mod text_match;
mod titles;
mod trust;
mod verifier;

pub use baseline::{Baseline, BaselineOf};
pub use filter::{parse_filter, Cond, Op};
pub use generation::GenerationMsg;
pub use hacking::{hacking_settings, HackingSettings, HackingView};
pub use labels::{label_mark, Labels};
pub use logged::{
    logged_sort_evaluator, logged_sort_index, LoggedCell, LoggedReport, StepMeans, LOGGED_ADVANTAGE,
};
pub use message::{Message, Tone};
pub use overlays::{DeployForm, History, Overlay};
pub use results::Detail;
pub use samples::{Cell, EvaluatorInfo, Kept, Lines, MemoryLines, RunState, Sample};
pub use screen::{content_text, ScrollLimits, Shown, Source};
pub use ship::{Ship, ShipMsg, TunnelKey};
pub use signal::{Member, SignalColumn, TrainingView};
pub use slow::{time_sort_evaluator, time_sort_index};
pub use stats::{EvaluatorStats, HISTOGRAM_BINS};
pub use trust::{swallowed_line, SwallowedCount};
pub use verifier::Correct;

use super::keymap::{Action, Keymap};
use crate::model::{EvalError, Outcome};
use crate::runner::Event;
use baseline::RankMemo;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use overlays::deploy_form_key;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    List,
    Conversation,
    Breakdown,
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
    /// Deploy to Cloud Run or Kubernetes (the dialog's other targets).
    DeployTarget(crate::ui::deploy_target::TargetRequest),
    /// Replay the samples on the tunnel or deployment and compare.
    CompareRemote,
    /// Drop this column if a deploy added it (a deployed service's column).
    DropColumn {
        name: String,
    },
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
    /// Keep (or clear, `None`) the human label of the sample with this content key
    /// (every line of its text shares it), given on the sample at `at`.
    SaveLabel {
        key: [u8; 16],
        label: Option<crate::trust::agreement::Label>,
        at: crate::model::SampleRef,
    },
    /// Ask the policy server (`[generate]`) for more completions of this sample's
    /// prompt: the sample's line, its samples file, and how many its rollout group
    /// holds (the new completions are indices past them). Answered by
    /// `Msg::Generation`.
    Generate {
        file: usize,
        line: String,
        have: usize,
    },
}

/// Everything that can happen to the workbench.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    /// The terminal's size (at start and when it changes).
    Resized(u16, u16),
    /// The workspace's settings (at start and after `rwb.toml` changed).
    Config(Settings),
    /// Where the samples lines are read from, and the samples files' labels.
    Lines {
        lines: Arc<dyn Lines>,
        labels: Vec<String>,
    },
    /// The samples files were (re)read. Outcomes move with their sample's content.
    Samples(Vec<Sample>),
    /// The next samples of a first load, in order (the list grows while the files are
    /// read, and a run in flight counts them in).
    MoreSamples(Vec<Sample>),
    /// A first load given as `MoreSamples` is complete.
    Loaded,
    /// The evaluators (at start and after `rwb.toml` changed). Outcomes move by name.
    Evaluators(Vec<EvaluatorInfo>),
    /// A run began for these evaluators; `stale` ones changed code.
    RunStarted {
        evaluators: Vec<usize>,
        stale: Vec<usize>,
    },
    /// Results as the runner reports them (evaluators numbered as in the workspace,
    /// samples by `at.index`), a burst at a time.
    Results(Vec<Event>),
    /// An evaluator's module imports (or fails to), its style and code key.
    Prepared(PreparedInfo),
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
    /// The highlighted source beside the shown error (see `wanted_source`).
    Source(Source),
    /// A frame was drawn; how far its panes scroll.
    Drawn(ScrollLimits),
    /// How a generation asked for with `g` goes.
    Generation(GenerationMsg),
    /// `[training]` (at start and after `rwb.toml` changed): how the trainer turns
    /// rewards into advantages, or `None` without the section.
    Training(Option<crate::training::Settings>),
    /// The human labels given in the workbench (SPEC §16), as the live loop loaded
    /// them at start.
    Labels(Labels),
    /// The labels of the samples files' `human` columns by content key, and the
    /// columns' names (each time the samples are indexed).
    HumanColumn {
        labels: Labels,
        names: Vec<String>,
    },
    /// SPEC §20: the samples' correctness by content key (each time they are indexed).
    Correct(Correct),
    /// The run just started watches these evaluators' calls for the exceptions they
    /// swallow (`R`, SPEC §16).
    Watched(Vec<usize>),
    /// Time to bring up to date what results streaming in left for later (see
    /// [`App::deferred`]): the live loop sends it at most a few times a second.
    Refresh,
    /// `[hacking]` and the `heldout = true` evaluators (SPEC §19), at start and after
    /// `rwb.toml` changed.
    Hacking(HackingSettings),
}

impl Msg {
    /// Whether the message may change scores (what derived views such as the rank
    /// change key on; pinning a baseline counts too, see `pin_baseline`).
    fn changes_scores(&self) -> bool {
        matches!(
            self,
            Msg::Samples(_) | Msg::MoreSamples(_) | Msg::Evaluators(_) | Msg::Results(_)
        )
    }

    /// Whether the message may change which samples there are or what the pinned
    /// baseline's scores are for them.
    fn changes_samples(&self) -> bool {
        matches!(
            self,
            Msg::Samples(_) | Msg::MoreSamples(_) | Msg::Evaluators(_) | Msg::Training(_)
        )
    }
}

/// The workspace's settings the app uses (`Msg::Config`).
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Pass threshold for flips (`[insight] threshold`).
    pub threshold: f64,
    /// Weights for the combined reward, when rwb.toml gives any.
    pub weights: Option<Vec<f64>>,
    /// What groups rollouts (`[insight] group_by`).
    pub group_by: Option<String>,
    /// The id the deploy dialog proposes.
    pub deploy_id: String,
    /// Outcomes can be read back from a store (see `App::store_details`).
    pub store_details: bool,
    /// Each evaluator's `logged = "NAME"` (by evaluator name): the logged score it
    /// is compared with, when not the one of its own name.
    pub logged: std::collections::BTreeMap<String, String>,
    /// `[sandbox] unsafe = true`: said on every screen while set (SPEC §18).
    pub sandbox_unsafe: bool,
}

/// What preparing an evaluator found (`Msg::Prepared`).
#[derive(Clone, Debug, Default)]
pub struct PreparedInfo {
    pub evaluator: usize,
    /// Its module failed to import (`None`: it imports).
    pub error: Option<EvalError>,
    pub style: Option<crate::model::Style>,
    /// (its name, its code key): where its outcomes are stored.
    pub key: Option<(String, [u8; 32])>,
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
    /// First row of the list on screen (follows the cursor, see `settle`).
    pub list_offset: usize,
    pub list_height: usize,
    /// How many of the list's scrolling columns are scrolled off to the left (`<`/`>`).
    pub list_hscroll: usize,
    /// The last frame left columns off on the right (`>` has somewhere to go).
    pub list_more_right: bool,
    pub focus: Focus,
    pub evaluator: usize,
    pub conversation_scroll: u16,
    pub breakdown_scroll: u16,
    pub detail: bool,
    pub overlay: Overlay,
    /// How far the help, statistics or report overlay is scrolled.
    pub overlay_scroll: u16,
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
    /// `[training]`: how the trainer turns rewards into advantages, when rwb.toml says.
    pub training: Option<crate::training::Settings>,
    /// The trainer's numbers of every sample (with `[training]`; see `signal.rs`).
    pub training_view: Option<TrainingView>,
    /// Scores, samples or settings changed since `training_view` was computed.
    signal_stale: bool,
    /// The baseline or the samples changed since its advantages were computed.
    pinned_stale: bool,
    pub history: Option<History>,
    /// Human labels given here by sample content key (`+`/`-`/`0`).
    pub labels: Labels,
    /// Labels from the samples files' `human = "COLUMN"` columns by content key, and
    /// the columns' names: under `labels` (a label given here wins).
    pub column_labels: Labels,
    pub label_columns: Vec<String>,
    /// SPEC §20: each sample's correctness its file says (a `label` column, a
    /// RewardBench role), by content key (see `verifier.rs`).
    pub correct: Correct,
    /// Where the labels `v` counts come from (see [`App::labels_note`]), computed
    /// with `stats_report`.
    pub labels_report: Option<String>,
    /// Evaluators (by name) whose last `R` watched for swallowed exceptions, until
    /// their code changes or they are rerun alone (see `trust.rs`).
    pub watched: std::collections::BTreeSet<String>,
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
    /// The samples' rollout groups (their prompt, or the `group_by` column, within
    /// their step; or their source's group) with each group's members, found when the
    /// samples load (few, or with `[training]`) or when the statistics open, and
    /// grown as the list grows (see `stats.rs`): the group view walks one group.
    groups: Option<crate::training::Grouping>,
    /// Bumped whenever `groups` changes (what the baseline's advantages key on).
    groups_revision: u64,
    /// Failed outcomes per evaluator, kept as results arrive (the status line must
    /// not count a million cells every frame).
    pub error_counts: Vec<usize>,
    /// Something changed since the last frame.
    pub dirty: bool,
    view_stale: bool,
    /// The statistics overlay's figures, computed when it opens and again when
    /// scores changed (never while drawing; see `stats.rs`).
    pub stats_report: Option<Vec<stats::EvaluatorStats>>,
    /// SPEC §19: the proxy beside the held-out check per step (see `hacking.rs`).
    pub hacking: HackingView,
    /// Beside them, the comparison with the samples' logged scores (`logged.rs`).
    pub logged_report: Option<LoggedReport>,
    /// Each evaluator's `logged = "NAME"`, by evaluator name (`Settings::logged`).
    logged_names: std::collections::BTreeMap<String, String>,
    /// Each evaluator paired with its logged name.
    logged_cmp: crate::model::LoggedCmp,
    /// Which logged names and steps the samples have (see `logged.rs`).
    logged_seen: logged::LoggedSeen,
    /// A first load is still growing the list (`Msg::MoreSamples` until `Msg::Loaded`):
    /// a run in flight is not done when it caught up with the samples read so far.
    pub loading: bool,
    stats_stale: bool,
    /// The workbench reads outcomes back from the store: cells keep only scores (and
    /// errors); `false` (no store, tests) keeps every outcome whole.
    pub store_details: bool,
    /// `[sandbox] unsafe = true` is set: the status line says so on every screen.
    pub sandbox_unsafe: bool,
    /// The selected cell's whole outcome (see [`Detail`]).
    pub selected_detail: Option<Detail>,
    /// Each evaluator's code key, by name (where its outcomes are in the store).
    pub code_keys: HashMap<String, [u8; 32]>,
    /// Cells scored and not stale, kept as results arrive (for the frame trace).
    pub fresh: usize,
    /// Per evaluator, the last error kept: an identical one shares it (a failed
    /// import fails every sample the same way).
    last_error: Vec<Option<Arc<Outcome>>>,
    /// The terminal's size, once known.
    pub size: Option<(u16, u16)>,
    /// What drawing reads of the samples lines (see [`App::settle`]).
    shown: Shown,
    /// The highlighted source beside the shown error.
    pub source: Option<Source>,
    /// The filter's words matched against every sample line (see `text_match.rs`).
    text_hits: text_match::TextHits,
    /// A generation asked for with `g` is under way.
    pub generating: bool,
    /// The group-size warning last put in the notice (see `fill_signal`).
    group_warning_said: Option<String>,
    /// The unpaired logged names last put in the notice (see `say_unpaired_logged`).
    unpaired_said: Vec<String>,
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
            list_hscroll: 0,
            list_more_right: false,
            focus: Focus::List,
            evaluator: 0,
            conversation_scroll: 0,
            breakdown_scroll: 0,
            detail: false,
            overlay: Overlay::None,
            overlay_scroll: 0,
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
            training: None,
            training_view: None,
            signal_stale: true,
            pinned_stale: true,
            history: None,
            labels: Default::default(),
            column_labels: Default::default(),
            label_columns: Vec::new(),
            correct: Default::default(),
            labels_report: None,
            watched: Default::default(),
            report: None,
            revision: 0,
            rank_memo: None,
            groups: None,
            groups_revision: 0,
            group_by: None,
            components: Vec::new(),
            error_counts: Vec::new(),
            dirty: true,
            view_stale: true,
            stats_report: None,
            hacking: HackingView::default(),
            logged_report: None,
            logged_names: Default::default(),
            logged_cmp: Default::default(),
            logged_seen: Default::default(),
            loading: false,
            stats_stale: true,
            store_details: false,
            sandbox_unsafe: false,
            selected_detail: None,
            code_keys: HashMap::new(),
            fresh: 0,
            last_error: Vec::new(),
            size: None,
            shown: Shown::default(),
            source: None,
            text_hits: Default::default(),
            generating: false,
            group_warning_said: None,
            unpaired_said: Vec::new(),
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
        if let Msg::Drawn(limits) = msg {
            self.drawn(limits);
            return Vec::new();
        }
        self.dirty = true;
        if msg.changes_scores() {
            self.revision += 1;
            self.stats_stale = true;
            self.signal_stale = true;
        }
        if msg.changes_samples() {
            self.signal_stale = true;
            self.pinned_stale = true;
        }
        // results of a run in flight leave an O(samples) refresh (the sorted or
        // filtered list, the statistics) for `Msg::Refresh`, not every burst
        let streaming = self.running && matches!(msg, Msg::Results(_));
        // the samples whose groups' numbers a burst of many samples' run changes
        let patch: Vec<usize> = match &msg {
            Msg::Results(events) if streaming && self.samples.len() > signal::EAGER_SIGNAL => {
                events
                    .iter()
                    .map(|crate::runner::Event::Result { at, .. }| at.index)
                    .collect()
            }
            _ => Vec::new(),
        };
        let pairing = matches!(
            msg,
            Msg::Loaded | Msg::Samples(_) | Msg::Config(_) | Msg::Evaluators(_)
        );
        if matches!(
            msg,
            Msg::Samples(_)
                | Msg::Evaluators(_)
                | Msg::Config(_)
                | Msg::Labels(_)
                | Msg::HumanColumn { .. }
        ) {
            self.hacking_reset();
        }
        let effects = match msg {
            Msg::Key(key) => self.on_key(key),
            other => {
                self.take(other);
                Vec::new()
            }
        };
        if !streaming || self.samples.len() <= signal::EAGER_SIGNAL {
            // before the list: it may be sorted or filtered by the advantage
            self.fill_signal();
        } else {
            // the groups the burst touched, at once (the rest at `Msg::Refresh`)
            self.patch_signal(&patch);
        }
        if !streaming {
            // before the list: `/hacked` keeps the samples it finds
            self.fill_hacking();
        }
        if self.view_stale && !streaming {
            self.refresh_view();
        }
        if !streaming {
            self.fill_stats();
        }
        if pairing {
            self.say_unpaired_logged();
        }
        self.settle();
        effects
    }

    /// Whether results streaming in left a refresh for later: the live loop then
    /// sends `Msg::Refresh` (a sorted or filtered list, or the open statistics, are
    /// recomputed over every sample, which a million samples make too slow to do
    /// for each burst of results).
    pub fn deferred(&self) -> bool {
        self.view_stale
            || (self.stats_stale && self.overlay == Overlay::Stats)
            || (self.signal_stale && self.training.is_some())
    }

    /// Takes every message but keys.
    fn take(&mut self, msg: Msg) {
        match msg {
            Msg::Key(_) | Msg::Drawn(_) | Msg::Refresh => {}
            Msg::Resized(width, height) => self.size = Some((width, height)),
            Msg::Config(settings) => self.configure(settings),
            Msg::Lines { lines, labels } => {
                self.lines = lines;
                self.samples_labels = labels;
                self.forget_shown();
            }
            Msg::Samples(samples) => {
                self.loading = false;
                self.replace_samples(samples);
            }
            Msg::MoreSamples(samples) => {
                self.loading = true;
                self.append_samples(samples);
            }
            Msg::Loaded => self.loaded(),
            Msg::Evaluators(evaluators) => self.replace_evaluators(evaluators),
            Msg::RunStarted { evaluators, stale } => self.run_started(&evaluators, &stale),
            Msg::Results(events) => {
                for crate::runner::Event::Result {
                    evaluator,
                    at,
                    outcome,
                    ..
                } in events
                {
                    self.on_result(evaluator, at.index, outcome);
                }
            }
            Msg::Prepared(prepared) => self.prepared(prepared),
            Msg::RunFinished => {
                self.running = false;
                for info in &mut self.evaluators {
                    info.state = RunState::Idle;
                }
                self.attribute();
            }
            Msg::ConfigError(e) => self.config_error = e,
            Msg::Notice(text) => self.notice = Some(text),
            Msg::Watching(paths) => self.watching = paths,
            Msg::Ship(m) => self.on_ship(m),
            Msg::History(h) => {
                self.history = Some(h);
                self.overlay = Overlay::History;
            }
            Msg::Report(title, lines) => {
                self.report = Some((title, lines));
                if self.overlay != Overlay::Report {
                    self.overlay_scroll = 0;
                }
                self.overlay = Overlay::Report;
            }
            Msg::Detail(detail) => self.take_detail(detail),
            Msg::Source(source) => self.source = Some(source),
            Msg::Generation(m) => self.on_generation(m),
            Msg::Training(settings) => self.set_training(settings),
            Msg::Hacking(settings) => self.set_hacking(settings),
            Msg::Labels(labels) => {
                self.labels = labels;
                self.stats_stale = true;
                self.view_stale = true;
            }
            Msg::Watched(evaluators) => self.watching(&evaluators),
            Msg::HumanColumn { labels, names } => {
                if !(labels.is_empty() && self.column_labels.is_empty()) {
                    self.stats_stale = true;
                    self.view_stale = true;
                }
                self.column_labels = labels;
                self.label_columns = names;
            }
            Msg::Correct(correct) => {
                if !(correct.is_empty() && self.correct.is_empty()) {
                    self.stats_stale = true;
                    self.view_stale = true;
                }
                self.correct = correct;
            }
        }
    }

    /// The workspace's settings (at start and after `rwb.toml` changed).
    fn configure(&mut self, settings: Settings) {
        self.stats_stale = true;
        self.threshold = settings.threshold;
        if self.weights != settings.weights {
            self.weights = settings.weights;
            self.signal_stale = true;
            self.pinned_stale = true;
        }
        self.ship.default_id = settings.deploy_id;
        self.store_details = settings.store_details;
        self.sandbox_unsafe = settings.sandbox_unsafe;
        if self.logged_names != settings.logged {
            self.logged_names = settings.logged;
            self.pair_logged();
            self.view_stale = true;
        }
        if settings.group_by != self.group_by {
            self.group_by = settings.group_by;
            self.set_groups(None); // found again with the new key
            self.signal_stale = true;
            self.pinned_stale = true;
        }
    }

    /// `[training]` set, changed or removed: the trainer's numbers follow it.
    fn set_training(&mut self, settings: Option<crate::training::Settings>) {
        if let (Some(new), Some(old)) = (&settings, &self.training) {
            if new.group != old.group {
                self.set_groups(None); // the groups are formed anew
            }
        }
        self.training = settings;
        self.stats_stale = true;
        if self.training.is_none() {
            self.sort = self
                .sort
                .filter(|(e, _)| SignalColumn::from_sort_index(*e).is_none());
        }
        self.view_stale = true;
    }

    /// An evaluator was prepared: whether it imports, its style and code key.
    fn prepared(&mut self, prepared: PreparedInfo) {
        self.stats_stale = true;
        if let Some(info) = self.evaluators.get_mut(prepared.evaluator) {
            info.import_error = prepared.error;
            info.style = prepared.style.or(info.style);
        }
        if let Some((name, key)) = prepared.key {
            self.code_keys.insert(name, key);
        }
    }
}

#[cfg(test)]
mod tests;
