//! Runs on a Ray cluster (SPEC §11): the engine starts `python/rwb_ray.py` in place of
//! the local fork-server. It speaks the same protocol, so the pool, the runner and the
//! cache do not know the difference: each "worker" it hands out is a proxy thread in
//! the driver that runs the worker's batches as Ray tasks with rwb_worker.py's code.
//!
//! Owns the driver's command line and what it reports about the cluster. Must not:
//! schedule (the pool does), or decide what a result is (rwb_worker.py does).

use serde::Deserialize;
use std::path::Path;
use std::time::Duration;
use tokio::process::Command;

/// How long rwb waits for a Ray worker's next line before it gives up on it. Ray
/// holds a task to the evaluation timeout itself (the driver cancels one that
/// overruns it); this only bounds the wait for a task that is still queued or whose
/// worker is starting (`runtime_env` set-up, a busy cluster).
pub const RAY_PATIENCE: Duration = Duration::from_secs(600);

/// What the driver found when it joined the cluster.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct RayInfo {
    /// The address as given (`auto` for `RAY_ADDRESS` or a local cluster).
    pub address: String,
    /// Live nodes.
    pub nodes: usize,
    /// CPUs over all nodes: how many batches run at once.
    pub cpus: usize,
}

impl RayInfo {
    /// One line for the run's summary: `Ray cluster auto: 2 nodes, 2 CPUs`.
    pub fn describe(&self) -> String {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        format!(
            "Ray cluster {}: {}, {}",
            self.address,
            plural(self.nodes, "node"),
            plural(self.cpus, "CPU")
        )
    }
}

/// The driver's command: `python rwb_ray.py SOCKET COMPAT ADDRESS ROOT`.
pub(super) fn driver_command(
    python: &Path,
    runtime: &Path,
    socket: &Path,
    address: &str,
    root: &Path,
) -> Command {
    let mut command = Command::new(python);
    command
        .arg("-X")
        .arg("utf8")
        .arg(runtime.join("rwb_ray.py"))
        .arg(socket)
        .arg(runtime.join("compat"))
        .arg(address)
        .arg(super::zygote::absolute(root));
    command
}

#[cfg(test)]
mod tests {
    use super::RayInfo;

    #[test]
    fn the_summary_line_counts_nodes_and_cpus() {
        let info = RayInfo {
            address: "auto".into(),
            nodes: 1,
            cpus: 4,
        };
        assert_eq!(info.describe(), "Ray cluster auto: 1 node, 4 CPUs");
        let info = RayInfo {
            address: "10.0.0.1:6379".into(),
            nodes: 2,
            cpus: 1,
        };
        assert_eq!(info.describe(), "Ray cluster 10.0.0.1:6379: 2 nodes, 1 CPU");
    }
}
