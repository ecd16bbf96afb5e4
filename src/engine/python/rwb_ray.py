"""rwb's Ray driver: the fork-server of a run on a Ray cluster.

rwb starts it in place of rwb_worker.py's zygote, with the same arguments and one more:

    python rwb_ray.py SOCKET_PATH COMPAT_DIR ADDRESS ROOT

and speaks the same protocol to it (see rwb_py/__init__.py): a ready line on stdout, then
"fork" commands on stdin. ADDRESS is a Ray address, or "auto" (RAY_ADDRESS, a running
local cluster, else a new local one). ROOT, the workspace, is shipped to the cluster
as the job's `working_dir`; rwb's worker code and bundled reward_kit go with it as
the `rwb_remote` package (`py_modules`), used there only when the cluster has no
reward_kit of its own. The workspace is shipped once per driver: when a file in it
changes, rwb starts a new driver (which ships it again) for the workers it needs from
then on, and tells this one "retire": it takes no more forks and ends with its last
proxy.

A fork starts a proxy thread here instead of a process: it connects to rwb's socket
like a worker, imports the evaluator in a Ray task (rwb_ray_task.load_task), and
turns each batch it reads into a Ray task (rwb_ray_task.batch_task) whose lines it
forwards in order. A proxy has no process of its own: it says hello with a negative
id, which rwb never kills. What a local worker's death means, the proxy says in
lines: a task whose process died is a WorkerCrashed row for the sample it was on
(every sample of a batched call), and one that ignores its timeout is cancelled and
becomes a Timeout row; either way the proxy then retires, and rwb reruns the rest on
a fresh worker, as it does locally.
"""

import itertools
import json
import os
import shutil
import socket
import sys
import threading

# Extra time past the evaluation timeout before a task that does not answer is
# cancelled (rwb's own grace for a local worker).
KILL_GRACE = 0.5
# Folders of the workspace that never go to the cluster.
EXCLUDES = [".rwb", ".git", "__pycache__", ".venv", "venv", "node_modules"]

_ids = itertools.count(1)


def _control_pipe():
    """The real stdout, kept for protocol lines; fd 1 and sys.stdout then point at
    stderr, so nothing Ray or user code prints can reach the protocol."""
    control = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return control


def _package(runtime, compat):
    """The `rwb_remote` package shipped to the cluster: rwb's worker code and its
    bundled reward_kit. Returns the folder that holds it."""
    holder = os.path.join(runtime, "ray")
    package = os.path.join(holder, "rwb_remote")
    shutil.rmtree(holder, ignore_errors=True)
    os.makedirs(package)
    with open(os.path.join(package, "__init__.py"), "w") as f:
        f.write('"""rwb\'s worker code, shipped to a Ray cluster."""\n')
    shutil.copy(os.path.join(runtime, "rwb_ray_task.py"), os.path.join(package, "rwb_ray_task.py"))
    shutil.copytree(os.path.join(runtime, "rwb_py"), os.path.join(package, "rwb_py"))
    shutil.copytree(compat, os.path.join(package, "compat"))
    return holder


def _unreachable(address):
    """Why a `host:port` address cannot be reached (Ray itself retries for minutes),
    or None. Other forms (auto, ray://) are left to Ray."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "/" in address:
        return None
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=10).close()
    except OSError as exc:
        return "cannot reach the Ray cluster at %s (%s): is `ray start --head` running there?" % (
            address,
            exc.strerror or exc,
        )
    return None


def _connect(ray, address, root, package):
    runtime_env = {
        "working_dir": root,
        "excludes": EXCLUDES,
        "py_modules": [os.path.join(package, "rwb_remote")],
    }
    ray.init(
        address=None if address == "auto" else address,
        runtime_env=runtime_env,
        log_to_driver=False,
        include_dashboard=False,
        configure_logging=False,
    )
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    cpus = ray.cluster_resources().get("CPU", 0)
    return {"address": address, "nodes": len(nodes), "cpus": int(cpus)}


def _remote(ray):
    from rwb_remote import rwb_ray_task

    load = ray.remote(max_retries=0)(rwb_ray_task.load_task)
    batch = ray.remote(max_retries=0, num_returns="streaming")(rwb_ray_task.batch_task)
    return load, batch


def _seconds(value):
    """A number of seconds as rwb writes it in messages (1, 0.5, 2.25)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _line(obj):
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


