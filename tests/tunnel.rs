//! SPEC §6: `rwb tunnel` with stand-in `ssh`, `ngrok` and `cloudflared` executables on
//! PATH (no network is reachable here). Each test runs the real binary with a real
//! server, reads its output until the URLs appear, then sends it SIGINT, and checks that
//! the stand-in provider process is gone afterwards.

mod common;
use common::*;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The real interpreter behind `python3` (not a shim), for `--python` and the
/// stand-ins' `#!` lines, so tests can run with a PATH that has nothing else.
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    })
}

/// `ssh` as serveo.net answers it. Modes (STANDIN_MODE): ok, exit (as when serveo is
/// unreachable), silent (connected, but no forwarding line).
const SSH: &str = r#"
import os, sys, time
args = sys.argv[1:]
if os.environ.get("STANDIN_PIDFILE"):
    with open(os.environ["STANDIN_PIDFILE"], "w") as f:
        f.write(str(os.getpid()))
expected = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-R"]
if len(args) != 7 or args[:5] != expected or args[6] != "serveo.net" or not args[5].startswith("80:localhost:"):
    print("ssh stand-in: unexpected arguments %r" % (args,), file=sys.stderr, flush=True)
    sys.exit(64)
port = args[5].split(":")[2]
mode = os.environ.get("STANDIN_MODE", "ok")
print("Warning: Permanently added 'serveo.net,138.68.79.95' (RSA) to the list of known hosts.", file=sys.stderr, flush=True)
if mode == "exit":
    print("ssh: connect to host serveo.net port 22: Connection refused", file=sys.stderr, flush=True)
    sys.exit(255)
if mode == "ok":
    # the real one says https://NAME.serveo.net; this one reaches the local server
    print("\x1b[32mForwarding HTTP traffic from http://127.0.0.1:%s\x1b[0m" % port, flush=True)
    print("Press g to start a GUI session and ctrl-c to quit.", flush=True)
while True:
    time.sleep(1)
"#;

/// `cloudflared tunnel --url ...`: its log, on stderr, with a real-looking (and, here,
/// unreachable) quick-tunnel URL.
const CLOUDFLARED: &str = r#"
import os, sys, time
args = sys.argv[1:]
if os.environ.get("STANDIN_PIDFILE"):
    with open(os.environ["STANDIN_PIDFILE"], "w") as f:
        f.write(str(os.getpid()))
if len(args) != 3 or args[:2] != ["tunnel", "--url"] or not args[2].startswith("http://localhost:"):
    print("cloudflared stand-in: unexpected arguments %r" % (args,), file=sys.stderr, flush=True)
    sys.exit(64)
log = [
    "INF Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out.",
    "INF Requesting new quick Tunnel on trycloudflare.com...",
    "INF +--------------------------------------------------------------------------------------------+",
    "INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |",
    "INF |  https://seasonal-deck-organisms-sf.trycloudflare.com                                      |",
    "INF +--------------------------------------------------------------------------------------------+",
    "INF Version 2024.4.1",
    "INF Registered tunnel connection connIndex=0 connection=6f8a1b2c event=0 ip=198.41.200.13 location=ams01 protocol=quic",
]
for line in log:
    print("2024-05-02T10:15:04Z " + line, file=sys.stderr, flush=True)
while True:
    time.sleep(1)
"#;

/// `ngrok http PORT --log=stdout`: logfmt on stdout, and its agent API on the port in
/// STANDIN_NGROK_API_PORT, listing no tunnel for the first two requests (as while it
/// connects).
const NGROK: &str = r#"
import json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
args = sys.argv[1:]
if os.environ.get("STANDIN_PIDFILE"):
    with open(os.environ["STANDIN_PIDFILE"], "w") as f:
        f.write(str(os.getpid()))
if len(args) != 3 or args[0] != "http" or not args[1].isdigit() or args[2] != "--log=stdout":
    print("ngrok stand-in: unexpected arguments %r" % (args,), file=sys.stderr, flush=True)
    sys.exit(64)
