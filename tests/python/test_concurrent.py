"""Unit tests of Concurrent and InOrder in rwb_worker.py: evaluations in flight
together, rows in sample order, per-evaluation output, deadline and mark slot."""

import asyncio
import contextlib
import json
import mmap
import struct
import threading
import time
import unittest

from test_worker_helpers import W


class Host:
    """The parts of a Worker that Concurrent uses, with the rows it sends kept."""

    def __init__(self, fn, timeout=0):
        self.caller = W.make_caller(fn, "reward-kit", {})
        self.caller.async_fn = fn if W._is_async(fn) else None
        self.evaluation = type("Evaluation", (), {"timeout": timeout})()
        self.mark = mmap.mmap(-1, 8 * (1 + W.MARK_SLOTS))
        struct.pack_into("<%dq" % (1 + W.MARK_SLOTS), self.mark, 0, *([-1] * (1 + W.MARK_SLOTS)))
        self.roots = ["/nonexistent"]
        self.retiring = False
        self.sent = []
        self.marks_seen = set()

    def send_result(self, message):
        self.sent.append(message)

    def _timeout(self, ident, t0):
        return {"i": ident, "err": {"type": "Timeout"}}


def batch(count):
    return [(100 + n, json.dumps({"messages": [], "n": n}).encode()) for n in range(count)]


class ConcurrentTest(unittest.TestCase):
    def run_batch(self, host, count, limit):
        runner = W.Concurrent(host)
        previous = W._OUTPUT.get()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(W.RoutedOutput(W.Capture())):  # as Worker.concurrent() does
            runner.run(batch(count), limit)
        W._OUTPUT.set(previous)
        return time.perf_counter() - t0

    def test_threads_keep_limit_in_flight_and_send_rows_in_sample_order(self):
        lock = threading.Lock()
        state = {"now": 0, "most": 0}
        host = None

        def slow(messages, n):
            with lock:
                state["now"] += 1
                state["most"] = max(state["most"], state["now"])
                host.marks_seen.update(
                    i for i in struct.unpack_from("<%dq" % W.MARK_SLOTS, host.mark, 8) if i >= 0
                )
            print("row", n)
            time.sleep(0.05 * (3 - n % 3))  # later samples often finish first
            with lock:
                state["now"] -= 1
            return n / 10

        host = Host(slow)
        took = self.run_batch(host, 12, 4)
        self.assertEqual([m["i"] for m in host.sent], list(range(100, 112)))
        self.assertEqual([m["ok"]["score"] for m in host.sent], [n / 10 for n in range(12)])
        self.assertEqual([m["out"] for m in host.sent], ["row %d\n" % n for n in range(12)])
        self.assertEqual(state["most"], 4)
        self.assertLess(took, 1.1, "12 waits of 0.05-0.15 s: 1.2 s one at a time, about 0.45 s 4 at a time")
        self.assertTrue(host.marks_seen <= set(range(100, 112)) and len(host.marks_seen) >= 4)
        self.assertEqual(struct.unpack_from("<%dq" % W.MARK_SLOTS, host.mark, 8), (-1,) * W.MARK_SLOTS)

    def test_a_thread_past_its_deadline_gets_a_timeout_row_and_no_new_evaluation_starts(self):
        def hang(messages, n):
            time.sleep(5 if n == 1 else 0.1)
            return 0.5

        host = Host(hang, timeout=0.3)
        took = self.run_batch(host, 8, 2)
        self.assertLess(took, 2)
        self.assertTrue(host.retiring)
        rows = {m["i"]: m for m in host.sent}
        self.assertEqual(rows[101]["err"]["type"], "Timeout")
        self.assertNotIn(107, rows, "the samples after the timeout wait for a fresh worker")
        self.assertTrue(all("ok" in m for i, m in rows.items() if i != 101))

    def test_async_tasks_share_one_loop_and_a_late_one_is_cancelled(self):
        cancelled = []

        async def judged(messages, n):
            try:
                await asyncio.sleep(5 if n == 2 else 0.1)
            except asyncio.CancelledError:
                cancelled.append(n)
                raise
            print("judged", n)
            if n == 3:
                raise ValueError("no verdict")
            return n / 10

        host = Host(judged, timeout=0.5)
        took = self.run_batch(host, 6, 6)
        self.assertLess(took, 2)
        self.assertEqual(cancelled, [2])
        self.assertEqual([m["i"] for m in host.sent], list(range(100, 106)))
        self.assertEqual(host.sent[2]["err"], {"type": "Timeout"})
        self.assertEqual(host.sent[3]["err"]["type"], "ValueError")
        self.assertEqual(host.sent[3]["out"], "judged 3\n")
        self.assertEqual([host.sent[n]["ok"]["score"] for n in (0, 1, 4, 5)], [0.0, 0.1, 0.4, 0.5])

    def test_in_order_sends_each_row_once_the_ones_before_it_are_sent(self):
        sent = []
        rows = W.InOrder(sent.append, 4)
        rows.put(2, "c")
        rows.put(1, "b")
        self.assertEqual(sent, [])
        rows.put(0, "a")
        self.assertEqual(sent, ["a", "b", "c"])
        rows.rest()
        self.assertEqual(sent, ["a", "b", "c"])


if __name__ == "__main__":
    unittest.main()
