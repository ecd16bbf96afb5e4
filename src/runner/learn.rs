//! Code keys that grow during a run. An evaluation that imports a project file or a
//! third-party module for the first time (`import helper` inside `evaluate`) makes it
//! part of its evaluator's code key: the worker reports it after the batch, the import
//! memo is extended, and what this run stored under the old key moves to the new one.
//!
//! Outcomes are held until their batch is answered and then stored under the key that
//! covers everything the worker had imported by then, so a stored result never depends
//! on a file its key does not name (a batch whose worker died is not stored at all).

use super::inflight::IdMap;
use super::{code_key, file_hash, modified_since, stamp, third_party_parts, Prepared};
use crate::engine::{BatchDone, Sink, ThirdParty};
use crate::model::{EvaluatorSpec, Outcome};
use crate::store::{CodeKey, ImportMemo, SampleHash, Store, StoreWriter, Stored};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// How far apart in ids the outcomes held in the window may be: a few batches per
/// slot (an outcome of a batch whose worker died is held for good and pins the
/// window's front: past this the others go to a map, and the window stays ~3 MB).
const HELD_SPAN: u64 = 8192;

/// What one evaluator of a run knows about its code, and the outcomes waiting for
/// their batch to be answered.
pub(super) struct Learner {
    identity: String,
    spec: Arc<EvaluatorSpec>,
    spec_key: CodeKey,
    memo: ImportMemo,
    key: CodeKey,
    /// When the run started: a file first reported later but changed since may not
    /// be the code that ran.
    since: SystemTime,
    held: IdMap<(SampleHash, Stored), HELD_SPAN>,
    /// False once the run learned of a file it cannot vouch for (changed during the
    /// run, or gone): its outcomes are shown but not stored.
    storing: bool,
    /// Whether what this run evaluates can have no older stored outcome (see
    /// [`StoreWriter::put_at`]).
    replaces_nothing: bool,
    store: Arc<Store>,
    writer: Arc<StoreWriter>,
}

impl Learner {
    /// Starts from what `prepared` knows; `None` when its import failed (no memo).
    pub(super) fn new(
        identity: String,
        prepared: &Prepared,
        spec_key: CodeKey,
        since: SystemTime,
        replaces_nothing: bool,
        store: Arc<Store>,
        writer: Arc<StoreWriter>,
    ) -> Option<Learner> {
        Some(Learner {
            identity,
            spec: prepared.spec.clone(),
            spec_key,
            memo: prepared.memo.clone()?,
            key: prepared.key,
            since,
            held: Default::default(),
            storing: true,
            replaces_nothing,
            store,
            writer,
        })
    }

    /// Keeps an outcome until its batch is answered.
    fn hold(&mut self, id: u64, hash: SampleHash, stored: Stored) {
        self.held.insert(id, (hash, stored));
    }

    /// A batch was answered: learn what it imported, then store its outcomes.
    fn batch_done(
        &mut self,
        ids: &[u64],
        files: Option<Vec<PathBuf>>,
        packages: Option<ThirdParty>,
    ) {
        if self.learn(files.unwrap_or_default(), packages.unwrap_or_default()) {
            let key = code_key(&self.identity, &self.spec, &self.memo);
            let _ = self.store.put_import_memo(&self.spec_key, &self.memo);
            self.writer.rekey(&self.key, &key);
            self.key = key;
        }
        for id in ids {
            if let Some((hash, stored)) = self.held.remove(*id) {
                if self.storing {
                    // a job's id is its sample's index in the run's files
                    self.writer
                        .put_stored_at(&self.key, &hash, *id, self.replaces_nothing, stored);
                }
            }
        }
    }

    /// Adds newly reported project files (with their hashes) and third-party files
    /// (with their stamps) to the memo. Returns whether it grew.
    fn learn(&mut self, files: Vec<PathBuf>, packages: ThirdParty) -> bool {
        let mut grew = false;
        for path in files {
            if self.memo.files.iter().any(|(p, _)| *p == path) {
                continue;
            }
            match file_hash(&path) {
                Some(hash) if !modified_since(&path, self.since) => {
                    self.memo.files.push((path, hash));
                    grew = true;
                }
                _ => self.storing = false,
            }
        }
        let (paths, dists) = third_party_parts(&packages);
        for path in paths {
            if self.memo.stamps.iter().any(|s| s.path == path) {
                continue;
            }
            match stamp(&path) {
                Some((s, changed)) if changed < self.since => {
                    self.memo.stamps.push(s);
                    grew = true;
                }
                _ => self.storing = false,
            }
        }
        for dist in dists {
            if !self.memo.dists.contains(&dist) {
                self.memo.dists.push(dist);
                grew = true;
            }
        }
        if grew {
            self.memo.files.sort();
            self.memo.stamps.sort();
            self.memo.dists.sort();
        }
        grew
    }
}

/// Whether an outcome may be served from the cache later: not when it depends on the
/// moment (a timeout, a crash) or on a module being absent (it may be added later).
fn cacheable(outcome: &Outcome) -> bool {
    outcome.error.as_ref().is_none_or(|e| {
        !e.is_transient() && !matches!(e.kind.as_str(), "ModuleNotFoundError" | "ImportError")
    })
}

/// The pool hooks of one evaluator: `sink` first passes each outcome to `show`, then
/// holds it; `on_done` stores what was held once its batch is answered.
pub(super) fn hooks(
    learner: Arc<Mutex<Learner>>,
    show: impl Fn(u64, Outcome) -> Option<SampleHash> + Send + Sync + 'static,
) -> (Sink, BatchDone) {
    let holder = learner.clone();
    let sink: Sink = Arc::new(move |id: u64, outcome: Outcome| {
        // kept as it will be stored: built once, and no copy of the whole outcome
        let kept = cacheable(&outcome).then(|| Stored::of(&outcome));
        if let (Some(hash), Some(kept)) = (show(id, outcome), kept) {
            holder.lock().unwrap().hold(id, hash, kept);
        }
    });
    let on_done: BatchDone = Arc::new(move |ids, files, packages| {
        learner.lock().unwrap().batch_done(ids, files, packages);
    });
    (sink, on_done)
}
