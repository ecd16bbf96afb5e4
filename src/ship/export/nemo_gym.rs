//! `rwb export nemo-gym DIR` (SPEC §21): a NeMo Gym resources-server folder, as Gym's
//! own servers are laid out (NVIDIA-NeMo/Gym 07d6b0d0 `resources_servers/string_match`):
//! `app.py` (what `gym env start` runs: here it starts `rwb serve` on the host and port
//! Gym's config gives the server), `requirements.txt` (Gym's venv step needs one),
//! `configs/NAME.yaml` (the server and a simple agent using it) and
//! `data/example.jsonl` (the samples as Gym rows: `responses_create_params.input` the
//! prompt, `expected_answer` the ground truth, the other keys as they are).

use super::{prompt_of, write, Exported};
use crate::workspace::Workspace;
use serde_json::{json, Map, Value};
use std::path::Path;

/// Writes the folder for `evaluator` (or the default) of `workspace` into `dir`.
pub fn export(
    workspace: &Workspace,
    evaluator: Option<&str>,
    dir: &Path,
    force: bool,
    rwb: &Path,
) -> Result<Exported, String> {
    let spec = super::evaluator(workspace, evaluator)?;
    super::not_ray_only(workspace)?;
    super::prepare_dir(dir, force)?;
    let name = super::package_name(&spec.name);
    let mut out = Exported {
        dir: dir.to_path_buf(),
        ..Exported::default()
    };
    let root = std::fs::canonicalize(&workspace.root).unwrap_or(workspace.root.clone());
    write(
        &mut out,
        "app.py",
        &APP_PY
            .replace("{WORKSPACE}", &py_str(&root.to_string_lossy()))
            .replace("{RWB}", &py_str(&rwb.to_string_lossy()))
            .replace("{EVALUATOR}", &py_str(&spec.name)),
    )?;
    write(&mut out, "requirements.txt", "nemo-gym\n")?;
    write(
        &mut out,
        &format!("configs/{name}.yaml"),
        &CONFIG_YAML.replace("{NAME}", &name),
    )?;
    let rows = super::sample_rows(workspace, &mut out.warnings);
    let mut lines = String::new();
    for row in &rows {
        match gym_row(row) {
            Some(r) => {
                lines.push_str(&Value::Object(r).to_string());
                lines.push('\n');
            }
            None => out
                .warnings
                .push("a sample with neither `messages` nor `prompt` was left out".into()),
        }
    }
    if rows.is_empty() {
        out.warnings
            .push("no samples: data/example.jsonl is empty".into());
    }
    write(&mut out, "data/example.jsonl", &lines)?;
    out.lines = vec![
        format!(
            "Copy {} to resources_servers/{name} in NeMo Gym; `gym env start` runs its app.py, which starts `rwb serve` (RWB and RWB_WORKSPACE override where).",
            dir.display()
        ),
        "NeMo-RL (its GRPO config), the lines that use it:".into(),
        "env:".into(),
        "  should_use_nemo_gym: true".into(),
        "  nemo_gym:".into(),
        "    config_paths:".into(),
        "      - responses_api_models/vllm_model/configs/vllm_model_for_training.yaml".into(),
        format!("      - resources_servers/{name}/configs/{name}.yaml"),
        "data:".into(),
        format!("  train_jsonl_fpath: resources_servers/{name}/data/example.jsonl"),
    ];
    Ok(out)
}

