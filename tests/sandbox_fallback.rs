//! Where the kernel says no (SPEC §18): in a user namespace of the test's own in
//! which no further one may be made, rwb's sandbox falls back to Landlock, seccomp and
//! rlimits. Real rwb runs, the real fork server, canaries in a home folder of the
//! test's own, a loopback listener the policy's code must not reach, and a process
//! that tries to outlive its run.

mod common;

use common::Ws;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// What the policy's code tries, each reported as `name:ok` or `name:ErrorType`.
const PROBES: &str = r#"
import os, signal, socket, subprocess, sys
out = []
def attempt(name, f):
    try:
        f()
        out.append(name + ":ok")
    except Exception as e:
        out.append(name + ":" + type(e).__name__)
attempt("write_home", lambda: open(os.path.join(CANARY_HOME, "pwned.txt"), "w").write("x"))
attempt("read_home", lambda: open(os.path.join(CANARY_HOME, "canary.txt")).read())
attempt("write_tmp", lambda: open("/tmp/rwb-fallback-left-" + MARK, "w").write("x"))
attempt("write_own", lambda: open("mine.txt", "w").write("x"))
attempt("tempfile", lambda: __import__("tempfile").mkstemp())
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2))
attempt("unix", lambda: socket.socketpair(socket.AF_UNIX).__class__)
attempt("signal_server", lambda: os.kill(os.getppid(), 0))
def unshare():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
attempt("unshare", unshare)
attempt("memory", lambda: bytearray(3 << 30))
# a process of its own session that would outlive the run
subprocess.Popen(["sh", "-c", "sleep 300 # rwb-fallback-" + MARK], start_new_session=True)
print(" ".join(out))
"#;

const REWARD: &str = r#"
import json, os
from rwb.sandbox import run_code, run

def probes(response, **kwargs):
    given = "CANARY_HOME = %r\nPORT = %s\nMARK = %r\n" % (os.environ["CANARY_HOME"], os.environ["PORT"], response)
    result = run_code({"code": given + open("probes.py").read(), "language": "python"})
    run_result = result.get("run_result") or {}
    return {"score": float(result["status"] == "Success"),
            "reason": json.dumps({"status": result["status"], "message": result.get("message"),
                                  "stdout": run_result.get("stdout"), "stderr": run_result.get("stderr")})}

def doubles(response, **kwargs):
    tests = {"inputs": ["1\n", "2\n", "5\n"], "outputs": ["2\n", "4\n", "10\n"]}
    good = run("print(int(input()) * 2)", tests)
    bad = run("n = int(input())\nprint(n * 2 if n < 3 else 0)", tests)
    return {"score": good["score"] + bad["score"], "reason": "%s %s" % (good["score"], bad["score"])}
"#;

/// `rwb ARGS` in the workspace, inside `unshare --user --map-root-user` with
/// `max_user_namespaces = 0`: rwb can make no user namespace of its own.
fn without_namespaces(ws: &Ws, home: &Path, port: u16, args: &str) -> common::Run {
    let script = format!(
        "echo 0 > /proc/sys/user/max_user_namespaces && exec {} {args}",
        common::RWB
    );
    let mut command = std::process::Command::new("unshare");
    command
        .args(["--user", "--map-root-user", "sh", "-c", &script])
        .current_dir(ws.path())
        .env("HOME", home)
        .env("CANARY_HOME", home)
        .env("PORT", port.to_string())
        .env_remove("XDG_CACHE_HOME");
    common::Run::from(common::output_within(&mut command, common::RUN_LIMIT))
}

fn survivors(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmdline).contains(marker) {
                out.push(pid);
            }
        }
    }
    out
}

#[test]
fn without_namespaces_the_sandbox_confines_the_code_with_landlock_and_seccomp() {
    assert!(
        Path::new("/usr/bin/unshare").exists() || Path::new("/bin/unshare").exists(),
        "unshare(1) is needed to deny user namespaces to rwb (util-linux)"
    );
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(home.path().join("canary.txt"), "secret").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mark = format!(
        "{}{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let ws = Ws::new(&[
        ("reward.py", REWARD),
        ("probes.py", PROBES),
        (
            "samples.jsonl",
            &format!("{{\"prompt\": \"p\", \"completion\": \"{mark}\"}}\n"),
        ),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\n[evaluators.probes]\nfunction = \"reward.py::probes\"\n[evaluators.doubles]\nfunction = \"reward.py::doubles\"\n",
        ),
    ]);
    let run = without_namespaces(&ws, home.path(), port, "run . --format jsonl --no-cache");
    let rows: Vec<Value> = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["evaluator"] == name)
            .unwrap_or_else(|| panic!("no {name} row:\n{}\n{}", run.stdout, run.stderr))
            .clone()
    };
    let probes = row("probes");
    let said: Value = serde_json::from_str(probes["reason"].as_str().unwrap()).unwrap();
    assert_eq!(said["status"], "Success", "{said}\n{}", run.stderr);
    let stdout = said["stdout"].as_str().unwrap();
    for expected in [
        "write_home:PermissionError",
        "read_home:PermissionError",
        "write_tmp:PermissionError",
        "write_own:ok",
        "tempfile:ok",
        "tcp:PermissionError",
        "unix:ok",
        "signal_server:PermissionError",
        "unshare:PermissionError",
        "memory:MemoryError",
    ] {
        assert!(
            stdout.split_whitespace().any(|w| w == expected),
            "{expected} not in {stdout:?}"
        );
    }
    assert!(!home.path().join("pwned.txt").exists());
    assert!(!Path::new(&format!("/tmp/rwb-fallback-left-{mark}")).exists());
    // the process of its own session died when the run ended
    let marker = format!("rwb-fallback-{mark}");
    let start = Instant::now();
    while !survivors(&marker).is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        survivors(&marker),
        Vec::<u32>::new(),
        "a run's process outlived it"
    );
    // tests still run and are judged as in a box
    let doubles = row("doubles");
    assert_eq!(doubles["reason"], "1.0 0.6666666666666666", "{doubles}");
    // said once, at start, with the reason and the setting that allows namespaces
    let said_lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("Landlock"))
        .collect();
    assert_eq!(said_lines.len(), 1, "{}", run.stderr);
    assert!(
        said_lines[0].contains("no user namespace") && said_lines[0].contains("sysctl"),
        "{}",
        said_lines[0]
    );
}

