"""The zygote: a warm interpreter that forks one worker per evaluator (main), and what
a forked child does before it serves (_child): its own process group, stdin and fd 1
away from the control pipe, connected to rwb's socket. When rwb goes away it kills
every worker group it forked.
"""

import json
import os
import signal
import socket
import sys
import traceback

from .imports import _warm_dist_index
from .load import _load_reward_kit
from .wire import PROTOCOL_VERSION, _dumps
from .worker import GRADER_STYLE, Worker


def _set_parent_death_signal():
    """Linux: die with the zygote, even if it is killed with SIGKILL."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


# How rwb started this zygote (SPEC §18): "contained" when rwb boxed it in (a user
# namespace of its own, where it may make narrower ones for its workers), "open: WHY"
# when the kernel refused, empty when rwb ran it open on purpose.
CONTAINMENT = os.environ.pop("RWB_CONTAINMENT", "")
CONTAINED = CONTAINMENT == "contained"

# unshare(2) flags
_NEW_PID = 0x20000000
_NEW_NET = 0x40000000


def _unshare(flags):
    """unshare(2) through libc (os.unshare is Python 3.12+); False when refused."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(flags) == 0
    except Exception:
        return False


def _forks_at_home():
    """After forking a worker into a PID namespace of its own: the zygote's next
    forks (a subprocess an import starts) go to its own namespace again, not to the
    worker's (where they would fail once the worker is gone)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open("/proc/self/ns/pid", os.O_RDONLY)
        try:
            libc.setns(fd, _NEW_PID)
        finally:
            os.close(fd)
    except Exception:
        pass


def _host_pid():
    """This process's pid as rwb sees it: in a PID namespace of its own a worker is
    pid 1 to itself, but /proc (the host's) names it as the host does."""
    if CONTAINED:
        try:
            return int(os.readlink("/proc/self"))
        except (OSError, ValueError):
            pass
    return os.getpid()


def _contain_child(evaluator):
    """A contained worker's own narrower box: no network when its evaluator says
    `network = false`, and a private temporary folder (TMPDIR) of its own."""
    if not CONTAINED:
        return
    os.environ["RWB_CONTAINED"] = "1"  # what errors.refused_write_hint reads
    if evaluator.get("network") is False and not _unshare(_NEW_NET):
        sys.__stderr__.write("rwb: the worker for %s keeps the network: unshare refused\n" % evaluator.get("name"))
    try:
        import tempfile

        os.environ["TMPDIR"] = tempfile.mkdtemp(prefix="rwb-worker-", dir="/tmp")
        tempfile.tempdir = None
    except OSError:
        pass


def _own_process_group():
    """Make this process the leader of a new process group, so that what its
    evaluations start can be killed with it."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass


def _leave(code):
    """End a worker: kill its process group (every process an evaluation started,
    and this one), then exit. Never the zygote's group, should setpgid have failed."""
    sys.__stderr__.flush()
    if os.getpgrp() == os.getpid():
        try:
            os.killpg(0, signal.SIGKILL)
        except OSError:
            pass
    os._exit(code)


def _stacks_on_request(folder, pid=None):
    """SIGUSR1 makes this worker write every thread's Python stack to
    stacks-PID.txt beside its mark page: what a stuck run's report shows (tests'
    output_within, scripts/stress_hang.py) when py-spy is not installed."""
    try:
        import faulthandler

        path = os.path.join(folder, "stacks-%d.txt" % (pid or os.getpid()))
        stream = open(path, "w")
        faulthandler.register(signal.SIGUSR1, file=stream, all_threads=True, chain=False)
    except Exception:
        pass  # only a diagnosis aid


def _child(sock_path, token, root, spec):
    _own_process_group()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _set_parent_death_signal()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # C-level writes to stdout must never reach the zygote's control pipe
    _contain_child(spec)
    me = _host_pid()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(sock_path)
    sock.sendall(_dumps({"hello": token, "pid": me}))
    if "random" in sys.modules:
        sys.modules["random"].seed()
    folder = spec.get("folder") or os.path.dirname(spec["file"])
    os.chdir(root)
    for entry in (root, folder):
        while entry in sys.path:
            sys.path.remove(entry)
    sys.path[0:0] = [folder, root]
    worker = Worker(sock, spec, root)
    worker.open_mark(os.path.join(os.path.dirname(sock_path), "mark-%d" % me))
    _stacks_on_request(os.path.dirname(sock_path), me)
    sys.stdin = open(os.devnull)
    sys.stdout = worker.capture
    sys.stderr = worker.capture
    code = 0
    try:
        if worker.load() is not None:
            worker.serve()
    except (BrokenPipeError, ConnectionResetError):
        pass
    except BaseException:
        sys.__stderr__.write(traceback.format_exc())
        code = 70
    _leave(code)


def _kill_worker_groups(pids):
    """Kill the process group of every worker this zygote forked that may still have
    members. A pid that now belongs to a process that is not our child was reused:
    its group is someone else's."""
    me = os.getpid()
    for pid in pids:
        if CONTAINED:
            # the pids are this PID namespace's (the first of which the zygote is):
            # every one of them is a worker or gone, and /proc is the host's
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            continue
        try:
            with open("/proc/%d/stat" % pid, "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if int(fields[1]) != me:
                continue
        except (OSError, IndexError, ValueError):
            pass  # gone (its group may live on), or no /proc
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def _live_groups(pids):
    """The worker groups that still have a member."""
    live = set()
    for pid in pids:
        try:
            os.killpg(pid, 0)
            live.add(pid)
        except PermissionError:
            live.add(pid)
        except OSError:
            pass
    return live


def _compile_once(code_dir):
    """rwb's own modules compiled into code_dir's __pycache__, once per interpreter, so
    that the next runs read them compiled (rwb runs Python with
    PYTHONDONTWRITEBYTECODE, which stops importing from writing them, not reading them).
    The compiling is done by a child, beside the first workers; it leaves a mark when
    done. A private folder (no "whole" mark: see src/engine/code_dir.rs) is gone after
    the run, and is not compiled."""
    if not os.path.exists(os.path.join(code_dir, "whole")):
        return
    mark = os.path.join(code_dir, "compiled-%s" % sys.implementation.cache_tag)
    if os.path.exists(mark):
        return
    if CONTAINED:
        _unshare(_NEW_PID)  # forks go where the last unshare said: a namespace of its own
    if os.fork() != 0:
        if CONTAINED:
            _forks_at_home()
        return  # reaped by the kernel (SIGCHLD is ignored); in the zygote's group,
        # it goes with the run (a compile cut short leaves no mark, and is redone)
    code = 0
    try:
        import compileall

        ok = compileall.compile_dir(code_dir, quiet=2, force=False, legacy=False)
        if ok:
            with open(mark, "w"):
                pass
    except BaseException:
        code = 1
    os._exit(code)


def main(argv):
    sock_path, compat_dir = argv[1], argv[2]
    control_out = sys.stdout
    sys.stdout = sys.stderr  # anything the preloaded modules print stays off the control pipe
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _stacks_on_request(os.path.dirname(sock_path))
    if os.environ.get("RWB_E2B_STANDIN"):
        # `[sandbox] e2b = true`: rwb's local E2B first on every worker's path (SPEC §18)
        code_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        sys.path.insert(0, os.path.join(code_dir, "standins"))
    info = _load_reward_kit(compat_dir)

    def reply(obj):
        control_out.write(json.dumps(obj) + "\n")
        control_out.flush()

    reply(
        {
            "zygote": "ready",
            "protocol": PROTOCOL_VERSION,
            "python": sys.version.split()[0],
            "executable": sys.executable,
            "reward_kit": info,
            "containment": CONTAINMENT or None,
        }
    )
    _compile_once(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    stdin = sys.stdin.buffer
    warmed = False
    forked = set()  # worker pids, each the id of its own process group
    while True:
        line = stdin.readline()
        if not line:
            break
        command = json.loads(line)
        op = command.get("op")
        if op == "fork":
            if command["evaluator"].get("style") == GRADER_STYLE and "rwb_py.graders" not in sys.modules:
                # imported here once, before the fork: every grader's worker shares it
                # (a workspace without graders never imports it: see Worker.load_grader)
                from . import graders  # noqa: F401
            sys.stderr.flush()
            forked = _live_groups(forked)
            if CONTAINED:
                # the worker is the first process of a PID namespace of its own: what
                # its evaluations start, however detached, dies with it
                _unshare(_NEW_PID)
            pid = os.fork()
            if pid == 0:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                _child(sock_path, command["token"], command["root"], command["evaluator"])
            if CONTAINED:
                _forks_at_home()
            try:
                os.setpgid(pid, pid)  # also here, so that no kill can race the child's own call
            except OSError:
                pass
            forked.add(pid)
            reply({"forked": command["token"], "pid": pid})
            if not warmed:
                warmed = True
                try:
                    _warm_dist_index()
                except Exception:
                    pass  # only a head start: workers read the index themselves
        elif op == "preload":
            for name in command.get("modules", []):
                if name in sys.modules:
                    continue
                try:
                    __import__(name)
                except BaseException:
                    pass
    # rwb went away: take every worker, and what its evaluations started, with us
    _kill_worker_groups(forked)
    try:
        os.killpg(0, signal.SIGKILL)
    except OSError:
        pass