port = args[1]
calls = [0]

class Api(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/api/tunnels":
            self.send_response(404)
            self.end_headers()
            return
        calls[0] += 1
        tunnels = []
        if calls[0] > 2:
            tunnels = [{
                "name": "command_line", "ID": "4f1e", "uri": "/api/tunnels/command_line",
                "public_url": "http://127.0.0.1:%s" % port, "proto": "http",
                "config": {"addr": "http://localhost:%s" % port, "inspect": True},
            }]
        body = json.dumps({"tunnels": tunnels, "uri": "/api/tunnels"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass

api = ThreadingHTTPServer(("127.0.0.1", int(os.environ["STANDIN_NGROK_API_PORT"])), Api)
threading.Thread(target=api.serve_forever, daemon=True).start()
print('t=2024-05-02T10:15:03+0000 lvl=info msg="no configuration paths supplied"', flush=True)
print('t=2024-05-02T10:15:03+0000 lvl=info msg="starting web service" obj=web addr=127.0.0.1:4040 allow_hosts=[]', flush=True)
print('t=2024-05-02T10:15:04+0000 lvl=info msg="tunnel session started" obj=tunnels.session', flush=True)
print('t=2024-05-02T10:15:04+0000 lvl=info msg="started tunnel" obj=tunnels name=command_line addr=http://localhost:%s url=http://127.0.0.1:%s' % (port, port), flush=True)
while True:
    time.sleep(1)
"#;

/// A folder holding the stand-ins `ssh`, `ngrok` and `cloudflared`.
fn stand_ins() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [("ssh", SSH), ("ngrok", NGROK), ("cloudflared", CLOUDFLARED)] {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!{}\n{body}", python())).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// PATH with `bin` first.
fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A workspace with one evaluator, two samples, and `tunnel` as rwb.toml's [tunnel].
fn workspace(tunnel: &str) -> Ws {
    Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(2)),
        ("rwb.toml", &format!("[tunnel]\n{tunnel}\n")),
    ])
}

/// A running `rwb tunnel`, its stdout and stderr lines merged as they come.
struct Rwb {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

/// `rwb tunnel WS --port 0 --python PYTHON ARGS...` with `path` as PATH.
fn start(ws: &Ws, path: &str, args: &[&str], env: &[(&str, &str)]) -> Rwb {
    let mut child = Command::new(RWB)
        .arg("tunnel")
        .arg(ws.path())
        .args(["--port", "0", "--python", python()])
        .args(args)
        .current_dir(ws.path())
        .env("PATH", path)
        .env_remove("VIRTUAL_ENV")
        .env_remove("RK_ENDPOINT_API_KEY")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rwb starts");
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    for stream in [Box::new(out) as Box<dyn Read + Send>, Box::new(err)] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    Rwb {
        child,
        lines: rx,
        seen: Vec::new(),
    }
}

impl Rwb {
    /// The first line that contains `needle` (stdout and stderr interleave in any
    /// order, so lines already seen count); fails the test after `secs`.
    fn wait_for(&mut self, needle: &str, secs: u64) -> String {
        if let Some(line) = self.seen.iter().find(|l| l.contains(needle)) {
            return line.clone();
        }
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no line with {needle:?} within {secs} s; rwb said:\n{}",
                        self.seen.join("\n")
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "rwb ended before saying {needle:?}; it said:\n{}",
                        self.seen.join("\n")
                    )
                }
            }
        }
    }

    /// The local server's root, from `serving on URL`.
    fn local_url(&mut self) -> String {
        let line = self.wait_for("serving on http://", 60);
        line.split("serving on ").nth(1).unwrap().trim().to_string()
    }

    /// The text after `label` on the line that has it.
    fn value_after(&mut self, label: &str) -> String {
        let line = self.wait_for(label, 30);
        line.split(label).nth(1).unwrap().trim().to_string()
    }

    /// Sends SIGINT (as Ctrl-C does) and waits for rwb to end; its exit code.
    fn interrupt(&mut self) -> i32 {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGINT);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // collect the rest of what it said, for messages
                while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    self.seen.push(line);
                }
                return status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "rwb did not end within 20 s of SIGINT; it said:\n{}",
                    self.seen.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn said(&self) -> String {
        self.seen.join("\n")
    }
}

