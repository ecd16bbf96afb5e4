//! Starting runs (aborting the one in flight) and taking their messages: prepared
//! evaluators, results, the end; and the selected cell's outcome read from the store.

use super::follow::FollowLines;
use super::indexing::Indexed;
use super::pacing::lands_on_screen;
use super::runs::{How, RunMsg};
use super::{first, Live};
use crate::model::Outcome;
use crate::runner::Event;
use crate::runner::{Prepared, Priority};
use crate::store::CodeKey;
use crate::store::{SampleHash, Store};
use crate::ui::app::{Detail, Msg, PreparedInfo};
use crate::workspace::SampleIndex;
use futures::FutureExt;
use std::sync::Arc;

impl Live {
    /// Starts a new run of `which` evaluators (aborting the one in flight). `stale`
    /// evaluators changed code; `fresh` ones are evaluated again without the cache.
    /// Only ever called with a complete index (see `reload_samples`).
    pub(super) fn start_run(&mut self, stale: Vec<usize>, which: Vec<usize>, fresh: Vec<usize>) {
        if self.index_is_behind(&stale, &fresh) {
            return; // runs on the new index
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
        let watch = std::mem::take(&mut self.watch_next);
        if watch {
            self.app.update(Msg::Watched(fresh.clone()));
        }
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
            None,
            How {
                threshold: self.session.workspace.config.threshold(),
                watch,
            },
        );
    }

    /// Starts the first run, fed from the indexer as it reads (see `follow.rs`):
    /// every evaluator, through the cache, in file order.
    pub(super) fn start_following(&mut self, lines: FollowLines) {
        let all: Vec<usize> = (0..self.session.workspace.evaluators.len()).collect();
        self.app.update(Msg::RunStarted {
            evaluators: all.clone(),
            stale: Vec::new(),
        });
        self.running_fresh = Vec::new();
        self.mismatched = false;
        let files = Arc::new(SampleIndex::start(&self.session.workspace.samples));
        self.runs.start(
            self.session.runner.clone(),
            self.session.workspace.evaluators.clone(),
            files,
            all,
            Vec::new(),
            Priority::default(),
            Some(lines),
            How {
                threshold: self.session.workspace.config.threshold(),
                watch: false,
            },
        );
    }

    /// `r`/`R`: evaluates one evaluator (or all) again without the cache; `R` (all)
    /// watches each call for the exceptions it swallows (SPEC §16: `v` counts them
    /// after `R`). While the samples are being indexed, the rerun waits for the
    /// index like any run.
    pub(super) fn rerun(&mut self, evaluator: Option<usize>) {
        self.watch_next |= evaluator.is_none();
        let all: Vec<usize> = (0..self.session.workspace.evaluators.len()).collect();
        let chosen = evaluator.map_or(all, |e| vec![e]);
        match self.pending_run.as_mut() {
            Some(pending) => {
                pending.fresh.extend(chosen);
                self.stop_following();
            }
            None => self.start_run(evaluator.into_iter().collect(), chosen.clone(), chosen),
        }
    }

    /// A burst of run messages: its results reach the app as one update. Returns
    /// whether the burst changed what must be drawn at once: a result on a row on
    /// screen, or a run's other news (prepared, finished, failed).
    pub(super) fn on_runs(&mut self, burst: Vec<(u64, RunMsg)>) -> bool {
        let mut results = Vec::new();
        let mut at_once = false;
        for (generation, msg) in burst {
            match msg {
                RunMsg::Results(events) if generation == self.runs.generation() => {
                    self.landed(events, &mut results);
                }
                other => {
                    at_once |= !matches!(other, RunMsg::Results(_));
                    at_once |= lands_on_screen(&self.app, &results);
                    self.show_results(&mut results);
                    self.on_run(generation, other);
                }
            }
        }
        at_once |= lands_on_screen(&self.app, &results);
        self.show_results(&mut results);
        self.take_index_later();
        at_once
    }

    /// Results of a run that follows the indexer may come before the samples they
    /// are for (the indexer hands the list its chunk first, but the loop may take the
    /// run's message first): those chunks are taken now. What else the indexer said
    /// waits until the results are shown (`take_index_later`).
    fn catch_up_index(&mut self, events: &[Event]) {
        let len = self.app.samples.len();
        if events.iter().all(|Event::Result { at, .. }| at.index < len) {
            return;
        }
        // what is queued now, taken without `try_recv`, which parks this (the
        // loop's) thread on a half-written message (see cli/run.rs `forward`); the
        // loop's next `select!` registers its own waker again
        let mut queued = Vec::new();
        while let Some(1..) = self.index_rx.recv_many(&mut queued, 64).now_or_never() {}
        for (generation, indexed) in queued {
            if generation != self.index_generation {
                continue;
            }
            match indexed {
                Indexed::More(_) if self.index_later.is_empty() => self.on_indexed(indexed),
                other => self.index_later.push(other),
            }
        }
    }

