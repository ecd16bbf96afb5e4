//! The live workbench: one loop that merges terminal input, file changes and run
//! results, feeds them to the app as messages, carries out the app's effects, and
//! redraws only when something changed.
//!
//! Owns the terminal (restored on quit, on error and on panic), the watcher and the
//! run in flight: a newer change aborts the stale run (its busy workers are killed)
//! and starts a new one through the cache, so only what changed is evaluated.

mod first;
mod indexing;
mod runs;
mod ship;
mod terminal;
#[cfg(test)]
mod tests;

use crate::model::Outcome;
use crate::model::ResultRow;
use crate::runner::Prepared;
use crate::session::{Fail, OpenOptions, Session};
use crate::store::{CodeKey, SampleHash, Store};
use crate::ui::app::{
    App, Detail, Effect, EvaluatorInfo, Lines, MemoryLines, Msg, RunState, Sample, ShipMsg,
};
use crate::ui::highlight::Highlighter;
use crate::ui::keymap::Keymap;
use crate::ui::theme::Theme;
use crate::ui::view::{self, Ctx};
use crate::workspace::{LineFiles, SampleIndex, Watcher, Workspace};
use crossterm::event::{Event as TermEvent, EventStream, KeyEventKind};
use futures::StreamExt;
use runs::{RunMsg, Runs};
use ship::{ShipControl, ShipEvent};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The longest a burst of results may delay a frame.
const FRAME_BUDGET: Duration = Duration::from_millis(12);
impl Lines for LineFiles {
    fn line(&self, file: usize, offset: u64, len: u32) -> Option<String> {
        self.read(file, offset, len)
    }
}

/// How many times in a row a run may find the samples files changed behind the
/// index (and index them again) before the workbench stops chasing them.
const MAX_RESYNCS: u32 = 3;

/// What the indexer (reading the samples files off the UI thread) reports.
enum Indexed {
    /// The first samples of a first load, to show at once.
    First(Vec<Sample>),
    Done(Vec<Sample>, SampleIndex, LineFiles),
    Failed(String),
}

/// A run waiting for the samples index.
#[derive(Debug, Default)]
struct PendingRun {
    /// Evaluators whose code changed.
    stale: Vec<usize>,
    /// Evaluators asked to be evaluated again without the cache meanwhile.
    fresh: Vec<usize>,
}

/// Opens the workbench on `dir`.
pub async fn open(dir: PathBuf, options: OpenOptions) -> Result<ExitCode, Fail> {
    let session = Session::open(dir, &options)?;
    let user = UserConfig::load();
    let theme_name = session
        .workspace
        .config
        .theme
        .clone()
        .or(user.theme.clone());
    let (theme, theme_error) = Theme::from_env(theme_name.as_deref(), user.themes_dir.as_deref());
    let keymap = match &user.keys {
        Some(keys) => Keymap::with_overrides(keys).unwrap_or_else(|e| {
            eprintln!("rwb: {}: {e}; using the default keys", user.path.display());
            Keymap::default()
        }),
        None => Keymap::default(),
    };
    let mut live = Live::new(session, options, keymap);
    if let Some(e) = theme_error.or(user.error.clone()) {
        live.app.update(Msg::Notice(e));
    }
    let highlighter = Highlighter::new();
    let mut term = terminal::Terminal::enter()
        .map_err(|e| Fail::Usage(format!("cannot open the terminal: {e}")))?;
    let result = live.run(&mut term, &theme, &highlighter).await;
    term.leave();
    result.map(|()| ExitCode::SUCCESS)
}

/// Keybindings and theme from the user's config dir (`config.toml`).
#[derive(Default)]
struct UserConfig {
    path: PathBuf,
    theme: Option<String>,
    keys: Option<toml::Table>,
    themes_dir: Option<PathBuf>,
    error: Option<String>,
}

impl UserConfig {
    fn load() -> UserConfig {
        let Some(dirs) = directories::ProjectDirs::from("", "", "rwb") else {
            return UserConfig::default();
        };
        let dir = dirs.config_dir().to_path_buf();
        let path = dir.join("config.toml");
        let mut config = UserConfig {
            themes_dir: Some(dir.join("themes")),
            path: path.clone(),
            ..Default::default()
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            return config;
        };
        match text.parse::<toml::Table>() {
            Ok(table) => {
                config.theme = table
                    .get("theme")
                    .and_then(|t| t.as_str())
                    .map(String::from);
                config.keys = table.get("keys").and_then(|k| k.as_table()).cloned();
            }
            Err(e) => config.error = Some(format!("{}: {}", path.display(), e.message())),
        }
        config
    }
}

