//! OpenAI grader evaluators (SPEC §17): `grader = "FILE.json"` in rwb.toml and
//! `--grader NAME=FILE.json`, checked before anything runs (a config error names the
//! file and the JSON path), with the `[graders]` settings the worker needs.

use super::config::{Config, GradersConfig};
use super::{base_spec, WorkspaceError};
use crate::model::{grader, EvaluatorSpec, Source, Style};
use std::path::PathBuf;

/// Requests a model grader keeps in flight per worker unless `concurrency` says
/// (`rwb generate`'s default).
pub const MODEL_CONCURRENCY: usize = 16;

/// The evaluator of a grader file, checked: unreadable, not JSON, or a grader that
/// cannot run is `FILE: $.path: message`.
pub(super) fn spec(
    name: &str,
    file: PathBuf,
    config: &Config,
) -> Result<EvaluatorSpec, WorkspaceError> {
    let shown = file.display().to_string();
    let text = std::fs::read_to_string(&file).map_err(|e| {
        WorkspaceError(format!(
            "grader file not found or unreadable: {shown} (from {name}): {e}"
        ))
    })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| WorkspaceError(format!("{shown}: not JSON: {e}")))?;
    grader::check(&value).map_err(|p| WorkspaceError(format!("{shown}: {p}")))?;
    let settings = settings(config.graders.as_ref())
        .map_err(|e| WorkspaceError(format!("rwb.toml: [graders] {e}")))?;
    Ok(grader_spec(
        name,
        Source::grader(file, None, settings),
        &value,
    ))
}

/// The evaluator of a grader object a graders API request holds (already checked).
pub fn inline_spec(
    grader_value: &serde_json::Value,
    config: &Config,
) -> Result<EvaluatorSpec, String> {
    let settings = settings(config.graders.as_ref()).map_err(|e| format!("[graders] {e}"))?;
    let name = grader_value
        .get("name")
        .and_then(|n| n.as_str())
        .unwrap_or("grader");
    let source = Source::grader(
        PathBuf::from("<graders API request>"),
        Some(grader_value.to_string()),
        settings,
    );
    Ok(grader_spec(name, source, grader_value))
}

fn grader_spec(name: &str, source: Source, value: &serde_json::Value) -> EvaluatorSpec {
    let mut spec = base_spec(name, source);
    spec.style = Some(Style::Grader);
    if calls_a_model(value) {
        spec.concurrency = MODEL_CONCURRENCY;
    }
    spec
}

/// Whether a grader (or one of a multi's) asks a model or an embeddings endpoint.
fn calls_a_model(value: &serde_json::Value) -> bool {
    match grader::kind(value) {
        Some("score_model" | "label_model") => true,
        Some("text_similarity") => {
            value.get("evaluation_metric").and_then(|m| m.as_str()) == Some("cosine")
        }
        Some("multi") => value
            .get("graders")
            .and_then(|g| g.as_object())
            .is_some_and(|g| g.values().any(calls_a_model)),
        _ => false,
    }
}

/// `[graders]` as the worker reads it: the endpoints as server roots (as `rwb
/// generate --endpoint` takes them), the key's variable name, never a key.
fn settings(config: Option<&GradersConfig>) -> Result<String, String> {
    let mut given = config.cloned().unwrap_or_default();
    for (field, value) in [
        ("endpoint", &mut given.endpoint),
        ("embeddings_endpoint", &mut given.embeddings_endpoint),
    ] {
        if let Some(url) = value.as_mut() {
            *url = crate::generate::endpoint_root(url)
                .map_err(|e| format!("{field}: {}", e.replace("--endpoint", field)))?;
        }
    }
    Ok(serde_json::to_string(&given).unwrap_or_default())
}
