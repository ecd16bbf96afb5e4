//! `rwb run --ray` on a real local Ray cluster the test starts (a head node and a
//! second node, one CPU each): the same workspace gives the same rows with and without
//! Ray, and fills the cache so that a local run after it is warm.
//!
//! Needs an interpreter with `ray` installed in `RWB_RAY_PYTHON` (`.ci/run` sets it);
//! without it the cluster tests are skipped with a printed reason. Ray starts slowly,
//! so one test starts one cluster and checks everything on it.

mod common;

use common::{free_port, Run, Ws, LENGTH_EVALUATOR, RWB};
use std::path::{Path, PathBuf};
use std::process::Command;

const RAISES: &str = r#"
def evaluate(messages, **kwargs):
    if "word word word" in messages[-1]["content"]:
        raise ValueError("too wordy")
    return {"score": 0.5, "reason": "fine"}
"#;

const LOOPS: &str = r#"
import time

def evaluate(messages, **kwargs):
    if messages[-1]["content"] == "word word":
        while True:
            time.sleep(0.01)
    return {"score": 1.0}
"#;

/// Swallows the timeout's interruption and goes on: only killing its process ends it.
const STUBBORN: &str = r#"
import time

def evaluate(messages, **kwargs):
    if messages[-1]["content"] == "word word word word word":
        while True:
            try:
                time.sleep(0.05)
            except BaseException:
                pass
    return {"score": 0.125}
"#;

const DIES: &str = r#"
import os

def evaluate(messages, **kwargs):
    if messages[-1]["content"] == "word word word word":
        os._exit(7)
    return {"score": 0.25, "reason": "ok"}
"#;

/// TRL: a batch-relative reward (each length over the batch's mean length).
const TRL: &str = r#"
def len_reward(completions, **kwargs):
    n = [len(c[0]["content"]) for c in completions]
    mean = sum(n) / len(n)
    return [x / mean for x in n]
"#;

const TOML: &str = r#"
[evaluators.len]
function = "rewards.py::len_reward"
batch_size = 4

[evaluators.loops]
path = "metrics/loops"
timeout = 1

[evaluators.stubborn]
path = "metrics/stubborn"
timeout = 1
"#;

fn workspace() -> Ws {
    Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("metrics/raises/main.py", RAISES),
        ("metrics/loops/main.py", LOOPS),
        ("metrics/dies/main.py", DIES),
        ("metrics/stubborn/main.py", STUBBORN),
        ("rewards.py", TRL),
        ("rwb.toml", TOML),
        ("samples.jsonl", &common::samples(14)),
    ])
}

/// Ray's token authentication keeps its token in ~/.ray, shared by every cluster of
/// the user: clusters started side by side (and a user's own) must not touch it.
const AUTH_MODE: &str = "disabled";

/// The interpreter with `ray`, or `None` (and why) when the tests cannot run.
fn ray_python() -> Option<PathBuf> {
    let Some(python) = std::env::var_os("RWB_RAY_PYTHON") else {
        eprintln!("skipped: RWB_RAY_PYTHON is not set (an interpreter with `ray` installed; .ci/run sets it)");
        return None;
    };
    Some(PathBuf::from(python))
}

/// A local Ray cluster of two nodes in a folder of its own. Dropping it kills every
/// process of the cluster (the daemons `ray start` left, and the workers they
/// started), on every exit path of the test.
struct Cluster {
    dir: tempfile::TempDir,
    address: String,
}

impl Cluster {
    fn start(python: &Path) -> Cluster {
        let ray = python.with_file_name("ray");
        let dir = tempfile::Builder::new()
            .prefix("rwb-ray-")
            .tempdir()
            .unwrap();
        let port = free_port();
        let cluster = Cluster {
            address: format!("127.0.0.1:{port}"),
            dir,
        };
        let head = [
            "start".to_string(),
            "--head".into(),
            format!("--port={port}"),
            "--node-ip-address=127.0.0.1".into(),
            "--num-cpus=1".into(),
            format!("--temp-dir={}", cluster.dir.path().display()),
            "--include-dashboard=false".into(),
            "--disable-usage-stats".into(),
        ];
        cluster.ray(&ray, &head);
        let node = [
            "start".to_string(),
            format!("--address={}", cluster.address),
            "--node-ip-address=127.0.0.1".into(),
            "--num-cpus=1".into(),
            "--disable-usage-stats".into(),
        ];
        cluster.ray(&ray, &node);
        cluster
    }