    /// What the indexer said while results were being taken, in order.
    fn take_index_later(&mut self) {
        for indexed in std::mem::take(&mut self.index_later) {
            self.on_indexed(indexed);
        }
    }

    fn show_results(&mut self, results: &mut Vec<Event>) {
        if !results.is_empty() {
            self.app.update(Msg::Results(std::mem::take(results)));
        }
    }

    /// Keeps the results for the lines the app holds at their places; any other
    /// means the samples files changed behind the index, which is read again.
    fn landed(&mut self, events: Vec<Event>, into: &mut Vec<Event>) {
        self.catch_up_index(&events);
        let (before, given) = (into.len(), events.len());
        let samples = &self.app.samples;
        into.extend(events.into_iter().filter(|Event::Result { at, hash, .. }| {
            samples.get(at.index).is_some_and(|s| s.hash == *hash)
        }));
        if into.len() - before < given {
            self.resync();
        }
    }

    pub(super) fn on_run(&mut self, generation: u64, msg: RunMsg) {
        if generation != self.runs.generation() {
            return; // a result of an aborted run
        }
        match msg {
            RunMsg::Prepared(index, prepared) => {
                let info = PreparedInfo {
                    evaluator: index,
                    error: prepared.failure.clone(),
                    style: prepared.style,
                    key: self.learn_key(&prepared),
                };
                if let Some(slot) = self.prepared.get_mut(index) {
                    *slot = Some(*prepared);
                }
                self.app.update(Msg::Prepared(info));
                self.say_no_box();
            }
            RunMsg::Results(events) => {
                let mut results = Vec::new();
                self.landed(events, &mut results);
                self.show_results(&mut results);
                self.take_index_later();
            }
            RunMsg::Finished => {
                if !self.mismatched {
                    self.resyncs = 0;
                }
                self.app.update(Msg::RunFinished);
                let prepared: Vec<Prepared> = self.prepared.iter().flatten().cloned().collect();
                let scored: Vec<crate::store::Scored> = self
                    .prepared
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.is_some())
                    .map(|(e, _)| {
                        let s = self.app.summary(e);
                        crate::store::Scored {
                            count: s.count - s.errors,
                            mean: s.mean,
                            errors: s.errors,
                        }
                    })
                    .collect();
                self.session.runner.record_versions(&prepared, &scored);
            }
            RunMsg::Changed => self.on_changed(),
            RunMsg::Failed(message) => {
                self.app.update(Msg::RunFinished);
                self.app.update(Msg::Notice(message));
            }
            RunMsg::Warning(message) => {
                self.app.update(Msg::Notice(message));
            }
        }
    }

    /// Notes an evaluator's code key (where its outcomes are stored), keeping the one
    /// before for the cells not rerun yet; returns it for the app.
    pub(super) fn learn_key(&mut self, prepared: &Prepared) -> Option<(String, CodeKey)> {
        if prepared.failure.is_some() {
            return None;
        }
        let name = prepared.spec.name.clone();
        if let Some(old) = self.app.code_keys.get(&name) {
            if *old != prepared.key {
                self.old_keys.insert(name.clone(), *old);
            }
        }
        Some((name, prepared.key))
    }

    /// An evaluator's stored outcome of a sample, under its current code key or the
    /// one before.
    pub(super) fn stored(
        &self,
        store: &Store,
        evaluator: &str,
        hash: &SampleHash,
    ) -> Option<Outcome> {
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
    pub(super) fn read_detail(&mut self) {
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
    pub(super) fn whole_outcome(&self, sample: usize, evaluator: usize) -> Option<Arc<Outcome>> {
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
}

impl Live {
    /// Where the kernel refused the workers a box, says once what runs how (SPEC §18,
    /// "where the kernel says no"), as `rwb run` and `rwb check` say it.
    fn say_no_box(&mut self) {
        if self.no_box_said {
            return;
        }
        let Some(said) = self.session.runner.engine().containment_said() else {
            return;
        };
        self.no_box_said = true;
        if let Some(line) = crate::sandbox::without_namespaces(&said, &self.session.workspace) {
            self.app.update(Msg::Notice(line));
        }
    }
}
