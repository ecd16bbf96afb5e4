//! The `[serve]` settings of rwb.toml: the port and the hardening limits (SPEC §5),
//! checked.

use crate::workspace::Workspace;
use std::time::Duration;

/// Request bodies larger than this are refused with 413 (`[serve] max_body_mb`).
const DEFAULT_MAX_BODY_MB: u64 = 16;
/// A request's headers must arrive within this (`[serve] header_timeout`).
const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A request's whole body must arrive within this (`[serve] body_timeout`).
const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Requests in flight beyond this get 503 (`[serve] max_in_flight`).
const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

fn setting<'a>(workspace: &'a Workspace, key: &str) -> Option<&'a toml::Value> {
    workspace.config.serve.as_ref().and_then(|t| t.get(key))
}

/// The port `[serve] port` in rwb.toml names, else 8001.
pub fn configured_port(workspace: &Workspace) -> u16 {
    setting(workspace, "port")
        .and_then(|p| p.as_integer())
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(8001)
}

/// The hardening limits of `[serve]` (SPEC §5), checked.
#[derive(Clone, Debug)]
pub(super) struct Limits {
    pub(super) max_body: usize,
    pub(super) header_timeout: Duration,
    pub(super) body_timeout: Duration,
    pub(super) max_in_flight: usize,
}

impl Limits {
    pub(super) fn of(workspace: &Workspace) -> Result<Limits, String> {
        let max_body_mb = setting(workspace, "max_body_mb")
            .and_then(|v| v.as_integer())
            .map(|m| m as u64)
            .unwrap_or(DEFAULT_MAX_BODY_MB);
        let max_in_flight = match setting(workspace, "max_in_flight") {
            None => DEFAULT_MAX_IN_FLIGHT,
            Some(toml::Value::Integer(n)) if (1..=1_000_000).contains(n) => *n as usize,
            Some(other) => {
                return Err(format!(
                    "rwb.toml [serve] max_in_flight must be a whole number from 1 to 1000000, not {other}"
                ))
            }
        };
        Ok(Limits {
            max_body: (max_body_mb.min(1 << 20) * 1024 * 1024) as usize,
            header_timeout: seconds(workspace, "header_timeout", DEFAULT_HEADER_TIMEOUT)?,
            body_timeout: seconds(workspace, "body_timeout", DEFAULT_BODY_TIMEOUT)?,
            max_in_flight,
        })
    }
}

/// `[serve] KEY` as a duration in seconds (above 0, at most a day).
pub(super) fn seconds(
    workspace: &Workspace,
    key: &str,
    default: Duration,
) -> Result<Duration, String> {
    match setting(workspace, key) {
        None => Ok(default),
        Some(value) => super::super::seconds_setting("serve", key, value),
    }
}