class Proxy:
    """One evaluator's "worker": rwb's socket on one side, Ray tasks on the other."""

    def __init__(self, ray, tasks, sock_path, token, root, spec):
        self.ray = ray
        self.load_task, self.batch_task = tasks
        self.sock_path = sock_path
        self.token = token
        self.root = os.path.realpath(root)
        self.spec = spec
        self.timeout = spec.get("timeout") or 0
        self.flight = []  # (task generator, [ids], batched) in the order rwb sent them
        self.ready = threading.Condition()
        self.closed = False
        self.batched = False

    def run(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.sock_path)
        self.sock.sendall(_line({"hello": self.token, "pid": -next(_ids)}))
        try:
            spec = self._relative_spec()
            if spec is None:
                return
            try:
                reply = self.ray.get(self.load_task.remote(spec, self.root))
            except Exception as exc:  # the task never ran the import (runtime_env, a lost node)
                first = (str(exc).strip().splitlines() or [""])[0]
                message = "Ray could not run the import of %s: %s: %s" % (spec["file"], type(exc).__name__, first)
                error = {"type": "WorkerCrashed", "message": message, "traceback": "", "files": []}
                reply = _line({"import_error": error})
            self.sock.sendall(reply)
            loaded = json.loads(reply)
            if "import_error" in loaded:
                return
            self.batched = loaded.get("style") in ("trl", "batch")
            self.relative = spec
            sender = threading.Thread(target=self._send_results, daemon=True)
            sender.start()
            self._read_batches()
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as exc:  # Ray itself failed: rwb sees the worker die
            sys.stderr.write("rwb ray driver: %s: %s\n" % (type(exc).__name__, exc))
        finally:
            self._close()

    def _relative_spec(self):
        """The spec with workspace-relative paths; None (after an import error line)
        when the evaluator lies outside the workspace, which Ray does not ship."""
        out = dict(self.spec)
        for field in ("file", "folder"):
            path = os.path.realpath(self.spec.get(field) or os.path.dirname(self.spec["file"]))
            rel = os.path.relpath(path, self.root)
            if rel == os.pardir or rel.startswith(os.pardir + os.sep):
                message = (
                    "%s is outside the workspace %s, and a Ray run ships only the workspace: "
                    "move the evaluator into it" % (path, self.root)
                )
                error = {"type": "ImportFailed", "message": message, "traceback": ""}
                self.sock.sendall(_line({"import_error": dict(error, files=[])}))
                return None
            out[field] = rel
        return out

    def _read_batches(self):
        rfile = self.sock.makefile("rb")
        while True:
            header = rfile.readline()
            if not header or header.startswith(b"Q"):
                return
            op = header[:1].decode()
            count = int(header[2:].split()[0])  # "B n" or "B n c" (c: concurrency)
            batch = []
            for _ in range(count):
                ident, _, raw = rfile.readline().partition(b" ")
                if raw[:1] == b"@":
                    # a sample as marshal data (see rwb_py.wire._sample): passed on as bytes
                    batch.append((int(ident), rfile.read(int(raw[1:]))))
                else:
                    batch.append((int(ident), raw.decode("utf-8")))
            task = self.batch_task.remote(self.relative, self.root, op, batch)
            with self.ready:
                self.flight.append((task, [i for i, _ in batch], self.batched and op == "B", op, batch))
                self.ready.notify()

    def _close(self):
        with self.ready:
            self.closed = True
            flight, self.flight = self.flight, []
            self.ready.notify()
        # Not forced: a forced cancel kills the process that ran the task, which by
        # now may be running another evaluator's task. Unforced, a batch nobody
        # reads is interrupted (or finishes) and its lines are dropped.
        for task, *_ in flight:
            try:
                self.ray.cancel(task)
            except Exception:
                pass
        try:
            self.sock.close()
        except OSError:
            pass

    def _next_batch(self):
        with self.ready:
            while not self.flight and not self.closed:
                self.ready.wait()
            return None if self.closed else self.flight[0]

    def _send_results(self):
        try:
            while True:
                item = self._next_batch()
                if item is None:
                    return
                if not self._forward(*item):
                    self._close()
                    return
                with self.ready:
                    if self.flight and self.flight[0] is item:
                        self.flight.pop(0)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self._close()

    def _forward(self, task, ids, batched, op, batch, rows_only=False):
        """Sends one batch's lines as they come (with `rows_only`, only its rows and a
        retire: the batch it reruns part of ends elsewhere). False when the proxy
        retires."""
        answered = set()
        started = False
        while True:
            limit = self.timeout + KILL_GRACE if started and self.timeout else None
            ready, _ = self.ray.wait([task], timeout=limit)
            if not ready:
                self.ray.cancel(task, force=True)
                message = (
                    "the evaluation did not return within %s s and could not be interrupted; "
                    "its worker was killed" % _seconds(self.timeout)
                )
                return self._fail(ids, answered, batched, "Timeout", message)
            try:
                data = self.ray.get(next(task))
            except StopIteration:
                return True
            except Exception as exc:
                left = [i for i in ids if i not in answered]
                if not batched and len(left) > 1 and _died(exc):
                    return self._alone(op, [(i, raw) for i, raw in batch if i in left])
                return self._lost(ids, answered, batched, exc)
            if not started:
                started = True
                continue
            lines = data.splitlines(keepends=True)
            if rows_only:
                lines = [l for l in lines if l.startswith((b'{"i":', b'{"retire":'))]
            for line in lines:
                if line.startswith(b'{"i":'):
                    answered.add(int(line[5:].split(b",", 1)[0]))
            self.sock.sendall(b"".join(lines))
            if b'{"retire":' in data:
                return False

    def _alone(self, op, batch):
        """After a task died with several samples unanswered, runs each of them again
        in a task of its own: a line the task computed may not have reached the driver
        before it died, so only a sample that kills its own task is blamed, as the
        local pool blames only the sample its worker was on. Only their rows are
        passed on, and the batch ends as a lost one does: the proxy retires."""
        for ident, raw in batch:
            task = self.batch_task.remote(self.relative, self.root, op, [(ident, raw)])
            if not self._forward(task, [ident], False, op, [(ident, raw)], rows_only=True):
                return False
        self.sock.sendall(_line({"retire": "WorkerCrashed"}))
        return False

    def _lost(self, ids, answered, batched, exc):
        name = type(exc).__name__
        if _died(exc):
            message = (
                "the worker process died while evaluating this sample "
                "(os._exit, a crash in native code, or a signal)"
            )
        else:
            first = str(exc).strip().splitlines()[:1]
            message = "the Ray task for this sample failed: %s%s" % (name, ": " + first[0] if first else "")
        return self._fail(ids, answered, batched, "WorkerCrashed", message)

    def _fail(self, ids, answered, batched, kind, message):
        """Gives the error to the sample the task was on (every unanswered one of a
        batched call), then retires: rwb reruns the rest on a fresh worker."""
        left = [i for i in ids if i not in answered]
        blamed = left if batched else left[:1]
        lines = [_line({"i": i, "ms": 0.0, "err": {"type": kind, "message": message}}) for i in blamed]
        lines.append(_line({"retire": kind}))
        self.sock.sendall(b"".join(lines))
        return False


