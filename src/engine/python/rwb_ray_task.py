"""What runs on a Ray worker when rwb runs batches on a Ray cluster (see rwb_ray.py).

It is shipped to the cluster inside the `rwb_remote` package (with the rwb_py package
and the bundled reward_kit) through Ray's `runtime_env`, and evaluates with rwb_py's
own Worker: the same loading, style detection, calling, timeouts and result lines as
a local worker. The worker's socket is replaced by an outbox whose lines the task
returns (the load) or yields (a batch, one sample at a time, so that a task whose
process dies has handed over every result computed before it died).

Paths: Ray unpacks the workspace in a folder of its own (the task's working
directory). The evaluator's paths arrive relative to the workspace, and every line
going back names the user's workspace folder instead of Ray's copy, so rows, files
and tracebacks read exactly as in a local run.
"""

import json
import mmap
import os
import signal
import sys

from rwb_remote.rwb_py.load import _load_reward_kit
from rwb_remote.rwb_py.paths import RUNTIME_DIR, _file_of
from rwb_remote.rwb_py.timeouts import TIMEOUT_SIGNAL
from rwb_remote.rwb_py.wire import _dumps
from rwb_remote.rwb_py.worker import Worker

COMPAT_DIR = os.path.join(RUNTIME_DIR, "compat")
# The first item a batch task yields once its evaluator is loaded: from then on, the
# driver holds the task to the evaluation timeout.
STARTED = b"started\n"

_reward_kit = None
# evaluator spec (as JSON) -> (its Worker or None, its load reply), kept for
# the next batches this process runs.
_workers = {}
# The worker whose project modules are in sys.modules now. One Ray process serves
# several evaluators (a process per evaluator would be started and stopped again as
# batches alternate); each keeps its project modules to itself, as if it had a process
# of its own: two metric folders may both have a `main.py` and a `utils.py`.
_active = None


class Outbox:
    """Stands in for a worker's socket: keeps what the worker sends."""

    def __init__(self):
        self.data = []

    def makefile(self, *args, **kwargs):
        return None

    def sendall(self, data):
        self.data.append(bytes(data))

    def take(self):
        data, self.data = b"".join(self.data), []
        return data


class Remap:
    """Rewrites Ray's copy of the workspace to the user's folder in outgoing lines."""

    def __init__(self, local_root):
        here = os.getcwd()
        pairs = {os.path.realpath(here): local_root, here: local_root}
        self.pairs = []
        for ray_path, user_path in sorted(pairs.items(), key=lambda p: -len(p[0])):
            if ray_path != user_path:
                self.pairs.append((_json_text(ray_path), _json_text(user_path)))

    def __call__(self, data):
        for ray_path, user_path in self.pairs:
            data = data.replace(ray_path, user_path)
        return data


def _json_text(path):
    return json.dumps(path, ensure_ascii=False)[1:-1].encode("utf-8")


def node_spec(spec):
    """The evaluator spec with its workspace-relative paths made absolute here."""
    here = os.path.realpath(os.getcwd())
    out = dict(spec)
    out["file"] = os.path.join(here, spec["file"])
    out["folder"] = os.path.join(here, spec["folder"])
    return out


def _project_modules():
    """Takes the workspace's modules out of sys.modules and returns them."""
    here = os.path.realpath(os.getcwd()) + os.sep
    taken = {}
    for name, module in list(sys.modules.items()):
        path = _file_of(module)
        if isinstance(path, str) and os.path.realpath(path).startswith(here):
            taken[name] = sys.modules.pop(name)
    return taken


def _switch(worker):
    """Puts `worker`'s project modules (none before it loads) in sys.modules, and
    its timeout handler on the timeout signal."""
    global _active
    if _active is not worker:
        modules = _project_modules()
        if _active is not None:
            _active.own_modules = modules
        sys.modules.update(getattr(worker, "own_modules", {}))
        _active = worker
    evaluation = worker.evaluation
    if evaluation.timeout:
        signal.signal(TIMEOUT_SIGNAL, evaluation._on_timeout_signal)


