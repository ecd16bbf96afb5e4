//! Where workers read rwb's own Python from: one folder per content of the embedded
//! files, kept in the user's cache folder (`~/.cache/rwb/python/VERSION-HASH/`) and
//! shared by every run, so that its compiled modules (`__pycache__`, written once by
//! the fork-server: see `zygote.py`) outlive the run. Written afresh each run, the
//! files were compiled each run: about 45 ms of every start-up, on the path to the
//! first result.
//!
//! The folder is written under a temporary name and renamed into place, so a run
//! sees it whole or not at all; its files are compared with the embedded ones on
//! every use, and a folder that differs (edited, damaged) is not used. When the
//! cache folder cannot be written, the run's private folder holds the files, as
//! before.

use std::path::{Path, PathBuf};

/// The file that marks a folder written whole.
const WHOLE: &str = "whole";

/// The shared folder holding exactly the embedded files, written if need be; `None`
/// when there is no usable one (the caller writes the files to a private folder).
pub fn shared() -> Option<PathBuf> {
    if std::env::var_os("RWB_PRIVATE_PYTHON").is_some() {
        return None;
    }
    let base = directories::ProjectDirs::from("", "", "rwb")?
        .cache_dir()
        .join("python");
    in_base(&base)
}

/// [`shared`] under `base`.
fn in_base(base: &Path) -> Option<PathBuf> {
    let name = format!("{}-{:032x}", env!("CARGO_PKG_VERSION"), content_hash());
    let dir = base.join(&name);
    if dir.join(WHOLE).is_file() {
        return holds_the_files(&dir).then_some(dir);
    }
    std::fs::create_dir_all(base).ok()?;
    let writing = tempfile::Builder::new()
        .prefix(".writing-")
        .tempdir_in(base)
        .ok()?;
    write_files(writing.path()).ok()?;
    std::fs::write(writing.path().join(WHOLE), b"").ok()?;
    let written = writing.keep();
    match std::fs::rename(&written, &dir) {
        Ok(()) => {
            prune(base, &name);
            Some(dir)
        }
        Err(_) => {
            // another run put it in place first
            let _ = std::fs::remove_dir_all(&written);
            (dir.join(WHOLE).is_file() && holds_the_files(&dir)).then_some(dir)
        }
    }
}

/// Writes the embedded files under `dir`.
pub fn write_files(dir: &Path) -> std::io::Result<()> {
    for (rel, text) in super::PYTHON_FILES {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("embedded files have a folder"))?;
        std::fs::write(&path, text)?;
    }
    Ok(())
}

/// Whether every embedded file is in `dir` exactly as embedded.
fn holds_the_files(dir: &Path) -> bool {
    super::PYTHON_FILES
        .iter()
        .all(|(rel, text)| std::fs::read(dir.join(rel)).is_ok_and(|found| found == text.as_bytes()))
}

/// What names the embedded files' content.
fn content_hash() -> u128 {
    let mut all = Vec::new();
    for (rel, text) in super::PYTHON_FILES {
        all.extend_from_slice(rel.as_bytes());
        all.push(0);
        all.extend_from_slice(text.as_bytes());
        all.push(0);
    }
    xxhash_rust::xxh3::xxh3_128(&all)
}

/// Removes the folders of other versions not used for a week (a run of an older
/// rwb still going uses its own, recently).
fn prune(base: &Path, keep: &str) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    let week = std::time::Duration::from_secs(7 * 24 * 3600);
    for entry in entries.flatten() {
        let name = entry.file_name();
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > week);
        if name != keep && stale {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_is_written_once_whole_and_used_while_it_holds_the_files() {
        let base = tempfile::tempdir().unwrap();
        let first = in_base(base.path()).expect("a folder");
        assert!(first.join(WHOLE).is_file());
        assert!(holds_the_files(&first));
        let stamp = std::fs::metadata(first.join("rwb_worker.py"))
            .unwrap()
            .modified()
            .unwrap();
        // a second run takes the same folder without writing it again
        assert_eq!(in_base(base.path()), Some(first.clone()));
        let again = std::fs::metadata(first.join("rwb_worker.py"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(stamp, again);
        // no folder being written is left behind
        let names: Vec<String> = std::fs::read_dir(base.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // an edited file makes the folder unusable, never run
        std::fs::write(first.join("rwb_py/worker.py"), "raise SystemExit(3)\n").unwrap();
        assert_eq!(in_base(base.path()), None);
    }

    #[test]
    fn runs_starting_together_all_get_the_whole_folder() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().to_path_buf();
        let runs: Vec<_> = (0..4)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || in_base(&path))
            })
            .collect();
        let got: Vec<Option<PathBuf>> = runs.into_iter().map(|r| r.join().unwrap()).collect();
        let first = got[0].clone().expect("a folder");
        assert!(got.iter().all(|g| g.as_ref() == Some(&first)), "{got:?}");
        assert!(holds_the_files(&first));
    }
}
