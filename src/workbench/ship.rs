//! Serve, tunnel and deploy from the workbench: the server and tunnel it owns, the
//! tasks that start them, and replaying samples on the remote side to compare.
//!
//! Every slow step runs in a task and reports back as a [`ShipEvent`]; the loop turns
//! them into app messages, so the screen never waits on the network.

use super::live_columns::{self, LiveColumns};
use crate::model::EvaluatorSpec;
use crate::runner::Runner;
use crate::ship::fireworks::{self, Code, Credentials, DeployRequest, EvaluatorPayload};
use crate::ship::guard::{self, Access, KeyOrigin};
use crate::ship::serve::{self, Options, Server};
use crate::ship::tunnel::{self, Settings, Tunnel};
use crate::ui::app::{Lines, Sample, ShipMsg, TunnelKey};
use crate::ui::deploy_target::TargetRequest;
use crate::workspace::Workspace;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Samples replayed on a remote endpoint at most (each costs a request per evaluator).
const MAX_REPLAY: usize = 1000;
/// Samples sent to Fireworks' preview at most.
const MAX_PREVIEW: usize = 100;

pub enum ShipEvent {
    Msg(ShipMsg),
    /// A finished report (probes, contract check): title and lines.
    Report(String, Vec<String>),
    ServerStarted(Result<Server, String>),
    TunnelOpened(Result<Tunnel, String>),
    /// A Fireworks deploy ended; `Some(ID)` when it made evaluator ID.
    Deployed(Option<String>),
    /// A Cloud Run service answers at `url` with `key`, serving `deployed`.
    ServiceUp {
        url: String,
        key: Option<String>,
        deployed: Vec<EvaluatorSpec>,
    },
}

/// Where the last tunnel or deployment lives, for `compare remote`.
#[derive(Clone, Debug)]
enum Target {
    Url(String),
    Fireworks(String),
    /// A deployed service and the key it requires.
    Service(String, Option<String>),
}

pub struct ShipControl {
    tx: mpsc::UnboundedSender<ShipEvent>,
    pub server: Option<Server>,
    tunnel: Option<Tunnel>,
    target: Option<Target>,
    /// Open a tunnel as soon as the server (being started) is up.
    tunnel_after_server: bool,
    /// The key the server requires and the extra hosts it answers; kept across
    /// restarts, so a restarted server still requires the tunnel's key.
    access: Arc<Access>,
    /// The deployed versions scored beside the local ones (see `live_columns.rs`).
    pub columns: LiveColumns,
    /// `columns` changed since the loop last arranged the evaluator list.
    columns_changed: bool,
}

impl ShipControl {
    pub fn new(tx: mpsc::UnboundedSender<ShipEvent>) -> ShipControl {
        ShipControl {
            tx,
            server: None,
            tunnel: None,
            target: None,
            tunnel_after_server: false,
            access: Arc::new(Access::from_env()),
            columns: LiveColumns::default(),
            columns_changed: false,
        }
    }

    /// How the server is started: on loopback, with this control's access, its full
    /// errors going to the ship log.
    fn options(&self, port: u16) -> Options {
        let mut options = Options::new("127.0.0.1", port);
        options.access = self.access.clone();
        let tx = self.tx.clone();
        options.notes = Some(Arc::new(move |note: String| {
            let _ = tx.send(ShipEvent::Msg(ShipMsg::Log(format!("server: {note}"))));
        }));
        options
    }

    fn say(&self, m: ShipMsg) {
        let _ = self.tx.send(ShipEvent::Msg(m));
    }

    fn log(&self, text: impl Into<String>) {
        self.say(ShipMsg::Log(text.into()));
    }

    pub fn toggle_serve(&mut self, runner: Arc<Runner>, workspace: &Workspace) {
        if let Some(server) = self.server.take() {
            self.stop_tunnel();
            self.say(ShipMsg::Serving(None));
            self.log(format!("server on {} stopped", server.url()));
            tokio::spawn(server.shutdown());
            return;
        }
        self.start_server(runner, workspace);
    }

