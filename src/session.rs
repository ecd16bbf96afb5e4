//! What a command opens together: the workspace, its worker pool and runner, and the
//! cache. It sits below `cli/`, `ship/` and `workbench/`, so that serving and the live
//! loop take it from here and never reach up into the command line.

use crate::engine::{Engine, EngineError, Pool, RayInfo};
use crate::runner::{Prepared, Runner};
use crate::store::Store;
use crate::workspace::{Overrides, Workspace, WorkspaceError};
use std::path::PathBuf;
use std::sync::Arc;

/// What the command line (or a test) asks of a session: the workspace overrides, the
/// number of worker slots and whether to use the cache.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    pub overrides: Overrides,
    /// `--jobs`; `None`: `rwb.toml`'s, else one per core.
    pub jobs: Option<usize>,
    pub no_cache: bool,
    /// Whether evaluations may go to a Ray cluster.
    pub ray: RayChoice,
    /// The command reads the samples at once (the workbench, `rwb run`): a Parquet
    /// first samples file starts decoding while the rest opens.
    pub read_ahead: bool,
}

/// Where a command's evaluations may run (SPEC §11). `rwb run`, `rwb serve` and the
/// workbench take `--ray ADDRESS`, else `rwb.toml`'s `[engine] ray`; the other
/// commands always run locally.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum RayChoice {
    /// Locally, whatever `rwb.toml` says.
    #[default]
    Never,
    /// On the cluster `[engine] ray` names, if it names one.
    Configured,
    /// On the cluster at this address (`--ray`).
    Address(String),
}

impl RayChoice {
    /// `--ray ADDRESS` when given, else what `rwb.toml` says.
    pub fn from_flag(flag: Option<String>) -> RayChoice {
        flag.map_or(RayChoice::Configured, RayChoice::Address)
    }

    /// The Ray address chosen for `workspace`, if any.
    fn address(&self, workspace: &Workspace) -> Result<Option<String>, Fail> {
        match self {
            RayChoice::Never => Ok(None),
            RayChoice::Configured => workspace.config.ray().map_err(Fail::Usage),
            RayChoice::Address(address) => Ok(Some(address.clone())),
        }
    }
}

/// A failure that ends a command before or instead of its results.
pub enum Fail {
    /// Usage or workspace error: exit 2 with one line.
    Usage(String),
}

impl From<WorkspaceError> for Fail {
    fn from(e: WorkspaceError) -> Fail {
        Fail::Usage(e.0)
    }
}

impl From<EngineError> for Fail {
    fn from(e: EngineError) -> Fail {
        Fail::Usage(e.to_string())
    }
}

/// Everything a command needs to evaluate a workspace.
pub struct Session {
    pub workspace: Workspace,
    pub runner: Arc<Runner>,
    pub use_cache: bool,
    /// The sandbox for the policy's code (SPEC §18), which the workers reach.
    pub sandbox: Arc<crate::sandbox::service::Service>,
}

