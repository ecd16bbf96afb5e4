//! Watching the workspace: metric folders, project modules, samples files and
//! `rwb.toml`. Saves arrive debounced, as the list of paths that changed.

use notify::event::{CreateKind, EventKind, ModifyKind};
use notify::RecursiveMode;
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

/// Whether a changed path can affect results: Python files, samples files (rwb's
/// JSONL and the tables and logs other tools write), the config.
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
    // samples files of every kind: a trainer's new step file is read as it lands
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("py" | "jsonl" | "parquet" | "arrow" | "eval" | "json")
    ) || name == "rwb.toml"
}

/// What to watch under a root: its own files, and every folder in it but the ignored
/// ones, recursively. Not watching `.rwb` keeps the cache's writes (every page SQLite
/// writes is an event) from waking the watcher a million times in a long run.
fn watch_plan(root: &Path) -> Vec<(PathBuf, RecursiveMode)> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return vec![(root.to_path_buf(), RecursiveMode::Recursive)];
    };
    let mut plan = vec![(root.to_path_buf(), RecursiveMode::NonRecursive)];
    for entry in entries.flatten() {
        let ignored = IGNORED.iter().any(|i| entry.file_name() == *i);
        let path = entry.path();
        if !ignored && path.is_dir() {
            plan.push((path, RecursiveMode::Recursive));
        }
    }
    plan
}

/// A folder created: one right in a root is not watched yet (see [`watch_plan`]), so
/// it is reported for the owner to watch again; one deeper is watched with its parent
/// but may hold files written before it was (a trainer's new step folder), so it is
/// reported too, for the owner to read what is in it.
fn new_folder(kind: &EventKind, path: &Path, roots: &[PathBuf]) -> bool {
    matches!(
        kind,
        EventKind::Create(CreateKind::Folder | CreateKind::Any)
    ) && path.is_dir()
        && roots.iter().any(|r| {
            // within the root, no ignored folder on the way (`.venv/lib/…`)
            path.strip_prefix(r).is_ok_and(|rel| {
                !rel.components()
                    .any(|c| IGNORED.iter().any(|i| c.as_os_str() == *i))
            })
        })
}

impl Watcher {
    /// Watches each root (see [`watch_plan`]) and sends every debounced batch of
    /// relevant changed paths on `tx`; a folder created comes as its path.
    pub fn start(roots: &[PathBuf], tx: UnboundedSender<Vec<PathBuf>>) -> notify::Result<Watcher> {
        let mut watched: Vec<PathBuf> = Vec::new();
        for root in roots {
            let root = std::path::absolute(root).unwrap_or_else(|_| root.clone());
            if !watched.iter().any(|w| root.starts_with(w)) {
                watched.push(root);
            }
        }
        let in_roots = watched.clone();
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
                    let wanted = relevant(p) || new_folder(&event.kind, p, &in_roots);
                    if wanted && !paths.contains(p) {
                        paths.push(p.clone());
                    }
                }
            }
            if !paths.is_empty() {
                let _ = tx.send(paths);
            }
        })?;
        for root in &watched {
            for (path, mode) in watch_plan(root) {
                debouncer.watch(&path, mode)?;
            }
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

    #[test]
    fn the_cache_folder_and_other_ignored_folders_are_not_watched() {
        let dir = tempfile::tempdir().unwrap();
        for folder in [".rwb", "metrics/a", "__pycache__", "samples"] {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        }
        std::fs::write(dir.path().join("rwb.toml"), "").unwrap();
        let mut plan = watch_plan(dir.path());
        plan.sort_by(|a, b| a.0.cmp(&b.0));
        let root = dir.path().to_path_buf();
        assert_eq!(
            plan,
            vec![
                (root.clone(), RecursiveMode::NonRecursive),
                (root.join("metrics"), RecursiveMode::Recursive),
                (root.join("samples"), RecursiveMode::Recursive),
            ]
        );
    }

    #[tokio::test]
    async fn a_folder_created_in_the_root_arrives_and_cache_writes_do_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".rwb")).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let _w = Watcher::start(&[dir.path().to_path_buf()], tx).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // a .py written in the cache folder is not even seen
        std::fs::write(dir.path().join(".rwb/x.py"), "x").unwrap();
        std::fs::create_dir(dir.path().join("helpers")).unwrap();
        let paths = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        let names: Vec<_> = paths.iter().map(|p| p.file_name().unwrap()).collect();
        assert_eq!(names, ["helpers"]);
    }

    #[tokio::test]
    async fn a_folder_made_deeper_arrives_too_and_one_in_an_ignored_folder_does_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        std::fs::create_dir_all(dir.path().join(".venv")).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let _w = Watcher::start(&[dir.path().to_path_buf()], tx).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        std::fs::create_dir(dir.path().join(".venv/lib")).unwrap();
        // a trainer's log folder, made in a folder watched with the root
        std::fs::create_dir(dir.path().join("logs/exp")).unwrap();
        let paths = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        let names: Vec<_> = paths.iter().map(|p| p.file_name().unwrap()).collect();
        assert_eq!(names, ["exp"]);
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
