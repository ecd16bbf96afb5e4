//! Runs on a Ray cluster (SPEC §11): the engine starts `python/rwb_ray.py` in place of
//! the local fork-server. It speaks the same protocol, so the pool, the runner and the
//! cache do not know the difference: each "worker" it hands out is a proxy thread in
//! the driver that runs the worker's batches as Ray tasks with rwb_worker.py's code.
//!
//! Owns the driver's command line and what it reports about the cluster. Must not:
//! schedule (the pool does), or decide what a result is (rwb_worker.py does).

use serde::Deserialize;
use std::path::Path;
use std::time::{Duration, SystemTime};
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, Command};

/// Names (of folders or files, at any depth) the driver does not ship to the cluster
/// (`EXCLUDES` in `python/rwb_ray.py`): a change there needs no new driver.
const NOT_SHIPPED: [&str; 6] = [
    ".rwb",
    ".git",
    "__pycache__",
    ".venv",
    "venv",
    "node_modules",
];

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

/// Tells a driver that a newer one took its place: it forks no more workers and
/// ends with the last one it handed out. A driver that already ended cannot hear it.
pub(super) async fn retire(stdin: &mut ChildStdin) {
    let _ = stdin.write_all(b"{\"op\":\"retire\"}\n").await;
    let _ = stdin.flush().await;
}

/// When a file the driver ships from the workspace at `root` last changed (the
/// newest modification time of any file or folder in it), or `None` for an
/// unreadable workspace. Symbolic links are not followed.
pub(super) fn newest_change(root: &Path) -> Option<SystemTime> {
    let mut newest = std::fs::symlink_metadata(root).ok()?.modified().ok();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            if NOT_SHIPPED.iter().any(|n| entry.file_name() == *n) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                folders.push(entry.path());
            }
            newest = newest.max(meta.modified().ok());
        }
    }
    newest
}

#[cfg(test)]
mod tests {
    use super::{newest_change, RayInfo};
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_change_counts_where_the_driver_ships_it_and_not_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for folder in ["metrics/a", ".rwb", "metrics/a/__pycache__"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let recently = SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000);
        let stamp = |rel: &str, at: SystemTime| {
            let path = root.join(rel);
            if !path.exists() {
                std::fs::write(&path, "x").unwrap();
            }
            std::fs::File::options()
                .write(path.is_file())
                .read(true)
                .open(&path)
                .unwrap()
                .set_modified(at)
                .unwrap();
        };
        for rel in [
            "metrics/a/main.py",
            "metrics/a",
            "metrics",
            ".",
            ".rwb",
            "metrics/a/__pycache__",
        ] {
            stamp(rel, long_ago);
        }
        stamp(".rwb/cache.sqlite", recently);
        stamp("metrics/a/__pycache__/main.pyc", recently);
        assert_eq!(
            newest_change(root),
            Some(long_ago),
            "the cache and bytecode are not shipped"
        );
        stamp("metrics/a/main.py", recently);
        assert_eq!(newest_change(root), Some(recently));
        assert_eq!(newest_change(&root.join("missing")), None);
    }

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
