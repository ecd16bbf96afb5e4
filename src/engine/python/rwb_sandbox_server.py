"""rwb's sandbox for the code a policy wrote (SPEC §18): a fork server.

    python3 -X utf8 rwb_sandbox_server.py SLOTS

rwb starts it inside a box (`rwb __contain` with no network). It imports the standard
library once, and runs each program in a process forked from itself: Python code runs
in that forked interpreter (no interpreter start-up); other languages exec their
toolchain. Standard library only; Python 3.8 to 3.13.

Protocol: one JSON request per line on stdin, one JSON response per line on stdout, in
the order runs end (each response carries its request's `id`). First line out:
`{"ready": true, "languages": [...], "slots": N, "isolation": {...}}`.

  request   {"id", "code", "language", "compile_timeout"=10, "run_timeout"=10,
             "memory_limit_MB"=-1 (the default, 1024), "stdin"=null,
             "files"={relpath: base64}, "fetch_files"=[relpath], "nonce"=null,
             "output_cap"=1048576}; other fields are ignored
  response  {"id", "status": "Success"|"Failed"|"SandboxError", "message",
             "compile_result", "run_result", "executor_pod_name": null,
             "files": {relpath: base64}}
            a command's result: {"status": "Finished"|"Error"|"TimeLimitExceeded",
             "execution_time" (seconds), "return_code" (null on a time limit; -N for
             signal N; 137 on the memory limit), "stdout", "stderr"}, plus
             "truncated": true (an output stream was capped), "memory": true (the
             memory limit was hit; stderr ends with "rwb: memory limit (N MB)"), and
             "nonce_seen" when the request gave a nonce (Python: the runner wrote it
             after the code ran to its end).
            status: SandboxError for rwb's own failures only (unknown language, no
             toolchain, a path leaving the run's folder, a run that could not be set
             up); Failed for a time limit or a non-zero return code (a memory kill, a
             signal); else Success.

How a run goes:
  server  one thread, a selectors loop: reads the runs' output (capped, drained past
          the cap), writes their stdin, enforces each step's wall-clock limit by
          SIGKILL of the step's first process, reaps, reads `fetch_files` back; at
          most SLOTS runs at once, the rest wait in order.
  slot    each of the SLOTS runs at once has a mount namespace of its own, kept for
          the server's life, with a tmpfs on /tmp; a run's first step empties it, so
          nothing carries from one run to the next. The run's folder is /tmp/run.
  step    a compile or a run: a process forked from the server, the first of a new
          PID namespace (when it ends, every process it started ends), in its slot's
          mount namespace, with a new IPC namespace and a procfs of its own that
          shows only the step's processes and lets the kernel give it at most 301.
          Python runs in that process, its capabilities dropped for good, its
          rlimits set (memory, CPU, file size, core, open files), with stdin,
          stdout and stderr on the server's pipes and every other descriptor
          closed. Another language: that process (rwb's, trusted) forks the program
          so set up and execs it, waits, and says how it ended.
The server's own root is private: the system folders, the Python installation and
the toolchains, read-only; nothing of the user's home or workspace.

Outside rwb's box the server makes its own namespaces (user, mount, network, PID) when
the kernel allows them. Where the kernel refuses them, `rwb __contain` confines the
server instead (RWB_CONTAINMENT=`confined: ...`: Landlock, seccomp, see
src/sandbox/confine.rs) and each run gets, beside its rlimits, a folder of its own
under RWB_SANDBOX_BASE, a Landlock layer of its own (it reads the system, the Python
installation and the toolchains, and writes only in its folder; no TCP, no signal or
abstract socket outside it) and a process group; the server is the subreaper of what
a run leaves behind and kills it when a step ends. Where neither can be had, every run
is a SandboxError naming why, unless RWB_SANDBOX_UNSAFE=1 (`[sandbox] unsafe = true`):
then runs get rlimits, a folder and a process group of their own, and nothing more.

A Python run is the first process of its PID namespace, which the kernel spares the
signals it does not handle: for the usual fatal ones (TERM, HUP, ALRM, USR1, ...) the
run installs a handler that ends it as the signal would (return code -N).
"""

import os
import sys

# What veRL's `fn_name` wrapper star-imports, and more of the usual: imported once
# here, so that a forked run finds them loaded.
PRELOAD = (
    "abc", "array", "base64", "bisect", "calendar", "cmath", "collections",
    "collections.abc", "contextlib", "copy", "dataclasses", "datetime", "decimal",
    "enum", "fractions", "functools", "hashlib", "heapq", "io", "itertools", "json",
    "linecache", "math", "numbers", "operator", "pprint", "queue", "random", "re",
    "statistics", "string", "struct", "textwrap", "threading", "time", "tokenize",
    "traceback", "types", "typing", "unicodedata", "weakref",
)
for _name in PRELOAD:
    try:
        __import__(_name)
    except Exception:  # a trimmed-down Python: the run imports what it finds
        pass
del _name

import atexit  # noqa: E402
import base64  # noqa: E402
import builtins  # noqa: E402
import ctypes  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import selectors  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from collections import deque  # noqa: E402

DEFAULT_MEMORY_MB = 1024
DEFAULT_OUTPUT_CAP = 1 << 20
FILE_SIZE_LIMIT = 16 << 20
PROCESS_LIMIT = 64  # RLIMIT_NPROC, where the kernel cannot cap a namespace's pids
PID_LIMIT = 301  # a step's pid_max: the least the kernel takes
OPEN_FILES = 512
TMP_MB = 64  # a slot's /tmp
TMP_INODES = 16384
RUN_DIR = "/tmp/run"
SETUP_SECONDS = 10.0  # a step that has not started its program by then is stuck
FETCH_LIMIT = 64 << 20

# SandboxFusion's languages (the ones a request may name)
KNOWN_LANGUAGES = (
    "python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash",
    "typescript", "sql", "rust", "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala",
    "julia", "pytest", "junit", "kotlin_script", "jest", "verilog", "python_gpu",
    "lean", "swift", "racket",
)

# Linux constants (the same on x86_64 and aarch64)
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC = 32, 4096, 8192, 16384
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
PR_SET_CHILD_SUBREAPER = 36
PR_CAPBSET_DROP, PR_SET_SECUREBITS = 24, 28
# SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS_LOCKED, each locked
SECURE_ALL_LOCKED = 0x01 | 0x02 | 0x04 | 0x08 | 0x20
try:
    with open("/proc/sys/kernel/cap_last_cap") as _f:
        LAST_CAP = int(_f.read())
except (OSError, ValueError):
    LAST_CAP = 63

# ---------------------------------------------------------------- system calls

_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
        libc.unshare.argtypes = [ctypes.c_int]
        libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
        _LIBC = libc
    return _LIBC


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def unshare(flags):
    _check(_libc().unshare(flags), "unshare")


def setns(fd, flags):
    _check(_libc().setns(fd, flags), "setns")


def prctl(option, arg=0):
    return _libc().prctl(option, arg, 0, 0, 0)