impl Session {
    /// Loads the workspace and opens the cache (a broken cache is reported and skipped,
    /// never fatal: results are still computed). On Ray (see [`RayChoice`]) the
    /// engine is the cluster's, whose driver starts with the first worker or with
    /// [`Session::join_ray`].
    pub fn open(dir: PathBuf, options: &OpenOptions) -> Result<Session, Fail> {
        let workspace = Workspace::load(&dir, &options.overrides)?;
        // the first rows shown: a Parquet file's first pages decode while the engine,
        // the cache (and the terminal) get ready; not when its rows were written out
        // already (they are read from the row file)
        let first = workspace.samples.first().filter(|_| options.read_ahead);
        if let Some((first, foreign)) = first.and_then(|f| Some((f, f.foreign.as_ref()?))) {
            if !foreign.is_current(&first.path) {
                crate::sources::read_ahead(&first.path);
            }
        }
        let jobs = options.jobs.or(workspace.config.jobs).unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        });
        let (python, root) = (workspace.python.clone(), workspace.root.clone());
        let engine = match options.ray.address(&workspace)? {
            Some(address) => Engine::on_ray(python, root, address),
            None => Engine::new(python, root),
        }
        .map_err(|e| Fail::Usage(format!("cannot prepare the worker runtime folder: {e}")))?;
        engine.set_containment(
            crate::sandbox::workers_plan(&workspace, options.overrides.no_contain)
                .map_err(Fail::Usage)?,
        );
        let sandbox = crate::sandbox::start_for_workers(&engine, &workspace)
            .map_err(|e| Fail::Usage(format!("cannot open the sandbox's listeners: {e}")))?;
        let store = if options.no_cache {
            None
        } else {
            match Store::open(&workspace.root) {
                Ok(s) => {
                    rekey_store(&s, &workspace);
                    Some(Arc::new(s))
                }
                Err(e) => {
                    eprintln!("rwb: {e}; continuing without the cache");
                    None
                }
            }
        };
        let runner = Arc::new(Runner::new(Arc::new(Pool::new(engine, jobs)), store));
        Ok(Session {
            workspace,
            runner,
            use_cache: !options.no_cache,
            sandbox,
        })
    }

    /// On Ray: starts the driver now (a missing `ray` or an unreachable cluster is a
    /// usage error, said before anything runs) and sizes the pool to `jobs`, else
    /// `rwb.toml`'s, else the cluster's CPUs. Returns the cluster; `None` locally.
    pub async fn join_ray(&mut self, jobs: Option<usize>) -> Result<Option<RayInfo>, Fail> {
        let engine = self.runner.engine().clone();
        if engine.ray().is_none() {
            return Ok(None);
        }
        engine.info().await?;
        let info = engine.cluster().unwrap_or_default();
        let jobs = jobs
            .or(self.workspace.config.jobs)
            .unwrap_or(info.cpus.max(1));
        let store = self.runner.store().cloned();
        self.runner = Arc::new(Runner::new(Arc::new(Pool::new(engine, jobs)), store));
        Ok(Some(info))
    }

    /// Prepares every evaluator concurrently. A missing interpreter is fatal (exit 2).
    pub async fn prepare_all(&self) -> Result<Vec<Prepared>, Fail> {
        let futures = self
            .workspace
            .evaluators
            .iter()
            .map(|spec| self.runner.prepare(spec));
        let mut out = Vec::new();
        for p in futures::future::join_all(futures).await {
            out.push(p?);
        }
        Ok(out)
    }
}

/// Brings a store an older rwb wrote to the current line keys (see
/// [`crate::store::LINE_KEYS`]), once: every line of the workspace's samples is
/// hashed both ways, and the cached results, baselines and `labels.jsonl` entries of
/// those lines move to their new key. What no line re-keys is kept under its old
/// key, and one line on stderr says what happened. A failure leaves the store as it
/// was (the next run tries again): the run goes on, evaluating what it cannot find.
pub fn rekey_store(store: &Store, workspace: &Workspace) {
    if store.line_keys_current() {
        return;
    }
    let mut keys = std::collections::HashMap::new();
    for line in crate::workspace::SamplesReader::unhashed(&workspace.samples).flatten() {
        if line.bad.is_none() {
            keys.insert(
                crate::workspace::legacy_hash_line(&line.raw),
                crate::workspace::hash_line(&line.raw),
            );
        }
    }
    if keys.is_empty() {
        return; // nothing to re-key from (no samples in hand): another run will
    }
    let done = match store.rekey_lines(&keys) {
        Ok(done) => done,
        Err(e) => {
            eprintln!("rwb: {e}: the cache keeps its old line keys for now");
            return;
        }
    };
    let labels = crate::trust::labels::rekey(&workspace.root, &keys).unwrap_or_else(|e| {
        eprintln!("rwb: labels.jsonl: {e}: its labels keep their old keys");
        0
    });
    let mut note = format!(
        "rwb: the cache moved to rwb's new line keys: {} results, {} baseline rows and {} labels re-keyed from the {} samples in hand",
        done.results,
        done.baseline_rows,
        labels,
        keys.len()
    );
    if done.results_left > 0 {
        note += &format!(
            "; {} results of other lines keep their old keys (those lines are evaluated again should they come back)",
            done.results_left
        );
    }
    for (name, left) in &done.baselines_left {
        note += &format!(
            "; baseline {name:?}: {left} rows of lines not in these samples keep their old keys (kept, matching no line now)"
        );
    }
    eprintln!("{note}");
}
