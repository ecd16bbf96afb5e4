//! `rwb tunnel`: a public URL for the local server (serveo, ngrok, cloudflared, or a
//! configured command), SPEC §6.
//!
//! [`open`] starts the provider's process in its own process group (so a Ctrl-C in the
//! terminal reaches rwb, which then stops the provider itself), drains its output, and
//! waits for the public URL. The returned [`Tunnel`] owns that process: [`Tunnel::stop`]
//! ends the whole group and reaps it; dropping a `Tunnel` kills it too.
//!
//! One file per job: `providers` (what runs), `settings` (`[tunnel]`), `process` (the
//! process group, its output, stopping it), `find_url` and `ngrok` (where the URL
//! comes from), `health` (the check through the URL), `error`.

mod error;
mod find_url;
mod health;
mod ngrok;
mod process;
mod providers;
mod settings;

pub use error::TunnelError;
pub use health::{check_health, HEALTH_TIMEOUT};
pub use providers::Provider;
pub use settings::{Settings, DEFAULT_NGROK_API, DEFAULT_TIMEOUT, PROVIDERS};

use error::said;
use find_url::Finder;
use ngrok::poll_ngrok;
use process::{shown_command, Process, Tail};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An open tunnel: the provider's process and the public URL it gave.
pub struct Tunnel {
    /// `serveo`, `ngrok`, `cloudflared` or `command`.
    pub provider: &'static str,
    /// The public root, without a trailing slash.
    pub public_url: String,
    /// The URL to register for evaluation: the root plus `/evaluate`.
    pub evaluate_url: String,
    process: Process,
    output: Tail,
}

impl Tunnel {
    /// The provider process's id (also its process group's id).
    pub fn pid(&self) -> Option<u32> {
        self.process.pgid()
    }

    /// The provider's last output lines (ANSI colours removed), oldest first.
    pub fn last_lines(&self) -> Vec<String> {
        self.output.lines()
    }

    /// `GET {public_url}/health` through the public URL: the body when the server
    /// answered it, else an error that says what went wrong.
    pub async fn check_health(&self) -> Result<String, String> {
        check_health(&self.public_url).await
    }

    /// Resolves when the provider's process ends by itself, describing how (its exit
    /// status and last lines). Cancel-safe: use it in a `select!` beside Ctrl-C.
    pub async fn wait_exit(&mut self) -> String {
        let status = self.process.wait().await;
        // let the pipes deliver what it printed last
        tokio::time::sleep(Duration::from_millis(100)).await;
        format!("{status}; {}", said(&self.output.lines()))
    }

    /// Ends the provider: SIGTERM to its process group, SIGKILL if it is still there
    /// after a grace period, and waits for it (no zombie is left behind).
    pub async fn stop(mut self) {
        self.process.stop().await;
    }
}

