//! `rwb serve`: serve until Ctrl-C, then finish the requests in flight (for up to
//! a few seconds: a stalled client cannot keep the server up). A saved Python file
//! restarts the server on the new code, on the same address (on Ray, the next
//! workers come from a driver that shipped the saved workspace).

use super::{Fail, ServeArgs, Session};
use crate::session::RayChoice;
use crate::ship::serve::{Options, Server};
use crate::workspace::Watcher;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::sync::mpsc;

pub(super) async fn serve(args: ServeArgs) -> Result<ExitCode, Fail> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut options = args.shared.open_options();
    // no samples needed, and no evaluator: the graders API needs none
    options.overrides.serving = true;
    options.ray = RayChoice::from_flag(args.ray.clone());
    let mut session = Session::open(dir, &options)?;
    if let Some(cluster) = session.join_ray(args.shared.jobs).await? {
        eprintln!("rwb: {}", cluster.describe());
    }
    let host = args.host.clone().unwrap_or_else(|| "127.0.0.1".into());
    let port = args
        .port
        .unwrap_or_else(|| crate::ship::serve::configured_port(&session.workspace));
    let evaluator = args.evaluator.clone();
    let mut server = crate::ship::serve::start(&session, server_options(&host, port, &evaluator))
        .await
        .map_err(Fail::Usage)?;
    eprintln!("rwb: serving on {} (Ctrl-C stops)", server.url());
    for line in routes_text(&server) {
        eprintln!("rwb:   {line}");
    }
    let (tx, mut saves) = mpsc::unbounded_channel();
    let _watcher = watch(&session, tx);
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            Some(paths) = saves.recv() => {
                if paths.iter().any(|p| p.extension().is_some_and(|e| e == "py")) {
                    server = reload(&session, server, &host, &evaluator).await?;
                }
            }
        }
    }
    server.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// What the server answers, with its evaluators, and a request to try.
fn routes_text(server: &Server) -> Vec<String> {
    let mut lines: Vec<String> = server
        .answered()
        .iter()
        .map(|(route, what)| format!("{route:<22} {what}"))
        .collect();
    match server.routes.first() {
        Some(default) => lines.push(format!(
            "evaluators: {} ({default} is the default)",
            server.routes.join(", ")
        )),
        None => lines.push("evaluators: none (the graders API alone)".into()),
    }
    let key = if server.access.requires_key() {
        " -H \"X-Api-Key: $RK_ENDPOINT_API_KEY\""
    } else {
        ""
    };
    let body = if server.routes.is_empty() {
        "/v1/fine_tuning/alpha/graders/run -H 'Content-Type: application/json'{key} -d '{\"grader\": {\"type\": \"string_check\", \"name\": \"four\", \"operation\": \"eq\", \"input\": \"{{ sample.output_text }}\", \"reference\": \"4\"}, \"model_sample\": \"4\"}'"
    } else {
        "/evaluate -H 'Content-Type: application/json'{key} -d '{\"messages\": [{\"role\": \"user\", \"content\": \"2+2?\"}, {\"role\": \"assistant\", \"content\": \"4\"}]}'"
    };
    lines.push(format!(
        "try: curl -s {}{}",
        server.url(),
        body.replace("{key}", key)
    ));
    lines
}

fn server_options(host: &str, port: u16, evaluator: &Option<String>) -> Options {
    let mut options = Options::new(host, port);
    options.nemo_gym_evaluator = evaluator.clone();
    options.notes = Some(Arc::new(|note: String| eprintln!("rwb: {note}")));
    options
}

/// Watches the workspace and the evaluators' folders; without a watcher the server
/// still serves, and says that saves need a restart.
fn watch(session: &Session, tx: mpsc::UnboundedSender<Vec<PathBuf>>) -> Option<Watcher> {
    let ws = &session.workspace;
    let mut roots = vec![ws.root.clone()];
    let local = ws.evaluators.iter().filter(|s| !s.source.is_remote());
    roots.extend(local.map(|s| s.source.folder()));
    Watcher::start(&roots, tx)
        .inspect_err(|e| {
            eprintln!("rwb: cannot watch the workspace ({e}); restart rwb serve after a save")
        })
        .ok()
}

/// Serves the saved code: imports it first (into warm workers), so that the port is
/// closed only while the old server stops and the new one binds the same address.
/// When no worker can start (the interpreter or the Ray cluster went away), the old
/// server goes on, and rwb says why.
async fn reload(
    session: &Session,
    old: Server,
    host: &str,
    evaluator: &Option<String>,
) -> Result<Server, Fail> {
    if let Err(Fail::Usage(e)) = session.prepare_all().await {
        eprintln!("rwb: cannot load the saved code ({e}); still serving the code before");
        return Ok(old);
    }
    let port = old.addr.port();
    old.shutdown().await;
    let server = crate::ship::serve::start(session, server_options(host, port, evaluator))
        .await
        .map_err(Fail::Usage)?;
    eprintln!("rwb: serving the saved code on {}", server.url());
    Ok(server)
}
