"""The worker: one evaluator, many batches. It imports the evaluator (load), then
serves the batches rwb sends over its socket: one evaluation at a time
(run_pointwise, the hot path), one call per batch (run_batched), several in flight
(Concurrent) or contract checks; results leave in chunks (send_result, flush).
"""

import mmap
import os
import struct
import sys
import time

from . import checks, tally
from .asyncs import _awaited, _is_async
from .concurrent import Concurrent
from .errors import _error_info, missing_module_hint
from .imports import Inventory, _packages
from .load import evaluator_function
from .output import Capture, RoutedOutput
from .paths import _is_project_file, _module_file
from .results import NO_SCORE, InvalidResult, set_style
from .styles import choose_style, make_caller
from .styles.calling import is_decorated
from .timeouts import EvalTimeout, Evaluation
from .styles.samples import with_templated_prompt
from .wire import FLUSH_COUNT, FLUSH_SECONDS, MARK_SLOTS, _MARK, _dumps, _plain_line, _result_line, _sample

# graders.Caller.style, known without importing graders.py (see Worker.load_grader)
GRADER_STYLE = "grader"


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
        # why it retires: "timeout", or "split" when a batched call of several samples
        # overran and rwb is to call them one at a time to find the one that hangs
        self.retire_reason = "timeout"
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
            if self.spec.get("style") == GRADER_STYLE:
                return self.load_grader()
            fn = evaluator_function(self.spec, name, path)
            if self.spec.get("style"):
                style = self.spec["style"]
                reason = 'set by style = "%s" in rwb.toml' % style
                if self.spec.get("call"):
                    reason = "set by call = { ... } in rwb.toml"
            else:
                style, reason = choose_style(fn, self.spec.get("trainer"))
            extra = self.spec.get("kwargs") or {}
            # may construct the reward (an ms-swift ORM class), which may raise too
            caller = make_caller(fn, style, extra, self.spec)
        except BaseException as exc:  # SyntaxError, a missing module, anything the module raises
            info = _error_info(exc, self.roots, kind="ImportFailed")
            info["message"] = "%s: %s" % (type(exc).__name__, exc)
            hint = missing_module_hint(exc, self.roots)
            if hint:
                info["message"] += " (%s)" % hint
            info["output"] = self.capture.take()
            self.inventory.scan()
            self.project_files = self.inventory.project_files()
            info["files"] = self.project_files
            self.send({"import_error": info})
            return None
        self.style = style
        set_style(style)
        self.caller = caller
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
                "call": _call_text(caller),
                "decorated": is_decorated(fn),
                "files": self.project_files,
                "third_party": third_party,
                "packages": _packages(third),
                "output": self.capture.take(),
            }
        )
        return fn

    def load_grader(self):
        """An OpenAI grader object (graders.py): no module of the user's to import;
        its file is what the evaluator's code is (its content in the cache key, an
        edit reruns it). graders.py is imported here, not with the worker: it brings
        urllib and the HTTP client, which no other evaluator pays for at start-up."""
        from . import graders

        fn = graders.evaluator(self.spec)
        self.style = graders.Caller.style
        self.caller = graders.Caller(fn, {}, self.spec)
        self.caller.async_fn = None
        self.inventory.scan()
        self.project_files = self.inventory.project_files()
        if self.spec.get("grader") is None:
            self.project_files = self.project_files + [os.path.realpath(self.spec["file"])]
        self.send(
            {
                "ready": True,
                "style": self.style,
                "style_reason": "a %s grader" % (self.spec.get("grader_type") or "OpenAI"),
                "call": None,
                "decorated": False,
                "files": self.project_files,
                "third_party": [],
                "packages": _packages([]),
                "output": self.capture.take(),
            }
        )
        return fn

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
            prompted = header.startswith(b"P")
            fields = header.split()
            count = int(fields[1])
            limit = int(fields[2]) if len(fields) > 2 else 1
            # "B n 1 w": watched for swallowed exceptions (the workbench's R)
            watching = len(fields) > 3 and fields[3] == b"w"
            batch = []
            for _ in range(count):
                line = self.rfile.readline()
                ident, _, raw = line.partition(b" ")
                if raw[:1] == b"@":
                    # the sample as marshal data, its size given (see _sample)
                    raw = self.rfile.read(int(raw[1:]))
                elif prompted:
                    # the prompt as rwb rendered the trainer's chat template, carried
                    # in the sample under a key no sample has (samples.TEMPLATED)
                    raw = with_templated_prompt(raw, self.rfile.readline())
                batch.append((int(ident), raw))
            if checking:
                self.run_checks(batch)
            elif watching:
                from .swallowed import run_watched  # imported by a watched batch only

                run_watched(self, batch)
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
                self.pending.append(_dumps({"retire": self.retire_reason}))
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

    def run_pointwise(self, batch, plain=True):
        """One evaluation at a time. A plain dict result that printed nothing is
        written straight as its protocol line (_plain_line); anything else is read and
        written by the general path (every result, with `plain` False: run_watched
        adds to its messages).

        The hot path of a run over a file: what Evaluation.call does is written out
        here (a call less per sample), and times are whole nanoseconds."""
        caller, evaluation, capture = self.caller, self.evaluation, self.capture
        arguments, fn, written = caller.arguments, caller.fn, capture.written
        direct = caller.direct and plain  # veRL reads a dict's other keys as metrics, a described call its path
        clock, mark, pending, pack = time.perf_counter_ns, self.mark, self.pending, _MARK.pack_into
        sandboxed = tally.CURRENT  # what rwb's sandbox ran for this sample (empty: nothing)
        interval = int(self.flush_seconds * 1e9)
        due = int(self.last_flush * 1e9) + interval
        for ident, raw in batch:
            pack(mark, 0, ident)
            t0 = clock()
            try:
                kwargs = arguments(_sample(raw))
                t0 = clock()
                # Evaluation.call: the start stamped for the watchdog, an overrun told
                # from the user's own exceptions
                started = evaluation.started = t0 / 1e9
                try:
                    value = fn(**kwargs)
                except BaseException:
                    evaluation.started = None
                    if evaluation.expired == started:  # it caught the signal and raised something else
                        raise EvalTimeout() from None
                    raise
                evaluation.started = None
                t1 = clock()
                if evaluation.expired == started:  # it swallowed the signal, then returned late
                    raise EvalTimeout()
                line = _plain_line(ident, t1 - t0, value) if direct and not written() and not sandboxed else None
                if line is not None:
                    pending.append(line)
                    if len(pending) >= FLUSH_COUNT or t1 >= due:
                        self.flush(t1 / 1e9)
                        due = t1 + interval
                    continue
                message = {"i": ident, "ms": (t1 - t0) / 1e6, "ok": caller.result(value)}
            except EvalTimeout:
                message = self._timeout(ident, (clock() - t0) / 1e6)
                self.retiring = True
            except InvalidResult as exc:
                message = {"i": ident, "ms": (clock() - t0) / 1e6, "err": {"type": "InvalidResult", "message": str(exc)}}
            except BaseException as exc:
                message = {"i": ident, "ms": (clock() - t0) / 1e6, "err": _error_info(exc, self.roots, skip_frames=1)}
            out = evaluation.take_output()
            if out is not None:
                message["out"] = out
            if sandboxed:
                message["sandbox"] = tally.take()
            self.send_result(message)
            due = int(self.last_flush * 1e9) + interval
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
            self.retiring = True
            if len(batch) > 1:
                # no row yet: rwb calls these samples again one at a time (SPEC §3,
                # a batch that times out names its sample)
                self.retire_reason = "split"
                self.evaluation.take_output()
                tally.take()  # (the samples' own calls count their runs again)
                return
            ms = (time.perf_counter() - t0) * 1000.0
            messages = [self._timeout(ident, ms) for ident in idents]
        except InvalidResult as exc:
            err = {"type": "InvalidResult", "message": str(exc)}
            messages = [{"i": ident, "ms": 0.0, "err": err} for ident in idents]
        except BaseException as exc:
            err = _error_info(exc, self.roots, skip_frames=2)
            messages = [{"i": ident, "ms": 0.0, "err": err} for ident in idents]
        out = self.evaluation.take_output()
        if out is not None and messages:
            messages[0]["out"] = out
        ran = tally.take()
        if ran is not None and messages:
            ran["of"] = "batch"  # the call's, told with its first sample
            messages[0]["sandbox"] = ran
        for message in messages:
            self.send_result(message)

    def run_checks(self, batch):
        """Contract checks of a "C" batch (see checks.py)."""
        checks.run(self, batch)

    def _timeout(self, ident, ms):
        """The row of sample `ident`, whose evaluation overran after `ms`."""
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


def _call_text(caller):
    """The call a described caller makes, in words (`rwb check`), else None."""
    described = getattr(caller, "d", None)
    return described.text() if described is not None and hasattr(described, "text") else None
