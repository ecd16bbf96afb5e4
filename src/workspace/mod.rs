//! The workspace: which evaluators and samples files a folder holds, its `rwb.toml`,
//! and reading samples files line by line.
//!
//! Owns discovery (SPEC §2), configuration layering (file, then flags) and the
//! streaming JSONL reader. Must not know the screen, run Python or touch the cache.

mod config;
mod config_errors;
mod discovery;
mod graders;
mod index;
mod line_memo;
mod remote;
mod rows;
mod samples;
pub mod template;
mod watcher;

pub use config::{
    Config, EvaluatorConfig, GenerateConfig, SandboxConfig, TrainingConfig, MAX_REPEAT,
};
pub use graders::inline_spec as grader_spec;
pub use index::{changed_error, read_entry, Entry, IndexedLines, SampleIndex};
pub use line_memo::LineMemos;
pub use rows::{split_line, Foreign, LineParts, Reader};
pub use samples::{
    hash_line, holds_no_sample, legacy_hash_line, LineArena, LineFiles, LineView, ReadAhead,
    SampleLine, SamplesReader, Skipped,
};
pub use watcher::{relevant, Watcher};

use crate::model::{EvaluatorSpec, SolutionStr, Source, Style, MAX_CONCURRENCY};
use serde_json::Map;
use std::path::{Path, PathBuf};

/// Default per-evaluation timeout in seconds.
pub const DEFAULT_TIMEOUT: f64 = 30.0;
/// The longest per-evaluation timeout kept (a year): `inf` and larger values mean "no
/// limit" and become this, so that every later conversion to a duration stays in range.
pub const MAX_TIMEOUT: f64 = 365.0 * 24.0 * 3600.0;
/// What a timeout may be, for messages about a bad one.
pub const TIMEOUT_HINT: &str = "give a number of seconds, 0 or more (0 or inf: no limit)";
/// The evaluator name of the combined reward's row (`[training]`, SPEC §14), which no
/// evaluator may then have.
pub const REWARD_ROW: &str = "reward";
/// Default samples per call for batched styles (TRL).
pub const DEFAULT_BATCH_SIZE: usize = 16;

/// A usage or workspace error: one line naming the file and what to do (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WorkspaceError(pub String);

fn err<T>(message: impl Into<String>) -> Result<T, WorkspaceError> {
    Err(WorkspaceError(message.into()))
}

/// What the command line says about the workspace (flags override `rwb.toml`).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `-m NAME=PATH`, as given.
    pub metrics_folders: Vec<String>,
    /// `--function NAME=FILE.py::FUNC`, as given.
    pub functions: Vec<String>,
    /// `--grader NAME=FILE.json`, as given.
    pub graders: Vec<String>,
    /// `-s FILE`, as given.
    pub samples: Vec<String>,
    pub python: Option<PathBuf>,
    pub timeout: Option<f64>,
    /// `--concurrency N`: evaluations in flight per worker, for every evaluator.
    pub concurrency: Option<usize>,
    /// The command answers requests (`rwb serve`): it reads no samples, and with no
    /// evaluators still serves the graders API (SPEC §17), so neither is required.
    pub serving: bool,
    /// The command follows the samples as they change (the workbench): a step
    /// folder (or glob) with no file in it yet, or not there yet (`-s logs/exp/`), is
    /// a source whose rows come as the trainer writes them, not an error.
    pub waits: bool,
    /// `--no-contain`: the workers run open (SPEC §18).
    pub no_contain: bool,
}

/// One samples file: where it is and how results name it.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplesFile {
    pub path: PathBuf,
    /// The path as given on the command line, or relative to the workspace.
    pub label: String,
    /// How a file another tool wrote is read (`None`: rwb's own JSONL).
    pub foreign: Option<std::sync::Arc<Foreign>>,
}

impl SamplesFile {
    /// An rwb JSONL samples file.
    pub fn jsonl(path: PathBuf, label: String) -> SamplesFile {
        SamplesFile {
            path,
            label,
            foreign: None,
        }
    }

    /// Where the samples' text is read again at its offsets: the file itself, or a
    /// foreign file's row file (see [`rows`]).
    pub fn text_path(&self) -> &Path {
        match &self.foreign {
            Some(f) => &f.rows,
            None => &self.path,
        }
    }
}

