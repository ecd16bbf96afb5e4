//! Reacting to saved files: evaluator code, samples files and `rwb.toml`; and what is
//! watched.

use super::Live;
use crate::session::{Fail, RayChoice, Session};
use crate::ui::app::{EvaluatorInfo, Msg, RunState};
use crate::workspace::{Watcher, Workspace};
use std::path::{Path, PathBuf};
use tokio::sync::mpsc;

impl Live {
    /// The folders watched: the workspace, the evaluators' folders, and the folder of
    /// each samples file (a glob's fixed folder; for a folder not there yet, the
    /// nearest one above it that is).
    fn watch_roots(&self) -> Vec<PathBuf> {
        let ws = &self.session.workspace;
        let mut roots = vec![ws.root.clone()];
        for spec in ws.evaluators.iter().filter(|s| !s.source.is_remote()) {
            roots.push(spec.source.folder());
        }
        for f in &ws.samples {
            let folder = if crate::sources::files::is_pattern(&f.path) {
                crate::sources::files::fixed_base(&f.path) // a glob's folder
            } else {
                f.path.parent().map(Path::to_path_buf).unwrap_or_default()
            };
            roots.push(existing(folder));
        }
        roots
    }

    pub(super) fn start_watcher(
        &mut self,
        tx: mpsc::UnboundedSender<Vec<PathBuf>>,
    ) -> Option<Watcher> {
        let roots = self.watch_roots();
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

    pub(super) fn evaluator_infos(&self) -> Vec<EvaluatorInfo> {
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
                    placement: Some(self.session.runner.placement(spec)),
                }
            })
            .collect()
    }

    /// Reacts to saved files. Returns true when the watched folders changed.
    pub(super) fn on_change(&mut self, paths: Vec<PathBuf>) -> bool {
        let ws = &self.session.workspace;
        let is = |p: &Path, q: &Path| same_file(p, q);
        let config_changed = paths.iter().any(|p| is(p, &ws.root.join("rwb.toml")));
        // a samples file, or a step file landing in a folder or glob source
        let is_samples = |p: &Path| {
            ws.samples
                .iter()
                .any(|f| is(p, &f.path) || crate::sources::files::holds(&f.path, p))
        };
        let mut samples_changed = paths.iter().any(|p| is_samples(p));
        // a folder made on the way to, or in, a folder or glob source: files may be in
        // it before it is watched (the trainer writes its first step), so it is read
        let made_for_source = |p: &Path| {
            p.is_dir()
                && ws.samples.iter().any(|f| {
                    let base = crate::sources::files::fixed_base(&f.path);
                    crate::sources::files::is_many(&f.path)
                        && (same_or_inside(p, &base) || same_or_inside(&base, p))
                })
        };
        samples_changed |= paths.iter().any(|p| made_for_source(p));
        // another .jsonl: a new samples file, or one that discovery skips (saved output)
        let other_jsonl = paths
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "jsonl") && !is_samples(p));
        let before = ws.samples.clone();
        // a folder created right in a watched root (see Watcher::start) is watched
        // from now (one deeper is, with its parent)
        let roots = self.watch_roots();
        let mut rewatch = paths.iter().any(|p| {
            p.is_dir()
                && p.parent()
                    .is_some_and(|parent| roots.iter().any(|r| same_file(parent, r)))
        });
        let ws = &self.session.workspace;
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
                // a remote evaluator has no files here: a save never reruns it
                !spec.source.is_remote()
                    && paths.iter().any(|p| {
                        // its own file (a .py, or an OpenAI grader's .json)
                        is(p, &spec.source.file())
                            || (p.extension().is_some_and(|e| e == "py")
                                && (files.iter().any(|f| is(p, f))
                                    || p.starts_with(spec.source.folder())))
                    })
            })
            .map(|(i, _)| i)
            .collect();
        let any_py = !stale.is_empty()
            || paths
                .iter()
                .any(|p| p.extension().is_some_and(|e| e == "py"));
        self.source_stale |= any_py;
        if samples_changed || config_changed {
            self.reload_samples(stale);
        } else if any_py {
            if let Some(pending) = self.pending_run.as_mut() {
                pending.stale.extend(stale); // the run starts when the index is ready
                self.stop_following();
            } else {
                // a code save: remote evaluators have no code here and are not asked again
                let evaluators = &self.session.workspace.evaluators;
                let local = (0..evaluators.len())
                    .filter(|&i| !evaluators[i].source.is_remote())
                    .collect();
                self.start_run(stale, local, Vec::new());
            }
        }
        rewatch
    }

    pub(super) fn discovers_samples(&self) -> bool {
        self.options.overrides.samples.is_empty()
    }

    /// Shows the workspace's warnings (a skipped `.jsonl`) that are not in `before`.
    pub(super) fn show_warnings(&mut self, before: &[String]) {
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
    pub(super) fn adopt(&mut self, mut new: Workspace) -> bool {
        // the deployed versions' columns live for the session: back after the list
        self.ship.columns.arrange(&mut new.evaluators);
        let old = &self.session.workspace;
        let old_warnings = old.warnings.clone();
        let rewatch = new
            .evaluators
            .iter()
            .map(|e| e.source.folder())
            .ne(old.evaluators.iter().map(|e| e.source.folder()))
            || new.samples != old.samples;
        // another interpreter, or `[engine] ray` moved: another engine (on Ray, its
        // driver starts with the next run, which says so should it fail)
        let ray_moved =
            self.options.ray == RayChoice::Configured && new.config.ray() != old.config.ray();
        if new.python != old.python || ray_moved {
            match Session::open(new.root.clone(), &self.options) {
                Ok(mut s) => {
                    self.ship.columns.arrange(&mut s.workspace.evaluators);
                    self.session = s;
                }
                Err(Fail::Usage(e)) => {
                    self.app.update(Msg::ConfigError(Some(e)));
                    return false;
                }
            }
        } else {
            self.session.workspace = new;
        }
        self.realign_prepared();
        self.app.update(Msg::Evaluators(self.evaluator_infos()));
        self.app.update(Msg::Config(self.settings()));
        let training = self.session.workspace.config.training();
        self.app.update(Msg::Training(training));
        self.app
            .update(Msg::Hacking(crate::ui::app::hacking_settings(
                &self.session.workspace.config,
            )));
        self.show_warnings(&old_warnings);
        rewatch
    }

    /// What was prepared, moved by name to the evaluators' places in the list.
    pub(super) fn realign_prepared(&mut self) {
        let old_prepared = std::mem::take(&mut self.prepared);
        self.prepared = self
            .session
            .workspace
            .evaluators
            .iter()
            .map(|e| {
                old_prepared
                    .iter()
                    .flatten()
                    .find(|p| p.spec.name == e.name)
                    .cloned()
            })
            .collect();
    }
}

/// `folder`, or the nearest folder above it that is there (a step folder the trainer
/// has not made yet is watched from there, and is seen when it is made).
fn existing(folder: PathBuf) -> PathBuf {
    let mut folder = folder;
    while !folder.as_os_str().is_empty() && !folder.is_dir() {
        folder = folder.parent().map(Path::to_path_buf).unwrap_or_default();
    }
    match folder.as_os_str().is_empty() {
        true => PathBuf::from("."),
        false => folder,
    }
}

/// Whether `path` is `folder` or inside it (made absolute, links resolved where
/// they are there).
fn same_or_inside(path: &Path, folder: &Path) -> bool {
    let abs = |p: &Path| {
        std::fs::canonicalize(p)
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    abs(path).starts_with(abs(folder))
}

pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    let abs = |p: &Path| std::fs::canonicalize(p).or_else(|_| std::path::absolute(p));
    match (abs(a), abs(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