/// A workspace whose one evaluator runs tests in the sandbox (`reward.py::doubles`).
fn doubles_workspace() -> Ws {
    Ws::new(&[
        ("reward.py", REWARD),
        ("probes.py", PROBES),
        ("samples.jsonl", "{\"prompt\": \"p\", \"completion\": \"x\"}\n"),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\n[evaluators.doubles]\nfunction = \"reward.py::doubles\"\n",
        ),
    ])
}

#[test]
fn rwb_check_says_how_the_sandbox_runs_without_namespaces() {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = doubles_workspace();
    let check = without_namespaces(&ws, home.path(), 1, "check .");
    assert!(
        check.stdout.lines().any(|l| l.contains("policy's code")
            && l.contains("Landlock")
            && l.contains("seccomp")),
        "{}\n{}",
        check.stdout,
        check.stderr
    );
}

/// Execs its arguments with Landlock's system calls answering ENOSYS (a seccomp
/// filter of the test's own): a kernel without Landlock, as rwb sees it; and with no
/// capability left in the test's user namespace (root there could still make mount
/// namespaces, as an ordinary user cannot).
const WITHOUT_LANDLOCK: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]
ENOSYS = 38
insns = [
    (0x20, 0, 0, 0),                      # load the system call's number
    (0x35, 0, 2, 444),                    # below landlock_create_ruleset: allow
    (0x35, 1, 0, 447),                    # past landlock_restrict_self: allow
    (0x06, 0, 0, 0x00050000 | ENOSYS),    # 444..446: ENOSYS
    (0x06, 0, 0, 0x7FFF0000),             # allow
]
array = (Insn * len(insns))(*[Insn(*i) for i in insns])
prog = Prog(len(insns), array)
for cap in range(64):
    libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP: root execs into no capability
assert libc.prctl(38, 1, 0, 0, 0) == 0
assert libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0, ctypes.get_errno()
os.execvp(sys.argv[1], sys.argv[1:])
"#;

#[test]
fn where_neither_works_the_sandbox_refuses_and_says_why_unless_unsafe() {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(home.path().join("canary.txt"), "secret").unwrap();
    let toml = |extra: &str| {
        format!("samples = [\"samples.jsonl\"]\n{extra}\n[evaluators.probes]\nfunction = \"reward.py::probes\"\n")
    };
    for unsafe_ok in [false, true] {
        let ws = Ws::new(&[
            ("reward.py", REWARD),
            ("probes.py", "print('ran')\n"),
            (
                "samples.jsonl",
                "{\"prompt\": \"p\", \"completion\": \"x\"}\n",
            ),
            (
                "rwb.toml",
                &toml(if unsafe_ok {
                    "[sandbox]\nunsafe = true"
                } else {
                    ""
                }),
            ),
        ]);
        std::fs::write(ws.file("without_landlock.py"), WITHOUT_LANDLOCK).unwrap();
        let script = format!(
            "echo 0 > /proc/sys/user/max_user_namespaces && exec python3 without_landlock.py {} run . --format jsonl --no-cache",
            common::RWB
        );
        let mut command = std::process::Command::new("unshare");
        command
            .args(["--user", "--map-root-user", "sh", "-c", &script])
            .current_dir(ws.path())
            .env("HOME", home.path())
            .env("CANARY_HOME", home.path())
            .env("PORT", "1");
        let run = common::Run::from(common::output_within(&mut command, common::RUN_LIMIT));
        let row: Value = run
            .stdout
            .lines()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("{}\n{}", run.stdout, run.stderr));
        let said: Value = serde_json::from_str(row["reason"].as_str().unwrap())
            .unwrap_or_else(|_| panic!("{row}"));
        if unsafe_ok {
            assert_eq!(said["status"], "Success", "{said}");
            assert_eq!(said["stdout"], "ran\n");
            assert!(run.stderr.contains("rlimits only"), "{}", run.stderr);
        } else {
            assert_eq!(said["status"], "SandboxError", "{said}");
            let message = said["message"].as_str().unwrap();
            assert!(
                message.contains("no Landlock") && message.contains("unsafe = true"),
                "{message}"
            );
            assert!(
                run.stderr.contains("refuses to run the policy's code"),
                "{}",
                run.stderr
            );
        }
    }
}

#[test]
fn the_workbench_says_once_that_there_is_no_box_and_what_runs_how() {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = doubles_workspace();
    let command = format!(
        "HOME={} unshare --user --map-root-user sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec {}'",
        home.path().display(),
        common::RWB
    );
    let tmux = common::Tmux::start(&ws, 200, 40, &command);
    let screen = tmux.wait_for("the notice and the open workers", |s| {
        s.contains("no box here") && s.contains("open")
    });
    assert!(screen.contains("Landlock"), "{screen}");
    tmux.keys(&["q"]);
}
