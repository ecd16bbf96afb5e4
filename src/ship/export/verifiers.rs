//! `rwb export verifiers DIR` (SPEC §21): an installable verifiers 1.x taskset
//! package, laid out as verifiers 0.4.0's `vf-init` lays one out
//! (`verifiers/v1/cli/init.py`: `pyproject.toml` with hatch `packages = [PKG]`,
//! `PKG/__init__.py` exporting the one `Taskset` in `__all__`, `PKG/taskset.py` with
//! its `Data`, `Task`, `Config` and `Taskset.load()`), which `vf-eval NAME` loads
//! (`verifiers/v1/utils/loaders.py`).
//!
//! The task's one `@vf.reward` calls the user's function as its trainer style calls
//! it, with rwb's own calling code (the worker's Python, `engine::PYTHON_FILES`)
//! copied into `PKG/_rwb`: the style chosen, the arguments built and the result read
//! exactly as in `rwb run`, so the scores are the same, bit for bit, with no rwb
//! where it runs. The reward's files are copied into `PKG/reward`, the samples into
//! `PKG/rows.jsonl` (one task each: its prompt the sample's prompt, its completion
//! what the policy generates).

use super::{write, Exported};
use crate::model::{Source, TemplateSource};
use crate::workspace::Workspace;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Files larger than this are not copied with the reward (data, checkpoints).
const MAX_COPIED_FILE: u64 = 5 * 1024 * 1024;
/// Folders never copied with the reward.
const SKIPPED_DIRS: [&str; 7] = [
    ".git",
    ".rwb",
    ".venv",
    "venv",
    "__pycache__",
    "node_modules",
    ".mypy_cache",
];

pub fn export(
    workspace: &Workspace,
    evaluator: Option<&str>,
    dir: &Path,
    force: bool,
) -> Result<Exported, String> {
    let spec = super::evaluator(workspace, evaluator)?;
    super::not_ray_only(workspace)?;
    if let Source::Grader { .. } = spec.source {
        return Err(format!(
            "evaluator '{}' is an OpenAI grader: a verifiers package is exported from a Python reward; serve it with `rwb serve` (its graders API) instead",
            spec.name
        ));
    }
    if let TemplateSource::Jinja { origin, .. } = &spec.chat_template {
        return Err(format!(
            "evaluator '{}' renders its prompts with the Jinja chat template {origin}, which rwb renders itself: a verifiers package cannot carry it (use chat_template = \"chatml\" or \"raw\")",
            spec.name
        ));
    }
    super::prepare_dir(dir, force)?;
    let pkg = super::package_name(&spec.name);
    let dash = pkg.replace('_', "-");
    let prefix = camel(&pkg);
    let mut out = Exported {
        dir: dir.to_path_buf(),
        ..Exported::default()
    };
    // the reward's files: the evaluator's folder, or for a package function the
    // workspace's top package folder
    let (copy_from, rel_file, folder_rel) = match &spec.source {
        Source::Module { module, file, .. } => {
            let top = module.split('.').next().unwrap_or(module);
            let from = workspace.root.join(top);
            let rel = file
                .strip_prefix(&workspace.root)
                .map(Path::to_path_buf)
                .unwrap_or_else(|_| file.clone());
            (from, rel, PathBuf::new())
        }
        other => {
            let folder = other.folder();
            let rel = other
                .file()
                .strip_prefix(&folder)
                .map(Path::to_path_buf)
                .unwrap_or_else(|_| PathBuf::from(other.file().file_name().unwrap_or_default()));
            (folder, rel, PathBuf::new())
        }
    };
    let reward_dir = dir.join(&pkg).join("reward");
    let copy_to = match &spec.source {
        Source::Module { module, .. } => {
            reward_dir.join(module.split('.').next().unwrap_or(module))
        }
        _ => reward_dir.clone(),
    };
    copy_tree(&copy_from, &copy_to, &mut out)?;
    let mut worker_spec = spec.worker_fields(json!(rel_file), json!(folder_rel));
    worker_spec.insert("timeout".into(), json!(0));
    let worker_spec = serde_json::Value::Object(worker_spec);
    write(
        &mut out,
        &format!("{pkg}/spec.json"),
        &serde_json::to_string_pretty(&worker_spec).expect("json"),
    )?;
    for (rel, text) in crate::engine::PYTHON_FILES {
        write(&mut out, &format!("{pkg}/_rwb/{rel}"), text)?;
    }
    let rows = super::sample_rows(workspace, &mut out.warnings);
    if rows.is_empty() {
        out.warnings
            .push("no samples: the taskset has no tasks until rows.jsonl has some".into());
    }
    let mut lines = String::new();
    for row in rows {
        lines.push_str(&Value::Object(row).to_string());
        lines.push('\n');
    }
    write(&mut out, &format!("{pkg}/rows.jsonl"), &lines)?;
    write(
        &mut out,
        "pyproject.toml",
        &PYPROJECT.replace("{DASH}", &dash).replace("{PKG}", &pkg),
    )?;
    write(
        &mut out,
        &format!("{pkg}/__init__.py"),
        &format!("from {pkg}.taskset import {prefix}Taskset\n\n__all__ = [\"{prefix}Taskset\"]\n"),
    )?;
    write(
        &mut out,
        &format!("{pkg}/taskset.py"),
        &TASKSET_PY
            .replace("{PREFIX}", &prefix)
            .replace("{REWARD}", &pkg)
            .replace("{NAME}", &spec.name),
    )?;
    write(&mut out, &format!("{pkg}/_score.py"), SCORE_PY)?;
    out.lines = vec![
        format!("pip install -e {} && vf-eval {dash}", dir.display()),
        format!(
            "the reward '{}' is called as rwb calls it ({}); rwb is not needed where it runs",
            spec.name,
            spec.style
                .map_or("its style chosen from the signature", |s| s.as_str())
        ),
    ];
    Ok(out)
}

