"""A real Worker serving one-at-a-time batches over a socket pair: the rows it writes
for plain dict results (written straight by _plain_line) and for everything else
(the general path) read back as the same results, printed output included."""

import json
import socket
import textwrap
import time
import unittest

from test_worker_helpers import W, send_batch, start_worker

EVALUATOR = textwrap.dedent(
    '''
    def evaluate(messages, ground_truth=None, kind="plain", **kwargs):
        if kind == "plain":
            return {"score": 0.1 * len(messages), "reason": "caf\\u00e9 \\"q\\"", "metrics": {}}
        if kind == "no_reason":
            return {"score": 1e-300}
        if kind == "prints":
            print("seen", ground_truth)
            return {"score": 0.5, "reason": "r", "metrics": {}}
        if kind == "metrics":
            return {"score": 0.25, "metrics": {"m": 1.0}}
        if kind == "int":
            return {"score": 1, "reason": "r"}
        if kind == "nan":
            return {"score": float("nan"), "reason": "r"}
        if kind == "surrogate":
            return {"score": 0.5, "reason": "lone \\ud800"}
        if kind == "slow":
            import time
            time.sleep(0.2)
            return {"score": 0.5, "reason": "r", "metrics": {}}
        raise ValueError("boom " + kind)
    '''
)


class PointwiseRowsTest(unittest.TestCase):
    def serve(self, samples, **spec):
        """Rows a worker writes for `samples` (dicts) sent as one batch, by sample id
        (each with the time it arrived, in seconds after the batch was sent, as "at")."""
        ours, thread = start_worker(EVALUATOR, spec)
        send_batch(ours, "B", samples, first_id=10)
        sent = time.perf_counter()
        reply = ours.makefile("rb", buffering=0)
        ready = json.loads(reply.readline())
        self.assertTrue(ready.get("ready"), ready)
        rows = []
        for line in reply:
            row = json.loads(line)
            if "done" in row:
                self.assertEqual(row, {"done": len(samples)})
                break
            rows.append(row)
            row["at"] = time.perf_counter() - sent
        thread.join()
        ours.close()
        return {row["i"]: row for row in rows}

    def test_plain_and_general_results_read_back_exactly(self):
        kinds = ["plain", "no_reason", "prints", "metrics", "int", "nan", "surrogate", "raises", "plain"]
        samples = [{"messages": [{"role": "user", "content": "x"}] * (n + 1), "kind": k, "ground_truth": n}
                   for n, k in enumerate(kinds)]
        rows = self.serve(samples)
        self.assertEqual(sorted(rows), list(range(10, 10 + len(kinds))))
        for row in rows.values():
            # a plain result's time in whole nanoseconds, any other's in milliseconds
            time_ns = row.pop("ns", None)
            self.assertTrue(isinstance(time_ns, int) or isinstance(row.pop("ms"), float), row)
            row.pop("at")
        plain = {"is_score_valid": True, "metrics": {}, "step_outputs": None, "error": None}
        self.assertEqual(rows[10], {"i": 10, "ok": dict(plain, score=0.1, reason='caf\u00e9 "q"')})
        self.assertEqual(rows[11], {"i": 11, "ok": dict(plain, score=1e-300, reason=None)})
        self.assertEqual(rows[12], {"i": 12, "ok": dict(plain, score=0.5, reason="r"), "out": "seen 2\n"})
        metric = {"is_score_valid": True, "score": 1.0, "reason": None}
        self.assertEqual(rows[13], {"i": 13, "ok": dict(plain, score=0.25, reason=None, metrics={"m": metric})})
        self.assertEqual(rows[14], {"i": 14, "ok": dict(plain, score=1.0, reason="r")})
        self.assertEqual(rows[15]["err"]["type"], "InvalidResult")
        self.assertIn("nan", rows[15]["err"]["message"])
        self.assertEqual(rows[16]["err"]["type"], "InvalidResult")
        self.assertIn("cannot be written as JSON", rows[16]["err"]["message"])
        self.assertEqual((rows[17]["err"]["type"], rows[17]["err"]["message"]), ("ValueError", "boom raises"))
        self.assertEqual(rows[18], {"i": 18, "ok": dict(plain, score=0.9, reason='caf\u00e9 "q"')})

    def test_results_are_held_for_the_interval_rwb_names_then_sent_together(self):
        samples = [{"messages": [], "kind": "slow"}] * 3  # 0.2 s each
        # held for up to a minute: all three come with the batch's end
        held = sorted(r["at"] for r in self.serve(samples, flush_ms=60000).values())
        self.assertGreater(held[0], 0.5, held)
        self.assertLess(held[-1] - held[0], 0.1, held)
        # sent as soon as computed (1 ms, a server's interval): 0.2 s apart
        prompt = sorted(r["at"] for r in self.serve(samples, flush_ms=1).values())
        self.assertGreater(prompt[-1] - prompt[0], 0.3, prompt)
        # a fork command without one (an older rwb): the worker's own default
        worker = W.Worker(socket.socketpair()[0], {"name": "e", "file": "x.py"}, ".")
        self.assertEqual(worker.flush_seconds, W.FLUSH_SECONDS)

    def test_a_plain_line_is_the_general_result_with_its_time_in_nanoseconds(self):
        for value in ({"score": 0.1, "reason": "r\n\u2028", "metrics": {}}, {"score": -0.0}, {"score": 1e300, "reason": None},
                      {"score": 0.30000000000000004, "reason": "caf\u00e9 \"q\""}):
            with self.subTest(value=value):
                line = W._plain_line(7, 1250000, value)
                self.assertIsInstance(line, bytes)
                self.assertTrue(line.startswith(b'{"i":7,"ns":1250000,'), line)
                self.assertTrue(line.endswith(b"}\n"), line)
                self.assertEqual(json.loads(line), {"i": 7, "ns": 1250000, "ok": W._as_result(value, False)})
                self.assertEqual(repr(json.loads(line)["ok"]["score"]), repr(value["score"]))
        for value in ({"score": 1}, {"score": float("inf")}, {"score": 0.5, "reason": 3}, {"score": 0.5, "metrics": {"m": 1.0}},
                      {"score": 0.5, "other": 1}, {"score": 0.5, "reason": "\ud800"}, [0.5], 0.5):
            with self.subTest(value=value):
                self.assertIsNone(W._plain_line(7, 1250000, value))

    def test_a_sample_line_with_a_newline_or_spaces_reads_as_json_loads_reads_it(self):
        for raw in (b'{"messages": []}\n', b'{"messages": []} \t\r\n', b'\t{"messages": [1]}'):
            with self.subTest(raw=raw):
                self.assertEqual(W._sample(raw), json.loads(raw))
        for raw in (b'{"messages": []} x\n', b'{"messages": [}'):
            with self.subTest(raw=raw):
                with self.assertRaises(ValueError):
                    W._sample(raw)


if __name__ == "__main__":
    unittest.main()
