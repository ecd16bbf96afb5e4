"""rwb's Python side: a fork-server ("zygote") and the evaluator workers it forks.

rwb starts this file once per interpreter:

    python rwb_worker.py SOCKET_PATH COMPAT_DIR

The zygote imports everything a worker needs (json, inspect, and reward_kit: the
real package when it imports, else rwb's bundled copy from COMPAT_DIR), then waits
for commands on stdin. A code change therefore costs one fork of this warm process,
not a new interpreter and its imports.

Each forked worker connects to rwb's Unix socket, imports ONE evaluator and then
serves batches of sample lines, sending one result line per sample as soon as it
is computed. User code never sees the protocol channel: its prints are captured per
evaluation and returned with the result, and file descriptor 1 points at stderr.

Protocol (one JSON object per line unless said otherwise):
  rwb -> zygote stdin   {"op": "fork", "token": T, "root": DIR, "evaluator": {...}}
                        (evaluator: name, file, folder, module (package functions),
                        function, style, solution_str, kwargs, timeout)
                        {"op": "preload", "modules": ["numpy", ...]}
  zygote -> rwb stdout  {"zygote": "ready", "python": ..., "reward_kit": ...}
  worker -> socket      {"hello": T, "pid": P}
                        {"ready": T, "style": ..., "style_reason": ..., "files": [...],
                         "third_party": [...], "packages": {"modules": [...], "dists": [...]}}
                        or {"import_error": {"type", "message", "traceback", "file", "line"}}
  rwb -> socket         "B <n>" then n lines "<id> <raw sample JSON>"; "Q" to quit
                        "B <n> <c>": the same with up to c evaluations in flight (see
                        Concurrent); "B <n>" keeps one at a time, as before
  worker -> socket      {"i": id, "ms": f, "ok": {...result...}, "out": "..."}
                        {"i": id, "ms": f, "err": {...}, "out": "..."}
                        {"done": n, "files": [...]?, "packages": {...}?} after each batch
                        {"retire": "timeout"} instead, after an interrupted evaluation:
                        the worker leaves and its process group dies with it
  "files" are every project file imported so far (sent when they changed); "packages"
  the third-party module files and distributions imported since the last report.

A result line always begins {"i": id, so rwb can name the sample of a line it cannot
read. Each worker leads its own process group: killing the group kills whatever an
evaluation started. The per-evaluation timeout is a watchdog thread in the worker
that signals the main thread (see Evaluation); rwb kills a worker whose evaluation
overruns it by more than a short grace.
"""

import contextvars
import decimal
import inspect
import io
import json
import math
import numbers
import os
import queue
import signal
import mmap
import socket
import struct
import sys
import threading
import time
import traceback

PROTOCOL_VERSION = 1
# rwb's own files (this worker and the bundled reward_kit): hidden from tracebacks
RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
OUTPUT_LIMIT = 64 * 1024
# Results are sent in chunks: at this many, when the last send was this long ago, or
# at the end of a batch. rwb names the interval in the fork command ("flush_ms"):
# short where a served request waits for its result (held back longer, its client
# idles, and so does the worker once the batches in flight run dry), longer for a run
# over a file, where each send wakes three of rwb's threads (at ~1.5 ms a call, one
# send per result cost rwb ~100 us of CPU per result).
FLUSH_COUNT = 64
FLUSH_SECONDS = 0.001
_SITE_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
# The shared mark page: slot 0 is the sample a one-at-a-time evaluation is on; slots
# 1..MARK_SLOTS the samples evaluations in flight together are on (-1: free). rwb
# reads it when the worker dies (src/engine/worker.rs) and caps concurrency at
# MARK_SLOTS.
MARK_SLOTS = 256


# --------------------------------------------------------------------------------------
# reward_kit: the real package when it imports, else the bundled compatible module
# --------------------------------------------------------------------------------------


def _load_reward_kit(compat_dir):
    """Import reward_kit once in the zygote. Returns a description for rwb."""
    real_error = None
    try:
        import reward_kit  # noqa: F401

        return {"kind": "real", "version": getattr(reward_kit, "__version__", None)}
    except ModuleNotFoundError as exc:
        if exc.name not in ("reward_kit",):
            real_error = "%s: %s" % (type(exc).__name__, exc)
    except Exception as exc:  # an installed but broken package
        real_error = "%s: %s" % (type(exc).__name__, exc)
    for name in [m for m in sys.modules if m == "reward_kit" or m.startswith("reward_kit.")]:
        del sys.modules[name]
    sys.path.append(compat_dir)
    import reward_kit  # noqa: F811,F401  (the bundled one)
    import reward_kit.models  # noqa: F401
    import reward_kit.typed_interface  # noqa: F401

    out = {"kind": "bundled", "version": getattr(reward_kit, "__version__", None)}
    if real_error:
        out["real_error"] = real_error
    return out


# --------------------------------------------------------------------------------------
# Errors and helpers shared by every style
# --------------------------------------------------------------------------------------


class EvalTimeout(BaseException):
    """Raised inside user code when an evaluation runs past its timeout.

    A BaseException so that a user's `except Exception:` does not swallow it."""


class InvalidResult(Exception):
    """A return value rwb cannot read as a result (NaN score, a string, ...)."""


# The signal rwb's watchdog sends to interrupt an evaluation that overran. Not SIGALRM:
# that one belongs to user code (math_verify arms its own alarm, cancels it with
# alarm(0) and swaps the handler), and nothing it does may cancel rwb's timeout.
TIMEOUT_SIGNAL = signal.SIGRTMIN + 2 if hasattr(signal, "SIGRTMIN") else signal.SIGUSR2
# While an overrunning evaluation swallows the signal, it is sent again this often
# (rwb kills the worker shortly after the timeout anyway).
RESEND_SECONDS = 0.05
# The watchdog never sleeps longer than this at once (time.sleep refuses huge values).
WATCH_SECONDS = 3600.0


class Evaluation:
    """Times calls, enforces the per-evaluation timeout and captures what user code
    prints.

    A call only stamps its start time (no lock, no system call). A watchdog thread
    sleeps until the running call's deadline, and when the call is still the same one
    then, interrupts the main thread with TIMEOUT_SIGNAL, whose handler raises
    EvalTimeout in it. Between calls the watchdog sleeps one timeout: a call that
    starts meanwhile cannot be due earlier."""

    def __init__(self, timeout, capture):
        self.timeout = timeout if timeout and timeout > 0 else 0
        self.capture = capture
        self.started = None  # start of the call in progress, or None between calls
        self.expired = None  # start of the call the watchdog found past its deadline
        if self.timeout:
            signal.signal(TIMEOUT_SIGNAL, self._on_timeout_signal)
            watchdog = threading.Thread(target=self._watch, name="rwb-timeout", daemon=True)
            watchdog.start()

    def _on_timeout_signal(self, signum, frame):
        started = self.started
        if started is not None and started == self.expired:
            raise EvalTimeout()

    def _watch(self):
        clock = time.perf_counter
        main = threading.main_thread().ident
        while True:
            started = self.started
            if started is None:
                time.sleep(min(self.timeout, WATCH_SECONDS))
                continue
            left = started + self.timeout - clock()
            if left > 0:
                time.sleep(min(left, WATCH_SECONDS))
                continue
            self.expired = started
            signal.pthread_kill(main, TIMEOUT_SIGNAL)
            time.sleep(RESEND_SECONDS)

    def call(self, fn, kwargs):
        started = self.started = time.perf_counter()
        try:
            value = fn(**kwargs)
        except EvalTimeout:
            raise
        except BaseException:
            if self.expired == started:  # it caught the signal and raised something else
                raise EvalTimeout() from None
            raise
        finally:
            self.started = None
        if self.expired == started:  # it swallowed the signal, then returned late
            raise EvalTimeout()
        return value

    def take_output(self):
        return self.capture.take()