/// A sample as a Gym row: the prompt as `responses_create_params.input`, the ground
/// truth as `expected_answer`, every other key (not the completion) as it is.
pub fn gym_row(row: &Map<String, Value>) -> Option<Map<String, Value>> {
    let prompt = prompt_of(row)?;
    let input = match prompt {
        Value::Array(turns) => Value::Array(
            turns
                .into_iter()
                .map(|t| json!({"role": t.get("role").cloned().unwrap_or(json!("user")), "content": t.get("content").cloned().unwrap_or(json!(""))}))
                .collect(),
        ),
        Value::String(s) => Value::String(s),
        other => Value::String(other.to_string()),
    };
    let mut out = Map::new();
    out.insert("responses_create_params".into(), json!({ "input": input }));
    for (k, v) in row {
        match k.as_str() {
            "messages" | "prompt" | "completion" | "responses_create_params" | "response" => {}
            "ground_truth" => {
                if !row.contains_key("expected_answer") {
                    out.insert("expected_answer".into(), v.clone());
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Some(out)
}

/// A Python string literal.
fn py_str(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

const APP_PY: &str = r#""""A NeMo Gym resources server: `rwb serve` answers Gym's routes (/seed_session,
/verify, /aggregate_metrics, /reverify_mode) for the reward tested in rwb.

Written by `rwb export nemo-gym`. `gym env start` runs this file with the server's
config in NEMO_GYM_CONFIG_DICT / NEMO_GYM_CONFIG_PATH; it starts rwb on the host and
port that config gives. RWB (the rwb binary) and RWB_WORKSPACE override the paths
written here.
"""

import json
import os
import sys

WORKSPACE = os.environ.get("RWB_WORKSPACE", {WORKSPACE})
RWB = os.environ.get("RWB", {RWB})
EVALUATOR = {EVALUATOR}


def _server_config():
    """This server's block of Gym's global config: {host, port, ...}."""
    text = os.environ.get("NEMO_GYM_CONFIG_DICT")
    path = os.environ.get("NEMO_GYM_CONFIG_PATH")
    if not text or not path:
        return {}
    try:
        from omegaconf import OmegaConf

        config = OmegaConf.to_container(OmegaConf.create(text), resolve=True)
    except ImportError:
        try:
            import yaml

            config = yaml.safe_load(text)
        except ImportError:
            config = _read_without_yaml(text, path)
    block = config.get(path) or {}
    # NAME: {resources_servers: {NAME: {host, port, ...}}}
    while isinstance(block, dict) and "port" not in block and len(block) == 1:
        block = next(iter(block.values()))
    return block if isinstance(block, dict) else {}


def _read_without_yaml(text, path):
    """Gym's config as JSON, or (as Gym writes it: OmegaConf's YAML) the host and port
    of the block `path`, when the server's venv has neither omegaconf nor PyYAML."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    found, inside = {}, False
    for line in text.splitlines():
        if line[:1] not in ("", " ", "-"):
            inside = line.split(":", 1)[0].strip().strip("'\"") == path
            continue
        key, _, value = line.strip().partition(":")
        if inside and key in ("host", "port") and key not in found:
            found[key] = value.strip().strip("'\"")
    return {path: found}


def main():
    config = _server_config()
    host = str(config.get("host") or os.environ.get("HOST") or "127.0.0.1")
    port = str(config.get("port") or os.environ.get("PORT") or "8001")
    rwb = RWB if os.path.exists(RWB) else "rwb"
    command = [rwb, "serve", WORKSPACE, "--host", host, "--port", port, "--evaluator", EVALUATOR]
    print("starting", " ".join(command), file=sys.stderr, flush=True)
    os.execvp(rwb, command)


if __name__ == "__main__":
    main()
"#;

const CONFIG_YAML: &str = r#"{NAME}:
  resources_servers:
    {NAME}:
      entrypoint: app.py
      domain: other
      verified: false
      description: A reward tested in rwb, served by rwb serve
{NAME}_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server:
        type: resources_servers
        name: {NAME}
      model_server:
        type: responses_api_models
        name: policy_model
      datasets:
      - name: example
        type: example
        jsonl_fpath: resources_servers/{NAME}/data/example.jsonl
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_sample_is_a_gym_row_without_its_completion() {
        let row = json!({"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}], "ground_truth": "4", "level": 1});
        let out = gym_row(row.as_object().unwrap()).unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"responses_create_params": {"input": [{"role": "user", "content": "2+2?"}]}, "expected_answer": "4", "level": 1})
        );
    }
}
