//! The workbench's deploy to Cloud Run or Kubernetes (the `d` dialog's container
//! targets): runs `ship::targets` in a task, its progress and result going to the ship
//! panel as log lines, the service URL back to the ship control for `p`.

use super::ship::ShipEvent;
use crate::ship::guard;
use crate::ship::targets::{self, CloudRunOptions, K8sOptions, ServiceKey};
use crate::ui::app::ShipMsg;
use crate::ui::deploy_target::{Target, TargetRequest};
use crate::workspace::Workspace;
use tokio::sync::mpsc::UnboundedSender;

/// Starts the deploy `request` asks for; reports through `tx`.
pub(super) fn spawn(tx: UnboundedSender<ShipEvent>, workspace: &Workspace, request: TargetRequest) {
    if request.target.is_export() {
        return export(&tx, workspace, &request);
    }
    let dir = workspace.root.clone();
    let evaluators = workspace.evaluators.clone();
    let python = workspace.python.clone();
    tokio::spawn(async move {
        let log = |line: String| {
            let _ = tx.send(ShipEvent::Msg(ShipMsg::Log(line)));
        };
        let progress_tx = tx.clone();
        let mut progress = move |line: &str| {
            let _ = progress_tx.send(ShipEvent::Msg(ShipMsg::Log(format!("deploy: {line}"))));
        };
        let key = ServiceKey::choose(guard::env_key(), false);
        let result = match key {
            Err(e) => Err(e),
            Ok(key) => run(
                &dir,
                &evaluators,
                &python,
                &request,
                key.clone(),
                &mut progress,
            )
            .await
            .map(|deployed| (deployed, key)),
        };
        match result {
            Ok((deployed, key)) => {
                for note in &deployed.notes {
                    log(format!("deploy: {note}"));
                }
                if let Some(name) = &deployed.registered {
                    log(format!("deploy: registered {name} on Fireworks"));
                }
                if let Some(file) = &deployed.file {
                    log(format!("deployed to Kubernetes: {}", file.display()));
                }
                if let Some(url) = deployed.url {
                    log(format!(
                        "deployed to Cloud Run: {url} (p replays the samples there)"
                    ));
                    let _ = tx.send(ShipEvent::ServiceUp {
                        url,
                        key: key.value().map(str::to_string),
                        deployed: evaluators,
                    });
                }
            }
            Err(e) => log(format!("deploy failed: {e}")),
        }
        let _ = tx.send(ShipEvent::Msg(ShipMsg::Busy(None)));
    });
}

async fn run(
    dir: &std::path::Path,
    evaluators: &[crate::model::EvaluatorSpec],
    python: &std::path::Path,
    request: &TargetRequest,
    key: ServiceKey,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<targets::Deployed, targets::TargetError> {
    match request.target {
        Target::CloudRun => {
            let options = CloudRunOptions {
                id: request.id.clone(),
                project: request.gcp_project.clone(),
                region: request.gcp_region.clone(),
                repo: crate::ship::cloud_run::DEFAULT_REPO.into(),
                key,
                register: request.register.then_some(false),
                rwb_binary: None,
            };
            targets::cloud_run(dir, evaluators, python, &options, progress).await
        }
        _ => {
            let options = K8sOptions {
                id: request.id.clone(),
                namespace: request.namespace.clone(),
                image: request.image.clone(),
                apply: request.apply,
                key,
                rwb_binary: None,
            };
            targets::kubernetes(dir, evaluators, python, &options, progress).await
        }
    }
}

/// The export targets (SPEC §21): the folder written at once (files only, no tools to
/// wait for), into the workspace, what was written or why not in the ship panel.
fn export(tx: &UnboundedSender<ShipEvent>, workspace: &Workspace, request: &TargetRequest) {
    let log = |line: String| {
        let _ = tx.send(ShipEvent::Msg(ShipMsg::Log(line)));
    };
    let dir = workspace.root.join(&request.id);
    let done = match request.target {
        Target::NemoGym => {
            let rwb = std::env::current_exe().unwrap_or_else(|_| "rwb".into());
            crate::ship::export::nemo_gym::export(workspace, None, &dir, false, &rwb)
        }
        _ => crate::ship::export::verifiers::export(workspace, None, &dir, false),
    };
    match done {
        Ok(done) => {
            log(format!(
                "exported for {}: {} ({} files)",
                request.target.label(),
                done.dir.display(),
                done.files.len()
            ));
            for line in done.warnings.iter().chain(&done.lines) {
                log(format!("export: {line}"));
            }
        }
        Err(e) => log(format!("export failed: {e}")),
    }
    let _ = tx.send(ShipEvent::Msg(ShipMsg::Busy(None)));
}