    fn ray(&self, ray: &Path, args: &[String]) {
        let out = Command::new(ray)
            .args(args)
            .env("RAY_TMPDIR", self.dir.path())
            .env("RAY_AUTH_MODE", AUTH_MODE)
            .output()
            .expect("the ray command runs");
        assert!(
            out.status.success(),
            "ray {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // `ray stop` would stop every Ray cluster of this user on the machine: kill
        // only this one, its daemons (named by its folder) and all they started.
        kill_cluster(&self.dir.path().to_string_lossy());
    }
}

fn kill_cluster(marker: &str) {
    for _ in 0..3 {
        let doomed = cluster_processes(marker);
        if doomed.is_empty() {
            break;
        }
        for pid in doomed {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Kills, when dropped, every process started with `RAY_TMPDIR` set to its folder.
struct Reap(tempfile::TempDir);

impl Drop for Reap {
    fn drop(&mut self) {
        kill_cluster(&format!("RAY_TMPDIR={}", self.0.path().display()));
    }
}

/// The processes whose command line or environment names `marker`, and all their
/// descendants.
fn cluster_processes(marker: &str) -> Vec<i32> {
    let mut parents: Vec<(i32, i32, bool)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let named = ["cmdline", "environ"].iter().any(|file| {
            let text = std::fs::read(entry.path().join(file)).unwrap_or_default();
            String::from_utf8_lossy(&text).contains(marker)
        });
        parents.push((pid, ppid, named));
    }
    let mut found: Vec<i32> = parents.iter().filter(|p| p.2).map(|p| p.0).collect();
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for (pid, ppid, _) in &parents {
            if *ppid == parent && !found.contains(pid) {
                found.push(*pid);
            }
        }
        i += 1;
    }
    found
}

/// `rwb run DIR --format jsonl ARGS` with the Ray interpreter (and `envs`).
fn run(ws: &Ws, python: &Path, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut command = Command::new(RWB);
    command
        .args(["run", ws.path().to_str().unwrap(), "--format", "jsonl"])
        .arg("--python")
        .arg(python)
        .args(args)
        .current_dir(ws.path())
        .env_remove("VIRTUAL_ENV")
        .env_remove("RAY_ADDRESS")
        .env("RAY_AUTH_MODE", AUTH_MODE);
    for (k, v) in envs {
        command.env(k, v);
    }
    Run::from(command.output().expect("rwb runs"))
}

/// Each row as printed, without its (timing) `duration_ms`.
fn rows_without_durations(run: &Run) -> Vec<String> {
    let mut rows: Vec<String> = run
        .stdout
        .lines()
        .map(|line| match line.rfind(",\"duration_ms\":") {
            Some(at) => line[..at].to_string(),
            None => line.to_string(),
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn ray_runs_give_the_rows_and_cache_of_local_runs() {
    let Some(python) = ray_python() else { return };
    let ws = workspace();
    let local = run(&ws, &python, &["--no-cache"], &[]);
    assert_eq!(local.code, 1, "{}", local.stderr);
    let expected = rows_without_durations(&local);
    assert_eq!(expected.len(), 14 * 6, "{}", local.stdout);

    let cluster = Cluster::start(&python);
    let on_ray = run(&ws, &python, &["--ray", &cluster.address], &[]);
    let described = format!("rwb: Ray cluster {}: 2 nodes, 2 CPUs", cluster.address);
    assert!(on_ray.stderr.contains(&described), "{}", on_ray.stderr);
    assert_eq!(on_ray.code, local.code, "{}", on_ray.stderr);
    assert_eq!(rows_without_durations(&on_ray), expected);
    // what failed the same way, for the same reasons
    let row = on_ray.row(2, "raises");
    assert_eq!(row["error"]["type"], "ValueError");
    let traceback = row["error"]["traceback"].as_str().unwrap();
    let main = ws.file("metrics/raises/main.py");
    let main = std::fs::canonicalize(main).unwrap();
    assert!(
        traceback.contains(&format!("File \"{}\"", main.display())),
        "{traceback}"
    );
    assert_eq!(on_ray.row(1, "loops")["error"]["type"], "Timeout");
    assert_eq!(on_ray.row(3, "dies")["error"]["type"], "WorkerCrashed");
    let stubborn = &on_ray.row(4, "stubborn")["error"];
    assert_eq!(
        stubborn["message"],
        "the evaluation did not return within 1 s and could not be interrupted; its worker was killed"
    );

    // the cache Ray filled serves a local run: nothing deterministic runs again
    let warm = run(&ws, &python, &[], &[]);
    assert_eq!(rows_without_durations(&warm), expected);
    for evaluator in ["length", "raises", "len"] {
        assert_eq!(warm.evaluated(evaluator), 0, "{evaluator}: {}", warm.stderr);
    }

    // `[engine] ray = "auto"` in rwb.toml, with RAY_ADDRESS naming the cluster
    ws.write("rwb.toml", &format!("{TOML}\n[engine]\nray = \"auto\"\n"));
    let configured = run(
        &ws,
        &python,
        &["--no-cache", "--jobs", "1"],
        &[("RAY_ADDRESS", &cluster.address)],
    );
    assert!(
        configured
            .stderr
            .contains("rwb: Ray cluster auto: 2 nodes, 2 CPUs"),
        "{}",
        configured.stderr
    );
    assert_eq!(rows_without_durations(&configured), expected);
}

#[test]
fn auto_without_a_cluster_starts_a_local_one_that_ends_with_rwb() {
    let Some(python) = ray_python() else { return };
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &common::samples(4)),
    ]);
    let local = run(&ws, &python, &["--no-cache"], &[]);
    assert_eq!(local.code, 0, "{}", local.stderr);
    let reap = Reap(
        tempfile::Builder::new()
            .prefix("rwb-ray-")
            .tempdir()
            .unwrap(),
    );
    let tmp = reap.0.path().to_str().unwrap().to_string();
    let on_ray = run(
        &ws,
        &python,
        &["--no-cache", "--ray", "auto"],
        &[("RAY_TMPDIR", &tmp)],
    );
    assert_eq!(on_ray.code, 0, "{}", on_ray.stderr);
    assert!(
        on_ray.stderr.contains("rwb: Ray cluster auto: 1 node, "),
        "{}",
        on_ray.stderr
    );
    assert_eq!(
        rows_without_durations(&on_ray),
        rows_without_durations(&local)
    );
    // the cluster the driver started ends with rwb (its idle workers notice soon)
    let marker = format!("RAY_TMPDIR={tmp}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut left = cluster_processes(&marker);
    while !left.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(500));
        left = cluster_processes(&marker);
    }
    assert_eq!(left, Vec::<i32>::new(), "Ray processes outlived rwb");
}

#[test]
fn an_interpreter_without_ray_is_a_usage_error_that_says_how_to_install_it() {
    let ws = workspace();
    let python = Path::new("python3");
    let has_ray = Command::new(python)
        .args(["-c", "import ray"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_ray {
        eprintln!("skipped: python3 has ray installed");
        return;
    }
    let out = run(&ws, python, &["--ray", "auto"], &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let line = out.stderr.trim();
    assert!(
        line.starts_with("rwb: Ray is not installed in /")
            && line.ends_with(" -m pip install ray`, or give --python an interpreter that has it"),
        "{line}"
    );
    // an address nobody answers on is named at once (Ray itself retries for minutes)
    let port = free_port().to_string();
    let address = format!("127.0.0.1:{port}");
    let python = ray_python().unwrap_or_else(|| python.to_path_buf());
    let out = run(&ws, &python, &["--ray", &address], &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    if std::env::var_os("RWB_RAY_PYTHON").is_some() {
        assert_eq!(
            out.stderr.trim(),
            format!("rwb: cannot reach the Ray cluster at {address} (Connection refused): is `ray start --head` running there?")
        );
    }
}