def mount(source, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    _check(
        _libc().mount(enc(source), enc(target), enc(fstype), flags, enc(data)),
        "mount %s on %s" % (fstype or source, target),
    )


def umount(target):
    _check(_libc().umount2(os.fsencode(target), MNT_DETACH), "umount %s" % target)


def _write_file(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _kept_flags(path):
    """The flags of the mount at `path` a read-only remount must keep (the kernel
    locks them in a user namespace)."""
    st = os.statvfs(path)
    flags = 0
    for st_flag, ms_flag in (
        (getattr(os, "ST_NOSUID", 2), MS_NOSUID),
        (getattr(os, "ST_NODEV", 4), MS_NODEV),
        (getattr(os, "ST_NOEXEC", 8), MS_NOEXEC),
        (getattr(os, "ST_NOATIME", 1024), MS_NOATIME),
        (getattr(os, "ST_NODIRATIME", 2048), MS_NODIRATIME),
        (getattr(os, "ST_RELATIME", 4096), MS_RELATIME),
    ):
        if st.f_flag & st_flag:
            flags |= ms_flag
    return flags


def _read_only(path):
    if os.statvfs(path).f_flag & getattr(os, "ST_RDONLY", 1):
        return
    mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags(path))


# ---------------------------------------------------------------- languages

def _which(name):
    found = shutil.which(name)
    return os.path.realpath(found) if found else None


def _rust_sysroot(rustc):
    """The real toolchain behind rustup's proxy (so that only it is mounted, never
    ~/.cargo with its credentials)."""
    import subprocess

    try:
        out = subprocess.run(
            [rustc, "--print", "sysroot"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30
        )
        root = out.stdout.decode().strip()
        if out.returncode == 0 and os.path.isfile(os.path.join(root, "bin", "rustc")):
            return root
    except Exception:
        pass
    return None


def find_languages():
    """{language: how it compiles and runs}, for the toolchains on PATH, and the
    folders that hold them (mounted into the private root)."""
    langs = {"python": {"file": "main.py", "compile": None, "run": None}}
    homes = []
    bash = _which("bash")
    if bash:
        langs["bash"] = {"file": "main.sh", "compile": None, "run": [bash, "main.sh"]}
        homes.append(bash)
    gpp = _which("g++")
    if gpp:
        langs["cpp"] = {
            "file": "main.cpp",
            "compile": [gpp, "-O2", "-std=c++17", "-pthread", "-o", "main", "main.cpp"],
            "run": ["./main"],
        }
        homes.append(gpp)
    node = _which("node")
    if node:
        langs["nodejs"] = {"file": "main.js", "compile": None, "run": [node, "main.js"], "data_limit": True}
        homes.append(node)
    go = _which("go")
    if go:
        langs["go"] = {
            "file": "main.go",
            "compile": [go, "build", "-o", "main", "main.go"],
            "run": ["./main"],
            "data_limit": True,
            "tmp_mb": 512,
        }
        homes.append(go)
    rustc = shutil.which("rustc")
    if rustc:
        root = _rust_sysroot(rustc)
        if root:
            langs["rust"] = {
                "file": "main.rs",
                "compile": [os.path.join(root, "bin", "rustc"), "--edition", "2021", "-O", "-o", "main", "main.rs"],
                "run": ["./main"],
            }
            homes.append(os.path.join(root, "bin", "rustc"))
    java, javac = _which("java"), _which("javac")
    if java and javac:
        langs["java"] = {
            "file": "Main.java",
            "compile": [javac, "-J-Xss64m", "Main.java"],
            "run": [java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", ".", "Main"],
            "data_limit": True,
        }
        homes.extend([java, javac])
    return langs, homes


def _java_class(code):
    import re

    found = re.search(r"public\s+(?:final\s+|abstract\s+)*class\s+([A-Za-z_$][\w$]*)", code)
    return found.group(1) if found else "Main"


# ---------------------------------------------------------------- isolation

class Isolation:
    """What the kernel let this server build (decided once, at start)."""

    namespaces = False  # a PID, mount and IPC namespace per step
    private_root = False  # the server's root holds only the system and the toolchains
    pid_limit = False  # a step's PID namespace is capped at PID_LIMIT pids
    why = ""
    unsafe = False  # RWB_SANDBOX_UNSAFE=1: without namespaces, run anyway
    confined = False  # no namespaces: rwb confined the server; each run gets a Landlock layer
    homes = ()  # the toolchains' programs (what a confined run may read beside the system)
    run_rules = None  # a confined run's Landlock rules but its folder's: [(path, rights, is_dir)]


ISOLATION = Isolation()
HOME_PID_NS = -1


def _self_box():
    """Outside rwb's box (started by hand, or where rwb ran open): a user, mount and
    network namespace of this server's own, when the kernel allows them."""
    uid, gid = os.geteuid(), os.getegid()
    why = None
    try:
        unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET)
        _write_file("/proc/self/setgroups", "deny")
        _write_file("/proc/self/uid_map", "0 %d 1" % uid)
        _write_file("/proc/self/gid_map", "0 %d 1" % gid)
    except OSError as exc:
        why = str(exc)
    if why is not None and uid == 0:
        try:
            unshare(CLONE_NEWNS | CLONE_NEWNET)
            why = None
        except OSError as exc:
            why = str(exc)
    if why is None:
        _own_pid_namespace()
    return why


def _own_pid_namespace():
    """Makes the rest of this process the first of a PID namespace of its own (as
    `rwb __contain` does), so that its runs' namespaces are its own to enter and
    leave: forks; the parent waits and ends as the server ended."""
    try:
        unshare(CLONE_NEWPID)
        pid = os.fork()
    except OSError:
        return
    if pid == 0:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        return
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    while True:
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status):
            os._exit(os.WEXITSTATUS(status))
        if os.WIFSIGNALED(status):
            os._exit(128 + os.WTERMSIG(status))


def _bind_sources(homes):
    """What a run sees of the host: [(path, symlink target or None)]: the system
    folders, the Python installation (and its site-packages), the toolchains."""
    links, dirs = [], set()
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"):
        if os.path.islink(top):
            links.append((top, os.readlink(top)))
        elif os.path.isdir(top):
            dirs.add(top)
    linked = tuple(top + "/" for top, _ in links)
    wanted = {sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.prefix)}
    for entry in sys.path:
        if entry and os.path.isdir(entry) and ("site-packages" in entry or "dist-packages" in entry):
            wanted.add(entry)
    for tool in homes:
        wanted.add(os.path.dirname(os.path.dirname(tool)))
    for path in wanted:
        for p in (os.path.realpath(path), os.path.abspath(path)):
            if p != "/" and os.path.isdir(p) and not p.startswith(linked):
                dirs.add(p)
    chosen = []
    for path in sorted(dirs, key=len):
        if not any(path == c or path.startswith(c + "/") for c in chosen):
            chosen.append(path)
    return [(p, None) for p in chosen] + links


