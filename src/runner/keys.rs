//! Code keys: what makes a cached result still valid (rwb's cache version, the
//! interpreter, how the evaluator is called, and every file and distribution it
//! imported), and the stamps and hashes they are made of.

use super::{Prepared, CACHE_VERSION};
use crate::engine::{Loaded, ThirdParty};
use crate::model::{EvalError, EvaluatorSpec, Style};
use crate::store::{CodeKey, ImportMemo, Stamp};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The code key: rwb's cache version, the interpreter, how the evaluator is called,
/// and everything it imported (project files by content, third-party files by stamp,
/// distributions by version).
pub(super) fn code_key(identity: &str, spec: &EvaluatorSpec, memo: &ImportMemo) -> CodeKey {
    let mut h = blake3::Hasher::new();
    let kwargs = serde_json::to_string(&spec.kwargs).unwrap_or_default();
    let call = spec.call.as_ref().map(|c| c.identity()).unwrap_or_default();
    let trainer_args = serde_json::to_string(&spec.trainer_args).unwrap_or_default();
    let part = |h: &mut blake3::Hasher, text: &str| {
        h.update(text.as_bytes());
        h.update(&[0]);
    };
    // each repeat from the second on is cached apart (SPEC §16); the first shares
    // the key of a run without `repeat`, so adding `repeat` reuses what is cached
    if spec.repeat_index > 0 {
        part(&mut h, &format!("repeat {}", spec.repeat_index));
    }
    // a call per rollout group depends on what makes a group
    if Style::per_group(Some(memo.style), spec) {
        part(
            &mut h,
            &format!("group {}", spec.group.as_deref().unwrap_or("prompt")),
        );
    }
    for text in [
        CACHE_VERSION,
        identity,
        memo.style.as_str(),
        spec.source.function(),
        spec.source.module().unwrap_or("-"),
        &kwargs,
        &spec.batch_size.to_string(),
        spec.solution_str.as_str(),
        spec.trainer.map(|t| t.as_str()).unwrap_or("-"),
        &spec.chat_template.identity(),
        &call,
        &trainer_args,
    ] {
        part(&mut h, text);
    }
    // project files by their place in the evaluator's folder, however the workspace
    // was named (`rwb run .` and `rwb run /abs/path` share their results)
    let whole = |p: &std::path::Path| {
        std::fs::canonicalize(p)
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    let folder = whole(&spec.source.folder());
    let mut files: Vec<(String, &str)> = memo
        .files
        .iter()
        .map(|(p, hash)| {
            let p = whole(p);
            let rel = p.strip_prefix(&folder).unwrap_or(&p);
            (rel.to_string_lossy().into_owned(), hash.as_str())
        })
        .collect();
    files.sort();
    for (rel, hash) in files {
        part(&mut h, &rel);
        part(&mut h, hash);
    }
    part(&mut h, "third-party");
    let mut stamps: Vec<&Stamp> = memo.stamps.iter().collect();
    stamps.sort();
    for s in stamps {
        part(
            &mut h,
            &format!("{}|{}|{}", s.path.display(), s.size, s.mtime_ns),
        );
    }
    let mut dists: Vec<&(String, String)> = memo.dists.iter().collect();
    dists.sort();
    for (name, version) in dists {
        part(&mut h, &format!("{name}=={version}"));
    }
    *h.finalize().as_bytes()
}

/// What a freshly loaded worker imported, as a memo, and the newest inode change time
/// among its third-party files (to tell whether the fork-server may hold older code).
pub(super) fn memo_of(loaded: &Loaded) -> (ImportMemo, Option<SystemTime>) {
    let mut files: Vec<(PathBuf, String)> = loaded
        .files
        .iter()
        .filter_map(|p| Some((p.clone(), file_hash(p)?)))
        .collect();
    files.sort();
    let (paths, mut dists) = third_party_parts(&loaded.packages);
    let mut newest: Option<SystemTime> = None;
    let mut stamps = Vec::with_capacity(paths.len());
    for path in paths {
        if let Some((s, changed)) = stamp(&path) {
            newest = newest.max(Some(changed));
            stamps.push(s);
        }
    }
    stamps.sort();
    dists.sort();
    let memo = ImportMemo {
        style: loaded.style,
        files,
        stamps,
        dists,
    };
    (memo, newest)
}

/// Whether every file a memo names is as it was: project files by content, the
/// third-party files by stamp (one `stat` each).
pub(super) fn memo_is_current(memo: &ImportMemo) -> bool {
    memo.files
        .iter()
        .all(|(path, hash)| file_hash(path).as_deref() == Some(hash.as_str()))
        && memo
            .stamps
            .iter()
            .all(|s| stamp(&s.path).is_some_and(|(now, _)| now == *s))
}

/// The files to stamp (module files and distribution metadata) and the (name,
/// version) of each distribution a worker reported.
pub(super) fn third_party_parts(packages: &ThirdParty) -> (Vec<PathBuf>, Vec<(String, String)>) {
    let mut paths: Vec<PathBuf> = packages.modules.clone();
    paths.extend(packages.dists.iter().map(|d| d.metadata.clone()));
    paths.sort();
    paths.dedup();
    let mut dists: Vec<(String, String)> = packages
        .dists
        .iter()
        .map(|d| (d.name.clone(), d.version.clone().unwrap_or_default()))
        .collect();
    dists.sort();
    dists.dedup();
    (paths, dists)
}

/// A file's stamp and its inode change time (which no tool sets back), or `None`
/// when it is gone.
pub(super) fn stamp(path: &Path) -> Option<(Stamp, SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let changed = SystemTime::UNIX_EPOCH
        + Duration::new(
            meta.ctime().max(0) as u64,
            meta.ctime_nsec().clamp(0, 999_999_999) as u32,
        );
    let stamp = Stamp {
        path: path.to_path_buf(),
        size: meta.len(),
        mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
    };
    Some((stamp, changed))
}

/// The `Prepared` of an evaluator whose worker could not import it.
pub(super) fn import_failure(
    spec: Arc<EvaluatorSpec>,
    files: Vec<PathBuf>,
    failure: EvalError,
) -> Prepared {
    Prepared {
        key: [0; 32],
        spec,
        style: None,
        files,
        failure: Some(failure),
        memo: None,
    }
}

/// The content hash of a file, or `None` when it cannot be read.
pub fn file_hash(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(blake3::hash(&bytes).to_hex().to_string())
}

pub(super) fn modified_since(path: &Path, since: SystemTime) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map(|t| t >= since)
        .unwrap_or(false)
}

/// Which interpreter this is, without starting it: its resolved path, size and
/// modification time (a reinstalled Python invalidates the cache).
pub(super) fn interpreter_identity(python: &Path) -> String {
    let resolved = find_program(python).unwrap_or_else(|| python.to_path_buf());
    let real = std::fs::canonicalize(&resolved).unwrap_or(resolved.clone());
    let meta = std::fs::metadata(&real).ok();
    let stamp = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}|{}|{}|{}",
        resolved.display(),
        real.display(),
        meta.map(|m| m.len()).unwrap_or(0),
        stamp
    )
}

/// Looks a bare program name up on PATH; a path is returned as is.
pub fn find_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.exists().then(|| program.to_path_buf());
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}