/// A resolved workspace.
#[derive(Clone, Debug)]
pub struct Workspace {
    pub root: PathBuf,
    pub config: Config,
    pub evaluators: Vec<EvaluatorSpec>,
    pub samples: Vec<SamplesFile>,
    pub python: PathBuf,
    /// Things the user should know that do not stop a run (a skipped `.jsonl`), one
    /// line each.
    pub warnings: Vec<String>,
}

impl Workspace {
    /// Reads `DIR/rwb.toml` (if any), discovers evaluators and samples, applies flags.
    pub fn load(dir: &Path, overrides: &Overrides) -> Result<Workspace, WorkspaceError> {
        if !dir.is_dir() {
            return err(format!(
                "workspace folder not found: {} (give an existing folder, or run `rwb init {}`)",
                dir.display(),
                dir.display()
            ));
        }
        let root = dir.to_path_buf();
        let config = Config::load(&root.join("rwb.toml"))?;
        let evaluators = resolve_evaluators(&root, &config, overrides)?;
        if config.training.is_some() && evaluators.iter().any(|e| e.name == REWARD_ROW) {
            return err(format!(
                "{}: [training] adds a row named `{REWARD_ROW}` to each sample (the combined reward and its advantage): rename the evaluator `{REWARD_ROW}`",
                root.join("rwb.toml").display()
            ));
        }
        paths_are_text(&root, &evaluators)?;
        let (samples, warnings) = discovery::resolve_samples(&root, &config, overrides)?;
        let python = resolve_python(&root, &config, overrides);
        Ok(Workspace {
            root,
            config,
            evaluators,
            samples,
            python,
            warnings,
        })
    }

    /// The `weight` rwb.toml gives an evaluator, if any.
    fn given_weight(&self, name: &str) -> Option<f64> {
        self.config.evaluators.get(name).and_then(|e| e.weight)
    }

    /// An evaluator's weight in the combined reward (1 unless rwb.toml says).
    pub fn weight(&self, name: &str) -> f64 {
        self.given_weight(name).unwrap_or(1.0)
    }

    pub fn evaluator(&self, name: &str) -> Option<&EvaluatorSpec> {
        self.evaluators.iter().find(|e| e.name == name)
    }

    /// Weights of the combined reward, in evaluator order, when rwb.toml gives a
    /// `weight` to any evaluator (the others weigh 1, as in TRL's reward_weights).
    pub fn weights(&self) -> Option<Vec<f64>> {
        let given = |name: &str| self.given_weight(name);
        self.evaluators
            .iter()
            .any(|e| given(&e.name).is_some())
            .then(|| {
                self.evaluators
                    .iter()
                    .map(|e| given(&e.name).unwrap_or(1.0))
                    .collect()
            })
    }
}

/// `--python`, else `rwb.toml`'s `python`, else `$VIRTUAL_ENV/bin/python`, else `python3`.
pub fn resolve_python(root: &Path, config: &Config, overrides: &Overrides) -> PathBuf {
    if let Some(p) = &overrides.python {
        return p.clone();
    }
    if let Some(p) = &config.python {
        let p = PathBuf::from(p);
        // a bare name ("python3.12") is looked up on PATH; a path is relative to DIR
        return if p.components().count() > 1 && p.is_relative() {
            root.join(p)
        } else {
            p
        };
    }
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
        return PathBuf::from(venv).join("bin").join("python");
    }
    PathBuf::from("python3")
}

/// A timeout in seconds as rwb keeps it: NaN and negative values are errors (the
/// message says what to give); `inf` and values above [`MAX_TIMEOUT`] mean no limit.
pub fn timeout_secs(secs: f64) -> Result<f64, String> {
    if secs.is_nan() || secs < 0.0 {
        return Err(TIMEOUT_HINT.to_string());
    }
    Ok(secs.min(MAX_TIMEOUT))
}

/// A concurrency as rwb takes it: a whole number from 1 to [`MAX_CONCURRENCY`]; the
/// error says what to give.
pub fn checked_concurrency(n: i64) -> Result<usize, String> {
    match usize::try_from(n) {
        Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(n),
        _ => Err(format!(
            "give a whole number from 1 (one evaluation at a time, the default) to {MAX_CONCURRENCY} (evaluations in flight per worker)"
        )),
    }
}

