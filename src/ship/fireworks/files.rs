//! Reading what a deploy sends: which files, within which limits, refused with a
//! message naming the file when they may not travel.

use super::FireworksError;
use std::path::Path;

/// One file deploy may send at most (SPEC §7).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// All the files of one deploy together at most.
pub const MAX_TOTAL_BYTES: u64 = 10 * 1024 * 1024;

/// The bytes a deploy has read so far, against [`MAX_TOTAL_BYTES`].
#[derive(Default)]
pub(super) struct Budget {
    used: u64,
}

/// Reads a file deploy sends from folder `root`, when it may be sent: a regular file
/// (or a link to one inside `root`), not hidden (hidden files often hold secrets), at
/// most [`MAX_FILE_BYTES`], and within the whole deploy's [`MAX_TOTAL_BYTES`]. Every
/// refusal names the file and what to do.
pub(super) fn read_sendable(
    root: &Path,
    path: &Path,
    budget: &mut Budget,
) -> Result<String, FireworksError> {
    let refuse =
        |why: String| FireworksError::Local(format!("cannot send {}: {why}", path.display()));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if name.as_deref().is_some_and(|n| n.starts_with('.')) {
        return Err(refuse(format!(
            "it is a hidden file, and deploy sends no hidden files (they often hold secrets): rename it or move it out of {}",
            root.display()
        )));
    }
    let link = std::fs::symlink_metadata(path)
        .map_err(|e| refuse(e.to_string()))?
        .file_type()
        .is_symlink();
    if link {
        let target = std::fs::canonicalize(path).map_err(|e| {
            refuse(format!(
                "it is a symbolic link that cannot be followed ({e})"
            ))
        })?;
        let inside = std::fs::canonicalize(root).is_ok_and(|r| target.starts_with(r));
        if !inside {
            return Err(refuse(format!(
                "it is a symbolic link to {}, outside {}: deploy sends only files inside the folder; copy the file in instead",
                target.display(),
                root.display()
            )));
        }
    }
    let meta = std::fs::metadata(path).map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("it is not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(refuse(format!(
            "it is {} bytes, over the 1 MB limit for one file: move data out of the evaluator's folder",
            meta.len()
        )));
    }
    budget.used += meta.len();
    if budget.used > MAX_TOTAL_BYTES {
        return Err(refuse(format!(
            "with it the files to send come to {} bytes, over the 10 MB limit for a deploy: move data out of the evaluator folders",
            budget.used
        )));
    }
    read_source(path)
}

fn read_source(path: &Path) -> Result<String, FireworksError> {
    let bytes = std::fs::read(path)
        .map_err(|e| FireworksError::Local(format!("cannot read {}: {e}", path.display())))?;
    String::from_utf8(bytes).map_err(|_| {
        FireworksError::Local(format!(
            "cannot send {}: it is not UTF-8 text (save it as UTF-8)",
            path.display()
        ))
    })
}

/// Every `.py` file under `dir`, as paths relative to `root` with `/`; skips hidden
/// folders, `__pycache__` and virtual environments.
pub(super) fn collect_python_files(
    root: &Path,
    dir: &Path,
    out: &mut Vec<String>,
) -> Result<(), FireworksError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| FireworksError::Local(format!("cannot read {}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let skip = name.starts_with('.')
                || matches!(
                    name.as_str(),
                    "__pycache__" | "node_modules" | "site-packages"
                )
                || path.join("pyvenv.cfg").exists();
            if !skip {
                collect_python_files(root, &path, out)?;
            }
        } else if name.ends_with(".py") && (kind.is_file() || path.is_file()) {
            if let Ok(rel) = path.strip_prefix(root) {
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
    }
    Ok(())
}

/// Requirement lines of a `requirements.txt` (comments and blank lines dropped).
pub(super) fn parse_requirements_txt(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = match line.find(" #").or_else(|| line.find("\t#")) {
            Some(i) => &line[..i],
            None => line,
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !out.iter().any(|l| l == line) {
            out.push(line.to_string());
        }
    }
    out
}