class Capture(io.TextIOBase):
    """A text stream that collects everything written to it (stdout and stderr)."""

    def __init__(self):
        self._parts = []
        self._size = 0

    def writable(self):
        return True

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        if self._size < OUTPUT_LIMIT:
            self._parts.append(text)
        self._size += len(text)
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def written(self):
        """Whether anything was written since the last take()."""
        return bool(self._parts)

    def take(self):
        if not self._parts:
            return None
        text = "".join(self._parts)
        if self._size > OUTPUT_LIMIT:
            text = text[:OUTPUT_LIMIT] + "\n[rwb: output cut at %d of %d characters]" % (OUTPUT_LIMIT, self._size)
        self._parts = []
        self._size = 0
        return text


# The capture of the evaluation running in this thread or asyncio task while several
# are in flight (None: the worker's own capture). A context variable: each thread and
# each asyncio task sees its own value.
_OUTPUT = contextvars.ContextVar("rwb_output", default=None)


class RoutedOutput(io.TextIOBase):
    """sys.stdout and sys.stderr once evaluations run together: each write goes to
    the capture of the evaluation that made it, else to the worker's capture."""

    def __init__(self, default):
        self.default = default

    def writable(self):
        return True

    def write(self, text):
        return (_OUTPUT.get() or self.default).write(text)

    def flush(self):
        pass

    def isatty(self):
        return False


def _is_project_file(path, roots):
    if not path:
        return False
    if any(marker in path for marker in _SITE_MARKERS):
        return False
    return any(path == r or path.startswith(r + os.sep) for r in roots)


# --------------------------------------------------------------------------------------
# What an evaluator depends on: project files, third-party modules and distributions
# --------------------------------------------------------------------------------------


def _stdlib_dirs():
    import sysconfig

    dirs = set()
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.abspath(path))
            dirs.add(os.path.realpath(path))
    return tuple(d + os.sep for d in dirs)


_STDLIB_DIRS = _stdlib_dirs()


def _module_kind(path, roots):
    """("project" | "third", path) for a module's file, or None for the standard
    library, rwb's own files and modules without a file. Third-party is everything
    else: site-packages, editable installs, folders on PYTHONPATH."""
    if not path or not isinstance(path, str):
        return None
    raw = os.path.abspath(path)
    if any(marker in raw for marker in _SITE_MARKERS):
        return ("third", raw)
    if raw.startswith(RUNTIME_DIR + os.sep) or raw.startswith(_STDLIB_DIRS):
        return None
    real = os.path.realpath(raw)
    if _is_project_file(real, roots):
        return ("project", real) if real.endswith(".py") else None
    if real.startswith(RUNTIME_DIR + os.sep) or real.startswith(_STDLIB_DIRS):
        return None
    return ("third", raw)


def _normal_name(name):
    return "".join("_" if c in "-_." else c for c in name).lower()


# site folder -> (its mtime_ns, {normalized dist name: metadata dir}, {top-level: dir} or None)
_DIST_INDEX = {}


def _site_index(site):
    """The distributions installed in one site folder, read once per process (and
    inherited from the zygote) until the folder changes (pip adds or removes one)."""
    try:
        mtime = os.stat(site).st_mtime_ns
    except OSError:
        return None
    cached = _DIST_INDEX.get(site)
    if cached is not None and cached[0] == mtime:
        return cached
    by_name = {}
    try:
        entries = os.listdir(site)
    except OSError:
        entries = []
    for entry in entries:
        if entry.endswith((".dist-info", ".egg-info")):
            by_name[_normal_name(entry.rsplit(".", 1)[0].split("-", 1)[0])] = os.path.join(site, entry)
    cached = [mtime, by_name, None]
    _DIST_INDEX[site] = cached
    return cached


def _top_levels(meta_dir):
    """The top-level import names a distribution installs (top_level.txt, else the
    first path parts in its RECORD)."""
    try:
        with open(os.path.join(meta_dir, "top_level.txt"), encoding="utf-8", errors="replace") as f:
            return set(f.read().split())
    except OSError:
        pass
    tops = set()
    try:
        with open(os.path.join(meta_dir, "RECORD"), encoding="utf-8", errors="replace") as f:
            for line in f:
                first = line.split(",", 1)[0].split("/", 1)[0]
                tops.add(first[:-3] if first.endswith(".py") else first)
    except OSError:
        pass
    return tops


def _dist_dir(site, top):
    """The metadata folder of the distribution that installed top-level module `top`
    in `site`: by name first (cheap), else by reading every distribution's list of
    top-level names (once per site folder)."""
    index = _site_index(site)
    if index is None:
        return None
    found = index[1].get(_normal_name(top))
    if found is not None:
        return found
    if index[2] is None:
        by_top = {}
        for meta_dir in index[1].values():
            for name in _top_levels(meta_dir):
                by_top.setdefault(name, meta_dir)
        index[2] = by_top
    return index[2].get(top)


def _read_dist(meta_dir):
    """{"name", "version", "metadata"} from a distribution's METADATA / PKG-INFO."""
    for filename in ("METADATA", "PKG-INFO"):
        path = os.path.join(meta_dir, filename)
        fields = {}
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if not line.strip():
                        break
                    key, _, value = line.partition(":")
                    if key in ("Name", "Version") and key not in fields:
                        fields[key] = value.strip()
        except OSError:
            continue
        name = fields.get("Name") or os.path.basename(meta_dir).split("-", 1)[0]
        return {"name": name, "version": fields.get("Version"), "metadata": path}
    return None


def _site_dirs():
    return sorted({os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)}, key=len, reverse=True)


def _dists_of(paths):
    """The distributions the third-party module files `paths` belong to."""
    sites = _site_dirs()
    dirs = set()
    for path in paths:
        site = next((s for s in sites if path.startswith(s + os.sep)), None)
        if site is None:
            continue
        top = path[len(site) + 1 :].split(os.sep, 1)[0].split(".", 1)[0]
        meta_dir = _dist_dir(site, top)
        if meta_dir is not None:
            dirs.add(meta_dir)
    dists = [_read_dist(d) for d in sorted(dirs)]
    return [d for d in dists if d is not None]


def _warm_dist_index():
    """Zygote: read the site folders' distributions while idle, so forks inherit it."""
    for site in _site_dirs():
        if any(marker in site + os.sep for marker in _SITE_MARKERS):
            index = _site_index(site)
            if index is not None and index[2] is None:
                _dist_dir(site, "\0")


class Inventory:
    """The modules a worker has imported, sorted into project files and third-party
    module files. Each module is looked at once; `scan` reports only what is new."""

    def __init__(self, roots):
        self.roots = roots
        self.seen = set()
        self.project = set()
        self.third = set()
        self.known = 0

    def grew(self):
        return len(sys.modules) != self.known

    def scan(self):
        """(new project files, new third-party module files) since the last scan."""
        new_project, new_third = [], []
        for name, module in list(sys.modules.items()):
            if name in self.seen:
                continue
            self.seen.add(name)
            kind = _module_kind(_file_of(module), self.roots)
            if kind is None:
                continue
            target, found = (self.project, new_project) if kind[0] == "project" else (self.third, new_third)
            if kind[1] not in target:
                target.add(kind[1])
                found.append(kind[1])
        self.known = len(sys.modules)
        return new_project, new_third

    def project_files(self):
        return sorted(self.project)


def _file_of(module):
    """A module's `__file__`, or None (also when a lazy module raises on access)."""
    try:
        return getattr(module, "__file__", None)
    except Exception:
        return None


def _packages(module_files):
    """The report of third-party module files: the files, and their distributions
    when the metadata can be read (the files' stamps alone still key the cache)."""
    try:
        dists = _dists_of(module_files)
    except Exception:
        dists = []
    return {"modules": sorted(module_files), "dists": dists}


def _error_info(exc, roots, kind=None, skip_frames=0):
    """Describe an exception: bare type name, message, a traceback without rwb's own
    frames, and the innermost frame that lies in the project (for the source pane)."""
    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    frames = [f for f in traceback.extract_tb(tb) if not f.filename.startswith(RUNTIME_DIR + os.sep)]
    text = "Traceback (most recent call last):\n" if frames else ""
    text += "".join(traceback.format_list(frames))
    text += "".join(traceback.format_exception_only(type(exc), exc))
    where_file, where_line = None, None
    for frame, lineno in traceback.walk_tb(tb):
        path = os.path.realpath(frame.f_code.co_filename)
        if _is_project_file(path, roots):
            where_file, where_line = path, lineno
    if isinstance(exc, SyntaxError) and exc.filename:
        path = os.path.realpath(exc.filename)
        if _is_project_file(path, roots):
            where_file, where_line = path, exc.lineno
    info = {"type": kind or type(exc).__name__, "message": str(exc), "traceback": text}
    if where_file:
        root = roots[0]
        if where_file.startswith(root + os.sep):
            where_file = os.path.relpath(where_file, root)
        info["file"] = where_file
        info["line"] = where_line
    return info