struct Live {
    session: Session,
    options: OpenOptions,
    app: App,
    runs: Runs,
    prepared: Vec<Option<Prepared>>,
    run_rx: mpsc::UnboundedReceiver<(u64, RunMsg)>,
    index_tx: mpsc::UnboundedSender<(u64, Indexed)>,
    index_rx: mpsc::UnboundedReceiver<(u64, Indexed)>,
    index_generation: u64,
    /// The samples as last indexed: what runs are fed from.
    index: Arc<SampleIndex>,
    /// A run waits for the samples index (`Some` while one is being built).
    pending_run: Option<PendingRun>,
    /// Evaluators the run in flight evaluates without reading the cache.
    running_fresh: Vec<usize>,
    /// The run in flight had a result for a line the index does not hold.
    mismatched: bool,
    /// Indexes started in a row because a run found the files changed behind them.
    resyncs: u32,
    ship: ShipControl,
    ship_rx: mpsc::UnboundedReceiver<ShipEvent>,
    /// Each evaluator's code key before its current one, by name: cells not rerun
    /// yet show outcomes stored under it.
    old_keys: HashMap<String, CodeKey>,
}

impl Live {
    fn new(session: Session, options: OpenOptions, keymap: Keymap) -> Live {
        let labels = session
            .workspace
            .samples
            .iter()
            .map(|f| f.label.clone())
            .collect();
        let mut app = App::new(
            session.workspace.root.clone(),
            labels,
            keymap,
            Arc::new(MemoryLines::default()),
        );
        app.store_details = session.runner.store().is_some();
        let (tx, rx) = mpsc::unbounded_channel();
        let (index_tx, index_rx) = mpsc::unbounded_channel();
        let runs = Runs::new(tx);
        let (ship_tx, ship_rx) = mpsc::unbounded_channel();
        let n = session.workspace.evaluators.len();
        Live {
            session,
            options,
            app,
            runs,
            prepared: vec![None; n],
            run_rx: rx,
            index_tx,
            index_rx,
            index_generation: 0,
            index: Arc::default(),
            pending_run: None,
            running_fresh: Vec::new(),
            mismatched: false,
            resyncs: 0,
            ship: ShipControl::new(ship_tx),
            ship_rx,
            old_keys: HashMap::new(),
        }
    }

    async fn run(
        &mut self,
        term: &mut terminal::Terminal,
        theme: &Theme,
        highlighter: &Highlighter,
    ) -> Result<(), Fail> {
        let (watch_tx, mut watch_rx) = mpsc::unbounded_channel();
        let mut watcher = self.start_watcher(watch_tx.clone());
        self.show_workspace();
        self.draw(term, theme, highlighter);
        self.reload_samples(Vec::new());
        let result = self
            .event_loop(
                term,
                theme,
                highlighter,
                &mut watcher,
                watch_tx,
                &mut watch_rx,
            )
            .await;
        self.ship.shutdown().await;
        result
    }

    /// Hands the app what the workspace says before the first frame: evaluators,
    /// settings and warnings.
    fn show_workspace(&mut self) {
        self.app.update(Msg::Evaluators(self.evaluator_infos()));
        self.app.ship.default_id = default_deploy_id(&self.session.workspace);
        self.app.threshold = self.session.workspace.config.threshold();
        self.app.weights = self.session.workspace.weights();
        self.app.group_by = self.session.workspace.config.group_by();
        self.show_warnings(&[]);
    }

