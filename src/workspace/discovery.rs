//! Which samples files a workspace has (SPEC §2, §13): `-s FILE`, else `rwb.toml`'s
//! `samples` (paths, or `[samples.NAME]` mappings), else what DIR holds — rwb's own
//! JSONL files and the files other tools write, each read as its shape says
//! ([`crate::sources::detect`]).

use super::{holds_no_sample, Config, Foreign, Overrides, Reader, SamplesFile, WorkspaceError};
use crate::sources::{self, Options};
use crate::workspace::config::SamplesConfig;
use std::path::{Path, PathBuf};

/// The samples files and warnings about discovered files that were skipped.
pub(super) type Resolved = (Vec<SamplesFile>, Vec<String>);

fn err<T>(message: impl Into<String>) -> Result<T, WorkspaceError> {
    Err(WorkspaceError(message.into()))
}

/// What every foreign reader is told: the dotted paths evaluators name as their
/// logged score.
fn options(config: &Config) -> Options {
    Options {
        logged_paths: config
            .evaluators
            .values()
            .filter_map(|e| e.logged.clone())
            .collect(),
        conversational: false,
    }
}

/// The samples file at `path` as its shape says (rwb's JSONL, or another tool's).
fn samples_file(
    path: PathBuf,
    label: String,
    root: &Path,
    options: &Options,
) -> Result<SamplesFile, String> {
    if sources::files::is_many(&path) {
        sources::files::members(&path)?; // a glob matching nothing, an empty folder
    }
    Ok(match sources::detect(&path)? {
        None => SamplesFile::jsonl(path, label),
        Some(format) => {
            let foreign = Foreign::new(
                &path,
                Reader::Format(format),
                options.clone(),
                &root.join(".rwb"),
            );
            SamplesFile {
                path,
                label,
                foreign: Some(std::sync::Arc::new(foreign)),
            }
        }
    })
}

pub(super) fn resolve_samples(
    root: &Path,
    config: &Config,
    overrides: &Overrides,
) -> Result<Resolved, WorkspaceError> {
    let options = options(config);
    let mut files = Vec::new();
    if !overrides.samples.is_empty() {
        for given in &overrides.samples {
            let path = PathBuf::from(given);
            if !path.exists() && !sources::files::is_pattern(&path) {
                return err(format!("samples file not found: {given}"));
            }
            files.push(samples_file(path, given.clone(), root, &options).map_err(WorkspaceError)?);
        }
        return Ok((files, Vec::new()));
    }
    match &config.samples {
        Some(SamplesConfig::Paths(listed)) => {
            for rel in listed {
                let path = root.join(rel);
                if !path.exists() && !sources::files::is_pattern(&path) {
                    return err(format!(
                        "samples file not found: {} (listed in rwb.toml)",
                        path.display()
                    ));
                }
                files
                    .push(samples_file(path, rel.clone(), root, &options).map_err(WorkspaceError)?);
            }
            return Ok((files, Vec::new()));
        }
        Some(SamplesConfig::Mapped(mapped)) => {
            for (name, mapping) in mapped {
                let path = root.join(&mapping.path);
                if !path.exists() && !sources::files::is_pattern(&path) {
                    return err(format!(
                        "samples file not found: {} (rwb.toml [samples.{name}] path)",
                        path.display()
                    ));
                }
                if sources::files::is_many(&path) {
                    sources::files::members(&path).map_err(|e| {
                        WorkspaceError(format!("{e} (rwb.toml [samples.{name}] path)"))
                    })?;
                }
                let mut options = options.clone();
                options.conversational = mapping
                    .conversational()
                    .map_err(|e| WorkspaceError(format!("rwb.toml [samples.{name}] {e}")))?;
                let reader = Reader::Mapped(Box::new(mapping.clone()));
                let foreign = Foreign::new(&path, reader, options, &root.join(".rwb"));
                files.push(SamplesFile {
                    path,
                    label: mapping.path.clone(),
                    foreign: Some(std::sync::Arc::new(foreign)),
                });
            }
            return Ok((files, Vec::new()));
        }
        None => {}
    }
    let (files, warnings) = discover(root, &options);
    if files.is_empty() && !overrides.serving {
        let skipped = if warnings.is_empty() {
            String::new()
        } else {
            format!(" ({})", warnings.join("; "))
        };
        return err(format!(
            "no samples in {}: put a samples file there or in samples/ (JSONL rows with messages, or prompt and completion; a Parquet or Arrow table; a trainer's or eval tool's log such as TRL's completions/ or a veRL dump), give -s FILE, or run `rwb init DIR` for a workspace that runs at once{skipped}",
            root.display()
        ));
    }
    Ok((files, warnings))
}