/// Every timeout that applies, checked: the flag's, rwb.toml's, then per evaluator.
fn checked_timeout(value: f64, what: impl FnOnce() -> String) -> Result<f64, WorkspaceError> {
    timeout_secs(value).map_err(|hint| WorkspaceError(format!("{} = {value}: {hint}", what())))
}

/// Python workers are given the workspace and evaluator paths as JSON text, which
/// cannot carry bytes that are not UTF-8: such a path is a clear error, not a panic.
fn paths_are_text(root: &Path, evaluators: &[EvaluatorSpec]) -> Result<(), WorkspaceError> {
    let mut paths = vec![("the workspace folder", root.to_path_buf())];
    for spec in evaluators.iter().filter(|s| !s.source.is_remote()) {
        paths.push(("the evaluator source", spec.source.file()));
    }
    for (what, path) in paths {
        let absolute = std::path::absolute(&path).unwrap_or(path);
        if absolute.to_str().is_none() {
            return err(format!(
                "{what} {} has a name that is not UTF-8 text, which rwb cannot hand to its Python workers: rename it (or copy the workspace to a folder whose path is UTF-8)",
                absolute.display()
            ));
        }
    }
    Ok(())
}

fn split_pair<'a>(
    flag: &str,
    value: &'a str,
    what: &str,
) -> Result<(&'a str, &'a str), WorkspaceError> {
    match value.split_once('=') {
        Some((name, rest)) if !name.trim().is_empty() && !rest.trim().is_empty() => {
            Ok((name.trim(), rest.trim()))
        }
        _ => err(format!(
            "{flag} takes NAME={what}, got '{value}' (for example {flag} relevance={})",
            if what == "PATH" {
                "./metrics/relevance"
            } else if what == "FILE.json" {
                "graders/answer.json"
            } else {
                "rewards.py::my_reward"
            }
        )),
    }
}

fn folder_spec(name: &str, dir: PathBuf, shown: &str) -> Result<EvaluatorSpec, WorkspaceError> {
    if !dir.is_dir() {
        return err(format!(
            "metric folder not found: {name}={shown} (check the path; it is relative to the current directory)"
        ));
    }
    if !dir.join("main.py").is_file() {
        return err(format!(
            "metric folder {name}={shown} has no main.py (a metric folder needs main.py defining `evaluate`)"
        ));
    }
    Ok(base_spec(name, Source::Folder(dir)))
}

/// `NAME=FILE.py::FUNC` (a file relative to `base`) or `NAME=package.module:FUNC` (a
/// module under the workspace `root`); `::` tells the two apart.
fn function_spec(
    name: &str,
    target: &str,
    base: &Path,
    root: &Path,
) -> Result<EvaluatorSpec, WorkspaceError> {
    if let Some((file, function)) = target.rsplit_once("::") {
        let path = base.join(file);
        if !path.is_file() {
            return err(format!(
                "evaluator file not found: {} (from {name}={target})",
                path.display()
            ));
        }
        let source = Source::Function {
            file: path,
            function: function.to_string(),
        };
        return Ok(base_spec(name, source));
    }
    let parsed = target.rsplit_once(':').filter(|(module, function)| {
        // `rewards.py:f` is a file with one colon too few, not module `rewards.py`
        is_dotted_name(module) && !module.ends_with(".py") && is_dotted_name(function)
    });
    let Some((module, function)) = parsed else {
        return err(format!(
            "{name}={target}: expected FILE.py::FUNC (for example rewards.py::my_reward) or package.module:FUNC (for example open_r1.rewards:accuracy_reward)"
        ));
    };
    let file = module_file(root, module).ok_or_else(|| {
        let rel = module.replace('.', "/");
        WorkspaceError(format!(
            "module '{module}' not found (from {name}={target}): neither {rel}.py nor {rel}/__init__.py exists in {}",
            root.display()
        ))
    })?;
    let source = Source::Module {
        module: module.to_string(),
        function: function.to_string(),
        file,
    };
    Ok(base_spec(name, source))
}