    async fn event_loop(
        &mut self,
        term: &mut terminal::Terminal,
        theme: &Theme,
        highlighter: &Highlighter,
        watcher: &mut Option<Watcher>,
        watch_tx: mpsc::UnboundedSender<Vec<PathBuf>>,
        watch_rx: &mut mpsc::UnboundedReceiver<Vec<PathBuf>>,
    ) -> Result<(), Fail> {
        let mut stats_tick = tokio::time::interval(Duration::from_secs(1));
        stats_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut input = Some(EventStream::new());
        loop {
            let keys = input
                .as_mut()
                .expect("the input stream is back after the editor");
            tokio::select! {
                event = keys.next() => match event {
                    Some(Ok(TermEvent::Key(key))) if key.kind != KeyEventKind::Release => {
                        let effects = self.app.update(Msg::Key(key));
                        if self.apply(effects, term, &mut input) {
                            return Ok(());
                        }
                    }
                    Some(Ok(TermEvent::Resize(_, _))) => { self.app.update(Msg::Resized); }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => return Ok(()),
                },
                Some(paths) = watch_rx.recv() => {
                    if self.on_change(paths) {
                        *watcher = self.start_watcher(watch_tx.clone());
                    }
                }
                Some(event) = self.ship_rx.recv() => {
                    if let ShipEvent::Report(title, lines) = event {
                        self.app.update(Msg::Report(title, lines));
                    } else {
                        for m in self.ship.on_event(event, &self.session.workspace) {
                            self.app.update(Msg::Ship(m));
                        }
                    }
                }
                _ = stats_tick.tick(), if self.ship.server.is_some() => {
                    if let Some(m) = self.ship.request_stats() {
                        let now = match &m { ShipMsg::Requests(n, a, b) => Some((*n, *a, *b)), _ => None };
                        if now != self.app.ship.requests {
                            self.app.update(Msg::Ship(m));
                        }
                    }
                }
                Some((generation, indexed)) = self.index_rx.recv() => {
                    if generation == self.index_generation {
                        self.on_indexed(indexed);
                    }
                }
                Some((generation, msg)) = self.run_rx.recv() => {
                    self.on_run(generation, msg);
                    // take every result already waiting before the next frame
                    let started = Instant::now();
                    while started.elapsed() < FRAME_BUDGET {
                        match self.run_rx.try_recv() {
                            Ok((g, m)) => self.on_run(g, m),
                            Err(_) => break,
                        }
                    }
                }
            }
            self.read_detail();
            if self.app.dirty {
                self.draw(term, theme, highlighter);
            }
        }
    }

    fn draw(&mut self, term: &mut terminal::Terminal, theme: &Theme, highlighter: &Highlighter) {
        let read = |p: &Path| std::fs::read_to_string(p).ok();
        let ctx = Ctx {
            theme,
            highlighter,
            source: &read,
        };
        let app = &mut self.app;
        let started = Instant::now();
        term.draw(|frame| view::draw(frame, app, &ctx));
        self.app.dirty = false;
        if std::env::var_os("RWB_TRACE_FRAMES").is_some() {
            trace_frame(&self.app, started.elapsed());
        }
    }

