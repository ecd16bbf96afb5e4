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
    Run::from(common::output_within(&mut command, common::RUN_LIMIT))
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

/// Says where it ran (in a Ray task `ray` is imported and connected; in a local worker
/// it is not) and scores with a helper module's constant, so that a save of the
/// helper shows whether the whole workspace reached the cluster again.
const WHERE: &str = r#"
import sys
import value

def evaluate(messages, **kwargs):
    ray = sys.modules.get("ray")
    place = "ray" if ray is not None and ray.is_initialized() else "local"
    return {"score": value.SCORE, "reason": "ran on " + place}
"#;

fn where_workspace() -> Ws {
    Ws::new(&[
        ("metrics/cluster/main.py", WHERE),
        ("metrics/cluster/value.py", "SCORE = 0.375\n"),
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &common::samples(3)),
    ])
}

/// A running `rwb serve DIR --port 0 --python PYTHON ARGS` (or `rwb tunnel`), killed
/// on drop, with what it said on stdout and stderr.
struct Serving {
    child: std::process::Child,
    url: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Serving {
    fn start(ws: &Ws, python: &Path, args: &[&str]) -> Serving {
        Serving::spawn("serve", ws, python, args)
    }

    /// `rwb COMMAND DIR --port 0 --python PYTHON ARGS`, once it says where it serves.
    fn spawn(command: &str, ws: &Ws, python: &Path, args: &[&str]) -> Serving {
        use std::io::{BufRead, Read};
        let mut child = Command::new(RWB)
            .args([command, ws.path().to_str().unwrap(), "--port", "0"])
            .arg("--python")
            .arg(python)
            .args(args)
            .env_remove("VIRTUAL_ENV")
            .env_remove("RAY_ADDRESS")
            .env_remove("RK_ENDPOINT_API_KEY")
            .env("RAY_AUTH_MODE", AUTH_MODE)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("rwb {command} starts: {e}"));
        let log = std::sync::Arc::<std::sync::Mutex<Vec<String>>>::default();
        let out: Box<dyn Read + Send> = Box::new(child.stdout.take().unwrap());
        let err: Box<dyn Read + Send> = Box::new(child.stderr.take().unwrap());
        for stream in [out, err] {
            let sink = log.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stream)
                    .lines()
                    .map_while(Result::ok)
                {
                    sink.lock().unwrap().push(line);
                }
            });
        }
        let mut serving = Serving {
            child,
            url: String::new(),
            log,
        };
        let said = serving.wait_log("serving on ");
        serving.url = said
            .split("serving on ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        serving
    }

    /// The first line it said that contains `what` (within two minutes: it may have
    /// a Ray cluster to join first).
    fn wait_log(&mut self, what: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let said = self
                .log
                .lock()
                .unwrap()
                .iter()
                .find(|l| l.contains(what))
                .cloned();
            if let Some(line) = said {
                return line;
            }
            let gone = self.child.try_wait().ok().flatten();
            if gone.is_some() || std::time::Instant::now() > deadline {
                std::thread::sleep(std::time::Duration::from_millis(200)); // the last lines
                let said = self.log.lock().unwrap().join("\n");
                panic!("rwb never said {what:?} (exit: {gone:?}):\n{said}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// `POST /evaluate/NAME` with a sample whose answer is `answer`: (status, body),
    /// or `None` while nothing listens (the server restarting on saved code).
    fn evaluate(&self, name: &str, answer: &str) -> Option<(u16, String)> {
        use std::io::{Read, Write};
        let body = serde_json::json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": answer},
        ]})
        .to_string();
        let mut stream = std::net::TcpStream::connect(common::authority(&self.url)).ok()?;
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(120)))
            .unwrap();
        let request = format!(
            "POST /evaluate/{name} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        let status = answer.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, answer.split_once("\r\n\r\n")?.1.to_string()))
    }

    /// Asks until the answer satisfies `ok` (within two minutes: a Ray driver
    /// starts and ships the workspace), and returns it.
    fn evaluate_until(&self, name: &str, answer: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let got = self.evaluate(name, answer);
            if let Some((200, body)) = &got {
                if ok(body) {
                    return body.clone();
                }
            }
            if std::time::Instant::now() > deadline {
                let said = self.log.lock().unwrap().join("\n");
                panic!("no such answer from /evaluate/{name}: last {got:?}; rwb said:\n{said}");
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (up to two minutes: Ray drivers and workers start slowly on a busy machine)
/// until the workbench's screen satisfies `ok`; fails with the last screen.
fn wait_screen(tmux: &common::Tmux, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let screen = tmux.screen();
        if ok(&screen) {
            return screen;
        }
        if std::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}; the screen was:\n{screen}");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The Ray drivers (`rwb_ray.py`) that process `parent` started and that still run.
fn ray_drivers_of(parent: u32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        // fields[0] is the state (Z: ended, not yet reaped), fields[1] the parent
        if fields.get(1) == Some(&parent.to_string().as_str())
            && fields.first() != Some(&"Z")
            && String::from_utf8_lossy(&cmdline).contains("rwb_ray.py")
        {
            found.push(pid);
        }
    }
    found
}

#[test]
fn serve_and_the_workbench_score_on_ray_and_take_saved_code_there() {
    let Some(python) = ray_python() else { return };
    let ws = where_workspace();
    let answer = "forty-two";
    let local = Serving::start(&ws, &python, &[]);
    let local_length = local.evaluate_until("length", answer, |_| true);
    let local_where = local.evaluate_until("cluster", answer, |_| true);
    assert_eq!(
        local_where,
        r#"{"score":0.375,"is_score_valid":true,"reason":"ran on local","metrics":{},"step_outputs":null,"error":null}"#
    );
    drop(local);

    // `[engine] ray` puts `rwb serve` on the cluster (the workbench below takes --ray)
    let cluster = Cluster::start(&python);
    let toml = format!("[engine]\nray = \"{}\"\n", cluster.address);
    ws.write("rwb.toml", &toml);
    let served = Serving::start(&ws, &python, &[]);
    let described = format!("rwb: Ray cluster {}: 2 nodes, 2 CPUs", cluster.address);
    assert!(
        served.log.lock().unwrap().contains(&described),
        "{:?}",
        served.log
    );
    // the same answers as a local server, computed in Ray tasks
    assert_eq!(
        served.evaluate_until("length", answer, |_| true),
        local_length
    );
    assert_eq!(
        served.evaluate_until("cluster", answer, |_| true),
        local_where.replace("ran on local", "ran on ray")
    );
    // a saved helper module reaches the cluster: the server restarts on it (`length`
    // is saved too, with a comment, so that no evaluator keeps a worker of the old
    // driver)
    ws.write("metrics/cluster/value.py", "SCORE = 0.625\n");
    ws.write(
        "metrics/length/main.py",
        &format!("{LENGTH_EVALUATOR}# saved\n"),
    );
    let after = served.evaluate_until("cluster", answer, |b| !b.contains("0.375"));
    assert_eq!(
        after,
        r#"{"score":0.625,"is_score_valid":true,"reason":"ran on ray","metrics":{},"step_outputs":null,"error":null}"#
    );
    // the driver that shipped the old code ends once the old server's workers are gone
    // (those it left idle go with the new server's first requests)
    let said = format!("rwb: serving the saved code on {}", served.url);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !served.log.lock().unwrap().contains(&said) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(served.evaluate_until("cluster", answer, |_| true), after);
    assert_eq!(
        served.evaluate_until("length", answer, |_| true),
        local_length
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut drivers = ray_drivers_of(served.child.id());
    while drivers.len() > 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(250));
        drivers = ray_drivers_of(served.child.id());
    }
    assert_eq!(drivers.len(), 1, "one Ray driver is left: {drivers:?}");
    drop(served);

    // `rwb tunnel` serves from the cluster too (the stand-in provider's public URL is
    // the local server's): what reaches it through the tunnel is scored on Ray
    let tunnel_toml = "[tunnel]\ncommand = \"echo 'ready at http://127.0.0.1:{port}'; exec sleep 600\"\nurl_regex = 'http://127\\.0\\.0\\.1:\\d+'\n";
    ws.write("rwb.toml", tunnel_toml);
    let mut tunnel = Serving::spawn(
        "tunnel",
        &ws,
        &python,
        &["--no-auth", "--ray", &cluster.address],
    );
    tunnel.wait_log(&described);
    tunnel.wait_log("health through the tunnel: ok");
    let public = tunnel.wait_log("public URL:");
    assert!(public.contains(&tunnel.url), "{public}");
    assert_eq!(tunnel.evaluate_until("cluster", answer, |_| true), after);
    drop(tunnel);

    // the workbench, on the same cluster
    let command = format!(
        "RAY_AUTH_MODE={AUTH_MODE} {RWB} --python {} --ray {}",
        python.display(),
        cluster.address
    );
    let tmux = common::Tmux::start(&ws, 150, 40, &command);
    let screen = wait_screen(&tmux, "the scores computed on Ray", |s| {
        s.contains("0.625") && s.contains("ran on ray") && s.contains("ray (2 nodes)")
    });
    assert!(!screen.contains("ran on local"), "{screen}");
    ws.write("metrics/cluster/value.py", "SCORE = 0.875\n");
    let screen = wait_screen(&tmux, "the saved code's scores, from Ray", |s| {
        s.contains("0.875") && s.contains("ran on ray") && !s.contains("0.625")
    });
    assert!(screen.contains("ray (2 nodes)"), "{screen}");
    tmux.keys(&["q"]);
}

#[test]
fn the_workbench_refuses_a_cluster_it_cannot_use_and_says_why() {
    // an address nobody answers on; `python3` when no interpreter with `ray` is known
    let python = ray_python().unwrap_or_else(|| PathBuf::from("python3"));
    let ws = where_workspace();
    let address = format!("127.0.0.1:{}", free_port());
    let command = format!(
        "sh -c '{RWB} --python {} --ray {address}; echo \"exit code $?\"; sleep 60'",
        python.display()
    );
    let tmux = common::Tmux::start(&ws, 200, 20, &command);
    let screen = wait_screen(&tmux, "the refusal", |s| s.contains("exit code"));
    assert!(screen.contains("exit code 2"), "{screen}");
    let has_ray = Command::new(&python)
        .args(["-c", "import ray"])
        .output()
        .is_ok_and(|o| o.status.success());
    let said = if has_ray {
        format!("rwb: cannot reach the Ray cluster at {address} (Connection refused): is `ray start --head` running there?")
    } else {
        "rwb: Ray is not installed in ".to_string()
    };
    assert!(screen.contains(&said), "{screen}");
    assert!(!screen.contains("0.375"), "no run started:\n{screen}");
}