/// A Python dotted name: identifiers joined by dots.
fn is_dotted_name(text: &str) -> bool {
    text.split('.').all(|part| {
        let mut chars = part.chars();
        chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
            && chars.all(|c| c == '_' || c.is_alphanumeric())
    })
}

/// The file Python imports for `module` with `root` on `sys.path` (a package folder
/// wins over a module file of the same name, as in Python).
fn module_file(root: &Path, module: &str) -> Option<PathBuf> {
    let base = module
        .split('.')
        .fold(root.to_path_buf(), |path, part| path.join(part));
    let package = base.join("__init__.py");
    let plain = base.with_extension("py");
    [package, plain].into_iter().find(|p| p.is_file())
}

pub(crate) fn base_spec(name: &str, source: Source) -> EvaluatorSpec {
    EvaluatorSpec {
        name: name.to_string(),
        source,
        style: None,
        timeout: DEFAULT_TIMEOUT,
        kwargs: Map::new(),
        batch_size: DEFAULT_BATCH_SIZE,
        solution_str: SolutionStr::Response,
        concurrency: 1,
        trainer: None,
        chat_template: Default::default(),
        call: None,
        trainer_args: Map::new(),
        group: None,
        network: None,
        repeat: 1,
        repeat_index: 0,
        watch: false,
    }
}

fn resolve_evaluators(
    root: &Path,
    config: &Config,
    overrides: &Overrides,
) -> Result<Vec<EvaluatorSpec>, WorkspaceError> {
    let from_flags = !overrides.metrics_folders.is_empty()
        || !overrides.functions.is_empty()
        || !overrides.graders.is_empty();
    let mut specs = if from_flags {
        specs_from_flags(root, config, overrides)?
    } else {
        specs_from_workspace(root, config)?
    };
    // Per-evaluator settings from rwb.toml apply to flag-given evaluators too.
    let timeout = match (overrides.timeout, config.timeout) {
        (Some(t), _) => checked_timeout(t, || "--timeout".into())?,
        (None, Some(t)) => checked_timeout(t, || "rwb.toml: timeout".into())?,
        (None, None) => DEFAULT_TIMEOUT,
    };
    let templates = template::Templates::new(root);
    for spec in &mut specs {
        spec.timeout = timeout;
        if let Some(n) = overrides.concurrency {
            spec.concurrency = n;
        }
        let entry = config.evaluators.get(&spec.name);
        if let Some(entry) = entry {
            apply_evaluator_config(spec, entry, overrides)?;
        }
        spec.trainer = entry.and_then(|e| e.trainer).or(config.trainer);
        let mut trainer_args = config.trainer_args.clone().unwrap_or_default();
        if let Some(own) = entry.and_then(|e| e.trainer_args.as_ref()) {
            trainer_args.extend(own.clone());
        }
        spec.trainer_args = trainer_args;
        spec.group = entry
            .and_then(|e| e.group.clone())
            .or_else(|| config.group_by())
            .filter(|g| g != "prompt");
        spec.network = entry.and_then(|e| e.network);
        if let Some(call) = entry.and_then(|e| e.call.as_ref()) {
            // checked when rwb.toml was read
            let call = crate::model::CallSpec::from_table(call)
                .map_err(|e| WorkspaceError(format!("rwb.toml: [evaluators.{}] {e}", spec.name)))?;
            spec.style = Some(match call.per {
                crate::model::Per::Sample => Style::Call,
                crate::model::Per::Batch | crate::model::Per::Group => Style::CallBatch,
            });
            spec.call = Some(call);
        }
        let (chosen, field) = match entry.and_then(|e| e.chat_template.as_deref()) {
            Some(own) => (
                Some(own),
                format!("[evaluators.{}] chat_template", spec.name),
            ),
            None => (config.chat_template.as_deref(), "chat_template".to_string()),
        };
        if let Some(chosen) = chosen {
            spec.chat_template = templates.load(chosen, &field)?;
        }
    }
    if specs.is_empty() && !overrides.serving {
        return err(format!(
            "no evaluators in {}: add metrics/NAME/main.py, give -m NAME=PATH or --function NAME=FILE.py::FUNC, or run `rwb init`",
            root.display()
        ));
    }
    Ok(specs)
}

