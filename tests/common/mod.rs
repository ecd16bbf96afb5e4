//! Helpers for tests that run the real `rwb` binary on workspaces they write.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const RWB: &str = env!("CARGO_BIN_EXE_rwb");

/// A temporary workspace folder.
pub struct Ws {
    pub dir: tempfile::TempDir,
}

impl Ws {
    pub fn new(files: &[(&str, &str)]) -> Ws {
        let ws = Ws {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        for (rel, text) in files {
            ws.write(rel, text);
        }
        ws
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn file(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.file(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// `rwb run DIR --format jsonl ARGS...` in the workspace's parent folder.
    pub fn run(&self, args: &[&str]) -> Run {
        let mut all = vec!["run", self.path().to_str().unwrap(), "--format", "jsonl"];
        all.extend_from_slice(args);
        rwb(&all, self.path())
    }
}

/// Runs rwb with `args`, current directory `cwd`.
pub fn rwb(args: &[&str], cwd: &Path) -> Run {
    Run::from(output_within(&mut rwb_command(args, cwd), RUN_LIMIT))
}

/// The command [`rwb`] runs: rwb with `args` in `cwd`, outside any virtualenv.
pub fn rwb_command(args: &[&str], cwd: &Path) -> Command {
    let mut command = Command::new(RWB);
    command
        .args(args)
        .current_dir(cwd)
        .env_remove("VIRTUAL_ENV");
    command
}

/// Longer than any run of the suite takes on a loaded 2-core machine.
pub const RUN_LIMIT: Duration = Duration::from_secs(240);

/// `command.output()`, but a run still going after `limit` fails the test with the
/// stacks of its threads (when `gdb` is installed) and what it printed so far, and is
/// killed: a hang is reported where it happened instead of stalling the suite.
pub fn output_within(command: &mut Command, limit: Duration) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rwb runs");
    wait_within(child, &format!("{command:?}"), limit)
}

/// Reads the start banner `rwb serve` (spawned with its stderr piped) writes: its
/// URL and the banner's lines up to the `try: curl` line; the rest of its stderr is
/// drained on a thread of its own.
pub fn serve_banner(child: &mut Child) -> (String, Vec<String>) {
    use std::io::{BufRead, BufReader};
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut banner = Vec::new();
    let url = loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 || Instant::now() > deadline {
            panic!("rwb serve did not start: {banner:?} {line}");
        }
        banner.push(line.clone());
        if let Some(rest) = line.split("serving on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    // the route lines follow at once
    for _ in 0..40 {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let done = line.contains("try: curl");
        banner.push(line);
        if done {
            break;
        }
    }
    std::thread::spawn(move || for _ in err.lines().map_while(Result::ok) {});
    (url, banner)
}

/// Runs `command` (a Python script) with `input` as JSON on its stdin, within
/// `limit`; asserts it succeeded and gives its stdout.
pub fn with_json_input(mut command: Command, input: &Value, what: &str, limit: Duration) -> String {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = wait_within(child, what, limit);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// [`output_within`] of a child already started (its stdout perhaps not a pipe of
/// ours: a file, or a pipe the test reads and closes itself); what it wrote to a
/// pipe left to us is collected.
pub fn wait_within(mut child: Child, command: &str, limit: Duration) -> Output {
    let stdout = child.stdout.take().map(collect);
    let stderr = child.stderr.take().map(collect);
    let gather = |pipe: Option<std::thread::JoinHandle<Vec<u8>>>| {
        pipe.and_then(|p| p.join().ok()).unwrap_or_default()
    };
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for rwb") {
            break status;
        }
        if Instant::now() > deadline {
            let stacks = thread_stacks(child.id());
            let python = python_stacks(child.id());
            let _ = child.kill();
            let _ = child.wait();
            let out = String::from_utf8_lossy(&gather(stdout)).into_owned();
            let err = String::from_utf8_lossy(&gather(stderr)).into_owned();
            panic!(
                "{command} still ran after {limit:?}: killed.\nstdout so far:\n{out}\nstderr so far:\n{err}\nits threads:\n{stacks}\nits Python processes:\n{python}"
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: gather(stdout),
        stderr: gather(stderr),
    }
}

/// Reads a pipe to its end on a thread of its own.
fn collect(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// Every thread's stack of process `pid`, as gdb prints them (or why there are none).
pub fn thread_stacks(pid: u32) -> String {
    let gdb = Command::new("gdb")
        .args([
            "-p",
            &pid.to_string(),
            "-batch",
            "-ex",
            "thread apply all bt",
        ])
        .stdin(Stdio::null())
        .output();
    match gdb {
        Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        Err(e) => format!("(no stacks: gdb: {e})"),
    }
}

/// The Python stacks of every process under `pid` (the fork-server and its workers):
/// `py-spy dump` where py-spy is on PATH, else what each worker's faulthandler writes
/// to `stacks-PID.txt` beside the workers' socket when sent SIGUSR1.
pub fn python_stacks(pid: u32) -> String {
    let mut out = String::new();
    for child in descendants(pid) {
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let Some(script) = args.iter().find(|a| a.ends_with(".py")) else {
            continue;
        };
        out.push_str(&format!("--- {child}: {}\n", args.join(" ")));
        // RWB_TEST_NO_PY_SPY: take the faulthandler way even where py-spy is installed
        let spy = match std::env::var_os("RWB_TEST_NO_PY_SPY") {
            Some(_) => Err(std::io::Error::other("not used")),
            None => Command::new("py-spy")
                .args(["dump", "--pid", &child.to_string()])
                .stdin(Stdio::null())
                .output(),
        };
        if let Ok(o) = &spy {
            if o.status.success() {
                out.push_str(&String::from_utf8_lossy(&o.stdout));
                continue;
            }
        }
        // beside the worker socket, in the run's private folder (the script is in the
        // shared code folder)
        let folder = args.iter().find(|a| a.ends_with(".sock")).unwrap_or(script);
        let file = Path::new(folder).with_file_name(format!("stacks-{child}.txt"));
        let _ = Command::new("kill")
            .args(["-USR1", &child.to_string()])
            .status();
        std::thread::sleep(Duration::from_millis(300));
        match std::fs::read_to_string(&file) {
            Ok(text) if !text.is_empty() => out.push_str(&text),
            _ => out.push_str("(no stacks: py-spy is not on PATH and the process wrote none)\n"),
        }
    }
    out
}

/// Every process below `pid`, from /proc.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        if let Some(parent) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parent_of.push((child, parent));
        }
    }
    let mut found = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for &(child, parent) in &parent_of {
            if parent == p {
                found.push(child);
                todo.push(child);
            }
        }
    }
    found
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    /// The JSON rows of a `--format jsonl` run; fails the test on any other line.
    pub fn rows(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| {
                    panic!(
                        "stdout line is not JSON ({e}): {l}\nstderr: {}",
                        self.stderr
                    )
                })
            })
            .collect()
    }

    /// The row of one (sample, evaluator).
    pub fn row(&self, sample: u64, evaluator: &str) -> Value {
        self.rows()
            .into_iter()
            .find(|r| r["sample"] == sample && r["evaluator"] == evaluator)
            .unwrap_or_else(|| {
                panic!(
                    "no row for sample {sample} / {evaluator}:\n{}\n{}",
                    self.stdout, self.stderr
                )
            })
    }

    /// The "evaluated" count of an evaluator from the summary table on stderr.
    pub fn evaluated(&self, evaluator: &str) -> usize {
        let line = self
            .stderr
            .lines()
            .find(|l| l.split_whitespace().next() == Some(evaluator))
            .unwrap_or_else(|| panic!("no summary line for {evaluator} in:\n{}", self.stderr));
        let cols: Vec<&str> = line.split_whitespace().collect();
        cols[cols.len() - 2].parse().unwrap()
    }
}

