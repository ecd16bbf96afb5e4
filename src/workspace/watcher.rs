//! Watching the workspace: metric folders, project modules, samples files and
//! `rwb.toml`. Saves arrive debounced, as the list of paths that changed.

use notify::event::{EventKind, ModifyKind};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// Editors write a file in several steps (truncate, write, rename); wait this long
/// for the burst to end. Short: the save-to-score loop is the product.
const DEBOUNCE: Duration = Duration::from_millis(20);

/// Folders whose changes never matter.
const IGNORED: &[&str] = &[
    ".rwb",
    "__pycache__",
    ".git",
    "target",
    ".venv",
    "venv",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
];

/// Keeps the watch alive; dropping it stops watching.
pub struct Watcher {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
    pub roots: Vec<PathBuf>,
}

/// Whether a changed path can affect results: Python files, samples, the config.
pub fn relevant(path: &Path) -> bool {
    if path
        .components()
        .any(|c| IGNORED.iter().any(|i| c.as_os_str() == *i))
    {
        return false;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.starts_with(".#")
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swx")
    {
        return false;
    }
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("py" | "jsonl")
    ) || name == "rwb.toml"
}

impl Watcher {
    /// Watches each root recursively and sends every debounced batch of relevant
    /// changed paths on `tx`.
    pub fn start(roots: &[PathBuf], tx: UnboundedSender<Vec<PathBuf>>) -> notify::Result<Watcher> {
        let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| {
            let Ok(events) = result else { return };
            let mut paths: Vec<PathBuf> = Vec::new();
            for event in events {
                let matters = matches!(
                    event.kind,
                    EventKind::Create(_)
                        | EventKind::Remove(_)
                        | EventKind::Modify(
                            ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any
                        )
                        | EventKind::Any
                );
                if !matters {
                    continue;
                }
                for p in &event.paths {
                    if relevant(p) && !paths.contains(p) {
                        paths.push(p.clone());
                    }
                }
            }
            if !paths.is_empty() {
                let _ = tx.send(paths);
            }
        })?;
        let mut watched = Vec::new();
        for root in roots {
            let root = std::path::absolute(root).unwrap_or_else(|_| root.clone());
            if watched.iter().any(|w: &PathBuf| root.starts_with(w)) {
                continue;
            }
            debouncer.watch(&root, notify::RecursiveMode::Recursive)?;
            watched.push(root);
        }
        Ok(Watcher {
            _debouncer: debouncer,
            roots: watched,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_code_samples_and_config_matter() {
        assert!(relevant(Path::new("/w/metrics/a/main.py")));
        assert!(relevant(Path::new("/w/samples/x.jsonl")));
        assert!(relevant(Path::new("/w/rwb.toml")));
        assert!(!relevant(Path::new("/w/.rwb/cache.sqlite-wal")));
        assert!(!relevant(Path::new(
            "/w/metrics/a/__pycache__/main.cpython-311.pyc"
        )));
        assert!(!relevant(Path::new("/w/metrics/a/.main.py.swp")));
        assert!(!relevant(Path::new("/w/notes.md")));
    }

    #[tokio::test]
    async fn a_save_arrives_as_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("main.py");
        std::fs::write(&file, "x = 1\n").unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let _w = Watcher::start(&[dir.path().to_path_buf()], tx).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        std::fs::write(&file, "x = 2\n").unwrap();
        std::fs::write(dir.path().join("ignored.md"), "x").unwrap();
        let paths = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        let file = std::fs::canonicalize(&file).unwrap();
        assert!(
            paths
                .iter()
                .any(|p| std::fs::canonicalize(p).ok() == Some(file.clone())),
            "{paths:?}"
        );
        assert!(paths.iter().all(|p| p.extension().unwrap() != "md"));
    }
}
