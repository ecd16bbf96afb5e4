//! `rwb deploy`: create (or replace) the evaluator on Fireworks (SPEC §7).
//!
//! Exit codes: 0 deployed; 1 the API or the network failed (the error line is
//! printed); 2 usage, workspace or credentials errors.

use super::{DeployArgs, Fail};
use crate::ship::fireworks::{self, Code, Credentials, DeployRequest, FireworksError};
use crate::workspace::{Config, Workspace};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(super) async fn deploy(args: DeployArgs) -> Result<ExitCode, Fail> {
    args.targets.check_flags()?;
    if args.targets.target != super::deploy_targets::TargetName::Fireworks {
        return super::deploy_targets::deploy(args).await;
    }
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let explicit_dir = args.dir.is_some();
    let settings = if dir.is_dir() {
        Config::load(&dir.join("rwb.toml"))?
            .deploy
            .unwrap_or_default()
    } else if explicit_dir {
        return Err(Fail::Usage(format!(
            "workspace folder not found: {} (give an existing folder)",
            dir.display()
        )));
    } else {
        toml::Table::new()
    };
    let setting = |key: &str| -> Result<Option<String>, Fail> {
        match settings.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Fail::Usage(format!(
                "rwb.toml: [deploy] {key} must be a string"
            ))),
        }
    };

    let id = match args.id.clone().or(setting("id")?) {
        Some(id) => id.trim().to_string(),
        None => return Err(Fail::Usage(
            "rwb deploy needs an evaluator id: give --id ID (or set id under [deploy] in rwb.toml)"
                .into(),
        )),
    };
    fireworks::check_evaluator_id(&id).map_err(usage)?;
    let remote_url = args.remote_url.clone().or(setting("remote_url")?);
    let code = match &remote_url {
        Some(url) => {
            fireworks::remote_endpoint(url).map_err(usage)?;
            let api_key = args.remote_key.clone().filter(|k| !k.trim().is_empty());
            if api_key.is_none() {
                eprintln!(
                    "rwb deploy: note: the proxy sends no key; an endpoint that requires one (rwb tunnel prints it) answers 401: give --remote-key KEY or set RK_ENDPOINT_API_KEY"
                );
            }
            Code::RemoteUrl {
                url: url.clone(),
                api_key,
            }
        }
        None => load_evaluators(&dir, &args)?,
    };
    let request = DeployRequest {
        id,
        display_name: args.display_name.clone().or(setting("display_name")?),
        description: args.description.clone().or(setting("description")?),
        force: args.force,
        code,
    };
    // read the code before any network call, so a file problem is a usage error
    fireworks::EvaluatorPayload::from_code(&request.code).map_err(usage)?;
    let creds = Credentials::load().map_err(usage)?;

    let mut progress = |line: &str| eprintln!("rwb deploy: {line}");
    match fireworks::deploy(&creds, &request, &mut progress).await {
        Ok(result) => {
            println!("deployed {}", result.name);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if e.is_usage() => Err(usage(e)),
        Err(e) => {
            eprintln!("rwb: deploy failed: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

fn usage(e: FireworksError) -> Fail {
    Fail::Usage(e.to_string())
}

/// The workspace's evaluators and interpreter. Deploying needs no samples, so a
/// workspace without any still deploys: the samples check is satisfied with a
/// placeholder file.
pub(super) fn load_evaluators(dir: &Path, args: &DeployArgs) -> Result<Code, Fail> {
    let mut overrides = args.shared.overrides();
    let placeholder;
    if overrides.samples.is_empty() {
        placeholder = tempfile::NamedTempFile::new()
            .map_err(|e| Fail::Usage(format!("cannot create a temporary file: {e}")))?;
        overrides.samples = vec![placeholder.path().to_string_lossy().into_owned()];
    }
    let workspace = Workspace::load(dir, &overrides)?;
    Ok(Code::Evaluators {
        specs: workspace.evaluators,
        python: workspace.python,
    })
}