def _number(value, what):
    """A score as pydantic's float field takes it: a finite real number."""
    if isinstance(value, float) or isinstance(value, int):  # bool is an int
        try:
            value = float(value)
        except OverflowError:
            raise InvalidResult(
                "%s is an integer of %d bits, too large for a float (at most about 1.8e308)"
                % (what, value.bit_length())
            ) from None
    elif isinstance(value, numbers.Real):  # numpy scalars, Fraction, ...
        value = float(value)
    elif isinstance(value, decimal.Decimal):
        value = float(value)
    else:
        raise InvalidResult("%s is %s %r, not a number" % (what, type(value).__name__, value))
    if math.isnan(value) or math.isinf(value):
        raise InvalidResult("%s is %r, not a finite number" % (what, value))
    return value


# The strings pydantic's lax bool takes, as it takes them (case-insensitive).
_TRUE_WORDS = frozenset(("1", "on", "t", "true", "y", "yes"))
_FALSE_WORDS = frozenset(("0", "off", "f", "false", "n", "no"))


def _flag(value, what):
    """An is_score_valid as pydantic's lax bool reads it: a bool, 0/1 (int or float)
    or a yes/no word; anything else is an InvalidResult naming `what`."""
    if value is True or value is False:
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return value == 1
    if isinstance(value, (str, bytes)):
        word = (value.decode("utf-8", "replace") if isinstance(value, bytes) else value).strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    raise InvalidResult("%s is %s, not a boolean (True or False)" % (what, _describe(value)))


def _text(value, what):
    """A reason or error as pydantic's lax str reads it: a str, UTF-8 bytes, or None;
    anything else (a number too) is an InvalidResult naming `what`."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidResult("%s is bytes that are not UTF-8 text (%s)" % (what, exc)) from None
    raise InvalidResult("%s is %s, not a string" % (what, _describe(value)))


# serde_json, which reads every result line in rwb, refuses nesting deeper than 128
# arrays/objects. A result line wraps step_outputs in 3 levels; leave a margin.
MAX_NESTING = 100
_LARGEST_FLOAT = sys.float_info.max


def _plain_json(value, where, depth=0):
    """Check that `value` (free-form user data: step_outputs) is JSON rwb can read
    back: finite numbers within float range, str keys or scalar keys, known types,
    at most MAX_NESTING levels. Raises InvalidResult naming where the problem is."""
    if value is None or isinstance(value, (str, bool)):
        return
    if isinstance(value, int):
        if abs(value) > _LARGEST_FLOAT:
            raise InvalidResult("%s is an integer of %d bits, too large for a float" % (where(), value.bit_length()))
        return
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise InvalidResult("%s is %r, not a finite number" % (where(), value))
        return
    if not isinstance(value, (list, tuple, dict)):
        raise InvalidResult("%s is %s, which JSON cannot hold" % (where(), _describe(value)))
    if depth >= MAX_NESTING:
        path = where()
        if len(path) > 60:
            path = path[: path.rindex("[", 0, 60)] + "..."  # cut between subscripts
        raise InvalidResult("%s nests lists/dicts more than %d levels deep; rwb reads at most %d" % (path, MAX_NESTING, MAX_NESTING))
    if isinstance(value, dict):
        for key, item in value.items():
            if not (key is None or isinstance(key, (str, int, float))):
                raise InvalidResult("%s has a key %s; JSON keys are strings" % (where(), _describe(key)))
            _plain_json(item, lambda key=key: "%s[%r]" % (where(), key), depth + 1)
    else:
        for n, item in enumerate(value):
            _plain_json(item, lambda n=n: "%s[%d]" % (where(), n), depth + 1)


def _step_outputs(steps):
    """step_outputs as plain JSON data (StepOutput objects dumped), checked."""
    if steps is None:
        return None
    if not isinstance(steps, (list, tuple)):
        raise InvalidResult("step_outputs is %s, not a list" % _describe(steps))
    out = [s.model_dump() if hasattr(s, "model_dump") else s for s in steps]
    _plain_json(out, lambda: "step_outputs")
    return out


def _get(obj, key, default=None):
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _as_metric(name, value):
    """One component metric in rwb's result shape."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"is_score_valid": True, "score": _number(value, "metric %r score" % name), "reason": None}
    if isinstance(value, bool):
        return {"is_score_valid": True, "score": float(value), "reason": None}
    if hasattr(value, "model_dump") and not isinstance(value, dict):
        value = value.model_dump()
    score = _get(value, "score")
    if score is None:
        raise InvalidResult("metric %r has no score" % (name,))
    reason = _get(value, "reason")
    valid = _get(value, "is_score_valid", True)
    return {
        "is_score_valid": _flag(valid, "metric %r is_score_valid" % (name,)) if valid is not None else True,
        "score": _number(score, "metric %r score" % (name,)),
        "reason": None if reason is None else str(reason),
    }


_PLAIN_KEYS = frozenset(("score", "reason", "metrics"))


def _as_result(value, strict):
    """Read what an evaluator returned as rwb's result dict: a plain dict result at
    once (see _plain_result), anything else by _read_result."""
    if type(value) is dict:
        plain = _plain_result(value)
        if plain is not None:
            return plain
    return _read_result(value, strict)


def _plain_result(value):
    """The result of the most common return, a dict holding a finite float `score`
    and at most a str `reason` and empty `metrics`, or None for any other dict.
    _read_result gives the same result for it (tests/python pins that); this only
    skips the checks such a dict passes anyway."""
    parts = _plain_parts(value)
    if parts is None:
        return None
    return {"score": parts[0], "is_score_valid": True, "reason": parts[1], "metrics": {}, "step_outputs": None, "error": None}


def _plain_parts(value):
    """(score, reason) of a plain dict result (see _plain_result), else None."""
    if type(value) is not dict or not _PLAIN_KEYS.issuperset(value):
        return None
    score = value.get("score")
    if type(score) is not float or score - score != 0.0:  # NaN and +-inf give NaN
        return None
    reason = value.get("reason")
    if reason is not None and type(reason) is not str:
        return None
    metrics = value.get("metrics")
    if metrics is not None and (type(metrics) is not dict or metrics):
        return None
    return score, reason


def _read_result(value, strict):
    """Read what an evaluator returned as rwb's result dict.

    `strict` is for decorated reward-kit functions, whose return the decorator has
    already validated; anything else is read as leniently as reward-kit's legacy
    paths are: EvaluateResult-like objects, dicts with a score, (score, metrics)
    tuples and bare numbers."""
    if _is_evaluate_result(value):
        return _read_evaluate_result(value)
    if hasattr(value, "model_dump") and not isinstance(value, dict):
        value = value.model_dump()
    elif hasattr(value, "to_dict") and not isinstance(value, dict):
        value = value.to_dict()
    elif not isinstance(value, dict) and hasattr(value, "score") and hasattr(value, "metrics"):
        value = {"score": value.score, "metrics": value.metrics, "reason": getattr(value, "reason", None)}
    if isinstance(value, tuple) and len(value) == 2 and not strict:
        score, metrics = value
        value = {"score": score, "metrics": metrics if isinstance(metrics, dict) else {}}
    if isinstance(value, (int, float)) and not strict:
        value = {"score": value}
    if not isinstance(value, dict):
        raise InvalidResult(
            "the evaluator returned %s; expected an EvaluateResult, a dict with 'score', "
            "a (score, metrics) tuple or a number" % (_describe(value),)
        )
    if "score" not in value or value["score"] is None:
        keys = ", ".join(map(str, value)) or "none"
        raise InvalidResult("the evaluator returned a dict without a 'score' (keys: %s)" % keys)
    metrics = value.get("metrics") or {}
    if not isinstance(metrics, dict):
        raise InvalidResult("'metrics' is %s, not a dict of metric results" % type(metrics).__name__)
    reason = value.get("reason")
    error = value.get("error")
    valid = value.get("is_score_valid", True)
    return {
        "score": _number(value["score"], "score"),
        "is_score_valid": _flag(valid, "is_score_valid") if valid is not None else True,
        "reason": None if reason is None else str(reason),
        "metrics": {str(k): _as_metric(k, v) for k, v in metrics.items()},
        "step_outputs": _step_outputs(value.get("step_outputs")),
        "error": None if error is None else str(error),
    }


