//! Code rewards, contained (SPEC §18): every reward rwb runs locally is boxed in
//! ([`contain`]), and the code a policy wrote runs in a stricter sandbox of its own.

pub mod confine;
pub mod contain;
pub mod executor;
pub mod http;
pub mod service;

use crate::workspace::Workspace;
use contain::Plan;

/// What lets rwb build its boxes where the kernel refuses unprivileged user namespaces.
pub const NAMESPACE_SETTING: &str = "on Ubuntu 24.04 `sysctl kernel.apparmor_restrict_unprivileged_userns=0`, in Docker `--security-opt seccomp=unconfined`";

/// Where the kernel refused a box to the workers (`state` is the zygote's `open:
/// WHY`, and not `--no-contain`'s): what runs how, said once at start and by `rwb
/// check` (SPEC §18, "where the kernel says no"). `None` where the workers are
/// contained or open by choice.
pub fn without_namespaces(state: &str, workspace: &Workspace) -> Option<String> {
    let why = state.strip_prefix("open: ")?;
    let unsafe_ok = workspace.config.sandbox.as_ref().and_then(|s| s.unsafe_) == Some(true);
    let abi = confine::landlock_abi();
    let sandbox = if abi > 0 {
        format!("the policy's code (rwb.sandbox, /run_code) runs confined by Landlock (ABI {abi}) + seccomp + rlimits")
    } else if unsafe_ok {
        "the policy's code (rwb.sandbox, /run_code) runs with rlimits only: no Landlock either, and [sandbox] unsafe = true".to_string()
    } else {
        "rwb's sandbox refuses to run the policy's code (no Landlock either; [sandbox] unsafe = true runs it with rlimits only)".to_string()
    };
    Some(format!(
        "no box here ({why}): rewards run open, and {sandbox}; to allow boxes, {NAMESPACE_SETTING}"
    ))
}

/// The box a workspace's workers run in (SPEC §18): `None` with `--no-contain` or
/// `[sandbox] workers = "open"`; else the workspace's `[sandbox] writable` folders and
/// `network`. A `workers` value rwb does not know is an error naming the line.
pub fn workers_plan(workspace: &Workspace, no_contain: bool) -> Result<Option<Plan>, String> {
    let sandbox = workspace.config.sandbox.clone().unwrap_or_default();
    match sandbox.workers.as_deref() {
        None | Some("contained") => {}
        Some("open") => return Ok(None),
        Some(other) => {
            return Err(format!(
                "rwb.toml: [sandbox] workers = {other:?} is not one of \"contained\" (the default) or \"open\" (the rewards run with your full power)"
            ))
        }
    }
    if no_contain {
        return Ok(None);
    }
    let writable = sandbox
        .writable
        .unwrap_or_default()
        .iter()
        .map(|p| workspace.root.join(p))
        .collect();
    Ok(Some(Plan {
        writable,
        network: sandbox.network.unwrap_or(true),
        tmp_read_only: true,
        first: vec![std::path::absolute(&workspace.root).unwrap_or_else(|_| workspace.root.clone())],
        confine: false,
    }))
}

/// The sandbox service of a session and the listeners its workers reach it on: the
/// fork server starts with the first program run (SPEC §18); the listeners cost a
/// bind. The workers the engine forks from now on get their addresses.
pub fn start_for_workers(
    engine: &crate::engine::Engine,
    workspace: &Workspace,
) -> std::io::Result<std::sync::Arc<service::Service>> {
    let settings = service::Settings::from_config(workspace.config.sandbox.as_ref());
    let service = service::Service::new(
        engine.python().to_path_buf(),
        executor::server_path(engine.code_dir()),
        settings,
    );
    let listening = http::listen(service.clone(), &engine.runtime_dir().join("sandbox.sock"))?;
    let mut env = listening.env();
    if workspace.config.sandbox.as_ref().and_then(|s| s.e2b) == Some(true) {
        // rwb's E2B stand-in first on the workers' path (zygote.py)
        env.push(("RWB_E2B_STANDIN".into(), "1".into()));
    }
    engine.set_env(env);
    Ok(service)
}