    fn start_watcher(&mut self, tx: mpsc::UnboundedSender<Vec<PathBuf>>) -> Option<Watcher> {
        let ws = &self.session.workspace;
        let mut roots = vec![ws.root.clone()];
        for spec in &ws.evaluators {
            roots.push(spec.source.folder());
        }
        for f in &ws.samples {
            if let Some(parent) = f.path.parent() {
                roots.push(if parent.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    parent.to_path_buf()
                });
            }
        }
        match Watcher::start(&roots, tx) {
            Ok(w) => {
                let shown = w.roots.iter().map(|r| r.display().to_string()).collect();
                self.app.update(Msg::Watching(shown));
                Some(w)
            }
            Err(e) => {
                self.app.update(Msg::Notice(format!(
                    "cannot watch the workspace ({e}); press R to rerun by hand"
                )));
                None
            }
        }
    }

    fn evaluator_infos(&self) -> Vec<EvaluatorInfo> {
        self.session
            .workspace
            .evaluators
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let p = self.prepared.get(i).and_then(|p| p.as_ref());
                EvaluatorInfo {
                    name: spec.name.clone(),
                    source: std::path::absolute(spec.source.file())
                        .unwrap_or_else(|_| spec.source.file()),
                    style: p.and_then(|p| p.style).or(spec.style),
                    state: RunState::Idle,
                    import_error: p.and_then(|p| p.failure.clone()),
                }
            })
            .collect()
    }

    /// Indexes the samples files off the UI thread, then runs (`stale` evaluators
    /// changed code). Runs wait for the index so results land on the right lines.
    fn reload_samples(&mut self, stale: Vec<usize>) {
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
            match indexing::index_samples(&files, first_load, first) {
                Ok((samples, index, lines)) => send(Indexed::Done(samples, index, lines)),
                Err(e) => send(Indexed::Failed(e.to_string())),
            }
        });
    }

    fn on_indexed(&mut self, indexed: Indexed) {
        match indexed {
            Indexed::First(samples) => {
                if let Ok(lines) = LineFiles::open(&self.session.workspace.samples) {
                    self.app.lines = Arc::new(lines);
                }
                self.app.update(Msg::Samples(samples));
            }
            Indexed::Done(samples, index, lines) => {
                self.index = Arc::new(index);
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

    /// Starts a new run of `which` evaluators (aborting the one in flight). `stale`
    /// evaluators changed code; `fresh` ones are evaluated again without the cache.
    /// Only ever called with a complete index (see `reload_samples`).
    fn start_run(&mut self, stale: Vec<usize>, which: Vec<usize>, fresh: Vec<usize>) {
        if !self.index.is_current() && self.resyncs < MAX_RESYNCS {
            // the files changed behind the index (no watcher said so): index them again
            // and run, as asked, on the new index
            self.resyncs += 1;
            self.reload_samples(stale);
            let pending = self.pending_run.as_mut().expect("set by reload_samples");
            pending.fresh.extend(fresh);
            return;
        }
        // code changed (not only a rerun, which marks its evaluators stale): a
        // running server takes the new code
        if stale.iter().any(|e| !fresh.contains(e)) {
            self.ship
                .restart_server(self.session.runner.clone(), &self.session.workspace);
        }
        self.app.update(Msg::RunStarted {
            evaluators: which.clone(),
            stale,
        });
        self.running_fresh = fresh.clone();
        self.mismatched = false;
        let priority = first::priority(
            &self.app,
            &self.session.workspace.evaluators,
            &self.prepared,
        );
        self.runs.start(
            self.session.runner.clone(),
            self.session.workspace.evaluators.clone(),
            self.index.clone(),
            which,
            fresh,
            priority,
        );
    }

    /// `r`/`R`: evaluates one evaluator (or all) again without the cache. While the
    /// samples are being indexed, the rerun waits for the index like any run.
    fn rerun(&mut self, evaluator: Option<usize>) {
        let all: Vec<usize> = (0..self.session.workspace.evaluators.len()).collect();
        let chosen = evaluator.map_or(all, |e| vec![e]);
        match self.pending_run.as_mut() {
            Some(pending) => pending.fresh.extend(chosen),
            None => self.start_run(evaluator.into_iter().collect(), chosen.clone(), chosen),
        }
    }

    /// A result came for a line the index does not hold as the run read it: the
    /// samples files changed since they were indexed and no watcher said so (it may
    /// be down). Index them again; the run restarts, as it was asked, on the new index.
    fn resync(&mut self) {
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

    fn on_run(&mut self, generation: u64, msg: RunMsg) {
        if generation != self.runs.generation() {
            return; // a result of an aborted run
        }
        match msg {
            RunMsg::Prepared(index, prepared) => {
                let error = prepared.failure.clone();
                self.learn_key(&prepared);
                if let Some(slot) = self.prepared.get_mut(index) {
                    *slot = Some(*prepared);
                }
                self.app.update(Msg::ImportState {
                    evaluator: index,
                    error,
                });
                if let (Some(info), Some(p)) = (
                    self.app.evaluators.get_mut(index),
                    self.prepared[index].as_ref(),
                ) {
                    info.style = p.style.or(info.style);
                }
            }
            RunMsg::Result {
                evaluator,
                index,
                hash,
                outcome,
            } => {
                let matches = self.app.samples.get(index).is_some_and(|s| s.hash == hash);
                if matches {
                    self.app.update(Msg::Result {
                        evaluator,
                        sample: index,
                        outcome,
                    });
                } else {
                    self.resync();
                }
            }
            RunMsg::Finished => {
                if !self.mismatched {
                    self.resyncs = 0;
                }
                self.app.update(Msg::RunFinished);
                let prepared: Vec<Prepared> = self.prepared.iter().flatten().cloned().collect();
                let scored: Vec<(usize, Option<f64>)> = self
                    .prepared
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.is_some())
                    .map(|(e, _)| {
                        let s = self.app.summary(e);
                        (s.count - s.errors, s.mean)
                    })
                    .collect();
                self.session.runner.record_versions(&prepared, &scored);
            }
            RunMsg::Changed => {
                self.app.update(Msg::RunFinished);
                self.resync();
                if self.pending_run.is_none() {
                    self.app.update(Msg::Notice(
                        "the samples files keep changing while they are read; press R to run again"
                            .into(),
                    ));
                }
            }
            RunMsg::Failed(message) => {
                self.app.update(Msg::RunFinished);
                self.app.update(Msg::Notice(message));
            }
        }
    }

    /// Notes an evaluator's code key (where its outcomes are stored), keeping the one
    /// before for the cells not rerun yet.
    fn learn_key(&mut self, prepared: &Prepared) {
        if prepared.failure.is_some() {
            return;
        }
        let name = prepared.spec.name.clone();
        if let Some(old) = self.app.code_keys.insert(name.clone(), prepared.key) {
            if old != prepared.key {
                self.old_keys.insert(name, old);
            }
        }
    }

    /// An evaluator's stored outcome of a sample, under its current code key or the
    /// one before.
    fn stored(&self, store: &Store, evaluator: &str, hash: &SampleHash) -> Option<Outcome> {
        [
            self.app.code_keys.get(evaluator),
            self.old_keys.get(evaluator),
        ]
        .into_iter()
        .flatten()
        .find_map(|key| store.outcome(key, hash).ok().flatten())
    }

    /// Reads what the selected cell shows beyond its score (reasons, metrics) from
    /// the store when the app wants it: once per selection, and again while the run
    /// has not written it yet. Drawing then only reads the app.
    fn read_detail(&mut self) {
        let Some((sample, e)) = self.app.wanted_detail() else {
            return;
        };
        let Some(store) = self.session.runner.store().cloned() else {
            return;
        };
        let hash = self.app.samples[sample].hash;
        let name = self.app.evaluators[e].name.clone();
        let outcome = self.stored(&store, &name, &hash).map(Arc::new);
        let before = self
            .app
            .baseline
            .as_ref()
            .and_then(|b| b.keys.get(&name))
            .and_then(|key| store.outcome(key, &hash).ok().flatten())
            .map(Arc::new);
        if outcome.is_some() || before.is_some() {
            self.app.update(Msg::Detail(Detail {
                of: (hash, name),
                outcome,
                before,
            }));
        }
    }

    /// The whole outcome of a cell for the export: kept, else stored, else what the
    /// cell knows (its score and component scores).
    fn whole_outcome(&self, sample: usize, evaluator: usize) -> Option<Arc<Outcome>> {
        let s = self.app.samples.get(sample)?;
        let cell = s.cells.get(evaluator)?;
        cell.outcome.as_ref()?;
        if let Some(full) = cell.full() {
            return Some(full.clone());
        }
        let name = &self.app.evaluators.get(evaluator)?.name;
        let store = self.session.runner.store();
        store
            .and_then(|store| self.stored(store, name, &s.hash))
            .map(Arc::new)
            .or_else(|| self.app.outcome_of(sample, evaluator))
    }

    /// Reacts to saved files. Returns true when the watched folders changed.
    fn on_change(&mut self, paths: Vec<PathBuf>) -> bool {
        let ws = &self.session.workspace;
        let is = |p: &Path, q: &Path| same_file(p, q);
        let config_changed = paths.iter().any(|p| is(p, &ws.root.join("rwb.toml")));
        let is_samples = |p: &Path| ws.samples.iter().any(|f| is(p, &f.path));
        let mut samples_changed = paths.iter().any(|p| is_samples(p));
        // another .jsonl: a new samples file, or one that discovery skips (saved output)
        let other_jsonl = paths
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "jsonl") && !is_samples(p));
        let before = ws.samples.clone();
        // a folder created in a watched root (see Watcher::start) is watched from now
        let mut rewatch = paths.iter().any(|p| p.is_dir());
        if config_changed || (other_jsonl && self.discovers_samples()) {
            match Workspace::load(&ws.root, &self.options.overrides) {
                Ok(new) => {
                    self.app.update(Msg::ConfigError(None));
                    rewatch = self.adopt(new);
                    samples_changed |= self.session.workspace.samples != before;
                }
                Err(e) => {
                    if config_changed {
                        self.app.update(Msg::ConfigError(Some(e.0)));
                        return false;
                    }
                }
            }
        }
        let ws = &self.session.workspace;
        let stale: Vec<usize> = ws
            .evaluators
            .iter()
            .enumerate()
            .filter(|(i, spec)| {
                let files = self
                    .prepared
                    .get(*i)
                    .and_then(|p| p.as_ref())
                    .map(|p| p.files.clone())
                    .unwrap_or_default();
                paths.iter().any(|p| {
                    p.extension().is_some_and(|e| e == "py")
                        && (files.iter().any(|f| is(p, f))
                            || p.starts_with(spec.source.folder())
                            || is(p, &spec.source.file()))
                })
            })
            .map(|(i, _)| i)
            .collect();
        let any_py = paths
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "py"));
        if samples_changed || config_changed {
            self.reload_samples(stale);
        } else if any_py {
            if let Some(pending) = self.pending_run.as_mut() {
                pending.stale.extend(stale); // the run starts when the index is ready
            } else {
                let all = (0..self.session.workspace.evaluators.len()).collect();
                self.start_run(stale, all, Vec::new());
            }
        }
        rewatch
    }

    fn discovers_samples(&self) -> bool {
        self.options.overrides.samples.is_empty()
    }

    /// Shows the workspace's warnings (a skipped `.jsonl`) that are not in `before`.
    fn show_warnings(&mut self, before: &[String]) {
        let new: Vec<&str> = self
            .session
            .workspace
            .warnings
            .iter()
            .filter(|w| !before.contains(w))
            .map(|w| w.as_str())
            .collect();
        if !new.is_empty() {
            self.app.update(Msg::Notice(new.join("; ")));
        }
    }

    /// Takes a reloaded workspace. Returns true when what to watch changed.
    fn adopt(&mut self, new: Workspace) -> bool {
        let old = &self.session.workspace;
        let old_warnings = old.warnings.clone();
        let rewatch = new
            .evaluators
            .iter()
            .map(|e| e.source.folder())
            .ne(old.evaluators.iter().map(|e| e.source.folder()))
            || new.samples != old.samples;
        if new.python != old.python {
            match Session::open(new.root.clone(), &self.options) {
                Ok(s) => self.session = s,
                Err(Fail::Usage(e)) => {
                    self.app.update(Msg::ConfigError(Some(e)));
                    return false;
                }
            }
        } else {
            self.session.workspace = new;
        }
        let names: Vec<&String> = self
            .session
            .workspace
            .evaluators
            .iter()
            .map(|e| &e.name)
            .collect();
        let old_prepared = std::mem::take(&mut self.prepared);
        self.prepared = names
            .iter()
            .map(|n| {
                old_prepared
                    .iter()
                    .flatten()
                    .find(|p| &&p.spec.name == n)
                    .cloned()
            })
            .collect();
        self.app.update(Msg::Evaluators(self.evaluator_infos()));
        self.app.weights = self.session.workspace.weights();
        self.app.threshold = self.session.workspace.config.threshold();
        let group_by = self.session.workspace.config.group_by();
        if group_by != self.app.group_by {
            self.app.group_by = group_by;
            self.app.group_keys = None; // found again with the new key
        }
        self.show_warnings(&old_warnings);
        rewatch
    }

    /// Carries out effects; true means quit.
    fn apply(
        &mut self,
        effects: Vec<Effect>,
        term: &mut terminal::Terminal,
        input: &mut Option<EventStream>,
    ) -> bool {
        for effect in effects {
            match effect {
                Effect::Quit => return true,
                Effect::Rerun { evaluator } => self.rerun(evaluator),
                Effect::Edit { file, line } => {
                    // the editor owns the keyboard until it exits: stop reading it
                    *input = None;
                    let outcome = term.suspend(|| open_editor(&file, line));
                    *input = Some(EventStream::new());
                    match outcome {
                        Ok(()) => {}
                        Err(e) => {
                            self.app.update(Msg::Notice(e));
                        }
                    }
                    self.app.dirty = true;
                }
                Effect::ToggleServe => self
                    .ship
                    .toggle_serve(self.session.runner.clone(), &self.session.workspace),
                Effect::ToggleTunnel => self
                    .ship
                    .toggle_tunnel(self.session.runner.clone(), &self.session.workspace),
                Effect::Deploy {
                    id,
                    display_name,
                    force,
                } => self
                    .ship
                    .deploy(&self.session.workspace, id, display_name, force),
                Effect::CompareRemote => {
                    self.app.overlay = crate::ui::app::Overlay::Ship;
                    self.ship.compare(
                        &self.session.workspace,
                        &self.app.samples,
                        self.app.lines.clone(),
                    );
                }
                Effect::Copy(text) => copy_to_clipboard(&text),
                Effect::Probes | Effect::Check => self.run_report(effect_is_probes(&effect)),
                Effect::History { evaluator } => {
                    let versions = match self.session.runner.store() {
                        Some(store) => store.versions(&evaluator).unwrap_or_default(),
                        None => Vec::new(),
                    };
                    if versions.is_empty() {
                        self.app.update(Msg::Notice(format!("no recorded versions of {evaluator} yet (runs record them; --no-cache keeps none)")));
                    } else {
                        self.app.update(Msg::History(crate::ui::app::History {
                            evaluator,
                            versions,
                            cursor: 0,
                            marked: None,
                        }));
                    }
                }
                Effect::Export => {
                    let text = match self.export() {
                        Ok(path) => format!(
                            "exported to {}",
                            display_path(&path, &self.session.workspace.root)
                        ),
                        Err(e) => format!("export failed: {e}"),
                    };
                    self.app.update(Msg::Notice(text));
                }
            }
        }
        false
    }

    /// Runs the probes or the contract check in a task; the report comes back as a
    /// `ShipEvent::Report`.
    fn run_report(&self, probes: bool) {
        let runner = self.session.runner.clone();
        let workspace = self.session.workspace.clone();
        let threshold = self.app.threshold;
        let tx = self.ship.reporter();
        tokio::spawn(async move {
            let prepared: Result<Vec<Prepared>, String> =
                futures::future::join_all(workspace.evaluators.iter().map(|s| runner.prepare(s)))
                    .await
                    .into_iter()
                    .map(|p| p.map_err(|e| e.to_string()))
                    .collect();
            let (title, lines) = match prepared {
                Err(e) => (
                    "Report".to_string(),
                    vec![format!("cannot start the evaluators: {e}")],
                ),
                Ok(prepared) if probes => match runner
                    .probes(&prepared, &workspace.samples, 50, threshold, true)
                    .await
                {
                    Ok((n, rows)) => (
                        "Probes".to_string(),
                        crate::runner::probe_report(n, &rows, threshold),
                    ),
                    Err(e) => (
                        "Probes".to_string(),
                        vec![format!("the probes failed: {e}")],
                    ),
                },
                Ok(prepared) => match runner.check(&prepared, &workspace.samples, 20).await {
                    Ok(breaks) => {
                        let mut lines = Vec::new();
                        for (p, r) in prepared
                            .iter()
                            .zip(crate::runner::group_breaks(&breaks, prepared.len()))
                        {
                            let style = p.style.map(|s| s.as_str()).unwrap_or("?");
                            if r.breaks.is_empty() {
                                lines.push(format!(
                                    "{} ({style}): no contract break on {} samples",
                                    p.spec.name, r.checked
                                ));
                            }
                            for (issue, at) in &r.breaks {
                                lines.push(format!(
                                    "{} ({style}): ✗ {issue} — {} of {} samples",
                                    p.spec.name,
                                    at.len(),
                                    r.checked
                                ));
                            }
                        }
                        ("Contract check".to_string(), lines)
                    }
                    Err(e) => (
                        "Contract check".to_string(),
                        vec![format!("the check failed: {e}")],
                    ),
                },
            };
            let _ = tx.send(ShipEvent::Report(title, lines));
        });
    }

    fn export(&self) -> std::io::Result<PathBuf> {
        use std::io::Write;
        let dir = self.session.workspace.root.join(".rwb");
        std::fs::create_dir_all(&dir)?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let path = dir.join(format!("export-{stamp}.jsonl"));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for (i, s) in self.app.samples.iter().enumerate() {
            let label = self
                .app
                .samples_labels
                .get(s.at.file)
                .map(|l| l.as_str())
                .unwrap_or("");
            for e in 0..s.cells.len() {
                let (Some(o), Some(info)) = (self.whole_outcome(i, e), self.app.evaluators.get(e))
                else {
                    continue;
                };
                let mut row = serde_json::to_value(ResultRow::new(&s.at, label, &info.name, &o))?;
                if let (Some(b), Some(obj)) = (&self.app.baseline, row.as_object_mut()) {
                    let before = b.score(s, &info.name).flatten();
                    obj.insert("baseline_score".into(), serde_json::json!(before));
                    obj.insert("delta".into(), serde_json::json!(self.app.delta(s, e)));
                }
                if let (Some(c), Some(obj)) = (self.app.combined(s), row.as_object_mut()) {
                    obj.insert("combined".into(), serde_json::json!(c));
                }
                serde_json::to_writer(&mut out, &row)?;
                out.write_all(b"\n")?;
            }
        }
        out.flush()?;
        Ok(path)
    }
}

