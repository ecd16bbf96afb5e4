"""Unit tests of what runs on a Ray worker (src/engine/python/rwb_ray_task.py) and of
the driver's helpers (rwb_ray.py), without Ray: the task functions are called
directly, as Ray would call them, in a copy of a workspace standing in for Ray's.
"""

import atexit
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "src", "engine", "python"))


def _shipped_package():
    """The `rwb_remote` package as the driver ships it (its compat folder is the
    bundled reward_kit's source). Kept until the interpreter exits: modules loaded
    from it stay in use by later tests."""
    holder = tempfile.mkdtemp(prefix="rwb-remote-")
    atexit.register(shutil.rmtree, holder, True)
    package = os.path.join(holder, "rwb_remote")
    os.makedirs(package)
    open(os.path.join(package, "__init__.py"), "w").close()
    shutil.copy(os.path.join(ENGINE_DIR, "rwb_ray_task.py"), package)
    shutil.copytree(os.path.join(ENGINE_DIR, "rwb_py"), os.path.join(package, "rwb_py"))
    os.symlink(ENGINE_DIR, os.path.join(package, "compat"))
    sys.path.insert(0, holder)
    try:
        from rwb_remote import rwb_ray_task
    finally:
        sys.path.remove(holder)
    return rwb_ray_task