/// Extensions of files other tools write that discovery looks at (pickles, to say
/// how to export them).
const FOREIGN: &[&str] = &["parquet", "arrow", "eval", "json", "db", "pt", "pkl"];

/// Folders in DIR where trainers write their step files, each read as one source:
/// TRL's `completions/`, veRL's usual `rollout_data/` and `validation_data/`,
/// SkyRL's `dumped_evals/`, prime-rl's `rollouts/`.
const STEP_FOLDERS: &[&str] = &[
    "completions",
    "rollout_data",
    "validation_data",
    "dumped_evals",
    "rollouts",
];

/// [`discover`] with no evaluator naming a logged path (tests).
#[cfg(test)]
pub(super) fn discover_samples(root: &Path) -> Resolved {
    discover(root, &Options::default())
}

/// Every trainer output folder of [`STEP_FOLDERS`] in DIR (one source each), then
/// every samples file in DIR and `DIR/samples/`, in name order: `*.jsonl` (except files none of whose lines is a sample, such as saved
/// output: skipped with a warning each), and Parquet, Arrow, Inspect, eval-protocol
/// and promptfoo files and Hugging Face dataset folders rwb recognises (others, such
/// as a `package.json`, are not samples and are passed over).
fn discover(root: &Path, options: &Options) -> Resolved {
    let mut files = Vec::new();
    let mut warnings = Vec::new();
    // a trainer's output folder of step files is one source, read in step order
    for name in STEP_FOLDERS {
        let dir = root.join(name);
        if !dir.is_dir() {
            continue;
        }
        let label = format!("{name}/");
        match samples_file(dir, label.clone(), root, options) {
            Ok(file) => files.push(file),
            Err(e) => warnings.push(format!("skipped {label}: {e}")),
        }
    }
    let places = [(root.to_path_buf(), ""), (root.join("samples"), "samples/")];
    for (dir, prefix) in places {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        found.sort();
        for path in found {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let ext = path
                .extension()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_default();
            let label = format!("{prefix}{name}");
            let hf = path.is_dir()
                && (path.join("state.json").is_file() || path.join("dataset_dict.json").is_file());
            let jsonl = path.is_file() && ext == "jsonl";
            if name == crate::trust::labels::LABELS_FILE {
                continue; // the workbench's human labels, never samples (SPEC §16)
            }
            if !(hf || jsonl || (path.is_file() && FOREIGN.contains(&ext.as_str()))) {
                continue;
            }
            match samples_file(path, label.clone(), root, options) {
                Ok(file) if file.foreign.is_none() && !jsonl => {} // a JSON file of no tool's
                Ok(file) if file.foreign.is_none() && holds_no_sample(&file) => warnings.push(format!(
                    "skipped {label}: none of its lines is a sample (a JSON object with a \"messages\" list, or \"prompt\" and \"completion\"), as in saved output; name it with -s to evaluate it anyway"
                )),
                Ok(file) => files.push(file),
                Err(e) if jsonl || ["parquet", "eval", "pt", "pkl"].contains(&ext.as_str()) || hf => {
                    // one line each (a pickle's export lines show with -s FILE)
                    let first = e.lines().next().unwrap_or_default();
                    let more = if e.contains('\n') { " (give it with -s to see how)" } else { "" };
                    warnings.push(format!("skipped {label}: {first}{more}"))
                }
                Err(_) => {} // a .json or .db of no tool's
            }
        }
    }
    (files, warnings)
}