def _private_root(homes):
    """Makes this process's root a read-only tmpfs holding only the system folders,
    the Python installation and the toolchains (bound read-only; /etc/shadow and the
    like blanked), a minimal /dev, a procfs of the box's PID namespace (each step
    mounts its own over it) and an empty /tmp (each slot mounts a tmpfs on it). The
    new root is moved over the old one, which nothing can reach any more."""
    unshare(CLONE_NEWNS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    held, devices, others = [], [], []
    try:
        for path, link in _bind_sources(homes):
            if link is not None:
                held.append((path, None, link))
            else:
                held.append((path, os.open(path, os.O_PATH | os.O_CLOEXEC), None))
        for name in ("null", "zero", "full", "random", "urandom"):
            try:
                devices.append((name, os.open("/dev/" + name, os.O_PATH | os.O_CLOEXEC)))
            except OSError:
                pass
        proc = os.open("/proc", os.O_PATH | os.O_CLOEXEC)
        others.append(proc)
        stage = "/tmp"
        mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")
        for path, fd, link in held:
            inside = stage + path
            if link is not None:
                os.symlink(link, inside)
                continue
            os.makedirs(inside, exist_ok=True)
            mount("/proc/self/fd/%d" % fd, inside, None, MS_BIND | MS_REC)
            _read_only(inside)
        for secret in ("/etc/shadow", "/etc/gshadow", "/etc/sudoers"):
            if os.path.isfile(stage + secret) and devices:
                mount("/proc/self/fd/%d" % devices[0][1], stage + secret, None, MS_BIND)
        os.mkdir(stage + "/dev")
        mount("tmpfs", stage + "/dev", "tmpfs", MS_NOSUID, "size=64k,mode=0755")
        for name, fd in devices:
            open(stage + "/dev/" + name, "w").close()
            mount("/proc/self/fd/%d" % fd, stage + "/dev/" + name, None, MS_BIND)
        for name, target in (
            ("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"), ("shm", "/tmp"),
        ):
            os.symlink(target, stage + "/dev/" + name)
        _read_only(stage + "/dev")
        os.mkdir(stage + "/proc")
        try:
            # a procfs of the box's PID namespace: the server and its runs only
            mount("proc", stage + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError:
            mount("/proc/self/fd/%d" % proc, stage + "/proc", None, MS_BIND | MS_REC)
        os.mkdir(stage + "/tmp")
        os.chmod(stage + "/tmp", 0o1777)
        _read_only(stage)
        os.chdir(stage)
        mount(".", "/", None, MS_MOVE)
        os.chroot(".")
        os.chdir("/")
    finally:
        for fd in [fd for _p, fd, _l in held if fd is not None] + [fd for _n, fd in devices] + others:
            os.close(fd)


def prepare_isolation(homes):
    state = os.environ.get("RWB_CONTAINMENT", "")
    ISOLATION.unsafe = os.environ.get("RWB_SANDBOX_UNSAFE") == "1"
    ISOLATION.homes = tuple(homes)
    if state.startswith("confined") and _landlock_abi() > 0:
        # rwb found no namespaces and confined this server (Landlock, seccomp)
        ISOLATION.confined = True
        ISOLATION.why = state[len("confined: "):] if state.startswith("confined: ") else state
        _landlock_rules()
        return
    if state != "contained":
        why = _self_box()
        if why is not None:
            ISOLATION.why = "no namespaces: " + why + ((" (" + state + ")") if state else "")
            return
    global HOME_PID_NS
    try:
        HOME_PID_NS = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        unshare(CLONE_NEWPID)
        setns(HOME_PID_NS, CLONE_NEWPID)
    except OSError as exc:
        ISOLATION.why = "no PID namespaces: %s" % exc
        return
    try:
        _private_root(homes)
        ISOLATION.private_root = True
    except OSError as exc:
        ISOLATION.why = "runs see the host's root (read-only): %s" % exc
    ISOLATION.namespaces = True


# Landlock (the same numbers on every architecture)
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LL_EXECUTE, LL_WRITE_FILE, LL_READ_FILE, LL_READ_DIR = 1, 2, 4, 8
LL_TRUNCATE, LL_IOCTL_DEV = 1 << 14, 1 << 15
LL_READ = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR
LL_DEVICE = LL_READ_FILE | LL_WRITE_FILE
RUN_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock_abi():
    abi = _libc().syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(0, abi)


def _landlock_fs(abi):
    """Every filesystem right the kernel's ABI knows."""
    rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= 1 << 13  # REFER
    if abi >= 3:
        rights |= LL_TRUNCATE
    if abi >= 5:
        rights |= LL_IOCTL_DEV
    return rights


def _landlock_rules():
    """A confined run's Landlock rules but its folder's, [(path, rights, is_dir)]: made
    once, by the server, when it starts."""
    if ISOLATION.run_rules is None:
        fs = _landlock_fs(_landlock_abi())
        rules = [(path, LL_READ, True) for path, link in _bind_sources(ISOLATION.homes) if link is None]
        rules.append(("/proc", LL_READ_FILE | LL_READ_DIR, True))
        rules += [(dev, LL_DEVICE | (fs & LL_IOCTL_DEV), False) for dev in RUN_DEVICES if os.path.exists(dev)]
        ISOLATION.run_rules = rules
    return ISOLATION.run_rules


def _landlock_run(folder):
    """A Landlock layer of the run's own over the server's (src/sandbox/confine.rs):
    it reads and executes the system, the Python installation and the toolchains, reads
    /proc (Landlock keeps another domain's /proc files from it), reads and writes a few
    devices, does anything in its folder and nothing else; no TCP; no signal to, and no
    abstract socket of, a process outside it (the server, another run)."""
    libc = _libc()
    abi = _landlock_abi()
    fs = _landlock_fs(abi)
    attr = _RulesetAttr(fs, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
    size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        _check(-1, "landlock_create_ruleset")
    file_rights = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | (fs & (LL_TRUNCATE | LL_IOCTL_DEV))
    try:
        for path, rights, is_dir in _landlock_rules() + [(folder, fs, True)]:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not is_dir:
                    rights &= file_rights
                beneath = _PathBeneath(rights, fd)
                _check(libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, 1, ctypes.byref(beneath), 0),
                       "landlock_add_rule %s" % path)
            finally:
                os.close(fd)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        _check(libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _children():
    """This process's children: from /proc/self/task/*/children where the kernel
    keeps it, else by the parent of every process."""
    try:
        found = []
        for task in os.listdir("/proc/self/task"):
            with open("/proc/self/task/%s/children" % task) as f:
                found += [int(pid) for pid in f.read().split()]
        return found
    except (OSError, ValueError):
        pass
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
            if int(stat[stat.rfind(b")") + 2:].split()[1]) == me:
                found.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _user_tasks():
    """How many tasks the machine runs (the fifth field of /proc/loadavg): RLIMIT_NPROC
    counts all of the user's, so a run's cap is added to them."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        return 0


class Slot:
    """Where one run at a time runs: a mount namespace with a tmpfs on /tmp (kept
    for the server's life; a run's first step empties it), or, open, a folder per
    run."""

    def __init__(self, index):
        self.index = index
        self.mnt = -1  # the namespace
        self.tmp = -1  # its /tmp, for reading fetched files back
        self.tmp_mb = TMP_MB
        self.folder = None


def make_slot(index):
    """A slot; in namespaces, a helper process makes the mount namespace and its
    tmpfs, the server keeps both by descriptor, and the helper ends."""
    slot = Slot(index)
    if not ISOLATION.namespaces:
        return slot
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ready_r)
            unshare(CLONE_NEWNS)
            mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
                  "size=%dm,nr_inodes=%d,mode=1777" % (TMP_MB, TMP_INODES))
            os.write(ready_w, b"y")
            while True:
                signal.pause()
        finally:
            os._exit(1)
    os.close(ready_w)
    try:
        if os.read(ready_r, 1) != b"y":
            raise OSError("a slot's mount namespace could not be made")
        slot.mnt = os.open("/proc/%d/ns/mnt" % pid, os.O_RDONLY | os.O_CLOEXEC)
        slot.tmp = os.open("/proc/%d/root/tmp" % pid, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    finally:
        os.close(ready_r)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return slot


def probe_pid_limit():
    """Whether the kernel caps a PID namespace's pids (pid_max per namespace, Linux
    6.14 and later); where not, RLIMIT_NPROC caps a run's processes."""
    if not ISOLATION.namespaces or _in_initial_user_namespace():
        return False  # (there, pid_max is the whole machine's)
    unshare(CLONE_NEWPID)
    pid = os.fork()
    if pid == 0:
        try:
            _write_file("/proc/sys/kernel/pid_max", str(PID_LIMIT))
            with open("/proc/sys/kernel/pid_max") as f:
                os._exit(0 if f.read().strip() == str(PID_LIMIT) else 1)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    setns(HOME_PID_NS, CLONE_NEWPID)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _in_initial_user_namespace():
    try:
        with open("/proc/self/uid_map") as f:
            return f.read().split() == ["0", "0", "4294967295"]
    except OSError:
        return True


# ---------------------------------------------------------------- requests

class BadRequest(Exception):
    pass


def _number(req, key, default):
    value = req.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest("%s must be a number, not %s" % (key, type(value).__name__))
    if value != value or value < 0:
        raise BadRequest("%s must be a non-negative number" % key)
    return float(value)


def _relpath(path, field):
    if not isinstance(path, str) or not path:
        raise BadRequest("%s: a path must be a non-empty string" % field)
    norm = os.path.normpath(path)
    if os.path.isabs(path) or norm == ".." or norm.startswith("../") or "\0" in path or norm == ".":
        raise BadRequest("%s: the path %r leaves the run's folder" % (field, path))
    return norm


def parse_request(req, langs):
    """The run a request asks for: a dict, or BadRequest naming what is wrong."""
    if not isinstance(req, dict):
        raise BadRequest("a request is a JSON object")
    code = req.get("code")
    if not isinstance(code, str):
        raise BadRequest("code must be a string")
    language = req.get("language")
    if not isinstance(language, str):
        raise BadRequest("language must be a string")
    available = ", ".join(sorted(langs))
    if language not in langs:
        if language in KNOWN_LANGUAGES:
            raise BadRequest(
                "rwb's sandbox has no toolchain for %s on this machine (%s is not on PATH); it runs: %s"
                % (language, _TOOL_OF.get(language, language), available)
            )
        raise BadRequest("unknown language %r; rwb's sandbox runs: %s" % (language, available))
    memory = req.get("memory_limit_MB", -1)
    if memory is None:
        memory = -1
    if isinstance(memory, bool) or not isinstance(memory, (int, float)) or memory != int(memory):
        raise BadRequest("memory_limit_MB must be an integer")
    memory = int(memory)
    if memory <= 0:
        memory = DEFAULT_MEMORY_MB
    stdin = req.get("stdin")
    if stdin is not None and not isinstance(stdin, str):
        raise BadRequest("stdin must be a string or null")
    files = req.get("files") or {}
    if not isinstance(files, dict):
        raise BadRequest("files must be an object of path: base64")
    decoded = {}
    for path, content in files.items():
        rel = _relpath(path, "files")
        if content is None:
            continue
        if not isinstance(content, str):
            raise BadRequest("files: the content of %r must be a base64 string" % path)
        try:
            decoded[rel] = base64.b64decode(content, validate=True)
        except ValueError:
            raise BadRequest("files: the content of %r is not base64" % path)
    fetch = req.get("fetch_files") or []
    if not isinstance(fetch, list):
        raise BadRequest("fetch_files must be a list of paths")
    fetch = [(p, _relpath(p, "fetch_files")) for p in fetch]
    nonce = req.get("nonce")
    if nonce is not None and not isinstance(nonce, str):
        raise BadRequest("nonce must be a string or null")
    cap = req.get("output_cap", DEFAULT_OUTPUT_CAP)
    if cap is None:
        cap = DEFAULT_OUTPUT_CAP
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise BadRequest("output_cap must be a non-negative integer")
    return {
        "code": code,
        "language": language,
        "compile_timeout": _number(req, "compile_timeout", 10.0),
        "run_timeout": _number(req, "run_timeout", 10.0),
        "memory_mb": memory,
        "stdin": (stdin or "").encode("utf-8", "surrogateescape"),
        "files": decoded,
        "fetch": fetch,
        "nonce": nonce,
        "cap": cap,
    }


_TOOL_OF = {"cpp": "g++", "nodejs": "node", "go": "go", "rust": "rustc", "java": "java/javac", "bash": "bash"}


# ---------------------------------------------------------------- a step's first process

def _close_all_but(keep):
    keep = set(keep)
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        names = None
    if names is not None:
        for name in names:
            fd = int(name)
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        return
    low = 0
    for fd in sorted(keep):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def _say(fd, kind, payload=None):
    """A line to the server on the step's report pipe: a letter, then JSON."""
    line = kind if payload is None else kind + json.dumps(payload)
    data = (line + "\n").encode("utf-8", "replace")
    while data:
        data = data[os.write(fd, data):]


def _empty(folder):
    """Removes everything under `folder`, symlinks as themselves, however deep the
    last run nested its folders (one descriptor open at a time, names relative to
    it: no path grows long). Nothing else writes there meanwhile: every process of
    the last run is gone."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(folder, flags)
    names = []  # the folders descended into, from `folder` down
    try:
        while True:
            deeper = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        deeper = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
            if deeper is not None:
                child = os.open(deeper, flags, dir_fd=fd)
                os.close(fd)
                fd = child
                names.append(deeper)
                continue
            if not names:
                return
            parent = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)


def _own_proc():
    """A procfs of this step's PID namespace (it sees only its own processes), the
    last step's unmounted; and at most PID_LIMIT pids, where the kernel caps them."""
    try:
        umount("/proc")
    except OSError:
        pass
    try:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        pass
    if ISOLATION.pid_limit:
        _write_file("/proc/sys/kernel/pid_max", str(PID_LIMIT))


def _prepare_folder(plan):
    """The run's folder, fresh (the slot's /tmp emptied of the last run), holding
    `files` and the code."""
    folder = plan["folder"]
    if ISOLATION.namespaces:
        _empty("/tmp")
        if plan["tmp_mb"] != plan["slot_tmp_mb"]:
            mount(None, "/tmp", None, MS_REMOUNT | MS_NOSUID | MS_NODEV,
                  "size=%dm,nr_inodes=%d,mode=1777" % (plan["tmp_mb"], TMP_INODES))
        os.mkdir(folder, 0o755)
    for rel, content in plan["files"].items():
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content)
    with open(os.path.join(folder, plan["source"]), "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(plan["code"])


def _step_process(plan, fds):
    """The first process of a step (never returns): into the slot's mount namespace,
    a new IPC namespace, a procfs of its own; the folder made on the first step;
    then the program."""
    report = fds["rep"]
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the server gone, the step goes
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        keep = [fd for fd in fds.values() if fd is not None]
        if ISOLATION.namespaces:
            keep.append(plan["slot_mnt"])
        _close_all_but(keep)
        if ISOLATION.namespaces:
            setns(plan["slot_mnt"], CLONE_NEWNS)
            os.close(plan["slot_mnt"])
            unshare(CLONE_NEWIPC)
            _own_proc()
            # a session of its own: no terminal of the server's to reach, and where the
            # kernel groups the scheduling by session (autogroup), the step is one
            # group: a fork bomb weighs on the CPU as one program, not as hundreds
            os.setsid()
        if plan["first"]:
            _prepare_folder(plan)
        os.chdir(plan["folder"])
        if ISOLATION.confined:
            _landlock_run(plan["folder"])
    except BaseException as exc:  # noqa: BLE001
        try:
            _say(report, "E", "rwb: cannot set the run up: %s" % exc)
        finally:
            os._exit(0)
    if plan["command"] is None:
        _python_step(plan, fds)
    _exec_step(plan, fds)


def _exec_step(plan, fds):
    """Another language's compiler or program: forked (without capabilities, within
    the limits) and exec'd; this process waits for it, reaping what else ends (it is
    the namespace's first), and says how it ended."""
    report = fds["rep"]
    command = plan["command"]
    failed_r, failed_w = os.pipe()
    _say(report, "R")
    started = time.monotonic()
    try:
        pid = os.fork()
    except OSError as exc:
        _say(report, "X", {"error": "rwb: cannot start %s: %s" % (command[0], exc)})
        os._exit(0)
    if pid == 0:
        try:
            os.close(failed_r)
            stdin = fds["in"] if fds["in"] is not None else os.open(os.devnull, os.O_RDONLY)
            os.dup2(stdin, 0)
            os.dup2(fds["out"], 1)
            os.dup2(fds["err"], 2)
            _close_all_but([0, 1, 2, failed_w])
            for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
            _drop_power()
            _limits(plan["limits"])
            os.execve(command[0], command, _run_environment(plan["folder"]))
        except BaseException as exc:  # noqa: BLE001
            try:
                os.write(failed_w, str(exc).encode("utf-8", "replace"))
            finally:
                os._exit(127)
    os.close(failed_w)
    for name in ("in", "out", "err"):
        if fds.get(name) is not None:
            os.close(fds[name])
    failure = b""
    while True:
        chunk = os.read(failed_r, 4096)
        if not chunk:
            break
        failure += chunk
    while True:
        got, wstatus, usage = os.wait4(-1, 0)
        if got == pid:
            break
    ended = {"t": time.monotonic() - started, "cpu": usage.ru_utime + usage.ru_stime}
    if failure:
        ended["error"] = "rwb: cannot start %s: %s" % (command[0], failure.decode("utf-8", "replace"))
    elif os.WIFSIGNALED(wstatus):
        ended["rc"] = -os.WTERMSIG(wstatus)
    else:
        ended["rc"] = os.WEXITSTATUS(wstatus)
    _say(report, "X", ended)
    os._exit(0)


# ---------------------------------------------------------------- the program's side

def _drop_power():
    """No power over the server, the slot or the mounts: every capability dropped for
    good (bounding set emptied, securebits locked so that no exec regains any, no new
    privileges). The server is not dumpable, so a process of the same user without
    capabilities can neither trace it nor open its memory, descriptors or
    namespaces; nor can it mount, unmount or setns."""
    if ISOLATION.namespaces:
        for cap in range(LAST_CAP + 1):
            prctl(PR_CAPBSET_DROP, cap)
        _check(prctl(PR_SET_SECUREBITS, SECURE_ALL_LOCKED), "securebits")
        data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: none
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        _check(_libc().capset(header, data), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def _limits(limits):
    mem = limits["memory_mb"] << 20
    which = resource.RLIMIT_DATA if limits["data_limit"] else resource.RLIMIT_AS
    resource.setrlimit(which, (mem, mem))
    if limits["cpu"]:
        cpu = int(limits["cpu"]) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if not ISOLATION.pid_limit:
        nproc = limits["nproc"]
        if not ISOLATION.namespaces:
            nproc += _user_tasks()  # (counted over all the user's tasks, not the run's)
        try:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        except (ValueError, OSError):
            pass
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
    except (ValueError, OSError):
        pass


RUN_ENV_KEYS = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "RWB_CONTAINMENT")


def _run_environment(folder):
    """What a program finds in its environment: none of the server's secrets. Its
    temporary folder is the slot's /tmp in a box, else the run's folder."""
    env = {k: os.environ[k] for k in RUN_ENV_KEYS if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    tmp = "/tmp" if ISOLATION.namespaces else folder
    env["TMPDIR"] = tmp
    env["GOCACHE"] = tmp + "/.cache/go-build"
    env["GOPATH"] = tmp + "/go"
    env["GO111MODULE"] = "off"
    return env


def _python_step(plan, fds):
    """Python, in this very process (never returns)."""
    report = fds["rep"]
    try:
        for fd, name in enumerate(("in", "out", "err")):
            os.dup2(fds[name], fd)
            os.close(fds[name])
        env = _run_environment(plan["folder"])
        os.environ.clear()
        os.environ.update(env)
        _drop_power()
        _limits(plan["limits"])
    except BaseException as exc:  # noqa: BLE001  (nothing of the user's ran yet)
        try:
            _say(report, "E", "rwb: cannot set the program up: %s" % exc)
        finally:
            os._exit(0)
    _run_python(plan["code"], report, plan["nonce"], os.path.join(plan["folder"], plan["source"]))


# Signals whose default action ends a process, which the first process of a PID
# namespace would not get: a Python run (that process) ends on them as another would.
FATAL_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGHUP", "SIGQUIT", "SIGTERM", "SIGALRM", "SIGUSR1", "SIGUSR2",
                                       "SIGVTALRM", "SIGPROF") if hasattr(signal, name)
)


def _fresh_streams():
    def stream(fd, mode, errors, line):
        if mode == "r":
            raw = io.FileIO(fd, "r", closefd=False)
            return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors=errors)
        raw = io.FileIO(fd, "w", closefd=False)
        return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors=errors, line_buffering=line)

    sys.stdin = sys.__stdin__ = stream(0, "r", "surrogateescape", False)
    sys.stdout = sys.__stdout__ = stream(1, "w", "surrogateescape", False)
    sys.stderr = sys.__stderr__ = stream(2, "w", "backslashreplace", True)


