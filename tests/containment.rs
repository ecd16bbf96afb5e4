//! Every reward contained (SPEC §18): real rwb runs, real worker processes, canary
//! files in a home folder of the test's own, a loopback listener the rewards must
//! (or must not) reach, and processes that try to outlive their worker.

mod common;

use common::Ws;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A home folder outside `/tmp` (whose existing entries a box shows read-only, but
/// whose new files are the box's own): the test's own, with a canary in it.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        std::fs::write(dir.path().join("canary.txt"), "untouched").unwrap();
        Home { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn canary(&self) -> String {
        std::fs::read_to_string(self.path().join("canary.txt")).unwrap()
    }
}

fn run_in(ws: &Ws, home: &Home, args: &[&str]) -> common::Run {
    let mut all = vec!["run", ".", "--format", "jsonl", "--no-cache"];
    all.extend_from_slice(args);
    let mut command = common::rwb_command(&all, ws.path());
    command
        .env("HOME", home.path())
        .env_remove("XDG_CACHE_HOME");
    common::Run::from(common::output_within(&mut command, common::RUN_LIMIT))
}

/// What a hostile completion's code does, in a reward: writes the home folder, from
/// Python and from a shell, changes the canary, leaves a file in /tmp, and writes the
/// places a reward may write.
const HOSTILE: &str = r#"
import os, subprocess, sys

def writes_home(response, **kwargs):
    open(os.path.expanduser("~/pwned.txt"), "w").write(response)
    return 1.0

def shells_out(response, **kwargs):
    code = os.system("echo pwned > ~/pwned-by-shell.txt; echo pwned >> ~/canary.txt")
    child = subprocess.run([sys.executable, "-c", "open(%r, 'w').write('x')" % os.path.expanduser("~/pwned-by-child.txt")])
    return float(code == 0 and child.returncode == 0)

def leaves_tmp(response, **kwargs):
    with open("/tmp/rwb-containment-left-%s" % response, "w") as f:
        f.write("state for the next run")
    return float(os.path.exists("/tmp/rwb-containment-left-%s" % response))

def writes_allowed(response, **kwargs):
    os.makedirs(os.path.expanduser("~/.cache/rwb-test"), exist_ok=True)
    open(os.path.expanduser("~/.cache/rwb-test/cached.txt"), "w").write(response)
    open("logs/seen.txt", "w").write(response)
    import tempfile
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write(response)
    return 1.0

def edits_workspace(response, **kwargs):
    open("samples.jsonl", "a").write("junk\n")
    return 1.0
"#;

fn hostile_workspace(extra_toml: &str) -> Ws {
    let toml = format!(
        "samples = [\"samples.jsonl\"]\n{extra_toml}\n[evaluators.home]\nfunction = \"reward.py::writes_home\"\n[evaluators.shell]\nfunction = \"reward.py::shells_out\"\n[evaluators.tmp]\nfunction = \"reward.py::leaves_tmp\"\n[evaluators.allowed]\nfunction = \"reward.py::writes_allowed\"\n[evaluators.workspace]\nfunction = \"reward.py::edits_workspace\"\n"
    );
    let unique = format!("{}-{}", std::process::id(), rand_suffix());
    Ws::new(&[
        ("reward.py", HOSTILE),
        (
            "samples.jsonl",
            &format!("{{\"prompt\": \"p\", \"completion\": \"{unique}\"}}\n"),
        ),
        ("rwb.toml", &toml),
        ("logs/.keep", ""),
    ])
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn completion(ws: &Ws) -> String {
    let text = std::fs::read_to_string(ws.file("samples.jsonl")).unwrap();
    let row: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    row["completion"].as_str().unwrap().to_string()
}

#[test]
fn a_contained_reward_cannot_touch_the_host_and_is_told_which_line_allows_it() {
    let home = Home::new();
    let ws = hostile_workspace("[sandbox]\nwritable = [\"logs/\"]");
    let unique = completion(&ws);
    let run = run_in(&ws, &home, &[]);
    let row = |e: &str| run.row(0, e);

    // the home folder is the host's, read-only: the refused write names the path,
    // why, and the line to add
    let home_row = row("home");
    assert_eq!(home_row["error"]["type"], "OSError", "{home_row}");
    let message = home_row["error"]["message"].as_str().unwrap();
    assert!(message.contains("Read-only file system"), "{message}");
    assert!(
        message.contains("rwb contains rewards and refused to write")
            && message.contains("pwned.txt")
            && message.contains("under [sandbox] in rwb.toml"),
        "{message}"
    );
    // a shell and a child interpreter are in the same box
    assert_eq!(row("shell")["score"], 0.0, "{}", row("shell"));
    for name in ["pwned.txt", "pwned-by-shell.txt", "pwned-by-child.txt"] {
        assert!(!home.path().join(name).exists(), "{name} was written");
    }
    assert_eq!(home.canary(), "untouched");

    // /tmp: a new file is the box's own, and gone after it
    assert_eq!(row("tmp")["score"], 1.0, "{}", row("tmp"));
    let left = PathBuf::from(format!("/tmp/rwb-containment-left-{unique}"));
    assert!(!left.exists(), "{} reached the host's /tmp", left.display());

    // what already lies under /tmp (this workspace) is read-only
    let workspace_row = row("workspace");
    assert_eq!(workspace_row["error"]["type"], "OSError", "{workspace_row}");
    assert!(
        workspace_row["error"]["message"]
            .as_str()
            .unwrap()
            .contains("writable = ['./']")
            || workspace_row["error"]["message"]
                .as_str()
                .unwrap()
                .contains("refused to write"),
        "{workspace_row}"
    );
    assert!(!std::fs::read_to_string(ws.file("samples.jsonl"))
        .unwrap()
        .contains("junk"));

    // ~/.cache, [sandbox] writable and TMPDIR are writable, and the first two reach
    // the host
    assert_eq!(row("allowed")["score"], 1.0, "{}", row("allowed"));
    assert_eq!(
        std::fs::read_to_string(home.path().join(".cache/rwb-test/cached.txt")).unwrap(),
        unique
    );
    assert_eq!(
        std::fs::read_to_string(ws.file("logs/seen.txt")).unwrap(),
        unique
    );

    // check says how each evaluator runs
    let mut command = common::rwb_command(&["check", "."], ws.path());
    command.env("HOME", home.path());
    let check = common::Run::from(common::output_within(&mut command, common::RUN_LIMIT));
    assert!(
        check.stdout.lines().any(|l| l == "  runs contained"),
        "{}",
        check.stdout
    );
    assert_eq!(home.canary(), "untouched", "check ran them contained too");
}

#[test]
fn no_contain_runs_the_reward_with_the_users_power() {
    let home = Home::new();
    let ws = hostile_workspace("");
    let run = run_in(&ws, &home, &["--no-contain"]);
    assert_eq!(run.row(0, "home")["score"], 1.0, "{}", run.stderr);
    assert!(home.path().join("pwned.txt").exists());
    assert_ne!(home.canary(), "untouched");
}

/// A reward that reaches a loopback listener the test holds.
const NETWORK: &str = r#"
import os, socket

def reaches(response, **kwargs):
    s = socket.create_connection(("127.0.0.1", int(os.environ["RWB_TEST_PORT"])), timeout=2)
    s.sendall(b"hello")
    s.close()
    return 1.0
"#;

#[test]
fn network_stays_on_unless_the_sandbox_or_the_evaluator_turns_it_off() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 16];
            let _ = stream.read(&mut buf);
        }
    });
    let home = Home::new();
    let cases = [
        (
            "",
            "[evaluators.net]\nfunction = \"reward.py::reaches\"\n",
            true,
        ),
        (
            "",
            "[evaluators.net]\nfunction = \"reward.py::reaches\"\nnetwork = false\n",
            false,
        ),
        (
            "[sandbox]\nnetwork = false\n",
            "[evaluators.net]\nfunction = \"reward.py::reaches\"\n",
            false,
        ),
    ];
    for (top, evaluator, reaches) in cases {
        let ws = Ws::new(&[
            ("reward.py", NETWORK),
            (
                "samples.jsonl",
                "{\"prompt\": \"p\", \"completion\": \"c\"}\n",
            ),
            (
                "rwb.toml",
                &format!("samples = [\"samples.jsonl\"]\n{top}{evaluator}"),
            ),
        ]);
        let mut command =
            common::rwb_command(&["run", ".", "--format", "jsonl", "--no-cache"], ws.path());
        command.env("HOME", home.path()).env("RWB_TEST_PORT", &port);
        let run = common::Run::from(common::output_within(&mut command, common::RUN_LIMIT));
        let row = run.row(0, "net");
        if reaches {
            assert_eq!(row["score"], 1.0, "{top}{evaluator}: {row}");
        } else {
            assert!(row["score"].is_null(), "{top}{evaluator}: {row}");
            assert_eq!(row["error"]["type"], "OSError", "{row}");
        }
    }
}