/// The evaluators `-m` and `--function` name, in that order.
fn specs_from_flags(
    root: &Path,
    config: &Config,
    overrides: &Overrides,
) -> Result<Vec<EvaluatorSpec>, WorkspaceError> {
    let mut specs = Vec::new();
    let cwd = PathBuf::from(".");
    for value in &overrides.metrics_folders {
        let (name, path) = split_pair("-m/--metrics-folders", value, "PATH")?;
        specs.push(folder_spec(name, cwd.join(path), path)?);
    }
    for value in &overrides.functions {
        let (name, target) = split_pair("--function", value, "FILE.py::FUNC")?;
        specs.push(function_spec(name, target, &cwd, root)?);
    }
    for value in &overrides.graders {
        let (name, file) = split_pair("--grader", value, "FILE.json")?;
        specs.push(graders::spec(name, cwd.join(file), config)?);
    }
    Ok(specs)
}

/// The evaluators of `metrics/*/main.py`, then those of rwb.toml (which replace a
/// folder's evaluator of the same name).
fn specs_from_workspace(
    root: &Path,
    config: &Config,
) -> Result<Vec<EvaluatorSpec>, WorkspaceError> {
    let mut specs = metric_folder_specs(root)?;
    for (name, entry) in &config.evaluators {
        if let Some(source) = remote::source(entry) {
            specs.retain(|s| &s.name != name);
            specs.push(base_spec(name, source));
            continue;
        }
        if let Some(file) = &entry.grader {
            if entry.path.is_some() || entry.function.is_some() {
                return err(format!(
                    "rwb.toml: [evaluators.{name}] needs exactly one of `path`, `function` or `grader`"
                ));
            }
            specs.retain(|s| &s.name != name);
            specs.push(graders::spec(name, root.join(file), config)?);
            continue;
        }
        let spec = match (&entry.path, &entry.function) {
            (Some(path), None) => {
                let shown = format!("{path} (in rwb.toml)");
                folder_spec(name, root.join(path), &shown)?
            }
            (None, Some(target)) => function_spec(name, target, root, root)?,
            (None, None) if specs.iter().any(|s| &s.name == name) => continue,
            _ => {
                return err(format!(
                    "rwb.toml: [evaluators.{name}] needs exactly one of `path` (a metric folder), `function` (FILE.py::FUNC or package.module:FUNC), `url` (an endpoint), `fireworks` (a deployed evaluator id) or `grader` (an OpenAI grader file)"
                ))
            }
        };
        specs.retain(|s| &s.name != name);
        specs.push(spec);
    }
    Ok(specs)
}

