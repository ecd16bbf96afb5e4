//! Shipping evaluators: serve them over HTTP (reward-kit `generic_server` compatible,
//! plus the OpenRLHF batch route), open a public tunnel to that server, and deploy
//! them to Fireworks, Cloud Run or Kubernetes.
//!
//! Must not know the screen: the workbench drives these through their APIs and shows
//! what they report.

pub mod cloud_run;
pub mod container;
pub mod export;
pub mod fireworks;
pub mod guard;
pub mod k8s;
mod listen;
pub mod serve;
pub mod targets;
pub mod tool;
pub mod tunnel;

/// A `[SECTION] KEY = seconds` setting of rwb.toml as a duration: a number above 0 and
/// at most a day, else a message naming the setting.
pub(crate) fn seconds_setting(
    section: &str,
    key: &str,
    value: &toml::Value,
) -> Result<std::time::Duration, String> {
    let secs = match value {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        _ => f64::NAN,
    };
    if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
        return Err(format!(
            "rwb.toml [{section}] {key} must be a number of seconds above 0 (at most 86400), not {value}"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}