_RESULT_FIELDS = ("score", "is_score_valid", "reason", "metrics", "step_outputs", "error")


def _is_evaluate_result(value):
    cls = type(value)
    return cls.__name__ == "EvaluateResult" and all(hasattr(value, f) for f in _RESULT_FIELDS)


def _read_evaluate_result(value):
    """An EvaluateResult (real or bundled) read by attribute. Its fields were
    validated when it was built, but pydantic does not validate assignments
    (`r.reason = 5`): each field is checked again the way construction would have
    checked it, so that what rwb reports is what reward-kit would have accepted."""
    metrics = {}
    raw_metrics = value.metrics or {}
    if not isinstance(raw_metrics, dict):
        raise InvalidResult("metrics is %s, not a dict of MetricResult" % _describe(raw_metrics))
    for name, m in raw_metrics.items():
        if _is_metric_result(m):
            metrics[str(name)] = {
                "is_score_valid": _flag(m.is_score_valid, "metric %r is_score_valid" % (name,)),
                "score": _number(m.score, "metric %r score" % (name,)),
                "reason": _text(m.reason, "metric %r reason" % (name,)),
            }
        else:
            metrics[str(name)] = _as_metric(name, m)
    return {
        "score": _number(value.score, "score"),
        "is_score_valid": _flag(value.is_score_valid, "is_score_valid"),
        "reason": _text(value.reason, "reason"),
        "metrics": metrics,
        "step_outputs": _step_outputs(value.step_outputs),
        "error": _text(value.error, "error"),
    }


def _is_metric_result(m):
    return type(m).__name__ == "MetricResult" and hasattr(m, "score") and hasattr(m, "reason")


def _describe(value):
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return "%s %s" % (type(value).__name__, text)