def _load_driver():
    spec = importlib.util.spec_from_file_location("rwb_ray_under_test", os.path.join(ENGINE_DIR, "rwb_ray.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


T = _shipped_package()
D = _load_driver()

ONE = """
import utils

def evaluate(messages, **kwargs):
    if messages[-1]["content"] == "raise":
        raise ValueError("asked to")
    return {"score": utils.VALUE, "reason": "one"}
"""

TWO = """
import time
import utils

def evaluate(messages, **kwargs):
    if messages[-1]["content"] == "loop":
        while True:
            time.sleep(0.01)
    return {"score": utils.VALUE, "reason": "two"}
"""


def _sample(text):
    return json.dumps({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": text}]})


def _spec(name, timeout=5):
    return {
        "name": name,
        "file": "metrics/%s/main.py" % name,
        "folder": "metrics/%s" % name,
        "module": None,
        "function": None,
        "style": None,
        "solution_str": "response",
        "kwargs": {},
        "timeout": timeout,
    }


class RayTaskTest(unittest.TestCase):
    """Two metric folders that both have a main.py and a utils.py, evaluated in one
    process in turns, in a copy of the workspace (Ray's) whose rows must name the
    user's folder."""

    def setUp(self):
        self.copy = tempfile.mkdtemp(prefix="rwb-ray-copy-")
        self.user = "/home/someone/workspace"
        for name, code, value in (("one", ONE, 0.25), ("two", TWO, 0.75)):
            folder = os.path.join(self.copy, "metrics", name)
            os.makedirs(folder)
            with open(os.path.join(folder, "main.py"), "w") as f:
                f.write(textwrap.dedent(code))
            with open(os.path.join(folder, "utils.py"), "w") as f:
                f.write("VALUE = %r\n" % value)
        self.cwd = os.getcwd()
        self.path = list(sys.path)
        self.modules = set(sys.modules)
        os.chdir(self.copy)

    def tearDown(self):
        os.chdir(self.cwd)
        sys.path[:] = self.path
        for name in set(sys.modules) - self.modules:
            if name in ("main", "utils"):
                del sys.modules[name]
        T._workers.clear()
        T._active = None
        shutil.rmtree(self.copy, ignore_errors=True)

    def batch(self, name, texts, timeout=5):
        batch = [(i, _sample(t)) for i, t in enumerate(texts)]
        items = list(T.batch_task(_spec(name, timeout), self.user, "B", batch))
        self.assertEqual(items[0], T.STARTED)
        return [json.loads(line) for item in items[1:] for line in item.splitlines()]

    def test_the_load_reply_names_the_users_files(self):
        reply = json.loads(T.load_task(_spec("one"), self.user))
        self.assertEqual(reply["style"], "reward-kit", reply)
        self.assertEqual(
            sorted(reply["files"]),
            [self.user + "/metrics/one/main.py", self.user + "/metrics/one/utils.py"],
        )

    def test_evaluators_in_one_process_keep_their_own_modules(self):
        for _ in range(2):
            one = self.batch("one", ["a", "b"])
            two = self.batch("two", ["a"])
            self.assertEqual([m["ok"]["score"] for m in one if "i" in m], [0.25, 0.25])
            self.assertEqual([m["ok"]["score"] for m in two if "i" in m], [0.75])
        self.assertEqual(one[-1], {"done": 2})

    def test_a_sample_as_marshal_data_scores_as_its_json_line(self):
        import marshal

        texts = ["a", "b"]
        as_json = self.batch("one", texts)
        batch = [(i, marshal.dumps(json.loads(_sample(t))) + b"\0") for i, t in enumerate(texts)]
        items = list(T.batch_task(_spec("one", 5), self.user, "B", batch))
        packed = [json.loads(line) for item in items[1:] for line in item.splitlines()]
        strip = lambda rows: [{k: v for k, v in r.items() if k not in ("ms", "ns")} for r in rows]
        self.assertEqual(strip(packed), strip(as_json))
        self.assertEqual([m["ok"]["score"] for m in packed if "i" in m], [0.25, 0.25])

    def test_a_raised_error_names_the_users_file_in_its_traceback(self):
        lines = self.batch("one", ["raise"])
        error = lines[0]["err"]
        self.assertEqual(error["type"], "ValueError")
        self.assertEqual(error["file"], "metrics/one/main.py")
        self.assertIn('File "%s/metrics/one/main.py", line 6' % self.user, error["traceback"])
        self.assertNotIn(self.copy, json.dumps(lines))

    def test_a_timeout_retires_and_the_next_batch_imports_afresh(self):
        lines = self.batch("two", ["a", "loop", "b"], timeout=0.3)
        self.assertEqual(lines[0]["ok"]["score"], 0.75)
        self.assertEqual(lines[1]["err"]["type"], "Timeout")
        self.assertEqual(lines[2], {"retire": "timeout"})
        self.assertEqual(len(lines), 3, "the sample after the timeout is left for a fresh worker")
        self.assertEqual(T._workers, {})
        again = self.batch("two", ["b"], timeout=0.3)
        self.assertEqual(again[0]["ok"]["score"], 0.75)


class DriverHelpersTest(unittest.TestCase):
    def test_seconds_read_as_rwb_writes_them(self):
        self.assertEqual([D._seconds(t) for t in (1, 0.5, 30.0, 2.25)], ["1", "0.5", "30", "2.25"])

    def test_an_address_nobody_answers_is_named(self):
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        why = D._unreachable("127.0.0.1:%d" % port)
        self.assertTrue(why.startswith("cannot reach the Ray cluster at 127.0.0.1:%d (" % port), why)
        self.assertIsNone(D._unreachable("auto"))
        self.assertIsNone(D._unreachable("ray://head:10001"))

    def test_a_lost_task_blames_the_sample_it_was_on_then_retires(self):
        sent = []

        class Sock:
            def sendall(self, data):
                sent.append(data)

        proxy = D.Proxy.__new__(D.Proxy)
        proxy.sock = Sock()
        self.assertFalse(proxy._fail([4, 5, 6], {4}, False, "WorkerCrashed", "died"))
        lines = [json.loads(line) for line in b"".join(sent).splitlines()]
        self.assertEqual(
            lines,
            [{"i": 5, "ms": 0.0, "err": {"type": "WorkerCrashed", "message": "died"}}, {"retire": "WorkerCrashed"}],
        )
        sent.clear()
        proxy._fail([4, 5], set(), True, "Timeout", "late")
        lines = [json.loads(line) for line in b"".join(sent).splitlines()]
        self.assertEqual([m.get("i") for m in lines], [4, 5, None], "a batched call fails whole")

    def test_after_a_lost_task_each_unanswered_sample_runs_alone_so_only_its_killer_is_blamed(self):
        sent = []

        class Sock:
            def sendall(self, data):
                sent.append(data)

        class WorkerCrashedError(Exception):
            pass

        def task(ident):
            # what a batch task streams: a start marker, then its lines
            yield b"started"
            if ident == 5:
                raise WorkerCrashedError("exit 7")
            yield b'{"i":%d,"ms":1.0,"s":0.25}\n{"done":1}\n' % ident

        class Ray:
            def wait(self, tasks, timeout=None):
                return tasks, []

            def get(self, item):
                return item

        class BatchTask:
            def remote(self, relative, root, op, batch):
                return task(batch[0][0])

        proxy = D.Proxy.__new__(D.Proxy)
        proxy.sock, proxy.ray, proxy.batch_task = Sock(), Ray(), BatchTask()
        proxy.relative, proxy.root, proxy.timeout = {}, "/ws", 0
        self.assertFalse(proxy._alone("B", [(4, "a"), (5, "b"), (6, "c")]))
        lines = [json.loads(line) for line in b"".join(sent).splitlines()]
        self.assertEqual(
            [(m.get("i"), m.get("err", {}).get("type"), m.get("retire")) for m in lines],
            [(4, None, None), (5, "WorkerCrashed", None), (None, None, "WorkerCrashed")],
            "4's row without its batch's end, 5 blamed, then the proxy retires (6 runs again in rwb)",
        )

    def test_a_retired_driver_starts_no_more_proxies_and_waits_for_those_it_has(self):
        import threading

        release = threading.Event()
        started = []

        def start(command):
            started.append(command["token"])
            thread = threading.Thread(target=release.wait)
            thread.start()
            return thread

        forks = D.Forks(start)
        self.assertFalse(forks.take({"op": "fork", "token": 1}))
        self.assertFalse(forks.take({"op": "preload", "modules": ["numpy"]}))
        self.assertTrue(forks.take({"op": "retire"}))
        self.assertFalse(forks.take({"op": "fork", "token": 2}))
        self.assertFalse(forks.take({"op": "retire"}), "retired once")
        self.assertEqual(started, [1])
        waiter = threading.Thread(target=forks.wait)
        waiter.start()
        waiter.join(0.2)
        self.assertTrue(waiter.is_alive(), "proxy 1 is still in use")
        release.set()
        waiter.join(5)
        self.assertFalse(waiter.is_alive(), "the last proxy ended: so does the wait")


if __name__ == "__main__":
    unittest.main()