/// Processes pid-marked by an argument no other process has.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(marker) {
                out.push(pid);
            }
        }
    }
    out
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// A reward that starts a detached process (its own session, double-forked) and
/// then either returns or waits.
const DETACHES: &str = r#"
import os, subprocess, time

def detaches(response, **kwargs):
    subprocess.Popen(["sh", "-c", "sleep %s &" % response], start_new_session=True)
    open(os.path.expanduser("~/.cache/started-%s" % response), "w").close()
    if kwargs.get("wait"):
        time.sleep(120)
    return 1.0
"#;

#[test]
fn what_a_reward_starts_dies_with_its_worker_and_with_rwb() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join(".cache")).unwrap();
    // a detached sleep outlives a plain process group kill; not a worker's namespace
    let marker = format!(
        "{}.{}",
        3000 + std::process::id() % 1000,
        rand_suffix() % 1000
    );
    let ws = Ws::new(&[
        ("reward.py", DETACHES),
        (
            "samples.jsonl",
            &format!("{{\"prompt\": \"p\", \"completion\": \"{marker}\"}}\n"),
        ),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\n[evaluators.d]\nfunction = \"reward.py::detaches\"\n",
        ),
    ]);
    let run = run_in(&ws, &home, &[]);
    assert_eq!(run.row(0, "d")["score"], 1.0, "{}", run.stderr);
    assert!(
        wait_until(Duration::from_secs(5), || processes_with(&format!(
            "sleep {marker}"
        ))
        .is_empty()),
        "a detached process outlived its worker: {:?}",
        processes_with(&format!("sleep {marker}"))
    );

    // rwb killed with SIGKILL in the middle of an evaluation leaves nothing behind
    let marker = format!("{marker}1");
    ws.write(
        "samples.jsonl",
        &format!("{{\"prompt\": \"p\", \"completion\": \"{marker}\"}}\n"),
    );
    ws.write(
        "rwb.toml",
        "samples = [\"samples.jsonl\"]\n[evaluators.d]\nfunction = \"reward.py::detaches\"\nkwargs = { wait = true }\n",
    );
    let mut child =
        common::rwb_command(&["run", ".", "--format", "jsonl", "--no-cache"], ws.path())
            .env("HOME", home.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    let started = home.path().join(format!(".cache/started-{marker}"));
    assert!(
        wait_until(Duration::from_secs(60), || started.exists()),
        "the reward never started"
    );
    assert!(!processes_with(&format!("sleep {marker}")).is_empty());
    let rwb_pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    let survivors = || {
        let mut all = processes_with(&format!("sleep {marker}"));
        all.extend(
            processes_with(&ws.path().display().to_string())
                .into_iter()
                .filter(|&p| p != rwb_pid),
        );
        all
    };
    assert!(
        wait_until(Duration::from_secs(10), || survivors().is_empty()),
        "survivors of rwb's SIGKILL: {:?}",
        survivors()
    );
}