def _died(exc):
    """Whether Ray says the process running the task went away."""
    return type(exc).__name__ in (
        "WorkerCrashedError", "TaskCancelledError", "NodeDiedError", "OwnerDiedError"
    )


def _missing_ray(control, exc):
    message = (
        "Ray is not installed in %s (%s: %s): install it with `%s -m pip install ray`, "
        "or give --python an interpreter that has it"
        % (sys.executable, type(exc).__name__, exc, sys.executable)
    )
    control.write(json.dumps({"error": message}) + "\n")


def main(argv):
    sock_path, compat, address, root = argv[1:5]
    control = _control_pipe()
    runtime = os.path.dirname(os.path.abspath(__file__))
    try:
        import ray
    except ImportError as exc:
        _missing_ray(control, exc)
        return 2
    unreachable = _unreachable(address)
    if unreachable:
        control.write(json.dumps({"error": unreachable}) + "\n")
        return 2
    package = _package(runtime, compat)
    sys.path.insert(0, package)
    try:
        cluster = _connect(ray, address, os.path.realpath(root), package)
        tasks = _remote(ray)
    except Exception as exc:
        where = "a local Ray cluster" if address == "auto" else "the Ray cluster at %s" % address
        first = (str(exc).strip().splitlines() or [""])[0]
        control.write(json.dumps({"error": "cannot use %s: %s: %s" % (where, type(exc).__name__, first)}) + "\n")
        return 2
    from rwb_remote.rwb_py.load import _load_reward_kit
    from rwb_remote.rwb_py.wire import PROTOCOL_VERSION

    info = _load_reward_kit(os.path.join(package, "rwb_remote", "compat"))
    ready = {
        "zygote": "ready",
        "protocol": PROTOCOL_VERSION,
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "reward_kit": info,
        "ray": cluster,
    }
    control.write(json.dumps(ready) + "\n")

    def start(command):
        proxy = Proxy(ray, tasks, sock_path, command["token"], command["root"], command["evaluator"])
        thread = threading.Thread(target=proxy.run, daemon=True)
        thread.start()
        return thread

    forks = Forks(start)
    for line in sys.stdin.buffer:
        if forks.take(json.loads(line)):
            threading.Thread(target=_end_when_done, args=(ray, forks), daemon=True).start()
    # rwb went away: the driver's exit ends its tasks (and a cluster it started)
    ray.shutdown()
    return 0


class Forks:
    """The proxies rwb's "fork" commands started. After "retire" (rwb started a driver
    that shipped newer code) it starts no more, and `wait` returns once the proxies it
    has are done: rwb closes each when it no longer needs that worker."""

    def __init__(self, start):
        self.start = start  # a fork command -> the proxy's started thread
        self.threads = []
        self.retired = False

    def take(self, command):
        """Carries out one command; True when it retired the driver."""
        op = command.get("op")
        if op == "fork" and not self.retired:
            self.threads.append(self.start(command))
        elif op == "retire" and not self.retired:
            self.retired = True
            return True
        # anything else (preloading) is for a local fork-server
        return False

    def wait(self):
        for thread in self.threads:
            thread.join()


def _end_when_done(ray, forks):
    """A retired driver ends when its last proxy does, with its Ray job (and a local
    cluster it started)."""
    forks.wait()
    ray.shutdown()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
