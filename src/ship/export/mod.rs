//! `rwb export` (SPEC §21): a folder a trainer runs the reward from, written from the
//! workspace. `nemo_gym` writes a NeMo Gym resources server that starts `rwb serve`;
//! `verifiers` writes an installable verifiers 1.x taskset package that calls the
//! user's function itself, with rwb's calling code copied in (no rwb where it runs).
//!
//! What both share is here: the folder (refused when it holds anything, unless
//! `force`), the evaluator (one with code to run), and the samples as JSON rows.

pub mod nemo_gym;
pub mod verifiers;

use crate::model::{EvaluatorSpec, Source};
use crate::workspace::Workspace;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// What was written, for the command to print.
#[derive(Debug, Default)]
pub struct Exported {
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
    /// Lines to show the user (the config lines to paste, how to run it).
    pub lines: Vec<String>,
    /// What the export could not carry over.
    pub warnings: Vec<String>,
}

/// The folder to write into: created, or empty, or `force`.
pub fn prepare_dir(dir: &Path, force: bool) -> Result<(), String> {
    if dir.exists() {
        if !dir.is_dir() {
            return Err(format!("{} is a file, not a folder", dir.display()));
        }
        let full = std::fs::read_dir(dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .next()
            .is_some();
        if full && !force {
            return Err(format!(
                "{} is not empty: export into a new or empty folder, or add --force to write over what is there",
                dir.display()
            ));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

/// The evaluator to export: `name`, else the default (`default = true`), else the
/// first; refused when it has no code here to run.
pub fn evaluator<'a>(
    workspace: &'a Workspace,
    name: Option<&str>,
) -> Result<&'a EvaluatorSpec, String> {
    let spec = match name {
        Some(name) => workspace
            .evaluators
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = workspace
                    .evaluators
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect();
                format!(
                    "no evaluator named '{name}' (there are: {})",
                    names.join(", ")
                )
            })?,
        None => {
            let default = workspace
                .config
                .evaluators
                .iter()
                .find(|(_, e)| e.default == Some(true))
                .map(|(n, _)| n.clone());
            workspace
                .evaluators
                .iter()
                .find(|e| Some(&e.name) == default.as_ref())
                .or_else(|| workspace.evaluators.first())
                .ok_or("the workspace has no evaluator to export")?
        }
    };
    match &spec.source {
        Source::Remote { url, .. } => Err(format!(
            "evaluator '{}' runs at {url} (a `url` evaluator): there is no code here to export; export the workspace that serves it",
            spec.name
        )),
        Source::Fireworks { id } => Err(format!(
            "evaluator '{}' runs on Fireworks ({id}): there is no code here to export",
            spec.name
        )),
        _ => Ok(spec),
    }
}

/// Refuses a workspace that scores only on a Ray cluster (`[engine] ray`): the
/// exported reward runs in the trainer's process or beside it, not on the cluster.
pub fn not_ray_only(workspace: &Workspace) -> Result<(), String> {
    match workspace.config.ray() {
        Ok(Some(address)) => Err(format!(
            "rwb.toml scores on the Ray cluster at {address} ([engine] ray): a Ray-only evaluator cannot be exported; remove [engine] ray to export it, and the trainer runs it where it runs"
        )),
        _ => Ok(()),
    }
}

/// The workspace's samples as rows: every line of its JSONL files (the trainers' own
/// log formats are not carried over: said in `warnings`).
pub fn sample_rows(workspace: &Workspace, warnings: &mut Vec<String>) -> Vec<Map<String, Value>> {
    let mut rows = Vec::new();
    for file in &workspace.samples {
        if file.foreign.is_some() {
            warnings.push(format!(
                "{}: rows of a trainer's or tool's own format are not exported (only JSONL samples are)",
                file.label
            ));
            continue;
        }
        let Ok(text) = std::fs::read_to_string(file.text_path()) else {
            warnings.push(format!("{}: cannot be read", file.label));
            continue;
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if let Ok(Value::Object(row)) = serde_json::from_str(line) {
                rows.push(row);
            }
        }
    }
    rows
}

/// A name fit for a Python package and a NeMo Gym server: lower case, `_` between
/// words, starting with a letter.
pub fn package_name(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    let out = out.trim_matches('_').to_string();
    match out.chars().next() {
        Some(c) if c.is_ascii_alphabetic() => out,
        _ => format!("rwb_{out}"),
    }
}

fn write(out: &mut Exported, rel: &str, text: &str) -> Result<(), String> {
    let path = out.dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    out.files.push(path);
    Ok(())
}

/// The conversation of a row split as a trainer splits it: the prompt (turns, or a
/// string) and the row's other keys; `None` for a row in neither form.
pub fn prompt_of(row: &Map<String, Value>) -> Option<Value> {
    if let Some(Value::Array(messages)) = row.get("messages") {
        // the prompt is every turn before the last assistant turn(s)
        let mut end = messages.len();
        while end > 0 && messages[end - 1].get("role").and_then(Value::as_str) == Some("assistant")
        {
            end -= 1;
        }
        return Some(Value::Array(messages[..end].to_vec()));
    }
    row.get("prompt").cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_python_names() {
        assert_eq!(package_name("Exact-Match v2"), "exact_match_v2");
        assert_eq!(package_name("2fast"), "rwb_2fast");
    }

    #[test]
    fn a_folder_with_files_is_refused_without_force() {
        let dir = tempfile::tempdir().unwrap();
        prepare_dir(dir.path(), false).unwrap();
        std::fs::write(dir.path().join("x"), "1").unwrap();
        let e = prepare_dir(dir.path(), false).unwrap_err();
        assert!(e.contains("is not empty") && e.contains("--force"), "{e}");
        prepare_dir(dir.path(), true).unwrap();
    }
}