/// One evaluator per `metrics/NAME/main.py`, sorted by folder.
fn metric_folder_specs(root: &Path) -> Result<Vec<EvaluatorSpec>, WorkspaceError> {
    let mut specs = Vec::new();
    let metrics = root.join("metrics");
    if metrics.is_dir() {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&metrics)
            .map_err(|e| WorkspaceError(format!("cannot read {}: {e}", metrics.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("main.py").is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            let name = dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            specs.push(base_spec(&name, Source::Folder(dir)));
        }
    }
    Ok(specs)
}

/// Applies an evaluator's `[evaluators.NAME]` settings; flags still win over its
/// timeout and concurrency.
fn apply_evaluator_config(
    spec: &mut EvaluatorSpec,
    entry: &EvaluatorConfig,
    overrides: &Overrides,
) -> Result<(), WorkspaceError> {
    if let Some(style) = &entry.style {
        spec.style = Some(Style::parse(style).ok_or_else(|| {
            WorkspaceError(format!(
                "rwb.toml: [evaluators.{}] style = \"{style}\" is not one of {}",
                spec.name,
                Style::NAMES
            ))
        })?);
    }
    if let Some(t) = entry.timeout {
        let what = || format!("rwb.toml: [evaluators.{}] timeout", spec.name);
        let t = checked_timeout(t, what)?;
        if overrides.timeout.is_none() {
            spec.timeout = t;
        }
    }
    if let Some(kwargs) = &entry.kwargs {
        spec.kwargs = kwargs.clone();
    }
    if let Some(b) = entry.batch_size {
        spec.batch_size = b.max(1);
    }
    if let Some(n) = entry.concurrency {
        let n = checked_concurrency(n).map_err(|hint| {
            WorkspaceError(format!(
                "rwb.toml: [evaluators.{}] concurrency = {n}: {hint}",
                spec.name
            ))
        })?;
        if overrides.concurrency.is_none() {
            spec.concurrency = n;
        }
    }
    if let Some(k) = entry.repeat {
        spec.repeat = k.max(1) as usize; // checked when rwb.toml was read
    }
    if let Some(mode) = &entry.solution_str {
        spec.solution_str = SolutionStr::parse(mode).ok_or_else(|| {
            WorkspaceError(format!(
                "rwb.toml: [evaluators.{}] solution_str = \"{mode}\" is not one of \"response\" (the response only, modern veRL) or \"prompt+response\" (the prompt followed by the response, older veRL such as TinyZero)",
                spec.name
            ))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::discovery::discover_samples;
    use super::*;

    #[test]
    fn timeouts_are_checked_and_capped() {
        assert_eq!(timeout_secs(2.5), Ok(2.5));
        assert_eq!(timeout_secs(0.0), Ok(0.0), "0 keeps meaning no limit");
        assert_eq!(timeout_secs(f64::INFINITY), Ok(MAX_TIMEOUT));
        assert_eq!(timeout_secs(1e300), Ok(MAX_TIMEOUT));
        for bad in [f64::NAN, -1.0, f64::NEG_INFINITY, -0.001] {
            assert_eq!(timeout_secs(bad), Err(TIMEOUT_HINT.to_string()), "{bad}");
        }
    }

    #[test]
    fn discovery_skips_files_without_a_sample_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("samples")).unwrap();
        std::fs::write(root.join("a.jsonl"), "{\"messages\": []}\n").unwrap();
        std::fs::write(root.join("out.jsonl"), "{\"score\": 1}\n").unwrap();
        std::fs::write(root.join("samples/b.jsonl"), "\u{FEFF}{\"messages\": []}\n").unwrap();
        std::fs::write(root.join("samples/log.jsonl"), "not json\n").unwrap();
        let (files, warnings) = discover_samples(root);
        let labels: Vec<&str> = files.iter().map(|f| f.label.as_str()).collect();
        assert_eq!(labels, ["a.jsonl", "samples/b.jsonl"]);
        assert_eq!(warnings.len(), 2);
        assert!(
            warnings[0].starts_with("skipped out.jsonl: "),
            "{warnings:?}"
        );
        assert!(
            warnings[1].starts_with("skipped samples/log.jsonl: "),
            "{warnings:?}"
        );
    }

    #[test]
    fn function_targets_are_told_apart_by_their_separator() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("pkg/sub")).unwrap();
        std::fs::write(root.join("pkg/__init__.py"), "").unwrap();
        std::fs::write(root.join("pkg/rewards.py"), "").unwrap();
        std::fs::write(root.join("pkg/sub.py"), "").unwrap();
        std::fs::write(root.join("pkg/sub/__init__.py"), "").unwrap();
        std::fs::write(root.join("plain.py"), "").unwrap();

        let spec = function_spec("a", "pkg.rewards:accuracy", root, root).unwrap();
        assert_eq!(
            spec.source,
            Source::Module {
                module: "pkg.rewards".into(),
                function: "accuracy".into(),
                file: root.join("pkg/rewards.py"),
            }
        );
        // a package folder wins over a module file of the same name, as in Python
        let spec = function_spec("a", "pkg.sub:f", root, root).unwrap();
        assert_eq!(spec.source.file(), root.join("pkg/sub/__init__.py"));
        let spec = function_spec("a", "plain.py::f", root, root).unwrap();
        assert_eq!(spec.source.module(), None);
        assert_eq!(spec.source.function(), "f");

        let e = function_spec("a", "plain.py:f", root, root).unwrap_err();
        assert_eq!(
            e.0,
            "a=plain.py:f: expected FILE.py::FUNC (for example rewards.py::my_reward) or package.module:FUNC (for example open_r1.rewards:accuracy_reward)"
        );
        let e = function_spec("a", "pkg.gone:f", root, root).unwrap_err();
        assert!(
            e.0.starts_with("module 'pkg.gone' not found (from a=pkg.gone:f): neither pkg/gone.py nor pkg/gone/__init__.py exists in "),
            "{e}"
        );
    }
}