def _enter(worker):
    """Points the process at the evaluator (like a forked local worker) and sends
    what user code prints to the worker's capture; returns what to restore."""
    _switch(worker)
    here = os.path.realpath(os.getcwd())
    for entry in (here, worker.folder):
        while entry in sys.path:
            sys.path.remove(entry)
    sys.path[0:0] = [worker.folder, here]
    saved = (sys.stdout, sys.stderr)
    sys.stdout = worker.capture
    sys.stderr = worker.capture
    return saved


def _leave(saved):
    sys.stdout, sys.stderr = saved


def load(spec, local_root):
    """The worker for `spec` in this process, loading it when needed: (worker or
    None when the import failed, the load reply line)."""
    global _reward_kit
    key = json.dumps(spec, sort_keys=True)
    found = _workers.get(key)
    if found is not None:
        return found
    if _reward_kit is None:
        _reward_kit = _load_reward_kit(COMPAT_DIR)
    outbox = Outbox()
    worker = Worker(outbox, node_spec(spec), os.getcwd())
    worker.mark = mmap.mmap(-1, 8)
    saved = _enter(worker)
    try:
        loaded = worker.load() is not None
    finally:
        _leave(saved)
    reply = Remap(local_root)(outbox.take())
    found = (worker if loaded else None, reply)
    _workers[key] = found
    return found


def load_task(spec, local_root):
    """The Ray task that imports an evaluator: its load reply, as a local worker's."""
    return load(spec, local_root)[1]


def batch_task(spec, local_root, op, batch):
    """The Ray task that evaluates one batch ("B") or checks it ("C"): yields STARTED,
    then the worker's lines, ending with its `done` line (or `retire` after a timeout)."""
    worker, reply = load(spec, local_root)
    remap = Remap(local_root)
    if worker is None:
        yield STARTED
        failure = json.loads(reply)["import_error"]
        error = {k: failure[k] for k in ("type", "message", "traceback") if k in failure}
        for ident, _ in batch:
            yield _dumps({"i": ident, "ms": 0.0, "err": error})
        yield _dumps({"done": len(batch)})
        return
    outbox = worker.sock
    # a JSON line comes as text, a sample as marshal data as bytes (read as they are)
    batch = [(ident, raw if isinstance(raw, bytes) else raw.encode("utf-8")) for ident, raw in batch]
    yield STARTED
    saved = _enter(worker)
    try:
        for part in _parts(worker, op, batch):
            worker.flush()
            data = outbox.take()
            if data:
                _leave(saved)
                yield remap(data)
                saved = _enter(worker)
            if worker.retiring:
                break
    finally:
        _leave(saved)
    if worker.retiring:
        _retire(spec)
        yield _dumps({"retire": worker.retire_reason})
        return
    done = {"done": len(batch)}
    worker._imports_report(done)
    yield remap(_dumps(done))


def _parts(worker, op, batch):
    """Runs the batch the way a local worker's serve loop does, pausing after each
    sample of a pointwise evaluator so its line can leave at once."""
    if op == "C":
        worker.run_checks(batch)
        yield None
    elif worker.caller.batched:
        worker.run_batched(batch)
        yield None
    else:
        for item in batch:
            worker.run_pointwise([item])
            yield None


def _retire(spec):
    """An evaluation was interrupted: forget the evaluator (the next batch imports it
    afresh) and kill what the evaluation started. A Ray worker leads its own process
    group, so its other members are exactly those processes."""
    _workers.pop(json.dumps(spec, sort_keys=True), None)
    me = os.getpid()
    if os.getpgrp() != me:
        return
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            if os.getpgid(int(entry)) == me:
                os.kill(int(entry), signal.SIGKILL)
        except OSError:
            pass