/// Starts the tunnel to local `port` and waits up to `timeout` for its public URL.
/// `progress` hears what rwb is doing (not the provider's own output, which
/// [`Tunnel::last_lines`] and the errors carry).
pub async fn open(
    provider: &Provider,
    port: u16,
    timeout: Duration,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Tunnel, TunnelError> {
    let (program, args) = provider.command_line(port);
    open_with(provider, &program, &args, port, timeout, progress).await
}

async fn open_with(
    provider: &Provider,
    program: &str,
    args: &[String],
    port: u16,
    timeout: Duration,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Tunnel, TunnelError> {
    let finder = Finder::for_provider(provider)?;
    progress(&format!(
        "starting the {} tunnel: {}",
        provider.name(),
        shown_command(program, args)
    ));
    // from here on, dropping `process` (an error, or the caller giving up) kills it
    let (mut process, output, mut lines) = Process::spawn(provider.name(), program, args)?;
    let api_error = Arc::new(Mutex::new(None::<String>));
    let mut from_api = url_from_api(provider, port, timeout, &api_error, progress);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut lines_open = true;
    let url = loop {
        tokio::select! {
            line = lines.recv(), if lines_open => match line {
                Some(line) => {
                    if let Some(url) = finder.find(&line) {
                        break url;
                    }
                }
                None => lines_open = false,
            },
            url = &mut from_api => break url,
            status = process.wait() => {
                // what it printed last is still in the pipes: wait (briefly) for them to close
                let _ = tokio::time::timeout(Duration::from_millis(500), async {
                    while lines.recv().await.is_some() {}
                })
                .await;
                return Err(TunnelError::Exited {
                    provider: provider.name().into(),
                    status,
                    last_lines: output.lines(),
                });
            }
            _ = tokio::time::sleep_until(deadline) => {
                process.stop().await;
                let detail = api_error
                    .lock()
                    .ok()
                    .and_then(|e| e.clone());
                return Err(TunnelError::NoUrl {
                    provider: provider.name().into(),
                    seconds: timeout.as_secs_f64(),
                    detail,
                    last_lines: output.lines(),
                });
            }
        }
    };
    let public_url = url.trim_end_matches('/').to_string();
    let evaluate_url = format!("{public_url}/evaluate");
    Ok(Tunnel {
        provider: provider.name(),
        public_url,
        evaluate_url,
        process,
        output,
    })
}

/// For ngrok, the URL its agent API will list (failures kept in `api_error`); for
/// the others, a future that never resolves (their URL is in their output).
fn url_from_api(
    provider: &Provider,
    port: u16,
    timeout: Duration,
    api_error: &Arc<Mutex<Option<String>>>,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Pin<Box<dyn Future<Output = String> + Send>> {
    match provider {
        Provider::Ngrok { api } => {
            progress(&format!(
                "waiting for the URL from ngrok's API at {api}/api/tunnels (up to {} s)",
                timeout.as_secs_f64()
            ));
            Box::pin(poll_ngrok(api.clone(), port, api_error.clone()))
        }
        _ => {
            progress(&format!(
                "waiting for the public URL (up to {} s)",
                timeout.as_secs_f64()
            ));
            Box::pin(std::future::pending())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use process::TERM_GRACE;

    // ---- the process, against a tiny local server ----

    /// A server on 127.0.0.1 answering `GET /health` (and 500 on `/broken/health`).
    async fn tiny_server() -> u16 {
        use axum::routing::get;
        let app = axum::Router::new()
            .route(
                "/health",
                get(|| async {
                    axum::Json(serde_json::json!({"status": "ok", "reward_function": "tiny"}))
                }),
            )
            .route(
                "/broken/health",
                get(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        port
    }

    fn command(script: &str, url_regex: &str) -> Provider {
        Provider::Command {
            command: script.into(),
            url_regex: url_regex.into(),
        }
    }

    fn alive(pid: u32) -> bool {
        // a zombie still answers kill(pid, 0); look at its state too
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }

    fn quiet() -> impl FnMut(&str) + Send {
        |_: &str| {}
    }

    #[tokio::test]
    async fn a_command_tunnel_opens_checks_health_and_stops() {
        let port = tiny_server().await;
        let provider = command(
            "echo 'starting up'; echo \"tunnel ready: http://127.0.0.1:{port}/ (forever)\"; exec sleep 600",
            r"http://127\.0\.0\.1:\d+/?",
        );
        let mut heard = Vec::new();
        let mut progress = |m: &str| heard.push(m.to_string());
        let tunnel = open(&provider, port, Duration::from_secs(10), &mut progress)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            heard[0].starts_with("starting the command tunnel: sh -c"),
            "{heard:?}"
        );
        assert_eq!(tunnel.public_url, format!("http://127.0.0.1:{port}"));
        assert_eq!(
            tunnel.evaluate_url,
            format!("http://127.0.0.1:{port}/evaluate")
        );
        let body = tunnel.check_health().await.unwrap();
        assert!(body.contains("\"status\":\"ok\""), "{body}");
        assert!(tunnel.last_lines().contains(&"starting up".to_string()));
        let pid = tunnel.pid().unwrap();
        assert!(alive(pid));
        tunnel.stop().await;
        assert!(!alive(pid), "the provider is gone and reaped");
    }

    #[tokio::test]
    async fn dropping_a_tunnel_kills_its_process_group() {
        let port = tiny_server().await;
        // a child of the shell in the same group must go too
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("sleeper");
        let script = format!(
            "sleep 600 & echo $! > {}; echo http://127.0.0.1:{{port}}; wait",
            pidfile.display()
        );
        let tunnel = open(
            &command(&script, r"http://\S+"),
            port,
            Duration::from_secs(10),
            &mut quiet(),
        )
        .await
        .unwrap();
        let shell = tunnel.pid().unwrap();
        let sleeper: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(alive(sleeper));
        drop(tunnel);
        assert!(!alive(shell), "the provider is killed and reaped on drop");
        for _ in 0..100 {
            if !alive(sleeper) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive(sleeper), "its group is killed too");
    }

    #[tokio::test]
    async fn stop_kills_a_provider_that_ignores_sigterm() {
        let provider = command(
            "trap '' TERM; echo http://127.0.0.1:{port}; while :; do sleep 0.1; done",
            r"http://\S+",
        );
        let tunnel = open(&provider, 9, Duration::from_secs(10), &mut quiet())
            .await
            .unwrap();
        let pid = tunnel.pid().unwrap();
        let started = std::time::Instant::now();
        tunnel.stop().await;
        assert!(!alive(pid));
        assert!(started.elapsed() < TERM_GRACE + Duration::from_secs(2));
    }

    #[tokio::test]
    async fn a_provider_that_exits_reports_its_status_and_last_lines() {
        let provider = command(
            "echo 'connecting...'; echo 'ERROR: authentication failed (code 4018)' >&2; exit 3",
            r"https://\S+",
        );
        let e = open(&provider, 8001, Duration::from_secs(10), &mut quiet())
            .await
            .err()
            .expect("it exits");
        let TunnelError::Exited {
            status, last_lines, ..
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!(status, "exit status: 3");
        assert!(
            last_lines.iter().any(|l| l.contains("code 4018")),
            "{last_lines:?}"
        );
        let text = e.to_string();
        assert!(
            text.starts_with(
                "the command tunnel exited before giving a URL (exit status: 3); its last lines:"
            ),
            "{text}"
        );
        assert!(!text.contains('\n'));
    }

    #[tokio::test]
    async fn no_url_in_time_stops_the_process() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!(
            "echo $$ > {}; echo 'waiting for the relay'; exec sleep 600",
            pidfile.display()
        );
        let started = std::time::Instant::now();
        let e = open(
            &command(&script, r"https://\S+"),
            8001,
            Duration::from_millis(700),
            &mut quiet(),
        )
        .await
        .err()
        .expect("no URL");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(matches!(e, TunnelError::NoUrl { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "no public URL from command within 0.7 s (stopped it); its last lines: waiting for the relay"
        );
        let pid: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!alive(pid));
    }

    #[tokio::test]
    async fn a_missing_program_is_not_installed() {
        let e = open_with(
            &Provider::Ngrok {
                api: DEFAULT_NGROK_API.into(),
            },
            "rwb-test-no-such-ngrok",
            &[],
            8001,
            Duration::from_secs(1),
            &mut quiet(),
        )
        .await
        .err()
        .expect("not installed");
        assert!(matches!(e, TunnelError::NotInstalled { .. }));
        assert!(e
            .to_string()
            .starts_with("rwb-test-no-such-ngrok is not installed (not on PATH)"));
    }

    #[tokio::test]
    async fn ngrok_url_comes_from_its_api() {
        use axum::routing::get;
        let port = tiny_server().await;
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = calls.clone();
        // the API lists nothing at first, as ngrok does while it connects
        let app = axum::Router::new().route(
            "/api/tunnels",
            get(move || {
                let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move {
                    let tunnels = if n < 2 {
                        serde_json::json!([])
                    } else {
                        serde_json::json!([{"name": "command_line", "public_url": format!("http://127.0.0.1:{port}"), "proto": "http", "config": {"addr": format!("http://localhost:{port}")}}])
                    };
                    axum::Json(serde_json::json!({"tunnels": tunnels, "uri": "/api/tunnels"}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let provider = Provider::Ngrok { api };
        // stands in for `ngrok http PORT --log=stdout`
        let args = vec![
            "-c".to_string(),
            "echo 't=2024-05-02T10:15:03+0000 lvl=info msg=\"starting web service\" obj=web addr=127.0.0.1:4040'; exec sleep 600".to_string(),
        ];
        let tunnel = open_with(
            &provider,
            "sh",
            &args,
            port,
            Duration::from_secs(10),
            &mut quiet(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(calls.load(std::sync::atomic::Ordering::SeqCst) >= 3);
        assert_eq!(tunnel.public_url, format!("http://127.0.0.1:{port}"));
        assert!(tunnel.check_health().await.is_ok());
        tunnel.stop().await;
    }

    #[tokio::test]
    async fn health_failures_say_what_went_wrong() {
        let port = tiny_server().await;
        let e = check_health(&format!("http://127.0.0.1:{port}/broken"))
            .await
            .unwrap_err();
        assert!(
            e.contains("/broken/health answered 500 Internal Server Error: boom"),
            "{e}"
        );
        // nothing listens there
        let free = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = check_health(&format!("http://127.0.0.1:{free}"))
            .await
            .unwrap_err();
        assert!(
            e.starts_with(&format!("GET http://127.0.0.1:{free}/health failed:")),
            "{e}"
        );
        assert!(e.to_lowercase().contains("connect"), "{e}");
        let e = check_health(&format!("http://127.0.0.1:{port}/missing"))
            .await
            .unwrap_err();
        assert!(e.contains("404"), "{e}");
    }
}