#[test]
fn where_the_kernel_refuses_namespaces_the_workers_run_open_and_say_why() {
    if Path::new("/usr/bin/unshare").exists() || Path::new("/bin/unshare").exists() {
        let home = Home::new();
        let ws = hostile_workspace("");
        // a user namespace of the test's own, in which no further one may be made
        let script = format!(
            "echo 0 > /proc/sys/user/max_user_namespaces && exec {} check .",
            common::RWB
        );
        let mut command = std::process::Command::new("unshare");
        command
            .args(["--user", "--map-root-user", "sh", "-c", &script])
            .current_dir(ws.path())
            .env("HOME", home.path());
        let check = common::Run::from(common::output_within(&mut command, common::RUN_LIMIT));
        assert!(
            check.stdout.lines().any(
                |l| l.starts_with("  runs open: no user namespace (unshare)")
                    && l.contains("sysctl kernel.apparmor_restrict_unprivileged_userns=0")
            ),
            "{}\n{}",
            check.stdout,
            check.stderr
        );
    } else {
        panic!("unshare(1) is needed to deny user namespaces to rwb (util-linux)");
    }
}

#[test]
fn the_workbench_says_its_rewards_are_contained_and_shows_a_refused_write() {
    let home = Home::new();
    let ws = Ws::new(&[
        ("reward.py", HOSTILE),
        (
            "samples.jsonl",
            "{\"prompt\": \"p\", \"completion\": \"c\"}\n",
        ),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\n[evaluators.home]\nfunction = \"reward.py::writes_home\"\n",
        ),
    ]);
    let command = format!("HOME={} {}", home.path().display(), common::RWB);
    let tmux = common::Tmux::start(&ws, 160, 40, &command);
    let screen = tmux.wait_for("the status line and the refused write", |s| {
        s.contains("local ×") && s.contains("contained") && s.contains("Read-only file system")
    });
    assert!(screen.contains("pwned.txt"), "{screen}");
    assert!(!home.path().join("pwned.txt").exists());
    tmux.keys(&["q"]);
}
