"""Evaluations in flight together (`concurrency = N`): threads for a plain function,
the worker's event loop for an `async def` one, rows sent in sample order.
"""

import json
import queue
import struct
import threading
import time

from .asyncs import _event_loop
from .errors import _error_info
from .output import _OUTPUT, Capture
from .results import InvalidResult
from .wire import MARK_SLOTS


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
            rows.put(index, self.worker._timeout(ident, (now - starts[index]) * 1000.0))
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
            message = worker._timeout(ident, (time.perf_counter() - t0) * 1000.0)
            out = capture.take()
            if out is not None:
                message["out"] = out
            return message
        return self.row(ident, outcome, (time.perf_counter() - t0) * 1000.0, capture.take())