/// An evaluator that scores by answer length, reward-kit style.
pub const LENGTH_EVALUATOR: &str = r#"
from reward_kit import reward_function, EvaluateResult, MetricResult

@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    n = len(messages[-1]["content"])
    s = min(n / 100.0, 1.0)
    return EvaluateResult(score=s, reason=f"{n} chars", metrics={"length": MetricResult(score=s, reason="len")})
"#;

/// `n` simple samples, one per line.
pub fn samples(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"messages\": [{{\"role\": \"user\", \"content\": \"question {i}\"}}, {{\"role\": \"assistant\", \"content\": \"{}\"}}]}}\n",
                "word ".repeat(i % 30 + 1).trim_end()
            )
        })
        .collect()
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A tmux server of its own (own socket) running `command` in the workspace, killed on
/// drop. The command runs with a known terminal type, colours on, no API key, and an
/// editor that returns at once.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn start(ws: &Ws, width: u16, height: u16, command: &str) -> Tmux {
        assert!(
            Command::new("tmux").arg("-V").output().is_ok(),
            "tmux is not installed (.ci/run installs it)"
        );
        let socket = format!(
            "rwb-test-{}-{}",
            std::process::id(),
            ws.path().file_name().unwrap().to_string_lossy()
        );
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "t",
            ])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .args(["-c", ws.path().to_str().unwrap()])
            .arg(format!(
                "env -u NO_COLOR -u RK_ENDPOINT_API_KEY TERM=xterm-256color EDITOR=true {command}"
            ))
            .status()
            .expect("tmux starts")
            .success();
        assert!(ok, "tmux new-session failed");
        Tmux { socket }
    }

    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Sends keys as tmux names them (`q`, `Enter`, `Escape`, `BSpace`).
    pub fn keys(&self, keys: &[&str]) {
        Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t"])
            .args(keys)
            .status()
            .unwrap();
    }

    /// One key, then a pause, so that Escape followed by a letter is not read as Alt.
    pub fn key(&self, key: &str) {
        self.keys(&[key]);
        std::thread::sleep(std::time::Duration::from_millis(150));
    }

    /// Waits until the screen satisfies `ok`; fails with the last screen.
    pub fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            if std::time::Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen was:\n{screen}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// `host:port` of a server root URL (`http://127.0.0.1:8001/`).
pub fn authority(url: &str) -> &str {
    url.strip_prefix("http://")
        .unwrap_or(url)
        .trim_end_matches('/')
}

/// Sends `request` as it is over a new connection to the server at `url` and reads
/// until the server closes it: (status, body). For requests a client library would
/// not send as given (a foreign `Host`, a half body).
pub fn exchange(url: &str, request: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream =
        std::net::TcpStream::connect(authority(url)).expect("the local server accepts");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A stand-in server on 127.0.0.1 (Fireworks, an endpoint): `app` served on a free
/// port by a runtime of its own, which lives as long as this does.
pub struct Loopback {
    pub addr: std::net::SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

impl Loopback {
    pub fn serve(app: axum::Router) -> Loopback {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let addr = runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
            addr
        });
        Loopback {
            addr,
            _runtime: runtime,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Runs `command` to its end and returns its output, failing the test with its stderr
/// when it did not succeed.
pub fn succeeded(command: &mut Command) -> std::process::Output {
    let out = command.output().expect("the command starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
