//! The live workbench: one loop that merges terminal input, file changes and run
//! results, feeds them to the app as messages, carries out the app's effects, and
//! redraws only when something changed.
//!
//! Owns the terminal (restored on quit, on error and on panic), the watcher and the
//! run in flight: a newer change aborts the stale run (its busy workers are killed)
//! and starts a new one through the cache, so only what changed is evaluated.

mod changes;
mod deploy_target;
mod editor;
mod effects;
mod export;
mod first;
mod follow;
mod generation;
mod indexing;
mod labels;
#[cfg(test)]
mod live_column_tests;
mod live_columns;
#[cfg(test)]
mod logged_tests;
mod pacing;
mod running;
mod runs;
mod ship;
mod terminal;
#[cfg(test)]
mod tests;
mod trace;
mod user_config;
mod waiting;

use crate::runner::Prepared;
use crate::session::{Fail, OpenOptions, Session};
use crate::store::CodeKey;
use crate::ui::app::{App, MemoryLines, Msg, ScrollLimits, Settings, ShipMsg, Source};
use crate::ui::highlight::Highlighter;
use crate::ui::keymap::Keymap;
use crate::ui::theme::Theme;
use crate::ui::view::{self, Ctx};
use crate::workspace::{SampleIndex, Watcher};
use crossterm::event::{Event as TermEvent, EventStream, KeyEventKind};
use effects::default_deploy_id;
use futures::StreamExt;
use indexing::{Indexed, PendingRun};
use pacing::Pacing;
use runs::{RunMsg, Runs};
use ship::{ShipControl, ShipEvent};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use trace::trace_frame;
use user_config::UserConfig;

/// Run messages taken in one turn of the loop at most (each holds many results), so
/// that a key waits for no more than that.
const BURST_MAX: usize = 64;

/// Opens the workbench on `dir`.
pub async fn open(dir: PathBuf, mut options: OpenOptions) -> Result<ExitCode, Fail> {
    // a step folder with no file yet (or not there yet) is followed as it fills
    options.overrides.waits = true;
    let mut session = Session::open(dir, &options)?;
    // On Ray the driver joins the cluster before the terminal is taken: a missing
    // `ray` or an unreachable cluster ends here with its message (exit 2).
    if let Some(address) = session.runner.engine().ray() {
        eprintln!("rwb: joining the Ray cluster {address}…");
    }
    let cluster = session.join_ray(options.jobs).await?;
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
    if let Some(cluster) = cluster {
        live.app.update(Msg::Notice(cluster.describe()));
    }
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
    /// What the indexer said while results were taken (see `catch_up_index`).
    index_later: Vec<Indexed>,
    /// The samples as last indexed: what runs are fed from.
    index: Arc<SampleIndex>,
    /// A run waits for the samples index (`Some` while one is being built).
    pending_run: Option<PendingRun>,
    /// Evaluators the run in flight evaluates without reading the cache.
    running_fresh: Vec<usize>,
    /// The run in flight had a result for a line the index does not hold.
    mismatched: bool,
    /// The next run watches the evaluators it runs fresh for swallowed exceptions
    /// (`R` asked for it; see `Live::rerun`).
    watch_next: bool,
    /// Indexes started in a row because a run found the files changed behind them.
    resyncs: u32,
    ship: ShipControl,
    ship_rx: mpsc::UnboundedReceiver<ShipEvent>,
    /// Each evaluator's code key before its current one, by name: cells not rerun
    /// yet show outcomes stored under it.
    old_keys: HashMap<String, CodeKey>,
    /// An evaluator's code was saved: the source beside an error is read again.
    source_stale: bool,
    /// How the generations asked for with `g` go.
    generation_tx: mpsc::UnboundedSender<crate::ui::app::GenerationMsg>,
    generation_rx: mpsc::UnboundedReceiver<crate::ui::app::GenerationMsg>,
    /// The first load's run, started once the indexer has said something and that
    /// frame is drawn: its workers' start-up does not compete with the first rows.
    follow_later: Option<follow::FollowLines>,
    /// The folder sources that held no sample at the last index (their labels, and
    /// whether the folder was there): see `waiting.rs`.
    waiting: Vec<(String, bool)>,
    /// Whether the kernel's refusal of a box was said (once, SPEC §18).
    no_box_said: bool,
}