    fn start_server(&mut self, runner: Arc<Runner>, workspace: &Workspace) {
        self.say(ShipMsg::Busy(Some("starting the server…".into())));
        let options = self.options(serve::configured_port(workspace));
        let workspace = self.columns.without(workspace);
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let started = serve::start_with(runner, &workspace, options).await;
            let _ = tx.send(ShipEvent::ServerStarted(started));
        });
    }

    /// The evaluators changed: a running server restarts on the new code.
    pub fn restart_server(&mut self, runner: Arc<Runner>, workspace: &Workspace) {
        let Some(old) = self.server.take() else {
            return;
        };
        self.say(ShipMsg::Busy(Some(
            "restarting the server on the new code…".into(),
        )));
        let options = self.options(old.addr.port());
        let workspace = self.columns.without(workspace);
        let tx = self.tx.clone();
        tokio::spawn(async move {
            old.shutdown().await;
            let started = serve::start_with(runner, &workspace, options).await;
            let _ = tx.send(ShipEvent::ServerStarted(started));
        });
    }

    pub fn toggle_tunnel(&mut self, runner: Arc<Runner>, workspace: &Workspace) {
        if self.tunnel.is_some() {
            self.stop_tunnel();
            return;
        }
        if self.server.is_none() {
            self.tunnel_after_server = true;
            self.start_server(runner, workspace);
            return;
        }
        self.open_tunnel(workspace);
    }

    fn open_tunnel(&mut self, workspace: &Workspace) {
        let Some(server) = &self.server else { return };
        let settings = match Settings::from_config(None, workspace.config.tunnel.as_ref()) {
            Ok(s) => s,
            Err(e) => {
                self.log(format!("tunnel: {e}"));
                return;
            }
        };
        let port = server.addr.port();
        if let Err(e) = self.require_key(settings.no_auth) {
            self.log(format!("tunnel: {e}"));
            return;
        }
        self.say(ShipMsg::Busy(Some(format!(
            "opening a {} tunnel…",
            settings.provider.name()
        ))));
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let log_tx = tx.clone();
            let mut progress = move |line: &str| {
                let _ = log_tx.send(ShipEvent::Msg(ShipMsg::Log(format!("tunnel: {line}"))));
            };
            let opened =
                tunnel::open(&settings.provider, port, settings.timeout, &mut progress).await;
            let _ = tx.send(ShipEvent::TunnelOpened(opened.map_err(|e| e.to_string())));
        });
    }

    /// A public URL never runs unauthenticated by accident (SPEC §6): the server
    /// requires `RK_ENDPOINT_API_KEY`, or a key generated now, unless `no_auth`.
    fn require_key(&mut self, no_auth: bool) -> Result<(), String> {
        let origin = guard::tunnel_key(no_auth)?;
        if let KeyOrigin::Generated(key) = &origin {
            self.access.set_key(Some(key.clone()));
        }
        if origin == KeyOrigin::Off {
            self.log(format!("tunnel: {}", guard::NO_AUTH_WARNING));
        }
        self.say(ShipMsg::TunnelKey(Some(match origin {
            KeyOrigin::Env => TunnelKey::FromEnv,
            KeyOrigin::Generated(key) => TunnelKey::Generated(key),
            KeyOrigin::Off => TunnelKey::Off,
        })));
        Ok(())
    }

    /// Back to what a local server requires: `RK_ENDPOINT_API_KEY` or nothing.
    fn drop_key(&mut self) {
        self.access.set_key(guard::env_key());
        self.say(ShipMsg::TunnelKey(None));
    }

    fn stop_tunnel(&mut self) {
        if let Some(t) = self.tunnel.take() {
            if let Some(host) = guard::url_host(&t.public_url) {
                self.access.forget_host(&host);
            }
            self.drop_key();
            self.say(ShipMsg::Tunnel(None));
            self.log(format!("tunnel {} closed", t.public_url));
            tokio::spawn(t.stop());
        }
    }

    /// Takes the result of a background step; returns app messages to show.
    pub fn on_event(&mut self, event: ShipEvent, workspace: &Workspace) -> Vec<ShipMsg> {
        match event {
            ShipEvent::Msg(m) => vec![m],
            ShipEvent::ServerStarted(Ok(server)) => {
                let url = server.url();
                let routes = server.routes.join(", ");
                self.server = Some(server);
                let mut out = vec![
                    ShipMsg::Busy(None),
                    ShipMsg::Serving(Some(url.clone())),
                    ShipMsg::Log(format!(
                        "serving {routes} on {url} (POST /evaluate/NAME, /batch/NAME; GET /health)"
                    )),
                ];
                if std::mem::take(&mut self.tunnel_after_server) {
                    self.open_tunnel(workspace);
                    out.pop();
                    out.push(ShipMsg::Log(format!(
                        "serving on {url}; opening the tunnel"
                    )));
                }
                if self.target.is_none() {
                    self.target = Some(Target::Url(url));
                }
                out
            }
            ShipEvent::ServerStarted(Err(e)) => {
                self.tunnel_after_server = false;
                vec![
                    ShipMsg::Busy(None),
                    ShipMsg::Log(format!("server failed to start: {e}")),
                ]
            }
            ShipEvent::TunnelOpened(Ok(t)) => {
                let url = t.public_url.clone();
                let evaluate = t.evaluate_url.clone();
                let tx = self.tx.clone();
                let health_url = url.clone();
                tokio::spawn(async move {
                    let line = match tunnel::check_health(&health_url).await {
                        Ok(body) => format!("tunnel: {health_url}/health answered {}", body.trim()),
                        Err(e) => {
                            format!("tunnel: the health check through {health_url} failed: {e}")
                        }
                    };
                    let _ = tx.send(ShipEvent::Msg(ShipMsg::Log(line)));
                });
                if let Some(host) = guard::url_host(&url) {
                    self.access.allow_host(&host);
                }
                self.tunnel = Some(t);
                self.target = Some(Target::Url(url.clone()));
                vec![
                    ShipMsg::Busy(None),
                    ShipMsg::Tunnel(Some(url)),
                    ShipMsg::Log(format!(
                        "tunnel open: register {evaluate} (y copies the URL and the key)"
                    )),
                ]
            }
            ShipEvent::TunnelOpened(Err(e)) => {
                self.drop_key();
                vec![
                    ShipMsg::Busy(None),
                    ShipMsg::Log(format!("tunnel failed: {e} (the server keeps running)")),
                ]
            }
            ShipEvent::ServiceUp { url, key, deployed } => {
                let columns = live_columns::service_columns(&url, key.clone(), &deployed);
                self.target = Some(Target::Service(url, key));
                self.add_columns(columns)
            }
            ShipEvent::Deployed(Some(id)) => {
                let timeout = crate::workspace::DEFAULT_TIMEOUT;
                self.add_columns(vec![live_columns::fireworks_column(&id, timeout)])
            }
            ShipEvent::Deployed(None) | ShipEvent::Report(..) => Vec::new(),
        }
    }

    /// Puts the deployed version's columns beside the local ones (the loop arranges
    /// the evaluator list, see [`ShipControl::take_columns_changed`]).
    fn add_columns(&mut self, columns: Vec<EvaluatorSpec>) -> Vec<ShipMsg> {
        if columns.is_empty() {
            return Vec::new();
        }
        let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
        self.columns.put(columns);
        self.columns_changed = true;
        vec![ShipMsg::Log(format!(
            "scoring the deployed version beside yours: column {} (session only; D on it drops it)",
            names.join(", ")
        ))]
    }

    /// Whether the live columns changed since the last call.
    pub fn take_columns_changed(&mut self) -> bool {
        std::mem::take(&mut self.columns_changed)
    }

    pub fn deploy(&mut self, workspace: &Workspace, id: String, display_name: String, force: bool) {
        let workspace = &self.columns.without(workspace);
        self.say(ShipMsg::Busy(Some(format!("deploying {id} to Fireworks…"))));
        let request = DeployRequest {
            id: id.clone(),
            display_name: (!display_name.is_empty()).then_some(display_name),
            description: None,
            force,
            code: Code::Evaluators {
                specs: workspace.evaluators.clone(),
                python: workspace.python.clone(),
            },
        };
        let tx = self.tx.clone();
        self.target = Some(Target::Fireworks(id));
        tokio::spawn(async move {
            let log = |line: String| {
                let _ = tx.send(ShipEvent::Msg(ShipMsg::Log(line)));
            };
            let creds = match Credentials::load() {
                Ok(c) => c,
                Err(e) => {
                    log(format!("deploy failed: {e}"));
                    let _ = tx.send(ShipEvent::Msg(ShipMsg::Busy(None)));
                    return;
                }
            };
            let progress_tx = tx.clone();
            let mut progress = move |line: &str| {
                let _ = progress_tx.send(ShipEvent::Msg(ShipMsg::Log(format!("deploy: {line}"))));
            };
            let made = match fireworks::deploy(&creds, &request, &mut progress).await {
                Ok(done) => {
                    log(format!(
                        "deployed {} (p replays the samples there)",
                        done.name
                    ));
                    Some(request.id.clone())
                }
                Err(e) => {
                    log(format!("deploy failed: {e}"));
                    None
                }
            };
            let _ = tx.send(ShipEvent::Msg(ShipMsg::Busy(None)));
            let _ = tx.send(ShipEvent::Deployed(made));
        });
    }

    /// Deploys to Cloud Run or Kubernetes (`deploy_target.rs`).
    pub fn deploy_target(&mut self, workspace: &Workspace, request: TargetRequest) {
        let target = request.target.label();
        let doing = if request.target.is_export() {
            format!("exporting for {target} into {}…", request.id)
        } else {
            format!("deploying {} to {target}…", request.id)
        };
        self.say(ShipMsg::Busy(Some(doing)));
        super::deploy_target::spawn(self.tx.clone(), &self.columns.without(workspace), request);
    }

    /// Replays the samples on the last tunnel, deployment or server and reports the
    /// remote scores for the app to compare with the local ones.
    pub fn compare(&mut self, workspace: &Workspace, samples: &[Sample], lines: Arc<dyn Lines>) {
        let Some(target) = self.target.clone() else {
            self.log(
                "compare: nothing remote yet; serve (S), open a tunnel (t) or deploy (d) first",
            );
            return;
        };
        let workspace = self.columns.without(workspace);
        let names: Vec<String> = workspace
            .evaluators
            .iter()
            .map(|e| e.name.clone())
            .collect();
        let chosen: Vec<(Sample, String)> = samples
            .iter()
            .filter(|s| s.bad.is_none())
            .filter_map(|s| Some((s.clone(), lines.line(s.at.file, s.offset, s.len)?)))
            .collect();
        let tx = self.tx.clone();
        let key = self.access.key();
        self.say(ShipMsg::Busy(Some(
            "replaying samples on the remote side…".into(),
        )));
        tokio::spawn(async move {
            let result = match &target {
                Target::Url(root) => replay_http(root, key.as_deref(), &names, &chosen)
                    .await
                    .map(|s| (root.clone(), s)),
                Target::Service(root, key) => replay_http(root, key.as_deref(), &names, &chosen)
                    .await
                    .map(|s| (root.clone(), s)),
                Target::Fireworks(id) => preview_fireworks(&workspace, &names, &chosen)
                    .await
                    .map(|s| (format!("Fireworks preview of {id}"), s)),
            };
            let msg = match result {
                Ok((source, scores)) => ShipMsg::Remote { source, scores },
                Err(e) => ShipMsg::Log(format!("compare failed: {e}")),
            };
            let _ = tx.send(ShipEvent::Msg(msg));
            let _ = tx.send(ShipEvent::Msg(ShipMsg::Busy(None)));
        });
    }

    /// Sends finished reports back to the loop.
    pub fn reporter(&self) -> mpsc::UnboundedSender<ShipEvent> {
        self.tx.clone()
    }

    pub fn request_stats(&self) -> Option<ShipMsg> {
        let s = self.server.as_ref()?.log.summary();
        Some(ShipMsg::Requests(s.requests, s.p50_ms, s.p99_ms))
    }

    pub async fn shutdown(&mut self) {
        if let Some(t) = self.tunnel.take() {
            t.stop().await;
        }
        if let Some(s) = self.server.take() {
            s.shutdown().await;
        }
    }
}

