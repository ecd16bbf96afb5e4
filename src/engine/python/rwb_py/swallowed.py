"""Exceptions swallowed inside the reward, for `rwb check` (SPEC §16): raised and
handled in the evaluator's own files (not in libraries it calls) during a checked
call. With `sys.monitoring` (PEP 669, Python 3.12+): EXCEPTION_HANDLED in a project
file's code, undone by a RERAISE there; on older interpreters with `sys.settrace`'s
exception events (an exception event in a project frame followed by a line event
in the same frame). Either way only while a check runs: a normal run pays nothing.

An exception that leaves the call (the evaluator raised) is not swallowed.
"""

import os
import sys

from .paths import _is_project_file

_TOOL = 4  # sys.monitoring tool ids 0-5; 0-2 and 5 are named (debugger, coverage, profiler, optimizer)
_IGNORED = (StopIteration, StopAsyncIteration, GeneratorExit)


class Watch:
    """`with Watch(roots) as caught:` then `caught.result(raised)`: a list of
    (type name, "file:line") for each exception swallowed in project files."""

    def __init__(self, roots):
        self.roots = roots
        self.root = roots[0]
        self.caught = {}
        self._project = {}

    def _is_project(self, filename):
        known = self._project.get(filename)
        if known is None:
            # `<frozen os>`, `<string>`: no file, never the project's
            real = not filename.startswith("<") and _is_project_file(os.path.realpath(filename), self.roots)
            known = self._project[filename] = real
        return known

    def _place(self, filename, line):
        path = os.path.realpath(filename)
        rel = os.path.relpath(path, self.root) if path.startswith(self.root + os.sep) else path
        return "%s:%s" % (rel, line)

    def _record(self, exc, filename, line):
        if isinstance(exc, _IGNORED):
            return
        self.caught[id(exc)] = (exc, type(exc).__name__, self._place(filename, line))

    # -- Python 3.12+ --------------------------------------------------------------

    def _handled(self, code, offset, exc):
        if self._is_project(code.co_filename):
            tb = exc.__traceback__
            line = tb.tb_lineno if tb is not None and tb.tb_frame.f_code is code else code.co_firstlineno
            self._record(exc, code.co_filename, line)

    def _reraised(self, code, offset, exc):
        if self._is_project(code.co_filename):
            self.caught.pop(id(exc), None)

    # -- older interpreters ----------------------------------------------------------

    def _call(self, frame, event, arg):
        if event != "call" or not self._is_project(frame.f_code.co_filename):
            return None
        return self._local

    def _local(self, frame, event, arg):
        if event == "exception":
            self._pending[id(frame)] = (arg[1], frame.f_code.co_filename, frame.f_lineno)
        elif event == "line" or event == "return":
            pending = self._pending.pop(id(frame), None)
            if pending is not None and event == "line":
                self._record(*pending)
        return self._local

    def __enter__(self):
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            events = monitoring.events
            if monitoring.get_tool(_TOOL) is None:
                monitoring.use_tool_id(_TOOL, "rwb check")
            monitoring.register_callback(_TOOL, events.EXCEPTION_HANDLED, self._handled)
            monitoring.register_callback(_TOOL, events.RERAISE, self._reraised)
            monitoring.set_events(_TOOL, events.EXCEPTION_HANDLED | events.RERAISE)
        else:
            self._pending = {}
            sys.settrace(self._call)
        return self

    def __exit__(self, *exc):
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            monitoring.set_events(_TOOL, 0)
        else:
            sys.settrace(None)
        return False

    def result(self, raised=None):
        """What was swallowed, leaving out `raised` (what the call itself raised)."""
        return [(name, at) for key, (exc, name, at) in self.caught.items() if exc is not raised]


def per_sample(roots, call, samples):
    """The exceptions swallowed in the project's files while a batched evaluator
    scores `samples`, one list per sample: `call(batch)` makes one call of the
    evaluator on `batch` and returns what the call itself raised (or None).

    The batch is called once, watched. When that call swallowed something and the
    batch holds more than one sample, each sample is called again alone (a batch of
    one, watched) so that each exception is tied to the sample that raised it; what
    no lone call swallowed again (it needs the whole batch) is put on every sample.
    """
    watch = Watch(roots)
    with watch:
        raised = call(samples)
    found = watch.result(raised)
    if not found or len(samples) == 1:
        return [list(found) for _ in samples]
    alone = []
    for sample in samples:
        lone = Watch(roots)
        with lone:
            raised = call([sample])
        alone.append(lone.result(raised))
    again = {pair for pairs in alone for pair in pairs}
    rest = [pair for pair in found if pair not in again]
    return [pairs + rest for pairs in alone]


def run_watched(worker, batch):
    """A batch rwb flagged `w` (the workbench's `R`, SPEC §16): scored as any batch,
    one call at a time, each result carrying `swallowed` ([[type, "file:line"]]) when
    exceptions were swallowed in the project's files while it was scored. Only such
    batches are watched: a normal run pays nothing."""
    send = worker.send_result
    messages = []
    worker.send_result = messages.append  # the calls below answer into `messages`
    try:
        if worker.caller.batched:

            def call(part):
                worker.run_batched(part)
                return None

            found = per_sample(worker.roots, call, batch)
            answers = messages[: len(batch)]
            for message, pairs in zip(answers, found):
                if pairs:
                    message["swallowed"] = pairs
            out = answers
        else:
            out = []
            for item in batch:
                watch = Watch(worker.roots)
                with watch:
                    worker.run_pointwise([item], plain=False)
                for message in messages:
                    pairs = watch.result()
                    if pairs:
                        message["swallowed"] = pairs
                out += messages
                del messages[:]
                if worker.retiring:
                    break
    finally:
        del worker.send_result
    for message in out:
        send(message)