fn camel(pkg: &str) -> String {
    pkg.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Copies the reward's folder: its files but hidden, cache and large ones.
fn copy_tree(from: &Path, to: &Path, out: &mut Exported) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name_text = name.to_string_lossy();
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if SKIPPED_DIRS.contains(&name_text.as_ref()) || name_text.starts_with('.') {
                continue;
            }
            if is_inside(&out.dir, &path) {
                continue; // the export folder (or a folder holding it) inside the workspace
            }
            copy_tree(&path, &to.join(&name), out)?;
        } else if kind.is_file() {
            let large = entry
                .metadata()
                .map(|m| m.len() > MAX_COPIED_FILE)
                .unwrap_or(true);
            if large {
                out.warnings.push(format!(
                    "{} is larger than 5 MB: not copied",
                    path.display()
                ));
                continue;
            }
            std::fs::copy(&path, to.join(&name))
                .map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

fn is_inside(child: &Path, parent: &Path) -> bool {
    match (std::fs::canonicalize(child), std::fs::canonicalize(parent)) {
        (Ok(c), Ok(p)) => c.starts_with(p),
        _ => false,
    }
}

const PYPROJECT: &str = r#"[project]
name = "{DASH}"
version = "0.1.0"
description = "{DASH}: a reward tested in rwb, as a verifiers taskset (written by rwb export verifiers)."
requires-python = ">=3.11"
dependencies = ["verifiers"]

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["{PKG}"]
"#;

const TASKSET_PY: &str = r#""""The reward '{NAME}' tested in rwb, as a verifiers taskset (written by
`rwb export verifiers`). Each task is one sample's prompt; the policy's reply is
scored by the user's reward, called as its trainer style calls it (see _score.py)."""

import json
import os
from typing import Any

import verifiers.v1 as vf

from {REWARD} import _score

ROWS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rows.jsonl")


class {PREFIX}Data(vf.TaskData):
    """One sample of the workspace: its row as rwb read it (columns included)."""

    row: dict[str, Any] = {}


class {PREFIX}Task(vf.Task[{PREFIX}Data]):
    @vf.reward(weight=1.0)
    async def reward(self, trace: vf.Trace) -> float:
        replies = [{"role": "assistant", "content": m.content or ""} for m in trace.assistant_messages]
        result = await _score.score_reply(self.data.row, replies)
        for name, metric in (result.get("metrics") or {}).items():
            value = metric.get("score") if isinstance(metric, dict) else metric
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                trace.record_metric(name, float(value))
        return result["score"]