impl Drop for Rwb {
    /// After a failed assertion: ask rwb to stop (so it stops its provider), and kill
    /// it only if it does not.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(self.child.id() as i32, libc::SIGINT);
            }
            for _ in 0..200 {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `GET ROOT/health` over a plain socket: (status code, body).
fn get_health(root: &str) -> (u16, String) {
    let host = root.strip_prefix("http://").unwrap().trim_end_matches('/');
    exchange(
        root,
        &format!("GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    )
}

/// `POST ROOT/evaluate` over a plain socket with this `Host` and extra header lines:
/// (status code, body).
fn post_evaluate(root: &str, host: &str, headers: &str) -> (u16, String) {
    let body = r#"{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "twelve chars"}]}"#;
    exchange(
        root,
        &format!(
            "POST /evaluate HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn assert_serving_locally(root: &str) {
    let (status, body) = get_health(root);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"ok\""), "{body}");
}

fn read_pid(pidfile: &Path) -> i32 {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(pidfile) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the stand-in wrote no pid to {}", pidfile.display());
}

/// True while `pid` is a live (not zombie) process.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn assert_gone(pidfile: &Path) {
    let pid = read_pid(pidfile);
    for _ in 0..100 {
        if !alive(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the provider process {pid} is still running");
}

fn pidfile(ws: &Ws) -> PathBuf {
    ws.path().join("provider.pid")
}

#[test]
fn serveo_shows_the_public_and_evaluate_urls_and_health_passes_through_the_tunnel() {
    let bin = stand_ins();
    let ws = workspace("");
    let pid = pidfile(&ws);
    let mut rwb = start(
        &ws,
        &path_with(bin.path()),
        &[],
        &[("STANDIN_PIDFILE", pid.to_str().unwrap())],
    );
    let local = rwb.local_url();
    rwb.wait_for(
        "starting the serveo tunnel: ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -R 80:localhost:",
        30,
    );
    let public = rwb.value_after("public URL:");
    assert_eq!(public, local, "the stand-in forwards to the local server");
    assert_eq!(
        rwb.value_after("evaluate URL:"),
        format!("{public}/evaluate")
    );
    let health = rwb.wait_for("health through the tunnel: ok", 30);
    assert!(health.contains("\"status\""), "{health}");
    // no RK_ENDPOINT_API_KEY: a key is generated, required, and shown once
    let key_line = rwb.value_after("api key:");
    let key = key_line.split_whitespace().next().unwrap().to_string();
    assert_eq!(key.len(), 43, "{key_line}");
    assert!(
        key_line.ends_with("(generated for this session, shown once: send it as X-Api-Key or Authorization: Bearer; rwb deploy --remote-url URL --remote-key KEY)"),
        "{key_line}"
    );
    let host = local.strip_prefix("http://").unwrap();
    assert_eq!(post_evaluate(&public, host, "").0, 401);
    assert_eq!(
        post_evaluate(&public, host, "X-Api-Key: not-the-key\r\n").0,
        403
    );
    let (status, body) = post_evaluate(&public, host, &format!("X-Api-Key: {key}\r\n"));
    assert_eq!(
        (status, body.contains("\"score\":0.12")),
        (200, true),
        "{body}"
    );
    let (status, _) = post_evaluate(&public, host, &format!("Authorization: bearer {key}\r\n"));
    assert_eq!(status, 200);
    // health through the tunnel, without the key, says only "ok"
    assert_eq!(
        get_health(&public),
        (200, "{\"status\":\"ok\"}".to_string())
    );
    assert_eq!(rwb.interrupt(), 0, "{}", rwb.said());
    let shown = rwb.seen.iter().filter(|l| l.contains(&key)).count();
    assert_eq!(shown, 1, "the key is shown once:\n{}", rwb.said());
    assert_gone(&pid);
}

#[test]
fn no_auth_opens_the_tunnel_without_a_key_and_warns() {
    let bin = stand_ins();
    let ws = workspace("");
    let mut rwb = start(&ws, &path_with(bin.path()), &["--no-auth"], &[]);
    let warning = rwb.wait_for("without a key", 30);
    assert_eq!(
        warning,
        "rwb: warning: the tunnel is open without a key: anyone who finds its URL can run your evaluators on this machine (set RK_ENDPOINT_API_KEY, or drop --no-auth / [tunnel] no_auth, to require a key)"
    );
    let local = rwb.local_url();
    let public = rwb.value_after("public URL:");
    assert_eq!(
        rwb.value_after("api key:"),
        "none (--no-auth: open to anyone)"
    );
    let host = local.strip_prefix("http://").unwrap();
    let (status, body) = post_evaluate(&public, host, "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(rwb.interrupt(), 0, "{}", rwb.said());
}

#[test]
fn rk_endpoint_api_key_is_the_tunnels_key_when_set() {
    let bin = stand_ins();
    let ws = workspace("");
    let mut rwb = start(
        &ws,
        &path_with(bin.path()),
        &[],
        &[("RK_ENDPOINT_API_KEY", "team-key-1")],
    );
    let local = rwb.local_url();
    let public = rwb.value_after("public URL:");
    assert_eq!(
        rwb.value_after("api key:"),
        "the value of RK_ENDPOINT_API_KEY"
    );
    let host = local.strip_prefix("http://").unwrap();
    assert_eq!(post_evaluate(&public, host, "").0, 401);
    let (status, _) = post_evaluate(&public, host, "X-Api-Key: team-key-1\r\n");
    assert_eq!(status, 200);
    assert_eq!(rwb.interrupt(), 0, "{}", rwb.said());
    assert!(!rwb.said().contains("team-key-1"), "{}", rwb.said());
}

#[test]
fn the_tunnels_public_host_is_answered_and_foreign_hosts_are_not() {
    let ws = workspace("");
    ws.write(
        "rwb.toml",
        "[tunnel]\ncommand = \"echo 'your url is: https://brave-lions-sing.loca.lt'; exec sleep 600\"\nurl_regex = 'https://\\S+'\ntimeout = 10\n",
    );
    let mut rwb = start(&ws, &std::env::var("PATH").unwrap(), &["--no-auth"], &[]);
    let local = rwb.local_url();
    assert_eq!(
        rwb.value_after("public URL:"),
        "https://brave-lions-sing.loca.lt"
    );
    // the provider forwards requests with the public host name, as serveo and
    // cloudflared do
    let (status, body) = post_evaluate(&local, "brave-lions-sing.loca.lt", "");
    assert_eq!(status, 200, "{body}");
    let (status, body) = post_evaluate(&local, "evil.example", "");
    assert_eq!(status, 421, "{body}");
    assert_eq!(rwb.interrupt(), 0, "{}", rwb.said());
}

#[test]
fn ngrok_url_comes_from_its_api_at_the_configured_address() {
    let bin = stand_ins();
    let api = free_port();
    let ws = workspace(&format!(
        "provider = \"ngrok\"\nngrok_api = \"http://127.0.0.1:{api}\""
    ));
    let pid = pidfile(&ws);
    let mut rwb = start(
        &ws,
        &path_with(bin.path()),
        &[],
        &[
            ("STANDIN_PIDFILE", pid.to_str().unwrap()),
            ("STANDIN_NGROK_API_PORT", &api.to_string()),
        ],
    );
    let local = rwb.local_url();
    rwb.wait_for("starting the ngrok tunnel: ngrok http ", 30);
    assert_eq!(rwb.value_after("public URL:"), local);
    assert_eq!(
        rwb.value_after("evaluate URL:"),
        format!("{local}/evaluate")
    );
    rwb.wait_for("health through the tunnel: ok", 30);
    assert_eq!(rwb.interrupt(), 0, "{}", rwb.said());
    assert_gone(&pid);
}

#[test]
fn cloudflared_url_is_read_from_its_log_and_an_unreachable_url_fails_health_clearly() {
    let bin = stand_ins();
    let ws = workspace("");
    let pid = pidfile(&ws);
    let mut rwb = start(
        &ws,
        &path_with(bin.path()),
        &["--provider", "cloudflared"],
        &[("STANDIN_PIDFILE", pid.to_str().unwrap())],
    );
    let local = rwb.local_url();
    let public = rwb.value_after("public URL:");
    assert_eq!(
        public,
        "https://seasonal-deck-organisms-sf.trycloudflare.com"
    );
    assert_eq!(
        rwb.value_after("evaluate URL:"),
        "https://seasonal-deck-organisms-sf.trycloudflare.com/evaluate"
    );
    let failed = rwb.wait_for("health check through the tunnel failed", 40);
    assert!(
        failed.contains("GET https://seasonal-deck-organisms-sf.trycloudflare.com/health"),
        "{failed}"
    );
    assert!(failed.contains("still serving locally"), "{failed}");
    // the server and the tunnel process are still there
    assert_serving_locally(&local);
    assert!(alive(read_pid(&pid)));
    assert_eq!(rwb.interrupt(), 0, "{}", rwb.said());
    assert_gone(&pid);
}

#[test]
fn a_command_provider_gets_the_port_and_its_url_is_the_regex_match() {
    let ws = workspace("");
    let pid = pidfile(&ws);
    ws.write(
        "rwb.toml",
        &format!(
            "[tunnel]\ncommand = \"echo $$ > {}; echo 'relay ready at http://127.0.0.1:{{port}} (share it)'; exec sleep 600\"\nurl_regex = 'http://127\\.0\\.0\\.1:\\d+'\n",
            pid.display()
        ),
    );
    let mut rwb = start(&ws, &std::env::var("PATH").unwrap(), &[], &[]);
    let local = rwb.local_url();
    rwb.wait_for("starting the command tunnel: sh -c", 30);
    assert_eq!(rwb.value_after("public URL:"), local);
    rwb.wait_for("health through the tunnel: ok", 30);
    assert_eq!(rwb.interrupt(), 0, "{}", rwb.said());
    assert_gone(&pid);
}

#[test]
fn ctrl_c_while_waiting_for_the_url_leaves_no_provider_running() {
    let bin = stand_ins();
    let ws = workspace("timeout = 60");
    let pid = pidfile(&ws);
    let mut rwb = start(
        &ws,
        &path_with(bin.path()),
        &[],
        &[
            ("STANDIN_PIDFILE", pid.to_str().unwrap()),
            ("STANDIN_MODE", "silent"),
        ],
    );
    rwb.wait_for("waiting for the public URL", 60);
    assert!(alive(read_pid(&pid)));
    let started = Instant::now();
    assert_eq!(rwb.interrupt(), 0, "{}", rwb.said());
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_gone(&pid);
}

#[test]
fn a_provider_that_is_not_installed_is_one_clear_line_and_the_server_keeps_serving() {
    // PATH has nothing at all on it: no ngrok
    let empty = tempfile::tempdir().unwrap();
    let ws = workspace("");
    let mut rwb = start(
        &ws,
        empty.path().to_str().unwrap(),
        &["--provider", "ngrok"],
        &[],
    );
    let local = rwb.local_url();
    let error = rwb.wait_for("not installed", 30);
    assert_eq!(
        error,
        "rwb: ngrok is not installed (not on PATH): install it, or use --provider serveo|cloudflared|command"
    );
    rwb.wait_for("still serving locally on", 10);
    assert_serving_locally(&local);
    // nothing is public, so the key nobody was shown is not required
    let host = local.strip_prefix("http://").unwrap();
    assert_eq!(post_evaluate(&local, host, "").0, 200);
    assert!(!rwb.said().contains("api key:"), "{}", rwb.said());
    assert_eq!(rwb.interrupt(), 1, "{}", rwb.said());
}

#[test]
fn a_provider_that_exits_at_once_reports_its_exit_status_and_last_lines() {
    let bin = stand_ins();
    let ws = workspace("");
    let mut rwb = start(
        &ws,
        &path_with(bin.path()),
        &["--provider", "serveo"],
        &[("STANDIN_MODE", "exit")],
    );
    let local = rwb.local_url();
    let error = rwb.wait_for("exited before giving a URL", 30);
    assert!(
        error.starts_with("rwb: the serveo tunnel exited before giving a URL (exit status: 255)"),
        "{error}"
    );
    assert!(
        error.contains("ssh: connect to host serveo.net port 22: Connection refused"),
        "{error}"
    );
    rwb.wait_for("still serving locally on", 10);
    assert_serving_locally(&local);
    assert_eq!(rwb.interrupt(), 1, "{}", rwb.said());
}

#[test]
fn a_provider_that_prints_no_url_times_out_at_the_configured_timeout() {
    let bin = stand_ins();
    let ws = workspace("timeout = 2");
    let pid = pidfile(&ws);
    let mut rwb = start(
        &ws,
        &path_with(bin.path()),
        &[],
        &[
            ("STANDIN_PIDFILE", pid.to_str().unwrap()),
            ("STANDIN_MODE", "silent"),
        ],
    );
    let local = rwb.local_url();
    rwb.wait_for("waiting for the public URL (up to 2 s)", 30);
    let started = Instant::now();
    let error = rwb.wait_for("no public URL", 10);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert!(
        error.starts_with("rwb: no public URL from serveo within 2 s (stopped it); its last lines: Warning: Permanently added"),
        "{error}"
    );
    // stopped before Ctrl-C, and the server still answers
    assert_gone(&pid);
    rwb.wait_for("still serving locally on", 10);
    assert_serving_locally(&local);
    assert_eq!(rwb.interrupt(), 1, "{}", rwb.said());
}

#[test]
fn a_bad_provider_or_tunnel_setting_is_a_usage_error_before_serving() {
    for (args, toml, needle) in [
        (
            &["--provider", "teleport"][..],
            "",
            "rwb: unknown tunnel provider \"teleport\": use serveo, ngrok, cloudflared, command",
        ),
        (&[][..], "provider = \"command\"", "needs `command`"),
        (&[][..], "timeout = -1", "timeout must be"),
        (&[][..], "url_regx = \"x\"", "unknown key `url_regx`"),
    ] {
        let ws = workspace(toml);
        let mut child = Command::new(RWB)
            .arg("tunnel")
            .arg(ws.path())
            .args(["--port", "0", "--python", python()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("rwb tunnel {args:?} with [tunnel] {toml} did not end");
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(needle), "{needle} not in: {stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("serving on"));
    }
}

#[test]
fn a_killed_rwb_takes_its_provider_with_it() {
    // SIGKILL leaves rwb no chance to stop the provider: the provider must end anyway
    let bin = stand_ins();
    let ws = workspace("");
    let pid = pidfile(&ws);
    let mut rwb = start(
        &ws,
        &path_with(bin.path()),
        &[],
        &[("STANDIN_PIDFILE", pid.to_str().unwrap())],
    );
    rwb.wait_for("public URL:", 60);
    assert!(alive(read_pid(&pid)));
    rwb.child.kill().unwrap();
    rwb.child.wait().unwrap();
    assert_gone(&pid);
}