impl Live {
    fn new(session: Session, options: OpenOptions, keymap: Keymap) -> Live {
        // every save runs again on the same samples: templated prompts are kept
        session.runner.pool().keep_prompts();
        let labels = session
            .workspace
            .samples
            .iter()
            .map(|f| f.label.clone())
            .collect();
        let app = App::new(
            session.workspace.root.clone(),
            labels,
            keymap,
            Arc::new(MemoryLines::default()),
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let (index_tx, index_rx) = mpsc::unbounded_channel();
        let runs = Runs::new(tx);
        let (ship_tx, ship_rx) = mpsc::unbounded_channel();
        let n = session.workspace.evaluators.len();
        let (generation_tx, generation_rx) = mpsc::unbounded_channel();
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
            index_later: Vec::new(),
            index: Arc::default(),
            pending_run: None,
            running_fresh: Vec::new(),
            mismatched: false,
            watch_next: false,
            resyncs: 0,
            ship: ShipControl::new(ship_tx),
            ship_rx,
            old_keys: HashMap::new(),
            source_stale: false,
            generation_tx,
            generation_rx,
            follow_later: None,
            waiting: Vec::new(),
            no_box_said: false,
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
        let (width, height) = term.size();
        self.app.update(Msg::Resized(width, height));
        self.show_workspace();
        // the indexer (a thread of its own) reads the first rows while the first,
        // empty frame is drawn
        self.reload_samples(Vec::new());
        self.draw(term, theme);
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
        self.app.update(Msg::Config(self.settings()));
        let training = self.session.workspace.config.training();
        self.app.update(Msg::Training(training));
        self.app
            .update(Msg::Hacking(crate::ui::app::hacking_settings(
                &self.session.workspace.config,
            )));
        self.load_labels();
        self.app.update(Msg::Evaluators(self.evaluator_infos()));
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
        let mut pacing = Pacing::default();
        loop {
            let wake = pacing.next_wake();
            let mut draw_now = true;
            let mut indexed_now = false;
            let mut burst = Vec::new();
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
                    Some(Ok(TermEvent::Resize(width, height))) => {
                        self.app.update(Msg::Resized(width, height));
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => return Ok(()),
                },
                Some(paths) = watch_rx.recv() => {
                    if self.on_change(paths) {
                        *watcher = self.start_watcher(watch_tx.clone());
                    }
                }
                Some(event) = self.ship_rx.recv() => self.on_ship(event),
                Some(m) = self.generation_rx.recv() => {
                    self.app.update(Msg::Generation(m));
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
                        indexed_now = true;
                    }
                }
                // every result already waiting, taken without `try_recv` (which parks
                // this thread on a half-written message: see cli/run.rs `forward`);
                // draw now only when they land on screen or the frame slot has come
                1.. = self.run_rx.recv_many(&mut burst, BURST_MAX) => {
                    let on_screen = self.on_runs(std::mem::take(&mut burst));
                    draw_now = pacing.draw_burst_now(on_screen);
                }
                _ = tokio::time::sleep_until(wake.unwrap_or_else(tokio::time::Instant::now)), if wake.is_some() => {
                    if pacing.woke() {
                        self.app.update(Msg::Refresh);
                    }
                }
            }
            if self.app.deferred() {
                pacing.owe_refresh();
            }
            self.read_detail();
            self.read_source(theme, highlighter);
            if self.app.dirty && draw_now {
                self.draw(term, theme);
                pacing.drawn();
            }
            if indexed_now {
                self.start_follow_later();
            }
        }
    }

    /// A serve, tunnel or deploy step ended: its messages go to the app; a deploy's
    /// columns join the evaluator list.
    fn on_ship(&mut self, event: ShipEvent) {
        if let ShipEvent::Report(title, lines) = event {
            self.app.update(Msg::Report(title, lines));
            return;
        }
        for m in self.ship.on_event(event, &self.session.workspace) {
            self.app.update(Msg::Ship(m));
        }
        if self.ship.take_columns_changed() {
            self.arrange_columns();
        }
    }

    /// Draws a frame (drawing only reads the app) and hands back how far its panes
    /// scroll.
    fn draw(&mut self, term: &mut terminal::Terminal, theme: &Theme) {
        let ctx = Ctx { theme };
        let app = &self.app;
        let started = Instant::now();
        let mut limits = ScrollLimits::default();
        term.draw(|frame| limits = view::draw(frame, app, &ctx));
        self.app.update(Msg::Drawn(limits));
        if std::env::var_os("RWB_TRACE_FRAMES").is_some() {
            trace_frame(&self.app, started.elapsed());
        }
    }

    /// The workspace's settings, as the app takes them.
    fn settings(&self) -> Settings {
        let ws = &self.session.workspace;
        Settings {
            threshold: ws.config.threshold(),
            weights: ws.weights(),
            group_by: ws.config.group_by(),
            deploy_id: default_deploy_id(ws),
            sandbox_unsafe: ws.config.sandbox.as_ref().and_then(|s| s.unsafe_) == Some(true),
            store_details: self.session.runner.store().is_some(),
            logged: ws
                .config
                .evaluators
                .iter()
                .filter_map(|(name, e)| Some((name.clone(), e.logged.clone()?)))
                .collect(),
        }
    }

    /// Reads and highlights the source beside the shown error when the app wants it,
    /// or again after evaluator code was saved: once per change, never per frame.
    fn read_source(&mut self, theme: &Theme, highlighter: &Highlighter) {
        let wanted = if std::mem::take(&mut self.source_stale) {
            self.app.error_source()
        } else {
            self.app.wanted_source()
        };
        let Some((path, line)) = wanted else {
            return;
        };
        let code = std::fs::read_to_string(&path)
            .ok()
            .map(|text| highlighter.python(&text, theme, line));
        self.app.update(Msg::Source(Source { path, line, code }));
    }
}