fn effect_is_probes(effect: &Effect) -> bool {
    matches!(effect, Effect::Probes)
}

/// Puts text on the terminal's clipboard with the OSC 52 escape (terminals and tmux
/// with set-clipboard on honour it; others ignore it).
fn copy_to_clipboard(text: &str) {
    use base64::Engine;
    use std::io::Write;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let mut out = std::io::stdout();
    let _ = write!(out, "\x1b]52;c;{encoded}\x07");
    let _ = out.flush();
}

/// The id the deploy dialog proposes: `[deploy] id` in rwb.toml, else the workspace
/// folder's name made into an id.
fn default_deploy_id(workspace: &Workspace) -> String {
    if let Some(id) = workspace
        .config
        .deploy
        .as_ref()
        .and_then(|d| d.get("id"))
        .and_then(|v| v.as_str())
    {
        return id.to_string();
    }
    let name = std::fs::canonicalize(&workspace.root)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "rewards".into());
    let id: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    id.trim_matches('-').to_string()
}

/// Runs `$VISUAL`/`$EDITOR` (else vi) on the file at the line and waits for it.
fn open_editor(file: &Path, line: Option<u32>) -> Result<(), String> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| {
            std::env::var("EDITOR")
                .ok()
                .filter(|v| !v.trim().is_empty())
        })
        .unwrap_or_else(|| "vi".to_string());
    let mut words = editor.split_whitespace();
    let program = words.next().unwrap_or("vi").to_string();
    let mut args: Vec<String> = words.map(String::from).collect();
    let base = Path::new(&program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let file_s = file.display().to_string();
    match (base, line) {
        ("code" | "code-insiders" | "codium", Some(l)) => {
            args.extend(["-g".into(), format!("{file_s}:{l}")])
        }
        ("subl" | "zed" | "hx" | "helix", Some(l)) => args.push(format!("{file_s}:{l}")),
        (_, Some(l)) => args.extend([format!("+{l}"), file_s]),
        (_, None) => args.push(file_s),
    }
    let status = std::process::Command::new(&program)
        .args(&args)
        .status()
        .map_err(|e| format!("cannot start editor '{program}': {e} (set $EDITOR)"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("editor '{program}' exited with {status}"))
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    let abs = |p: &Path| std::fs::canonicalize(p).or_else(|_| std::path::absolute(p));
    match (abs(a), abs(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

fn display_path(path: &Path, root: &Path) -> String {
    let root_abs = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    match path
        .strip_prefix(&root_abs)
        .or_else(|_| path.strip_prefix(root))
    {
        Ok(rel) if rel.as_os_str().is_empty() => format!("{}/", root.display()),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// With RWB_TRACE_FRAMES=FILE, appends one line per frame: the time, how many cells
/// are scored and not stale, the samples indexed, the draw time, resident memory,
/// the scored and not stale cells of the rows on screen out of theirs, and the first
/// row on screen (scripts/bench_workbench.py reads it).
fn trace_frame(app: &App, took: Duration) {
    use std::io::Write;
    let Some(path) = std::env::var_os("RWB_TRACE_FRAMES") else {
        return;
    };
    let fresh = app.fresh;
    let end = (app.list_offset + app.list_height).min(app.view.len());
    let on_screen = app.view.get(app.list_offset.min(end)..end).unwrap_or(&[]);
    let cells = || on_screen.iter().flat_map(|&i| app.samples[i].cells.iter());
    let shown_fresh = cells().filter(|c| c.outcome.is_some() && !c.stale).count();
    let shown = cells().count();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let rss_kb = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .unwrap_or(0);
        let _ = writeln!(
            f,
            "{now:.6} fresh={fresh} samples={} running={} draw_ms={:.3} rss_kb={rss_kb} shown={shown_fresh}/{shown} top={}",
            app.samples.len(),
            app.running,
            took.as_secs_f64() * 1000.0,
            app.list_offset
        );
    }
}