class {PREFIX}Config(vf.TasksetConfig):
    num_tasks: int | None = None
    """How many of the rows to use (all by default)."""


class {PREFIX}Taskset(vf.Taskset[{PREFIX}Task, {PREFIX}Config]):
    def load(self) -> list[{PREFIX}Task]:
        tasks = []
        with open(ROWS, encoding="utf-8") as lines:
            for idx, line in enumerate(filter(str.strip, lines)):
                if self.config.num_tasks is not None and idx >= self.config.num_tasks:
                    break
                row = json.loads(line)
                data = {PREFIX}Data(name="{NAME}:%d" % idx, prompt=_score.prompt_of(row), row=row)
                tasks.append({PREFIX}Task(data, self.config.task))
        return tasks
"#;

const SCORE_PY: &str = r#""""The user's reward, called as `rwb run` calls it: rwb's own calling code (the
worker's, copied into _rwb/) picks the style, builds the arguments and reads the
result, so a reply scores here what rwb scored it. Written by `rwb export verifiers`."""

import inspect
import json
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
CODE = os.path.join(HERE, "_rwb")
ROOT = os.path.join(HERE, "reward")
_LOCK = threading.Lock()
_STATE = {}


def caller():
    """The reward's caller, made once: its module imported, its style chosen."""
    with _LOCK:
        if "caller" in _STATE:
            return _STATE["caller"]
        with open(os.path.join(HERE, "spec.json"), encoding="utf-8") as f:
            spec = json.load(f)
        if CODE not in sys.path:
            sys.path.insert(0, CODE)
        from rwb_py.load import _load_reward_kit, evaluator_function
        from rwb_py.results import set_style
        from rwb_py.styles import choose_style, make_caller

        _load_reward_kit(os.path.join(CODE, "compat"))
        spec["file"] = os.path.join(ROOT, spec["file"])
        spec["folder"] = os.path.join(ROOT, spec.get("folder") or "")
        for entry in (ROOT, spec["folder"]):
            while entry in sys.path:
                sys.path.remove(entry)
        sys.path[0:0] = [spec["folder"], ROOT]
        name = spec.get("module") or os.path.splitext(os.path.basename(spec["file"]))[0]
        fn = evaluator_function(spec, name, spec["file"])
        style = spec.get("style") or choose_style(fn, spec.get("trainer"))[0]
        set_style(style)
        made = make_caller(fn, style, spec.get("kwargs") or {}, spec)
        _STATE["caller"] = made
        return made


def prompt_of(row):
    """The prompt the policy is given: a chat sample's turns before its completion, or
    the sample's `prompt`."""
    if isinstance(row.get("messages"), list):
        turns = list(row["messages"])
        while turns and isinstance(turns[-1], dict) and turns[-1].get("role") == "assistant":
            turns.pop()
        return [{"role": t.get("role"), "content": t.get("content") or ""} for t in turns]
    return row.get("prompt")


def sample_with(row, replies):
    """The row with the policy's reply as its completion, in the row's own form."""
    sample = dict(row)
    if isinstance(row.get("messages"), list):
        turns = list(row["messages"])
        while turns and isinstance(turns[-1], dict) and turns[-1].get("role") == "assistant":
            turns.pop()
        sample["messages"] = turns + list(replies)
    elif isinstance(row.get("completion"), list) or isinstance(row.get("prompt"), list):
        sample["completion"] = list(replies)
    else:
        sample["completion"] = "".join(r.get("content") or "" for r in replies)
    return sample


async def score(sample):
    """The result rwb reads from the reward for one sample: {"score", "metrics", ...}."""
    made = caller()  # puts the copied rwb code on sys.path
    from rwb_py.wire import _sample

    raw = json.dumps(sample).encode("utf-8")
    if getattr(made, "batched", False):
        value = made.fn(**made.arguments([_sample(raw)]))
        if inspect.isawaitable(value):
            value = await value
        result = made.results(value, 1)[0]
        if result is None:
            raise ValueError("the reward returned no score (None) for this sample")
        return result
    value = made.fn(**made.arguments(_sample(raw)))
    if inspect.isawaitable(value):
        value = await value
    return made.result(value)


async def score_reply(row, replies):
    return await score(sample_with(row, replies))
"#;