def _run_python(code, report, nonce, path):
    """Runs `code` as `python3 path` would, in this interpreter: a fresh `__main__`,
    sys.argv, SystemExit honoured, an uncaught exception printed as Python prints it
    (exit 1), atexit functions and threads seen out; the nonce written when the code
    ran to its end."""
    if ISOLATION.namespaces:
        def die(sig, _frame):
            os.write(report, b"S%d\n" % sig)
            os._exit(128 + sig)

        for sig in FATAL_SIGNALS:
            if signal.getsignal(sig) == signal.SIG_DFL:
                signal.signal(sig, die)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    atexit._clear()
    _fresh_streams()
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins, "__file__": path, "__cached__": None})
    sys.modules["__main__"] = main
    sys.argv = [path]
    sys.path[0] = os.path.dirname(path)
    secret = ("N" + nonce + "\n").encode() if nonce else None
    del nonce
    os.write(report, b"R\n")
    rc = 0
    try:
        compiled = compile(code, path, "exec", dont_inherit=True)
        del code
        exec(compiled, main.__dict__)
        if secret is not None:
            os.write(report, secret)
    except SystemExit as stop:
        rc = _exit_code(stop.code)
    except MemoryError:
        main.__dict__.clear()
        os.write(report, b"M\n")
        _print_uncaught()
        rc = 137
    except BaseException:  # noqa: BLE001
        _print_uncaught()
        rc = 1
    secret = None
    try:
        threading = sys.modules.get("threading")
        if threading is not None and hasattr(threading, "_shutdown"):
            threading._shutdown()
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        _print_uncaught()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001  (as Python at exit: a failed flush is 120)
            if rc == 0:
                rc = 120
    os._exit(rc & 0xFF)


