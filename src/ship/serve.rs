//! `rwb serve`: the evaluators over HTTP.

use crate::cli::Session;
use std::net::SocketAddr;

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
}

impl Server {
    /// `http://HOST:PORT`, the root the routes hang from.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets requests in flight finish, then returns.
    pub async fn shutdown(self) {}
}

/// Starts serving the session's evaluators on `host:port` (port 0 picks a free one).
pub async fn start(_session: &Session, host: &str, port: u16) -> Result<Server, String> {
    Err(format!("serving on {host}:{port} is not built yet"))
}