def _accepts(fn):
    """(names of parameters, whether it takes **kwargs) of the user's function."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return set(), True
    names = {p.name for p in params.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
    return names, var_kw


def _filter_kwargs(kwargs, accepted):
    names, var_kw = accepted
    if var_kw:
        return kwargs
    return {k: v for k, v in kwargs.items() if k in names}


def is_decorated(fn):
    """Whether `fn` went through @reward_function (the real one or the bundled one)."""
    return getattr(fn, "_reward_function_mode", None) is not None


def detect_style(fn):
    return choose_style(fn)[0]


def choose_style(fn):
    """(style, why) for a function or callable object, from its signature (SPEC §3).

    A callable object (TRL's reward classes) is read through its `__call__`. Real TRL
    functions declare `completions` and `**kwargs` but seldom `prompts`, so
    `completions` without `messages` is enough for trl."""
    what = "declares"
    if not inspect.isroutine(fn) and not inspect.isclass(fn) and callable(fn):
        what = "is a callable %s object whose __call__ declares" % type(fn).__name__
    if getattr(fn, "_reward_function_mode", None) == "batch":
        return "batch", 'decorated with @reward_function(mode="batch")'
    names, var_kw = _accepts(fn)
    if "completions" in names and ("prompts" in names or "messages" not in names):
        parts = [p for p in ("prompts", "completions") if p in names] + (["**kwargs"] if var_kw else [])
        declared = " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else parts[0]
        if "messages" not in names:
            declared += ", no messages"
        return "trl", "%s %s (TRL's reward function signature)" % (what, declared)
    if "solution_str" in names:
        return "verl", "%s solution_str (veRL's compute_score signature)" % what
    if "completion" in names and "messages" not in names and names <= VERIFIERS_NAMES:
        declared = ", ".join(sorted(names)) + (", **kwargs" if var_kw else "")
        return "verifiers", "%s %s (a verifiers Rubric reward function)" % (what, declared)
    if "rollouts_messages" in names:
        return "batch", "%s rollouts_messages (reward-kit batch mode)" % what
    decorated = is_decorated(fn)
    if "messages" in names:
        return "reward-kit", "decorated with @reward_function" if decorated else "%s messages" % what
    if "response" in names:
        return "simple", "%s response, no messages" % what
    if decorated:
        return "reward-kit", "decorated with @reward_function"
    if names or not var_kw:
        listed = ", ".join(sorted(names)) or "no parameters"
        return "reward-kit", "%s %s: none of messages, completions, solution_str, response; called reward-kit style" % (
            what,
            listed,
        )
    return "reward-kit", "%s only **kwargs; called reward-kit style" % what


# What a verifiers Rubric passes a reward function, by keyword, filtered to what it
# declares (verifiers.rubrics.Rubric.call_reward_func).
VERIFIERS_NAMES = frozenset(("prompt", "completion", "answer", "state", "task", "info", "parser"))


def _last(messages, role):
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == role:
            content = message.get("content")
            return content if isinstance(content, str) else ("" if content is None else str(content))
    return ""


# --------------------------------------------------------------------------------------
# The calling styles: each turns parsed samples into calls and results
# --------------------------------------------------------------------------------------


class Pointwise:
    """reward-kit, simple, verl and verifiers: one call per sample."""

    batched = False

    def __init__(self, fn, style, extra_kwargs, solution_str="response"):
        self.fn = _verifiers_call(fn) if style == "verifiers" else fn
        self.style = style
        self.extra = extra_kwargs
        self.accepted = _accepts(fn)
        if style == "verifiers" and "parser" in self.accepted[0] and "parser" not in extra_kwargs:
            self.extra = _with_verifiers_parser(extra_kwargs)
        self.strict = style == "reward-kit" and is_decorated(fn)
        # veRL: "response", or "prompt+response" as older veRL (TinyZero) decodes it
        self.with_prompt = solution_str == "prompt+response"

    def arguments(self, sample):
        if self.style == "reward-kit":
            kwargs = dict(self.extra)
            kwargs.update(sample)
            kwargs["messages"] = sample["messages"]
            kwargs["ground_truth"] = sample.get("ground_truth")
            return _filter_kwargs(kwargs, self.accepted)
        messages = sample["messages"]
        if self.style == "verifiers":
            return _filter_kwargs(_verifiers_arguments(sample, messages, self.extra), self.accepted)
        if self.style == "simple":
            kwargs = dict(self.extra)
            kwargs.update({k: v for k, v in sample.items() if k != "messages"})
            kwargs["response"] = _last(messages, "assistant")
            kwargs["prompt"] = _last(messages, "user")
            answer = sample.get("answer", sample.get("ground_truth"))
            kwargs["answer"] = "" if answer is None else answer
            return _filter_kwargs(kwargs, self.accepted)
        # verl
        ground_truth = sample.get("ground_truth")
        reward_model = sample.get("reward_model")
        if ground_truth is None and isinstance(reward_model, dict):
            ground_truth = reward_model.get("ground_truth")
        solution = _last(messages, "assistant")
        if self.with_prompt:
            solution = _prompt_text(sample) + solution
        kwargs = dict(self.extra)
        kwargs.update(
            data_source=sample.get("data_source"),
            solution_str=solution,
            ground_truth=ground_truth,
            extra_info=sample.get("extra_info"),
        )
        return _filter_kwargs(kwargs, self.accepted)

    def result(self, value):
        if type(value) is Swallowed:
            return value.result()
        if self.style == "verl" and isinstance(value, dict):
            metrics = {k: _verl_metric(k, v) for k, v in value.items() if k != "score"}
            value = {"score": value.get("score"), "metrics": metrics}
        return _as_result(value, self.strict)


def _verifiers_arguments(sample, messages, extra):
    """A sample as a verifiers Rubric passes it: `prompt` and `completion` as messages
    (chat), or as strings when the sample's `prompt` is a string (completion format);
    `answer` the sample's `answer`, else its `ground_truth`, else ""; `state`, `task`
    ("default") and `info` ({}) from the sample's fields of those names."""
    prompt = sample.get("prompt")
    completion = sample.get("completion")
    if isinstance(prompt, str):
        if completion is None:
            completion = _last(messages, "assistant")
    else:
        prompt_messages = _prompt_messages(messages)
        if not isinstance(prompt, list):
            prompt = prompt_messages
        if completion is None:
            completion = messages[len(prompt_messages) :]
    answer = sample.get("answer", sample.get("ground_truth"))
    state = sample.get("state")
    info = sample.get("info")
    kwargs = dict(extra)
    kwargs.update(
        prompt=prompt,
        completion=completion,
        answer="" if answer is None else answer,
        state=state if isinstance(state, dict) else {},
        task=sample.get("task") or "default",
        info=info if isinstance(info, dict) else {},
    )
    return kwargs


def _with_verifiers_parser(extra):
    """A function that declares `parser` gets the Rubric's default, `verifiers.Parser()`,
    when verifiers is installed; else nothing, and the call's TypeError names it."""
    try:
        import verifiers

        return dict(extra, parser=verifiers.Parser())
    except Exception:
        return extra


class Swallowed:
    """What a verifiers Rubric makes of a reward function that raised: a score of 0.0,
    the error logged. The row keeps the score and shows the log line as its reason
    and the exception as its error."""

    __slots__ = ("name", "exc")

    def __init__(self, name, exc):
        self.name = name
        self.exc = exc

    def result(self):
        exc = self.exc
        return {
            "score": 0.0,
            "is_score_valid": True,
            "reason": "Error calling reward function %s: %s" % (self.name, exc),
            "metrics": {},
            "step_outputs": None,
            "error": "".join(traceback.format_exception_only(type(exc), exc)).strip(),
        }


def _verifiers_call(fn):
    """`fn` called as a verifiers Rubric calls it: its return read with float(), and an
    Exception (not a timeout, which is a BaseException) scored 0.0 and kept."""
    name = getattr(fn, "__name__", type(fn).__name__)
    if _is_async(fn):

        async def call_async(**kwargs):
            try:
                return float(await fn(**kwargs))
            except Exception as exc:
                return Swallowed(name, exc)

        return call_async

    def call(**kwargs):
        try:
            return float(fn(**kwargs))
        except Exception as exc:
            return Swallowed(name, exc)

    return call


def _is_async(fn):
    """Whether calling `fn` gives a coroutine to await: an `async def` function, or an
    object whose `__call__` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(type(fn), "__call__", None))


_LOOP = None


def _event_loop():
    """The worker's one asyncio event loop, made on first use."""
    global _LOOP
    if _LOOP is None:
        import asyncio

        _LOOP = asyncio.new_event_loop()
        asyncio.set_event_loop(_LOOP)
    return _LOOP


def _awaited(fn):
    """A plain function that runs `async def` `fn` to its end on the worker's event
    loop: one evaluation at a time, under the same timeout as a plain function."""

    def call(**kwargs):
        return _event_loop().run_until_complete(fn(**kwargs))

    return call


def _prompt_text(sample):
    """The prompt as the model saw it: the sample's string `prompt`, else its prompt
    messages (all but the final assistant turn) in ChatML, opening the assistant turn."""
    prompt = sample.get("prompt")
    if isinstance(prompt, str):
        return prompt
    messages = _prompt_messages(sample["messages"])
    parts = []
    for m in messages:
        role = _get(m, "role", "")
        content = _get(m, "content")
        parts.append("<|im_start|>%s\n%s<|im_end|>\n" % (role, "" if content is None else content))
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def _prompt_messages(messages):
    """The messages before the final assistant turn (the whole list when it has none)."""
    cut = len(messages)
    if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant":
        cut -= 1
    return messages[:cut]


def _verl_metric(name, value):
    if isinstance(value, (int, float)):
        return {"score": _number(value, "metric %r" % name), "reason": None}
    return {"score": 0.0, "is_score_valid": False, "reason": repr(value)}


class Batched:
    """trl (prompts, completions) and reward-kit batch mode: one call per batch."""

    batched = True

    def __init__(self, fn, style, extra_kwargs):
        self.fn = fn
        self.style = style
        self.extra = extra_kwargs
        self.accepted = _accepts(fn)

    def arguments(self, samples):
        if self.style == "batch":
            kwargs = dict(self.extra)
            kwargs.update(_columns(samples, exclude=("messages",)))
            kwargs["rollouts_messages"] = [s["messages"] for s in samples]
            return _filter_kwargs(kwargs, self.accepted)
        prompts, completions = [], []
        for s in samples:
            messages = s["messages"]
            prompt = _prompt_messages(messages)
            prompts.append(prompt)
            completions.append(messages[len(prompt) :])
        kwargs = dict(self.extra)
        kwargs.update(_columns(samples, exclude=("messages",)))
        kwargs["prompts"] = prompts
        kwargs["completions"] = completions
        return _filter_kwargs(kwargs, self.accepted)

    def results(self, value, count):
        if not isinstance(value, (list, tuple)):
            raise InvalidResult("a batched evaluator must return a list; it returned %s" % _describe(value))
        if len(value) != count:
            raise InvalidResult("returned %d scores for a batch of %d samples" % (len(value), count))
        out = []
        for item in value:
            if item is None and self.style == "trl":
                out.append(None)
            else:
                out.append(_as_result(item, False))
        return out


def _columns(samples, exclude):
    keys = []
    for s in samples:
        for k in s:
            if k not in exclude and k not in keys:
                keys.append(k)
    return {k: [s.get(k) for s in samples] for k in keys}


NO_SCORE = {
    "score": None,
    "is_score_valid": False,
    "reason": "the evaluator returned None (no score) for this sample",
    "metrics": {},
    "step_outputs": None,
    "error": None,
}


# --------------------------------------------------------------------------------------
# The worker: one evaluator, many batches
# --------------------------------------------------------------------------------------


class Worker:
    def __init__(self, sock, spec, root):
        self.sock = sock
        self.rfile = sock.makefile("rb", buffering=1 << 16)
        self.spec = spec
        self.root = os.path.realpath(root)
        folder = spec.get("folder") or os.path.dirname(spec["file"])
        self.folder = os.path.realpath(folder)
        self.roots = [self.root, self.folder]
        self.capture = Capture()
        self.evaluation = Evaluation(spec.get("timeout") or 0, self.capture)
        self.inventory = Inventory(self.roots)
        self.project_files = []
        self.pending = []
        self.last_flush = time.perf_counter()
        flush_ms = spec.get("flush_ms")
        self.flush_seconds = flush_ms / 1000.0 if isinstance(flush_ms, (int, float)) else FLUSH_SECONDS
        self.mark = None
        self.retiring = False
        self._concurrent = None

    def open_mark(self, path):
        """An 8-byte shared page holding the id of the sample being evaluated: if this
        process dies, rwb reads it to know which sample killed it, exactly, even though
        results computed just before were still in the send buffer."""
        size = 8 * (1 + MARK_SLOTS)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.ftruncate(fd, size)
        self.mark = mmap.mmap(fd, size)
        os.close(fd)
        struct.pack_into("<%dq" % (1 + MARK_SLOTS), self.mark, 0, *([-1] * (1 + MARK_SLOTS)))

    def send(self, obj):
        self.sock.sendall(_dumps(obj))

    def load(self):
        """Import the evaluator's module; report its files, style and imports."""
        before = set(sys.modules)
        path = os.path.realpath(self.spec["file"])
        name = self.spec.get("module") or os.path.splitext(os.path.basename(path))[0]
        try:
            module = self._import(name, path)
            shown = self.spec.get("module") or os.path.basename(path)
            function = self.spec.get("function") or "evaluate"
            fn = getattr(module, function, None)
            if fn is None:
                raise AttributeError("%s defines no function %r" % (shown, function))
            if not callable(fn):
                raise TypeError("%r in %s is %s, not a function" % (function, shown, type(fn).__name__))
        except BaseException as exc:  # SyntaxError, a missing module, anything the module raises
            info = _error_info(exc, self.roots, kind="ImportFailed")
            info["message"] = "%s: %s" % (type(exc).__name__, exc)
            info["output"] = self.capture.take()
            self.inventory.scan()
            self.project_files = self.inventory.project_files()
            info["files"] = self.project_files
            self.send({"import_error": info})
            return None
        if self.spec.get("style"):
            style = self.spec["style"]
            reason = 'set by style = "%s" in rwb.toml' % style
        else:
            style, reason = choose_style(fn)
        extra = self.spec.get("kwargs") or {}
        self.style = style
        if style in ("trl", "batch"):
            self.caller = Batched(fn, style, extra)
        else:
            self.caller = Pointwise(fn, style, extra, self.spec.get("solution_str") or "response")
        # an `async def` evaluator (any style): awaited one at a time by the plain
        # path, or many at once on one event loop by Concurrent
        self.caller.async_fn = self.caller.fn if _is_async(self.caller.fn) else None
        if self.caller.async_fn is not None:
            self.caller.fn = _awaited(self.caller.async_fn)
        third_party = sorted(
            {
                m.split(".")[0]
                for m in set(sys.modules) - before
                if m.split(".")[0] != name.split(".")[0]
                and not _is_project_file(_module_file(sys.modules.get(m)), self.roots)
            }
        )
        _, third = self.inventory.scan()
        self.project_files = self.inventory.project_files()
        self.send(
            {
                "ready": True,
                "style": style,
                "style_reason": reason,
                "decorated": is_decorated(fn),
                "files": self.project_files,
                "third_party": third_party,
                "packages": _packages(third),
                "output": self.capture.take(),
            }
        )
        return fn

    def _import(self, name, path):
        """The evaluator's module: by name for a package function (the workspace root
        is first on sys.path, so its relative imports work), else from its file."""
        import importlib
        import importlib.util

        if self.spec.get("module"):
            return importlib.import_module(name)
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None:
            raise ImportError("cannot load %s as a Python module" % path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
        return module

    def _imports_report(self, done):
        """Adds to a batch's `done` line what the batch imported that was not reported
        yet: the project files (all of them, when there are new ones) and the new
        third-party modules with their distributions."""
        if not self.inventory.grew():
            return
        project, third = self.inventory.scan()
        if project:
            self.project_files = self.inventory.project_files()
            done["files"] = self.project_files
        if third:
            done["packages"] = _packages(third)

    def serve(self):
        while True:
            header = self.rfile.readline()
            if not header or header.startswith(b"Q"):
                return
            checking = header.startswith(b"C")
            fields = header.split()
            count = int(fields[1])
            limit = int(fields[2]) if len(fields) > 2 else 1
            batch = []
            for _ in range(count):
                line = self.rfile.readline()
                ident, _, raw = line.partition(b" ")
                batch.append((int(ident), raw))
            if checking:
                self.run_checks(batch)
            elif self.caller.batched:
                self.run_batched(batch)
            elif limit > 1:
                self.concurrent().run(batch, limit)
            else:
                self.run_pointwise(batch)
            if self.retiring:
                # An evaluation was interrupted: what it started (processes, threads,
                # half-updated module state) must not outlive it. Say so and leave;
                # the worker's process group dies with it and rwb goes on with a
                # fresh worker.
                self.pending.append(_dumps({"retire": "timeout"}))
                self.flush()
                return
            done = {"done": count}
            self._imports_report(done)
            self.pending.append(_dumps(done))
            self.flush()

    def concurrent(self):
        """The runner of evaluations in flight together, made on first use; from then
        on what user code prints is routed to the evaluation that printed it."""
        if self._concurrent is None:
            self._concurrent = Concurrent(self)
            sys.stdout = sys.stderr = RoutedOutput(self.capture)
        return self._concurrent

    def run_pointwise(self, batch):
        """One evaluation at a time. A plain dict result that printed nothing is
        written straight as its protocol line (_plain_line); anything else is read and
        written by the general path."""
        caller, evaluation, capture = self.caller, self.evaluation, self.capture
        arguments, fn, call = caller.arguments, caller.fn, evaluation.call
        direct = caller.style != "verl"  # veRL reads a dict's other keys as metrics
        clock, mark, pending, interval = time.perf_counter, self.mark, self.pending, self.flush_seconds
        for ident, raw in batch:
            _MARK.pack_into(mark, 0, ident)
            t0 = clock()
            try:
                kwargs = arguments(_sample(raw))
                t0 = clock()
                value = call(fn, kwargs)
                t1 = clock()
                line = _plain_line(ident, (t1 - t0) * 1000.0, value) if direct and not capture.written() else None
                if line is not None:
                    pending.append(line)
                    if len(pending) >= FLUSH_COUNT or t1 - self.last_flush >= interval:
                        self.flush(t1)
                    continue
                message = {"i": ident, "ms": (t1 - t0) * 1000.0, "ok": caller.result(value)}
            except EvalTimeout:
                message = self._timeout(ident, t0)
                self.retiring = True
            except InvalidResult as exc:
                message = {"i": ident, "ms": (clock() - t0) * 1000.0, "err": {"type": "InvalidResult", "message": str(exc)}}
            except BaseException as exc:
                message = {"i": ident, "ms": (clock() - t0) * 1000.0, "err": _error_info(exc, self.roots, skip_frames=2)}
            out = evaluation.take_output()
            if out is not None:
                message["out"] = out
            self.send_result(message)
            if self.retiring:
                return

    def run_batched(self, batch):
        t0 = time.perf_counter()
        idents = [ident for ident, _ in batch]
        struct.pack_into("<q", self.mark, 0, idents[0] if idents else -1)
        try:
            samples = [_sample(raw) for _, raw in batch]
            kwargs = self.caller.arguments(samples)
            t0 = time.perf_counter()
            value = self.evaluation.call(self.caller.fn, kwargs)
            ms = (time.perf_counter() - t0) * 1000.0 / max(1, len(batch))
            results = self.caller.results(value, len(batch))
            messages = [
                {"i": ident, "ms": ms, "ok": NO_SCORE if r is None else r} for ident, r in zip(idents, results)
            ]
        except EvalTimeout:
            messages = [self._timeout(ident, t0) for ident in idents]
            self.retiring = True
        except InvalidResult as exc:
            err = {"type": "InvalidResult", "message": str(exc)}
            messages = [{"i": ident, "ms": 0.0, "err": err} for ident in idents]
        except BaseException as exc:
            err = _error_info(exc, self.roots, skip_frames=2)
            messages = [{"i": ident, "ms": 0.0, "err": err} for ident in idents]
        out = self.evaluation.take_output()
        if out is not None and messages:
            messages[0]["out"] = out
        for message in messages:
            self.send_result(message)

    # ----------------------------------------------------------------------------------
    # Contract checks: call the evaluator the way its trainer does and report breaks
    # ----------------------------------------------------------------------------------

    def run_checks(self, batch):
        import copy

        samples = []
        for ident, raw in batch:
            try:
                samples.append((ident, json.loads(raw)))
            except ValueError as exc:
                self.send_result({"i": ident, "issues": ["not JSON: %s" % exc]})
        try:
            if self.caller.batched:
                found = self._check_batched([s for _, s in samples], copy)
                for (ident, _), issues in zip(samples, found):
                    self.send_result({"i": ident, "issues": issues})
            else:
                for ident, sample in samples:
                    self.send_result({"i": ident, "issues": self._check_pointwise(sample, copy)})
        finally:
            self.evaluation.take_output()

    def _call_for_check(self, kwargs):
        try:
            return self.evaluation.call(self.caller.fn, kwargs), None
        except EvalTimeout:
            return None, "did not return within %g s" % self.evaluation.timeout
        except BaseException as exc:
            return None, "raised %s: %s" % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")

    def _check_value(self, value):
        style = self.caller.style
        if value is None:
            return ["returned None, not a score"]
        if isinstance(value, dict) and "score" not in value:
            return ["returned a dict without a 'score' key (keys: %s)" % ", ".join(map(str, value))]
        try:
            result = self.caller.result(value)
        except InvalidResult as exc:
            return [str(exc)]
        issues = []
        if style in ("reward-kit", "simple") and not 0.0 <= result["score"] <= 1.0:
            issues.append("score %r is outside [0, 1]" % result["score"])
        for name, metric in result["metrics"].items():
            if style == "reward-kit" and not 0.0 <= metric["score"] <= 1.0:
                issues.append("component %r score %r is outside [0, 1]" % (name, metric["score"]))
        return issues

    def _check_pointwise(self, sample, copy):
        kwargs = self.caller.arguments(copy.deepcopy(sample))
        before = copy.deepcopy(kwargs)
        first, error = self._call_for_check(kwargs)
        if error:
            return [error]
        issues = []
        changed = sorted(k for k in before if kwargs.get(k) != before[k])
        if changed:
            issues.append("mutated its input: %s" % ", ".join(changed))
        issues += self._check_value(first)
        second, error = self._call_for_check(self.caller.arguments(copy.deepcopy(sample)))
        if error:
            issues.append("a second identical call " + error)
        elif _comparable(self.caller, first) != _comparable(self.caller, second):
            issues.append("a second identical call returned a different result")
        return issues

    def _check_batched(self, samples, copy):
        n = len(samples)
        kwargs = self.caller.arguments(copy.deepcopy(samples))
        before = copy.deepcopy(kwargs)
        first, error = self._call_for_check(kwargs)
        if error:
            return [[error] for _ in samples]
        shared = []
        changed = sorted(k for k in before if kwargs.get(k) != before[k])
        if changed:
            shared.append("mutated its input: %s" % ", ".join(changed))
        if not isinstance(first, (list, tuple)):
            return [shared + ["returned %s, not a list of scores" % _describe(first)] for _ in samples]
        if len(first) != n:
            return [shared + ["returned %d scores for a batch of %d" % (len(first), n)] for _ in samples]
        second, error = self._call_for_check(self.caller.arguments(copy.deepcopy(samples)))
        out = []
        for i, item in enumerate(first):
            issues = list(shared)
            if item is not None:
                try:
                    _as_result(item, False)
                except InvalidResult as exc:
                    issues.append(str(exc))
            if error:
                issues.append("a second identical call " + error)
            elif isinstance(second, (list, tuple)) and len(second) == n and repr(second[i]) != repr(item):
                issues.append("a second identical call returned a different result (%r, then %r)" % (item, second[i]))
            out.append(issues)
        return out

    def _timeout(self, ident, t0):
        ms = (time.perf_counter() - t0) * 1000.0
        limit = self.evaluation.timeout
        return {
            "i": ident,
            "ms": ms,
            "err": {
                "type": "Timeout",
                "message": "the evaluation did not return within %g s (set --timeout or `timeout` in rwb.toml)" % limit,
            },
        }

    def send_result(self, message):
        try:
            data = _result_line(message)
        except (TypeError, ValueError) as exc:
            # NaN/inf inside step_outputs, or an object json cannot write
            message = {
                "i": message["i"],
                "ms": message.get("ms", 0.0),
                "err": {"type": "InvalidResult", "message": "the result cannot be written as JSON: %s" % exc},
            }
            data = _dumps(message)
        self.pending.append(data)
        now = time.perf_counter()
        if len(self.pending) >= FLUSH_COUNT or now - self.last_flush >= self.flush_seconds:
            self.flush(now)

    def flush(self, now=None):
        if self.pending:
            self.sock.sendall(b"".join(self.pending))
            self.pending.clear()  # in place: run_pointwise holds the list
        self.last_flush = now if now is not None else time.perf_counter()


class InOrder:
    """Sends the rows of one batch in sample order, each as soon as the rows before
    it are sent."""

    def __init__(self, send, count):
        self.send = send
        self.rows = [None] * count
        self.next = 0

    def put(self, index, message):
        rows = self.rows
        rows[index] = message
        while self.next < len(rows) and rows[self.next] is not None:
            self.send(rows[self.next])
            self.next += 1

    def rest(self):
        """Sends the rows left behind a gap (samples a retiring worker never started)."""
        for message in self.rows[self.next :]:
            if message is not None:
                self.send(message)
        self.next = len(self.rows)


class Concurrent:
    """Up to `limit` evaluations of a batch in flight at once (`concurrency = N`), for
    evaluators that wait on the network: threads for a plain function, the worker's
    one asyncio event loop for an `async def` one.

    Each evaluation keeps what a one-at-a-time evaluation has: its own deadline (a
    thread past it gets its Timeout row and is left behind; an asyncio task is
    cancelled), its own captured output (RoutedOutput), and a slot in the mark page
    holding its sample id while it runs, so that rwb knows which samples were running
    if the worker dies. Rows go out in sample order. After a timeout no evaluation
    starts; those in flight finish and the worker retires after the batch, as after a
    timeout of the plain path (rwb runs the samples not started on a fresh worker)."""

    def __init__(self, worker):
        self.worker = worker
        self.todo = queue.SimpleQueue()
        self.finished = queue.SimpleQueue()
        self.live = 0  # threads not left behind
        self.made = 0  # threads made: thread k writes mark slot k

    def run(self, batch, limit):
        worker = self.worker
        rows = InOrder(worker.send_result, len(batch))
        calls = []
        for index, (ident, raw) in enumerate(batch):
            try:
                calls.append((index, ident, worker.caller.arguments(json.loads(raw))))
            except BaseException as exc:
                rows.put(index, self.row(ident, (False, exc), 0.0, None))
        if worker.caller.async_fn is not None:
            _event_loop().run_until_complete(self.run_tasks(calls, limit, rows))
        else:
            self.run_threads(calls, limit, rows)
        rows.rest()

    def row(self, ident, outcome, ms, out):
        """The result line of one evaluation, as run_pointwise writes it."""
        done, value = outcome
        try:
            if not done:
                raise value
            message = {"i": ident, "ms": ms, "ok": self.worker.caller.result(value)}
        except InvalidResult as exc:
            message = {"i": ident, "ms": ms, "err": {"type": "InvalidResult", "message": str(exc)}}
        except BaseException as exc:
            message = {"i": ident, "ms": ms, "err": _error_info(exc, self.worker.roots, skip_frames=1)}
        if out is not None:
            message["out"] = out
        return message

    # threads ----------------------------------------------------------------------

    def run_threads(self, calls, limit, rows):
        worker = self.worker
        while self.live < limit:
            self.made += 1
            self.live += 1
            threading.Thread(target=self.thread, args=(self.made,), name="rwb-eval", daemon=True).start()
        timeout = worker.evaluation.timeout
        batch = object()  # a late answer from a thread left behind is not this batch's
        starts, flying = {}, {}
        fn = worker.caller.fn
        position = 0
        while True:
            while not worker.retiring and position < len(calls) and len(flying) < limit:
                index, ident, kwargs = calls[position]
                position += 1
                flying[index] = ident
                self.todo.put((batch, index, ident, fn, kwargs, starts))
            if not flying:
                return
            try:
                answer = self.finished.get(timeout=self.wait(flying, starts, timeout))
            except queue.Empty:
                self.expire(flying, starts, timeout, rows)
                continue
            tag, index, outcome, ms, out = answer
            ident = flying.pop(index, None) if tag is batch else None
            if ident is not None:
                rows.put(index, self.row(ident, outcome, ms, out))

    @staticmethod
    def wait(flying, starts, timeout):
        """Seconds until the first deadline of the evaluations in flight (None: none)."""
        if not timeout:
            return None
        now = time.perf_counter()
        due = min((starts[i] + timeout for i in flying if i in starts), default=now + timeout)
        return max(0.0, due - now)

    def expire(self, flying, starts, timeout, rows):
        """Timeout rows for the evaluations past their deadline; their threads are left
        behind (they die with the worker, which retires after this batch)."""
        now = time.perf_counter()
        for index in [i for i in flying if i in starts and now >= starts[i] + timeout]:
            ident = flying.pop(index)
            rows.put(index, self.worker._timeout(ident, starts[index]))
            self.live -= 1
            self.worker.retiring = True

    def thread(self, slot):
        mark = self.worker.mark if slot <= MARK_SLOTS else None
        clock = time.perf_counter
        while True:
            batch, index, ident, fn, kwargs, starts = self.todo.get()
            capture = Capture()
            _OUTPUT.set(capture)
            if mark is not None:
                struct.pack_into("<q", mark, 8 * slot, ident)
            t0 = starts[index] = clock()
            try:
                outcome = (True, fn(**kwargs))
            except BaseException as exc:
                outcome = (False, exc)
            ms = (clock() - t0) * 1000.0
            if mark is not None:
                struct.pack_into("<q", mark, 8 * slot, -1)
            _OUTPUT.set(None)
            self.finished.put((batch, index, outcome, ms, capture.take()))

    # asyncio ----------------------------------------------------------------------

    async def run_tasks(self, calls, limit, rows):
        import asyncio

        gate = asyncio.Semaphore(limit)
        free = list(range(min(limit, MARK_SLOTS), 0, -1))

        async def one(index, ident, kwargs):
            async with gate:
                if self.worker.retiring:
                    return  # not started: rwb runs it on a fresh worker
                slot = free.pop()
                rows.put(index, await self.task(ident, kwargs, slot))
                free.append(slot)

        await asyncio.gather(*(one(*call) for call in calls))

    async def task(self, ident, kwargs, slot):
        """One evaluation as an asyncio task with its own capture, cancelled at its
        deadline."""
        import asyncio

        worker = self.worker
        capture = Capture()
        _OUTPUT.set(capture)  # this task's context; the evaluation's task copies it
        struct.pack_into("<q", worker.mark, 8 * slot, ident)
        t0 = time.perf_counter()
        try:
            running = asyncio.ensure_future(worker.caller.async_fn(**kwargs))
            finished, _ = await asyncio.wait({running}, timeout=worker.evaluation.timeout or None)
            if running in finished:
                outcome = (True, running.result())
            else:
                running.cancel()
                outcome = None
        except BaseException as exc:
            outcome = (False, exc)
        struct.pack_into("<q", worker.mark, 8 * slot, -1)
        if outcome is None:
            worker.retiring = True
            message = worker._timeout(ident, t0)
            out = capture.take()
            if out is not None:
                message["out"] = out
            return message
        return self.row(ident, outcome, (time.perf_counter() - t0) * 1000.0, capture.take())


def _comparable(caller, value):
    try:
        return json.dumps(caller.result(value), sort_keys=True, default=repr)
    except BaseException:
        return repr(value)


def _module_file(module):
    path = getattr(module, "__file__", None)
    if not path:
        return None
    return os.path.realpath(path)


# One encoder for every protocol line: json.dumps builds a new one per call when given
# options, which costs about a third of writing a result.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# One decoder for every sample line (json.loads of bytes first guesses their encoding).
_DECODER = json.JSONDecoder()
# How _ENCODER writes a string (quoted, escaped, not ASCII-only).
_quoted = json.encoder.encode_basestring


def _dumps(obj):
    return (_ENCODER.encode(obj) + "\n").encode("utf-8")


# The decoder's scanner: one JSON value at an offset, without the whitespace checks
# around it that decode() makes with regular expressions.
_scan = _DECODER.scan_once
_JSON_SPACE = " \t\n\r"


def _sample(raw):
    """A sample line (UTF-8 bytes rwb checked is a JSON object) as a dict."""
    text = raw.decode("utf-8")
    try:
        value, end = _scan(text, 0)
    except StopIteration:  # leading whitespace, or not JSON: decode() says which
        return _DECODER.decode(text)
    if end == len(text) or not text[end:].strip(_JSON_SPACE):
        return value
    return _DECODER.decode(text)


# Writes a sample id into a slot of the mark page.
_MARK = struct.Struct("<q")
# The protocol line of a plain result: what _dumps writes for it, key for key.
_PLAIN_LINE = '{"i":%d,"ms":%r,"ok":{"score":%r,"is_score_valid":%s,"reason":%s,"metrics":{},"step_outputs":null,"error":null}%s}\n'
_RESULT_KEYS = ("i", "ms", "ok")
_RESULT_KEYS_OUT = ("i", "ms", "ok", "out")


def _result_line(message):
    """A result message as its protocol line: the bytes _dumps(message) gives, written
    directly when the result is plain (finite float score, str or no reason, nothing
    else; about a quarter of the encoder's cost), else by _dumps. Raises what _dumps
    raises (ValueError for text that is not UTF-8, ...)."""
    keys = tuple(message)
    ok = message.get("ok")
    if keys != _RESULT_KEYS and keys != _RESULT_KEYS_OUT or type(ok) is not dict:
        return _dumps(message)
    ident, ms, out = message["i"], message["ms"], message.get("out")
    score, valid, reason = ok.get("score"), ok.get("is_score_valid"), ok.get("reason")
    plain = (
        tuple(ok) == _RESULT_FIELDS
        and type(ident) is int
        and type(ms) is float
        and math.isfinite(ms)
        and type(score) is float
        and math.isfinite(score)
        and (valid is True or valid is False)
        and (reason is None or type(reason) is str)
        and type(ok["metrics"]) is dict
        and not ok["metrics"]
        and ok["step_outputs"] is None
        and ok["error"] is None
        and (out is None and len(keys) == 3 or type(out) is str)
    )
    if not plain:
        return _dumps(message)
    text = _PLAIN_LINE % (
        ident,
        ms,
        score,
        "true" if valid else "false",
        "null" if reason is None else _quoted(reason),
        "" if out is None else ',"out":' + _quoted(out),
    )
    return text.encode("utf-8")


# The protocol line run_pointwise writes for a plain result: `ms` with six decimals (a
# nanosecond; the shortest round-trip digits repr writes cost more than the rest of the
# line), the score as repr writes it (exactly), the reason JSON-quoted.
_PLAIN_RESULT_LINE = '{"i":%d,"ms":%.6f,"ok":{"score":%r,"is_score_valid":true,"reason":%s,"metrics":{},"step_outputs":null,"error":null}}\n'


def _plain_line(ident, ms, value):
    """The protocol line of sample `ident`'s result when `value` is a plain dict result
    (see _plain_parts), else None: the same result _as_result reads from it, written
    without building it. None too for a reason that is not UTF-8 text (a lone
    surrogate), which the general path reports."""
    parts = _plain_parts(value)
    if parts is None:
        return None
    score, reason = parts
    text = _PLAIN_RESULT_LINE % (ident, ms, score, "null" if reason is None else _quoted(reason))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None


# --------------------------------------------------------------------------------------
# The zygote: stays warm, forks workers
# --------------------------------------------------------------------------------------


def _set_parent_death_signal():
    """Linux: die with the zygote, even if it is killed with SIGKILL."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
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


def _child(sock_path, token, root, spec):
    _own_process_group()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _set_parent_death_signal()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # C-level writes to stdout must never reach the zygote's control pipe
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(sock_path)
    sock.sendall(_dumps({"hello": token, "pid": os.getpid()}))
    if "random" in sys.modules:
        sys.modules["random"].seed()
    folder = spec.get("folder") or os.path.dirname(spec["file"])
    os.chdir(root)
    for entry in (root, folder):
        while entry in sys.path:
            sys.path.remove(entry)
    sys.path[0:0] = [folder, root]
    worker = Worker(sock, spec, root)
    worker.open_mark(os.path.join(os.path.dirname(sock_path), "mark-%d" % os.getpid()))
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


def main(argv):
    sock_path, compat_dir = argv[1], argv[2]
    control_out = sys.stdout
    sys.stdout = sys.stderr  # anything the preloaded modules print stays off the control pipe
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
        }
    )
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
            sys.stderr.flush()
            forked = _live_groups(forked)
            pid = os.fork()
            if pid == 0:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                _child(sock_path, command["token"], command["root"], command["evaluator"])
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


if __name__ == "__main__":
    main(sys.argv)
