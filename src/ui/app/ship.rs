//! Serve, tunnel, deploy and the remote comparison as the screen shows them, and the
//! messages that report them.

use super::{App, Sample};
use std::collections::HashMap;

/// Serve, tunnel and deploy as the screen shows them.
#[derive(Clone, Debug, Default)]
pub struct Ship {
    /// The local server's URL while it runs.
    pub serving: Option<String>,
    /// (requests, p50 ms, p99 ms) of the server.
    pub requests: Option<(u64, Option<f64>, Option<f64>)>,
    /// The public URL while a tunnel is open.
    pub tunnel: Option<String>,
    /// The key the tunnel requires, while one is open or opening.
    pub tunnel_key: Option<TunnelKey>,
    /// What is under way ("opening the tunnel…").
    pub busy: Option<String>,
    /// Progress and results, newest last.
    pub log: Vec<String>,
    /// Remote scores by (sample content, evaluator name), from the last comparison.
    pub remote: HashMap<([u8; 16], String), Option<f64>>,
    /// Where the remote scores came from.
    pub remote_source: Option<String>,
    /// The id the deploy dialog proposes.
    pub default_id: String,
}

/// The key a tunnel requires (SPEC §6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TunnelKey {
    /// `RK_ENDPOINT_API_KEY` (not shown).
    FromEnv,
    /// Generated for this session: shown in the ship panel, copied with the URL.
    Generated(String),
    /// `[tunnel] no_auth`: open to anyone.
    Off,
}

/// What serve, tunnel and deploy report.
#[derive(Debug)]
pub enum ShipMsg {
    Serving(Option<String>),
    Requests(u64, Option<f64>, Option<f64>),
    Tunnel(Option<String>),
    TunnelKey(Option<TunnelKey>),
    Busy(Option<String>),
    Log(String),
    /// Remote scores from `source`: (sample hash, evaluator name, score).
    Remote {
        source: String,
        scores: Vec<([u8; 16], String, Option<f64>)>,
    },
}

impl App {
    pub(super) fn on_ship(&mut self, m: ShipMsg) {
        match m {
            ShipMsg::Serving(url) => {
                if url.is_none() {
                    self.ship.requests = None;
                }
                self.ship.serving = url;
            }
            ShipMsg::Requests(n, p50, p99) => self.ship.requests = Some((n, p50, p99)),
            ShipMsg::Tunnel(url) => self.ship.tunnel = url,
            ShipMsg::TunnelKey(key) => self.ship.tunnel_key = key,
            ShipMsg::Busy(what) => self.ship.busy = what,
            ShipMsg::Log(line) => {
                self.ship.log.push(line);
                let excess = self.ship.log.len().saturating_sub(200);
                self.ship.log.drain(..excess);
            }
            ShipMsg::Remote { source, scores } => {
                self.ship.remote = scores.into_iter().map(|(h, e, s)| ((h, e), s)).collect();
                let differ = self
                    .samples
                    .iter()
                    .filter(|s| {
                        (0..self.evaluators.len()).any(|e| self.remote_differs(s, e) == Some(true))
                    })
                    .count();
                self.ship.log.push(format!("{source}: {differ} of {} samples differ from the local scores (filter: remote)", self.samples.len()));
                self.ship.remote_source = Some(source);
                self.view_stale = true;
            }
        }
    }

    /// Whether the remote score of a sample differs from the local one (None: no
    /// remote score for it).
    pub fn remote_differs(&self, sample: &Sample, evaluator: usize) -> Option<bool> {
        let name = &self.evaluators.get(evaluator)?.name;
        let remote = *self.ship.remote.get(&(sample.hash, name.clone()))?;
        let local = sample.cells.get(evaluator).and_then(|c| c.score());
        Some(match (remote, local) {
            (Some(r), Some(l)) => (r - l).abs() > 1e-6,
            (r, l) => r.is_some() != l.is_some(),
        })
    }
}