type Scores = Vec<([u8; 16], String, Option<f64>)>;

/// POSTs each sample to `{root}/evaluate/{name}` for every evaluator, with the key
/// the server requires (if any).
async fn replay_http(
    root: &str,
    key: Option<&str>,
    names: &[String],
    samples: &[(Sample, String)],
) -> Result<Scores, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())?;
    let root = root.trim_end_matches('/').to_string();
    let mut jobs = Vec::new();
    for (sample, raw) in samples.iter().take(MAX_REPLAY) {
        let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(raw) else {
            continue;
        };
        let messages = obj.remove("messages").unwrap_or(Value::Null);
        let ground_truth = obj.remove("ground_truth").unwrap_or(Value::Null);
        let body = json!({"messages": messages, "ground_truth": ground_truth, "kwargs": Value::Object(obj)});
        for name in names {
            jobs.push((sample.hash, name.clone(), body.clone()));
        }
    }
    let mut out = Vec::new();
    let mut first_error = None;
    for chunk in jobs.chunks(8) {
        let requests = chunk.iter().map(|(hash, name, body)| {
            let url = format!("{root}/evaluate/{name}");
            let mut req = client.post(&url).json(body);
            if let Some(k) = key {
                req = req.header("x-api-key", k);
            }
            async move {
                let score = match req.send().await {
                    Ok(r) if r.status().is_success() => r
                        .json::<Value>()
                        .await
                        .ok()
                        .and_then(|v| v["score"].as_f64()),
                    Ok(r) => {
                        return (
                            *hash,
                            name.clone(),
                            None,
                            Some(format!("POST {url} answered {}", r.status())),
                        )
                    }
                    Err(e) => return (*hash, name.clone(), None, Some(format!("POST {url}: {e}"))),
                };
                (*hash, name.clone(), score, None)
            }
        });
        for (hash, name, score, error) in futures::future::join_all(requests).await {
            if let Some(e) = error {
                first_error.get_or_insert(e);
            }
            out.push((hash, name, score));
        }
    }
    if out.iter().all(|(_, _, s)| s.is_none()) {
        if let Some(e) = first_error {
            return Err(e);
        }
    }
    Ok(out)
}

/// Runs Fireworks' preview on the samples and reads each evaluator's score from the
/// per-metric results.
async fn preview_fireworks(
    workspace: &Workspace,
    names: &[String],
    samples: &[(Sample, String)],
) -> Result<Scores, String> {
    let creds = Credentials::load().map_err(|e| e.to_string())?;
    let payload = EvaluatorPayload::from_evaluators(&workspace.evaluators, &workspace.python)
        .map_err(|e| e.to_string())?;
    let chosen: Vec<&(Sample, String)> = samples.iter().take(MAX_PREVIEW).collect();
    let lines: Vec<String> = chosen.iter().map(|(_, raw)| raw.clone()).collect();
    let preview = fireworks::preview(&creds, &payload, lines, chosen.len())
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for ((sample, _), result) in chosen.iter().zip(&preview.results) {
        for name in names {
            let score = match result.per_metric.get(name) {
                Some(m) => m.score,
                None if names.len() == 1 => result.score,
                None => None,
            };
            out.push((
                sample.hash,
                name.clone(),
                if result.success { score } else { None },
            ));
        }
    }
    Ok(out)
}
