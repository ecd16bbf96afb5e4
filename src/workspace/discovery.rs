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
        kept: Vec::new(),
    }
}

/// The samples file at `path` as its shape says (rwb's JSONL, or another tool's). A
/// folder or glob with no file yet is an error unless the command `waits` for them.
fn samples_file(
    path: PathBuf,
    label: String,
    root: &Path,
    options: &Options,
    waits: bool,
) -> Result<SamplesFile, String> {
    if sources::files::is_many(&path) && !waits {
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
    let waits = overrides.waits;
    let mut files = Vec::new();
    let mut warnings = Vec::new();
    if !overrides.samples.is_empty() {
        for given in &overrides.samples {
            let path = PathBuf::from(given);
            if is_missing(&path, waits) {
                return err(format!(
                    "samples file not found: {given}{}",
                    folder_hint(given)
                ));
            }
            let file =
                samples_file(path, given.clone(), root, &options, waits).map_err(WorkspaceError)?;
            warnings.extend(unknown_shape(&file, root, false).map(|u| u.text()));
            files.push(file);
        }
        return Ok((files, warnings));
    }
    match &config.samples {
        Some(SamplesConfig::Paths(listed)) => {
            for rel in listed {
                let path = root.join(rel);
                if is_missing(&path, waits) {
                    return err(format!(
                        "samples file not found: {} (listed in rwb.toml){}",
                        path.display(),
                        folder_hint(rel)
                    ));
                }
                let file = samples_file(path, rel.clone(), root, &options, waits)
                    .map_err(WorkspaceError)?;
                warnings.extend(unknown_shape(&file, root, false).map(|u| u.text()));
                files.push(file);
            }
            return Ok((files, warnings));
        }
        Some(SamplesConfig::Mapped(mapped)) => {
            for (name, mapping) in mapped {
                let path = root.join(&mapping.path);
                if is_missing(&path, waits) {
                    return err(format!(
                        "samples file not found: {} (rwb.toml [samples.{name}] path){}",
                        path.display(),
                        folder_hint(&mapping.path)
                    ));
                }
                if sources::files::is_many(&path) && !waits {
                    sources::files::members(&path).map_err(|e| {
                        WorkspaceError(format!("{e} (rwb.toml [samples.{name}] path)"))
                    })?;
                }
                let mut options = options.clone();
                if mapping.maps_nothing() {
                    options.kept = [&mapping.human, &mapping.label]
                        .into_iter()
                        .flatten()
                        .cloned()
                        .collect();
                }
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
    let (files, warnings) = discover(root, &options, waits);
    if files.is_empty() && !overrides.serving {
        let skipped = if warnings.is_empty() {
            String::new()
        } else {
            format!(" ({})", warnings.join("; "))
        };
        return err(format!(
            "no samples in {}: put a samples file there or in samples/ (JSONL rows with messages, or prompt and completion; a Parquet or Arrow table; a trainer's or eval tool's log such as TRL's completions/ or a veRL dump), give -s FILE, or run `rwb init DIR` for a workspace that runs at once{skipped}{}",
            root.display(),
            step_folders_below(root)
        ));
    }
    Ok((files, warnings))
}

/// Whether a samples path names nothing there: not a file, folder or glob, nor (for a
/// command that waits for its files) a folder not there yet (`logs/exp/`).
fn is_missing(path: &Path, waits: bool) -> bool {
    let waited = waits && sources::files::is_folder_to_be(path);
    !(path.exists() || sources::files::is_pattern(path) || waited)
}

/// For a missing path that names a folder (`logs/exp/`): the workbench waits for it.
fn folder_hint(given: &str) -> String {
    match given.ends_with('/') {
        true => format!(
            " (a folder the trainer has not written yet: the workbench, `rwb DIR -s {given}`, opens on it and waits for its files)"
        ),
        false => String::new(),
    }
}

/// What to say of an rwb JSONL samples file none of whose lines is a sample (known
/// already when `no_sample`), when its rows are of a shape rwb does not know (not
/// saved `rwb run` output): its columns and the `[samples.NAME]` lines to write
/// (SPEC §13). `None` for any other file: its bad lines are `BadSample` rows, each
/// saying why (SPEC §9), and so are these, which the message is said once beside.
fn unknown_shape(
    file: &SamplesFile,
    root: &Path,
    no_sample: bool,
) -> Option<sources::unknown::Unknown> {
    if file.foreign.is_some() || !file.path.is_file() {
        return None;
    }
    let first = sources::unknown::first_row(&file.path)?;
    let keys: Vec<String> = first.keys().cloned().collect();
    if sources::unknown::is_result_row(&keys) || !(no_sample || holds_no_sample(file)) {
        return None;
    }
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let in_toml = match absolute(&file.path).strip_prefix(absolute(root)) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => absolute(&file.path).to_string_lossy().into_owned(),
    };
    Some(sources::unknown::unknown_jsonl(
        Path::new(&file.label),
        &in_toml,
        &first,
    ))
}

/// The folders below DIR (a few levels down) whose files a trainer wrote step by step
/// (`logs/exp/train_data_step3.jsonl`, `outputs/completions/completions_00002.parquet`),
/// said after "no samples" with the `-s` that reads each (empty when there are none).
fn step_folders_below(root: &Path) -> String {
    let folders = sources::files::step_folders(root);
    if folders.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = folders
        .iter()
        .map(|(folder, files)| {
            let given = root.join(folder);
            let given = given.strip_prefix(".").unwrap_or(&given);
            let s = if *files == 1 { "" } else { "s" };
            format!("-s {}/ ({files} step file{s})", given.display())
        })
        .collect();
    format!(
        "; step folders below it, each read as one source: {}",
        shown.join(", ")
    )
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
    discover(root, &Options::default(), false)
}

/// Every trainer output folder of [`STEP_FOLDERS`] in DIR (one source each; one with
/// no file yet too, for a command that `waits`), then every samples file in DIR and
/// `DIR/samples/`, in name order: `*.jsonl` (except files none of whose lines is a
/// sample, such as saved output: skipped with a warning each), and Parquet, Arrow,
/// Inspect, eval-protocol and promptfoo files and Hugging Face dataset folders rwb
/// recognises (others, such as a `package.json`, are not samples and are passed over).
fn discover(root: &Path, options: &Options, waits: bool) -> Resolved {
    let mut files = Vec::new();
    let mut warnings = Vec::new();
    // a trainer's output folder of step files is one source, read in step order
    for name in STEP_FOLDERS {
        let dir = root.join(name);
        if !dir.is_dir() {
            continue;
        }
        let label = format!("{name}/");
        match samples_file(dir, label.clone(), root, options, waits) {
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
            match samples_file(path, label.clone(), root, options, false) {
                Ok(file) if file.foreign.is_none() && !jsonl => {} // a JSON file of no tool's
                Ok(file) if file.foreign.is_none() && holds_no_sample(&file) => {
                    warnings.push(match unknown_shape(&file, root, true) {
                        Some(unknown) => format!("skipped {}", unknown.inline()),
                        None => format!(
                            "skipped {label}: none of its lines is a sample (a JSON object with a \"messages\" list, or \"prompt\" and \"completion\"), as in saved output; name it with -s to evaluate it anyway"
                        ),
                    })
                }
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
