//! `rwb tunnel`: serve, open a public tunnel, show its URL, check `/health` through it,
//! and keep serving until Ctrl-C. A tunnel that cannot open is one line of error; the
//! server keeps serving locally.

use super::{Fail, Session, TunnelArgs};
use crate::session::RayChoice;
use crate::ship::guard::{self, KeyOrigin};
use crate::ship::serve::{Options, Server};
use crate::ship::tunnel::{self, Settings, Tunnel};
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::signal::unix::{signal, Signal, SignalKind};

pub(super) async fn tunnel(args: TunnelArgs) -> Result<ExitCode, Fail> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut options = args.shared.open_options();
    options.ray = RayChoice::from_flag(args.ray.clone());
    let mut session = Session::open(dir, &options)?;
    // on a cluster before anything is served, as `rwb serve`: never local by mistake
    if let Some(cluster) = session.join_ray(args.shared.jobs).await? {
        eprintln!("rwb: {}", cluster.describe());
    }
    let settings = Settings::from_config(
        args.provider.as_deref(),
        session.workspace.config.tunnel.as_ref(),
    )
    .map_err(Fail::Usage)?;
    // listen before anything starts, so an early Ctrl-C is not lost
    let mut stop = Stop::new()?;
    let port = args.port.unwrap_or(8001);
    let (options, key) = keyed_options(&args, &settings, port)?;
    let server = crate::ship::serve::start(&session, options)
        .await
        .map_err(Fail::Usage)?;
    let local = server.url();
    let local_port = port_of(&local).unwrap_or(port);
    println!("serving on {local}");

    let mut progress = |message: &str| eprintln!("rwb: {message}");
    let opened = tokio::select! {
        opened = tunnel::open(&settings.provider, local_port, settings.timeout, &mut progress) => opened,
        _ = stop.wait() => {
            eprintln!("rwb: stopped before the tunnel opened");
            server.shutdown().await;
            return Ok(ExitCode::SUCCESS);
        }
    };
    let code = match opened {
        Ok(mut tunnel) => {
            announce(&tunnel, &server, &key);
            eprintln!(
                "rwb: checking {}/health through the tunnel",
                tunnel.public_url
            );
            let stopped = tokio::select! {
                health = tunnel.check_health() => {
                    match health {
                        Ok(body) => println!("health through the tunnel: ok {body}"),
                        Err(e) => eprintln!(
                            "rwb: health check through the tunnel failed: {e} (still serving locally on {local})"
                        ),
                    }
                    false
                }
                _ = stop.wait() => true,
            };
            if !stopped {
                eprintln!(
                    "rwb: serving on {local} and through {} (Ctrl-C stops)",
                    tunnel.public_url
                );
                tokio::select! {
                    _ = stop.wait() => {}
                    how = tunnel.wait_exit() => {
                        eprintln!(
                            "rwb: the {} tunnel ended ({how}); still serving locally on {local} (Ctrl-C stops)",
                            tunnel.provider
                        );
                        stop.wait().await;
                    }
                }
            }
            tunnel.stop().await;
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rwb: {e}");
            // nothing public: the key nobody was shown is not needed locally
            server.access.set_key(guard::env_key());
            eprintln!("rwb: no tunnel; still serving locally on {local} (Ctrl-C stops)");
            stop.wait().await;
            ExitCode::from(1)
        }
    };
    server.shutdown().await;
    Ok(code)
}

/// The server's options: on loopback, requiring the tunnel's key (SPEC §6): the
/// environment's, else one generated now, unless `--no-auth` (warned about).
fn keyed_options(
    args: &TunnelArgs,
    settings: &Settings,
    port: u16,
) -> Result<(Options, KeyOrigin), Fail> {
    let key = guard::tunnel_key(args.no_auth || settings.no_auth).map_err(Fail::Usage)?;
    let mut options = Options::new("127.0.0.1", port);
    options.notes = Some(std::sync::Arc::new(|note: String| eprintln!("rwb: {note}")));
    match &key {
        KeyOrigin::Generated(k) => options.access.set_key(Some(k.clone())),
        KeyOrigin::Off => eprintln!("rwb: {}", guard::NO_AUTH_WARNING),
        KeyOrigin::Env if args.no_auth => eprintln!(
            "rwb: {} is set, so requests still need that key (--no-auth only skips the generated one)",
            guard::KEY_ENV
        ),
        KeyOrigin::Env => {}
    }
    Ok((options, key))
}

/// Shows the tunnel's URLs and, once, the key it requires; lets the server answer
/// for the tunnel's public host name.
fn announce(tunnel: &Tunnel, server: &Server, key: &KeyOrigin) {
    if let Some(host) = guard::url_host(&tunnel.public_url) {
        server.access.allow_host(&host);
    }
    println!("public URL:   {}", tunnel.public_url);
    println!("evaluate URL: {}", tunnel.evaluate_url);
    match key {
        KeyOrigin::Generated(k) => println!(
            "api key:      {k}  (generated for this session, shown once: send it as X-Api-Key or Authorization: Bearer; rwb deploy --remote-url URL --remote-key KEY)"
        ),
        KeyOrigin::Env => println!("api key:      the value of {}", guard::KEY_ENV),
        KeyOrigin::Off => println!("api key:      none (--no-auth: open to anyone)"),
    }
}

/// The port of `http://HOST:PORT`.
fn port_of(url: &str) -> Option<u16> {
    url.trim_end_matches('/').rsplit(':').next()?.parse().ok()
}

/// Ctrl-C (SIGINT) or SIGTERM.
struct Stop {
    interrupt: Signal,
    terminate: Signal,
}

impl Stop {
    fn new() -> Result<Stop, Fail> {
        let listen =
            |kind| signal(kind).map_err(|e| Fail::Usage(format!("cannot listen for Ctrl-C: {e}")));
        Ok(Stop {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }

    async fn wait(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn port_of_a_server_url() {
        assert_eq!(super::port_of("http://127.0.0.1:8001"), Some(8001));
        assert_eq!(super::port_of("http://127.0.0.1:41234/"), Some(41234));
        assert_eq!(super::port_of("http://localhost"), None);
    }
}