def _exit_code(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        sys.stderr.write(str(code) + "\n")
    except BaseException:  # noqa: BLE001
        pass
    return 1


def _print_uncaught():
    kind, value, tb = sys.exc_info()
    if tb is not None:
        tb = tb.tb_next  # not the runner's own frame
        if value is not None:
            value = value.with_traceback(tb)
    try:
        try:
            sys.stdout.flush()
        except BaseException:  # noqa: BLE001
            pass
        sys.excepthook(kind, value, tb)
    except BaseException:  # noqa: BLE001
        try:
            os.write(2, ("%s: %s\n" % (kind.__name__, value)).encode("utf-8", "replace"))
        except BaseException:  # noqa: BLE001
            pass


# ---------------------------------------------------------------- the server

_MEMORY_SIGNS = (
    "std::bad_alloc", "java.lang.OutOfMemoryError", "JavaScript heap out of memory",
    "Fatal process out of memory", "Failed to reserve virtual memory", "runtime: out of memory",
    "fatal error: out of memory", "memory allocation of", "Cannot allocate memory", "MemoryError",
)


class Run:
    def __init__(self, rid, req):
        self.id = rid
        self.req = req
        self.slot = None
        self.results = {}  # step kind -> command result
        self.error = None  # rwb's own failure: the message
        self.answered = False


class Step:
    def __init__(self, run, kind):
        self.run = run
        self.kind = kind  # "compile" or "run"
        self.pid = None
        self.fds = {}  # name -> server-side descriptor still open
        self.names = {}  # descriptor -> name
        self.out = bytearray()
        self.err = bytearray()
        self.truncated = False
        self.report = bytearray()
        self.report_lines = []
        self.started = None  # when the program started (its limit runs from then)
        self.deadline = None
        self.timed_out = False
        self.killed_at = None
        self.wstatus = None
        self.usage = None
        self.reaped_at = None
        self.stdin = b""
        self.stdin_off = 0


class Server:
    def __init__(self, slots, langs, out_fd):
        self.langs = langs
        self.out_fd = out_fd
        self.sel = selectors.DefaultSelector()
        self.queue = deque()
        self.free = [make_slot(i) for i in range(max(1, slots))]
        self.free.reverse()
        self.slots = len(self.free)
        self.steps = {}  # pid -> Step
        self.inbuf = bytearray()
        self.stdin_open = True
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)

    # -- the wire
    def reply(self, obj):
        data = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.out_fd, view)
            except BlockingIOError:
                time.sleep(0.001)
                continue
            view = view[written:]

    def error(self, rid, message):
        self.reply({
            "id": rid, "status": "SandboxError", "message": message, "compile_result": None,
            "run_result": None, "executor_pod_name": None, "files": {},
        })

    def take_line(self, line):
        line = line.strip()
        if not line:
            return
        rid = None
        try:
            raw = json.loads(line)
            if isinstance(raw, dict):
                rid = raw.get("id")
            req = parse_request(raw, self.langs)
        except ValueError as exc:
            self.error(rid, "rwb: the request is not JSON: %s" % exc)
            return
        except BadRequest as exc:
            self.error(rid, str(exc))
            return
        if not ISOLATION.namespaces and not ISOLATION.confined and not ISOLATION.unsafe:
            self.error(rid, "rwb's sandbox refuses to run code here: it cannot isolate it (%s); "
                            "set [sandbox] unsafe = true to run it without isolation" % ISOLATION.why)
            return
        self.queue.append(Run(rid, req))

    def read_requests(self):
        try:
            data = os.read(0, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.stdin_open = False
            self.sel.unregister(0)
            if self.inbuf.strip():
                self.take_line(bytes(self.inbuf))
            self.inbuf = bytearray()
            return
        self.inbuf += data
        while True:
            at = self.inbuf.find(b"\n")
            if at < 0:
                break
            line = bytes(self.inbuf[:at])
            del self.inbuf[: at + 1]
            self.take_line(line)

    # -- runs and their steps
    def start_run(self, run, slot):
        run.slot = slot
        if not ISOLATION.namespaces:
            import tempfile

            try:
                slot.folder = tempfile.mkdtemp(prefix="rwb-sandbox-run-", dir=os.environ.get("RWB_SANDBOX_BASE"))
            except OSError as exc:
                run.error = "rwb: cannot make the run's folder: %s" % exc
                self.finish_run(run)
                return
        spec = self.langs[run.req["language"]]
        self.start_step(run, "compile" if spec["compile"] else "run", first=True)

    def plan(self, run, kind, first):
        req = run.req
        spec = self.langs[req["language"]]
        source = spec["file"]
        if req["language"] == "java":
            source = _java_class(req["code"]) + ".java"
        mem = req["memory_mb"]
        if kind == "compile":
            command = list(spec["compile"])
            if req["language"] == "java":
                command[-1] = source
            limits = {"memory_mb": max(mem, 4096), "data_limit": True, "cpu": req["compile_timeout"], "nproc": 256}
        else:
            command = list(spec["run"]) if spec["run"] else None
            if req["language"] == "java":
                command[-1] = source[: -len(".java")]
                command.insert(1, "-Xmx%dm" % max(16, mem * 3 // 4))
            data_limit = spec.get("data_limit", False)
            limits = {"memory_mb": mem, "data_limit": data_limit, "cpu": req["run_timeout"],
                      "nproc": 128 if data_limit else PROCESS_LIMIT}
        slot = run.slot
        return {
            "first": first,
            "folder": RUN_DIR if ISOLATION.namespaces else slot.folder,
            "slot_mnt": slot.mnt,
            "slot_tmp_mb": slot.tmp_mb,
            "tmp_mb": spec.get("tmp_mb", TMP_MB),
            "files": req["files"] if first else {},
            "code": req["code"],
            "source": source,
            "command": command,
            "limits": limits,
            "nonce": req["nonce"],
        }

    def start_step(self, run, kind, first):
        step = Step(run, kind)
        plan = self.plan(run, kind, first)
        names = ("out", "err", "rep") + (("in",) if kind == "run" else ())
        pipes = {}
        try:
            for name in names:
                pipes[name] = os.pipe()
        except OSError as exc:
            for r, w in pipes.values():
                os.close(r)
                os.close(w)
            run.error = "rwb: cannot start a run: %s" % exc
            self.finish_run(run)
            return
        child = {"out": pipes["out"][1], "err": pipes["err"][1], "rep": pipes["rep"][1],
                 "in": pipes["in"][0] if "in" in pipes else None}
        failure = None
        try:
            if ISOLATION.namespaces:
                unshare(CLONE_NEWPID)  # the next fork is the first of a new namespace
            pid = os.fork()
        except OSError as exc:
            pid, failure = None, exc
        if pid == 0:
            try:
                os.close(self.out_fd)
                _step_process(plan, child)
            finally:
                os._exit(70)
        if ISOLATION.namespaces:
            try:
                setns(HOME_PID_NS, CLONE_NEWPID)  # later forks: the server's own namespace
            except OSError as exc:
                # every later fork would land in this step's namespace: stop here
                # (the runs in flight die with the server; rwb sees it end)
                sys.stderr.write("rwb's sandbox: cannot return to its PID namespace: %s\n" % exc)
                os._exit(70)
        elif pid is not None:
            try:
                os.setpgid(pid, pid)  # (open) killed as a group; also here, so no kill races it
            except OSError:
                pass
        for fd in child.values():
            if fd is not None:
                os.close(fd)
        if pid is None:
            for name, (r, w) in pipes.items():
                os.close(w if name == "in" else r)
            run.error = "rwb: cannot start a run: %s" % failure
            self.finish_run(run)
            return
        step.pid = pid
        step.deadline = time.monotonic() + SETUP_SECONDS
        for name in ("out", "err", "rep"):
            fd = pipes[name][0]
            os.set_blocking(fd, False)
            step.fds[name] = fd
            step.names[fd] = name
            self.sel.register(fd, selectors.EVENT_READ, step)
        if "in" in pipes:
            fd = pipes["in"][1]
            os.set_blocking(fd, False)
            step.fds["in"] = fd
            step.names[fd] = "in"
            step.stdin = run.req["stdin"]
            if step.stdin:
                self.sel.register(fd, selectors.EVENT_WRITE, step)
            else:
                self.close(step, "in")
        self.steps[pid] = step

    def close(self, step, name):
        fd = step.fds.pop(name, None)
        if fd is None:
            return
        step.names.pop(fd, None)
        try:
            self.sel.unregister(fd)
        except (KeyError, ValueError):
            pass
        os.close(fd)

    def ready(self, step, fd):
        name = step.names.get(fd)
        if name is None:
            return
        if name == "in":
            self.feed(step, fd)
            return
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.close(step, name)
            return
        if name in ("out", "err"):
            buf = step.out if name == "out" else step.err
            room = step.run.req["cap"] - len(buf)
            if len(data) > room:
                step.truncated = True  # the rest is drained and dropped
                data = data[: max(room, 0)]
            buf += data
        elif len(step.report) < 1 << 16:
            step.report += data[: (1 << 16) - len(step.report)]
            while b"\n" in step.report:
                line, _, rest = bytes(step.report).partition(b"\n")
                step.report = bytearray(rest)
                self.said(step, line.decode("utf-8", "replace"))

    def said(self, step, line):
        step.report_lines.append(line)
        if line == "R" and step.started is None:
            now = time.monotonic()
            step.started = now
            limit = step.run.req["compile_timeout" if step.kind == "compile" else "run_timeout"]
            step.deadline = now + limit
            if step.run.slot is not None:
                step.run.slot.tmp_mb = self.langs[step.run.req["language"]].get("tmp_mb", TMP_MB)

    def feed(self, step, fd):
        chunk = step.stdin[step.stdin_off: step.stdin_off + (1 << 16)]
        try:
            step.stdin_off += os.write(fd, chunk)
        except BlockingIOError:
            return
        except OSError:
            step.stdin_off = len(step.stdin)  # the program closed its stdin
        if step.stdin_off >= len(step.stdin):
            self.close(step, "in")

    def kill(self, step):
        try:
            if ISOLATION.namespaces:
                os.kill(step.pid, signal.SIGKILL)  # the first process: its namespace goes with it
            else:
                os.killpg(step.pid, signal.SIGKILL)
        except OSError:
            pass

    def reap(self):
        ended = False
        for pid, step in self.steps.items():
            if step.wstatus is not None:
                continue
            try:
                got, wstatus, usage = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                got, wstatus, usage = pid, 0, None
            if got == pid:
                step.wstatus, step.usage = wstatus, usage
                step.reaped_at = time.monotonic()
                if not ISOLATION.namespaces:
                    ended = True
                    try:
                        os.killpg(pid, signal.SIGKILL)  # what it left behind
                    except OSError:
                        pass
        if ended:
            self.sweep_orphans()

    def sweep_orphans(self):
        """(Without namespaces) what a run left behind outside its process group (a
        child that called setsid and outlived its parent) came back to the server,
        its subreaper: killed and reaped, until none is left."""
        for _round in range(16):
            found = [pid for pid in _children() if pid not in self.steps]
            if not found:
                return
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            for pid in found:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass

    def check_deadlines(self, now):
        for step in self.steps.values():
            if step.wstatus is not None or step.deadline is None or now < step.deadline:
                continue
            step.timed_out = True
            step.killed_at = now
            step.deadline = None
            self.kill(step)

    def finish_ready(self, now):
        """A step is over when its first process is reaped (in a namespace, every
        process of the step died before that) and its output is drained (or a
        second later: nothing outside the step can hold its pipes)."""
        for pid, step in list(self.steps.items()):
            if step.wstatus is None:
                continue
            reading = any(name != "in" for name in step.fds)
            if reading and now - step.reaped_at < 1.0:
                continue
            for name in list(step.fds):
                self.close(step, name)
            del self.steps[pid]
            try:
                self.step_ended(step)
            except Exception as exc:  # noqa: BLE001  (a fault of rwb's: this run fails, the server goes on)
                run = step.run
                if not run.answered:
                    if run.slot is not None:
                        self.release(run.slot)
                        run.slot = None
                    run.answered = True
                    self.error(run.id, "rwb: the sandbox failed on this run: %r" % exc)

    def step_ended(self, step):
        run = step.run
        said = {}  # what the step said, first word of each kind
        started = False
        for line in step.report_lines:
            kind = line[:1]
            if kind == "R":
                started = True
            elif kind in "EX" and started and step.kind == "run" and run.req["language"] == "python":
                continue  # the program's own words on that pipe, after it started
            else:
                said.setdefault(kind, line[1:])
        if "E" in said:
            try:
                run.error = json.loads(said["E"])
            except ValueError:
                run.error = "rwb: the run could not be set up"
            self.finish_run(run)
            return
        result = self.command_result(step, said)
        run.results[step.kind] = result
        if result is None:
            run.error = "rwb: the run could not be set up in time" if step.timed_out else \
                "rwb: the run ended before its program started"
            self.finish_run(run)
            return
        if step.kind == "compile" and result["status"] == "Finished" and result["return_code"] == 0:
            self.start_step(run, "run", first=False)
            return
        self.finish_run(run)

    def command_result(self, step, said):
        if step.started is None:
            return None
        req = step.run.req
        result = {
            "status": "Finished", "execution_time": 0.0, "return_code": None,
            "stdout": bytes(step.out).decode("utf-8", "replace"),
            "stderr": bytes(step.err).decode("utf-8", "replace"),
        }
        if step.truncated:
            result["truncated"] = True
        python = step.kind == "run" and req["language"] == "python"
        if python and req["nonce"] is not None:
            result["nonce_seen"] = ("N" + req["nonce"]) in step.report_lines
        if step.timed_out:
            result["status"] = "TimeLimitExceeded"
            result["execution_time"] = round(step.killed_at - step.started, 6)
            return result
        limit = req["compile_timeout" if step.kind == "compile" else "run_timeout"]
        if python:
            seconds = step.reaped_at - step.started
            wstatus = step.wstatus
            rc = -os.WTERMSIG(wstatus) if os.WIFSIGNALED(wstatus) else os.WEXITSTATUS(wstatus)
            died_of = said.get("S", "")
            if died_of.isdigit() and rc == 128 + int(died_of):
                rc = -int(died_of)  # a signal it died of, as the first process could not
            cpu = (step.usage.ru_utime + step.usage.ru_stime) if step.usage is not None else 0.0
        else:
            try:
                ended = json.loads(said.get("X", "null"))
            except ValueError:
                ended = None
            if not isinstance(ended, dict):
                result["status"] = "Error"
                result["stderr"] += "rwb: the step ended without saying how\n"
                return result
            if ended.get("error"):
                result["status"] = "Error"
                result["stderr"] += ended["error"] + "\n"
                return result
            seconds, rc, cpu = ended.get("t", 0.0), ended.get("rc"), ended.get("cpu", 0.0)
        result["execution_time"] = round(seconds, 6)
        if limit and cpu >= int(limit) + 1 and rc in (-signal.SIGXCPU, -signal.SIGKILL):
            result["status"] = "TimeLimitExceeded"  # its CPU time ran out before the clock
            return result
        result["return_code"] = rc
        if rc != 0:
            memory = ("M" in said) if python else any(s in result["stderr"] for s in _MEMORY_SIGNS)
            if memory and step.kind == "run":
                result["memory"] = True
                result["return_code"] = 137
                err = result["stderr"]
                if err and not err.endswith("\n"):
                    err += "\n"
                result["stderr"] = err + "rwb: memory limit (%d MB)\n" % req["memory_mb"]
        return result

    def finish_run(self, run):
        response = {
            "id": run.id, "status": "Success", "message": "", "compile_result": run.results.get("compile"),
            "run_result": run.results.get("run"), "executor_pod_name": None, "files": {},
        }
        results = [r for r in (response["compile_result"], response["run_result"]) if r is not None]
        if run.error is not None:
            response["status"], response["message"] = "SandboxError", run.error
        elif any(r["status"] == "Error" for r in results):
            response["status"] = "SandboxError"
            response["message"] = next(r["stderr"] for r in results if r["status"] == "Error").strip()
        elif any(r["status"] == "TimeLimitExceeded" or r["return_code"] != 0 for r in results):
            response["status"] = "Failed"
        if run.slot is not None:
            if run.error is None and run.req["fetch"]:
                response["files"] = self.fetch(run)
            self.release(run.slot)
            run.slot = None
        run.answered = True
        self.reply(response)

    def fetch(self, run):
        """The files asked back, read from the run's folder without following a
        symlink (a program may have left one pointing anywhere)."""
        slot = run.slot
        files, total = {}, 0
        try:
            base = os.dup(slot.tmp) if ISOLATION.namespaces else os.open(slot.folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return files
        try:
            for asked, rel in run.req["fetch"]:
                parts = ([os.path.basename(RUN_DIR)] if ISOLATION.namespaces else []) + rel.split("/")
                data = _read_beneath(base, parts, FETCH_LIMIT - total)
                if data is not None:
                    total += len(data)
                    files[asked] = base64.b64encode(data).decode()
        finally:
            os.close(base)
        return files

    def release(self, slot):
        if not ISOLATION.namespaces and slot.folder:
            shutil.rmtree(slot.folder, ignore_errors=True)
            slot.folder = None
        self.free.append(slot)

    # -- the loop
    def serve(self):
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, None)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        while True:
            while self.queue and self.free:
                self.start_run(self.queue.popleft(), self.free.pop())
            if not self.stdin_open and not self.queue and not self.steps:
                return
            now = time.monotonic()
            timeout = None
            for step in self.steps.values():
                if step.wstatus is not None:
                    left = 0.01
                elif step.deadline is not None:
                    left = max(0.0, step.deadline - now)
                else:
                    continue
                timeout = left if timeout is None else min(timeout, left)
            for key, _mask in self.sel.select(timeout):
                if key.data is None:
                    self.read_requests()
                elif key.data == "wake":
                    try:
                        while os.read(self.wake_r, 512):
                            pass
                    except OSError:
                        pass
                else:
                    self.ready(key.data, key.fd)
            self.reap()
            now = time.monotonic()
            self.check_deadlines(now)
            self.finish_ready(now)


def _read_beneath(base, parts, room):
    """The regular file at base/parts..., never through a symlink; None when it is
    not there, not a regular file, or larger than `room`."""
    import stat

    fds = []
    try:
        at = base
        for name in parts[:-1]:
            at = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=at)
            fds.append(at)
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=at)
        fds.append(fd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > room:
            return None
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > room:
                return None
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        for fd in fds:
            os.close(fd)


def main(argv):
    try:
        slots = int(argv[1]) if len(argv) > 1 else (os.cpu_count() or 1)
    except ValueError:
        sys.stderr.write("usage: rwb_sandbox_server.py SLOTS\n")
        return 2
    out_fd = os.dup(1)
    os.set_inheritable(out_fd, False)
    os.dup2(2, 1)  # anything printed by accident goes to stderr, never into the protocol
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    langs, homes = find_languages()
    prepare_isolation(homes)
    if not ISOLATION.namespaces:
        try:
            prctl(PR_SET_CHILD_SUBREAPER, 1)  # what a run leaves behind comes back here
        except OSError:
            pass
    try:
        ISOLATION.pid_limit = probe_pid_limit()
        server = Server(slots, langs, out_fd)
        # from here on (the slots made), no process without capabilities may trace
        # the server or a step it forks, nor open their memory or descriptors
        prctl(PR_SET_DUMPABLE, 0)
    except OSError as exc:
        sys.stderr.write("rwb's sandbox cannot start: %s\n" % exc)
        return 70
    try:
        import gc

        gc.collect()
        gc.freeze()  # forked steps do not copy the server's objects just to scan them
    except AttributeError:
        pass
    isolation = {
        "namespaces": ISOLATION.namespaces,
        "private_root": ISOLATION.private_root,
        "pid_limit": PID_LIMIT if ISOLATION.pid_limit else None,
        "unsafe": ISOLATION.unsafe,
        "confined": ISOLATION.confined,
    }
    if ISOLATION.why:
        isolation["why"] = ISOLATION.why
    server.reply({"ready": True, "languages": sorted(langs), "slots": server.slots, "isolation": isolation})
    try:
        server.serve()
    except BrokenPipeError:
        pass
    finally:
        if ISOLATION.confined and os.environ.get("RWB_SANDBOX_BASE"):
            # (a server killed outright leaves it: the next one sweeps it)
            shutil.rmtree(os.environ["RWB_SANDBOX_BASE"], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
