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
}

impl Session {
    /// Loads the workspace and opens the cache (a broken cache is reported and skipped,
    /// never fatal: results are still computed).
    pub fn open(dir: PathBuf, options: &OpenOptions) -> Result<Session, Fail> {
        let workspace = Workspace::load(&dir, &options.overrides)?;
        let jobs = options.jobs.or(workspace.config.jobs).unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        });
        let engine = Engine::new(workspace.python.clone(), workspace.root.clone())
            .map_err(|e| Fail::Usage(format!("cannot prepare the worker runtime folder: {e}")))?;
        let store = if options.no_cache {
            None
        } else {
            match Store::open(&workspace.root) {
                Ok(s) => Some(Arc::new(s)),
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
        })
    }

    /// Moves the session's evaluations onto the Ray cluster at `address`: starts the
    /// driver (a missing `ray` or an unreachable cluster is a usage error) and sizes
    /// the pool to `jobs`, else `rwb.toml`'s, else the cluster's CPUs.
    pub async fn use_ray(&mut self, address: String, jobs: Option<usize>) -> Result<RayInfo, Fail> {
        let workspace = &self.workspace;
        let engine = Engine::on_ray(workspace.python.clone(), workspace.root.clone(), address)
            .map_err(|e| Fail::Usage(format!("cannot prepare the worker runtime folder: {e}")))?;
        engine.info().await?;
        let info = engine.cluster().unwrap_or_default();
        let jobs = jobs.or(workspace.config.jobs).unwrap_or(info.cpus.max(1));
        let store = self.runner.store().cloned();
        self.runner = Arc::new(Runner::new(Arc::new(Pool::new(engine, jobs)), store));
        Ok(info)
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
