//! The server's connections (SPEC §5): hyper's HTTP/1 with a header read timeout, so a
//! client that never finishes its headers is cut off, and a shutdown with a deadline:
//! stop accepting, let requests in flight finish for up to a grace period, then drop
//! whatever connections are left (a stalled client cannot hold Ctrl-C).

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How a server's connections are run.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// A request's headers must arrive within this (also the idle keep-alive limit).
    pub header_timeout: Duration,
    /// After `stop`, how long requests in flight may take before their connections
    /// are dropped.
    pub grace: Duration,
}

/// Accepts connections on `listener` and serves `app` on each until `stop` is
/// cancelled; then shuts down within `timing.grace`.
pub async fn run(listener: TcpListener, app: Router, timing: Timing, stop: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, app.clone(), timing, stop.clone()));
                }
                // out of file descriptors and the like: breathe, then go on
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stop.cancelled() => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(timing.grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    // dropping the set aborts the connections still open
}

async fn connection(stream: TcpStream, app: Router, timing: Timing, stop: CancellationToken) {
    let _ = stream.set_nodelay(true);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(timing.header_timeout);
    let served = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    tokio::pin!(served);
    tokio::select! {
        _ = served.as_mut() => return,
        _ = stop.cancelled() => {}
    }
    // finish the request in flight (if any), then close
    served.as_mut().graceful_shutdown();
    let _ = served.await;
}
