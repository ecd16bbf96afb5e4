"""rwb's sandbox fork server (src/engine/python/rwb_sandbox_server.py, SPEC §18), with
real processes: started in rwb's box (`rwb __contain`, no network) as rwb starts it,
fed JSON lines.

The binary is RWB_BIN (set by tests/python_side.rs), else target/debug/rwb; without
either, the server builds its namespaces itself.
"""

import base64
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.path.join(ROOT, "src", "engine", "python", "rwb_sandbox_server.py")


def rwb_binary():
    given = os.environ.get("RWB_BIN")
    if given and os.path.exists(given):
        return given
    built = os.path.join(ROOT, "target", "debug", "rwb")
    return built if os.path.exists(built) else None


class Sandbox:
    """The fork server, started as rwb starts it, and a way to ask it to run code."""

    def __init__(self, slots=4):
        command = [sys.executable, "-X", "utf8", SERVER, str(slots)]
        rwb = rwb_binary()
        if rwb:
            command = [rwb, "__contain", json.dumps({"writable": [], "network": False}), "--"] + command
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.proc.stdout.readline()
        if not line:
            why = self.proc.stderr.read().decode()
            self.proc.wait()
            self.proc.stdout.close()
            self.proc.stderr.close()
            raise RuntimeError("the sandbox did not start: %s" % why)
        self.ready = json.loads(line)
        self.lock = threading.Lock()
        self.waiting = {}
        self.unmatched = queue.Queue()
        self.next_id = 0
        self.errors = []
        self.readers = [threading.Thread(target=self._read, daemon=True),
                        threading.Thread(target=self._drain_stderr, daemon=True)]
        for reader in self.readers:
            reader.start()

    def _read(self):
        for line in self.proc.stdout:
            answer = json.loads(line)
            with self.lock:
                box = self.waiting.pop(answer.get("id"), None)
            (box or self.unmatched).put(answer)

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self.errors.append(line.decode("utf-8", "replace"))

    def send(self, request):
        """Sends a request; returns a queue its answer arrives on."""
        box = queue.Queue()
        with self.lock:
            if "id" not in request:
                self.next_id += 1
                request = dict(request, id="t%d" % self.next_id)
            self.waiting[request["id"]] = box
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        return box

    def run(self, timeout=60, **request):
        request.setdefault("language", "python")
        return self.send(request).get(timeout=timeout)

    def send_line(self, text):
        with self.lock:
            self.proc.stdin.write(text.encode() + b"\n")
            self.proc.stdin.flush()
        return self.unmatched.get(timeout=30)

    def descendants(self):
        """The processes under the sandbox (the server and whatever runs are live)."""
        parents = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % name) as f:
                    stat = f.read()
            except OSError:
                continue
            parents[int(name)] = int(stat.rsplit(")", 1)[1].split()[1])
        under = []
        for pid in parents:
            at, seen = pid, 0
            while at in parents and seen < 64:
                at, seen = parents[at], seen + 1
                if at == self.proc.pid:
                    under.append(pid)
                    break
        return under

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for reader in getattr(self, "readers", []):
            reader.join(timeout=5)
        self.proc.stdout.close()
        self.proc.stderr.close()


def b64(data):
    return base64.b64encode(data).decode()


class SandboxServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.box = Sandbox(slots=4)
        isolation = cls.box.ready.get("isolation", {})
        if not isolation.get("namespaces"):
            cls.box.close()
            raise unittest.SkipTest("the kernel refuses namespaces here: %s" % isolation.get("why"))
        # the server alone is under the box when nothing runs
        cls.idle = len(cls.box.descendants())

    @classmethod
    def tearDownClass(cls):
        cls.box.close()

    def test_ready_names_its_languages(self):
        ready = self.box.ready
        self.assertTrue(ready["ready"])
        self.assertIn("python", ready["languages"])
        self.assertTrue(ready["isolation"]["private_root"], ready)

    def test_a_stdin_stdout_program(self):
        answer = self.box.run(code="a, b = map(int, input().split())\nprint(a + b)", stdin="2 40\n")
        self.assertEqual(answer["status"], "Success", answer)
        self.assertEqual(answer["message"], "")
        self.assertIsNone(answer["compile_result"])
        self.assertIsNone(answer["executor_pod_name"])
        self.assertEqual(answer["files"], {})
        run = answer["run_result"]
        self.assertEqual(run["status"], "Finished")
        self.assertEqual(run["return_code"], 0)
        self.assertEqual(run["stdout"], "42\n")
        self.assertEqual(run["stderr"], "")
        self.assertIsInstance(run["execution_time"], float)
        self.assertNotIn("truncated", run)
        self.assertNotIn("nonce_seen", run)

    def test_the_code_runs_as_a_script_would(self):
        code = (
            "import sys, os\n"
            "print(__name__, sys.argv[0], os.getcwd(), os.path.exists(__file__))\n"
            "from collections import Counter\n"
            "print(Counter('aab')['a'])\n"
        )
        run = self.box.run(code=code)["run_result"]
        self.assertEqual(run["stdout"], "__main__ /tmp/run/main.py /tmp/run True\n2\n", run)

    def test_a_syntax_error(self):
        answer = self.box.run(code="def f(:\n    pass\n")
        self.assertEqual(answer["status"], "Failed")
        run = answer["run_result"]
        self.assertEqual(run["return_code"], 1)
        self.assertIn("SyntaxError", run["stderr"])
        self.assertNotIn("rwb_sandbox_server", run["stderr"])  # no frame of rwb's

    def test_an_uncaught_exception_prints_as_python_prints_it(self):
        run = self.box.run(code="def f():\n    raise ValueError('no')\nf()\n")["run_result"]
        self.assertEqual(run["return_code"], 1)
        self.assertTrue(run["stderr"].startswith("Traceback (most recent call last):\n"), run["stderr"])
        self.assertIn('File "/tmp/run/main.py", line 3, in <module>', run["stderr"])
        self.assertTrue(run["stderr"].endswith("ValueError: no\n"), run["stderr"])
        self.assertNotIn("rwb_sandbox_server", run["stderr"])

    def test_a_non_zero_exit(self):
        answer = self.box.run(code="import sys\nprint('partial')\nsys.exit(3)")
        self.assertEqual(answer["status"], "Failed")
        self.assertEqual(answer["run_result"]["return_code"], 3)
        self.assertEqual(answer["run_result"]["stdout"], "partial\n")
        answer = self.box.run(code="raise SystemExit('bye')")
        self.assertEqual(answer["run_result"]["return_code"], 1)
        self.assertEqual(answer["run_result"]["stderr"], "bye\n")

    def test_a_signal_is_a_failed_run_with_minus_the_signal(self):
        answer = self.box.run(code="import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\nprint('alive')")
        self.assertEqual(answer["status"], "Failed")
        self.assertEqual(answer["run_result"]["return_code"], -15)
        self.assertEqual(answer["run_result"]["stdout"], "")
        answer = self.box.run(code="import ctypes\nctypes.string_at(0)")
        self.assertEqual(answer["run_result"]["return_code"], -11)

    def test_an_endless_loop_that_ignores_sigterm_is_killed_on_time(self):
        code = (
            "import signal, sys\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
            "print('started', flush=True)\n"
            "while True:\n    pass\n"
        )
        started = time.monotonic()
        answer = self.box.run(code=code, run_timeout=1)
        elapsed = time.monotonic() - started
        self.assertEqual(answer["status"], "Failed")
        run = answer["run_result"]
        self.assertEqual(run["status"], "TimeLimitExceeded")
        self.assertIsNone(run["return_code"])
        self.assertEqual(run["stdout"], "started\n")  # what it wrote is kept
        self.assertGreaterEqual(run["execution_time"], 1.0)
        self.assertLess(elapsed, 1.5 + 1.0, "answered %.2f s after it was sent (1 s limit)" % elapsed)
        self.assertLess(run["execution_time"], 1.5)

    def test_a_fork_bomb_is_killed_whole_and_the_server_goes_on(self):
        code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
        answer = self.box.run(code=code, run_timeout=1.5)
        self.assertEqual(answer["status"], "Failed", answer)
        self.assertEqual(answer["run_result"]["status"], "TimeLimitExceeded")
        # nothing of it survives: the server is alone again
        self.assertEqual(len(self.box.descendants()), self.idle)
        after = self.box.run(code="print('still here')")
        self.assertEqual(after["run_result"]["stdout"], "still here\n")

    def test_a_detached_child_dies_with_its_run(self):
        code = (
            "import os, time\n"
            "if os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\n"
            "print('parent done')\n"
        )
        answer = self.box.run(code=code)
        self.assertEqual(answer["run_result"]["stdout"], "parent done\n")
        self.assertEqual(len(self.box.descendants()), self.idle)

    def test_a_memory_bomb_is_a_failed_run_marked_memory(self):
        answer = self.box.run(code="x = bytearray(10**10)\nprint('no')")
        self.assertEqual(answer["status"], "Failed")
        run = answer["run_result"]
        self.assertTrue(run.get("memory"), run)
        self.assertEqual(run["return_code"], 137)
        self.assertTrue(run["stderr"].endswith("rwb: memory limit (1024 MB)\n"), run["stderr"])
        answer = self.box.run(code="x = []\nwhile True:\n    x.append(bytearray(1 << 20))", memory_limit_MB=64)
        self.assertTrue(answer["run_result"].get("memory"), answer)
        self.assertIn("rwb: memory limit (64 MB)", answer["run_result"]["stderr"])

    def test_output_is_capped_at_a_mebibyte(self):
        answer = self.box.run(code="import sys\nsys.stdout.write('x' * (10 * 1024 * 1024))\nprint('done', file=sys.stderr)")
        self.assertEqual(answer["status"], "Success")
        run = answer["run_result"]
        self.assertTrue(run.get("truncated"))
        self.assertEqual(len(run["stdout"]), 1 << 20)
        self.assertEqual(run["stderr"], "done\n")

    def test_state_left_in_tmp_is_gone_for_the_next_run(self):
        self.box.run(code="open('/tmp/left', 'w').write('x')\nopen('mine', 'w').write('y')")
        # more runs than slots: every slot's /tmp is used again
        boxes = [self.box.send({"language": "python", "code": "import os\nprint(sorted(os.listdir('/tmp')), sorted(os.listdir('.')))"})
                 for _ in range(8)]
        for box in boxes:
            self.assertEqual(box.get(timeout=60)["run_result"]["stdout"], "['run'] ['main.py']\n")

    def test_no_network_even_to_the_hosts_loopback(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        try:
            code = (
                "import socket\n"
                "try:\n"
                "    socket.create_connection(('127.0.0.1', %d), timeout=3)\n"
                "    print('connected')\n"
                "except OSError as e:\n"
                "    print('refused', e.errno)\n" % port
            )
            answer = self.box.run(code=code)
            self.assertTrue(answer["run_result"]["stdout"].startswith("refused"), answer)
            with self.assertRaises(socket.timeout):
                listener.accept()
        finally:
            listener.close()

    def test_home_and_the_root_are_not_writable(self):
        home = os.path.expanduser("~")
        target = os.path.join(home, "rwb-sandbox-test-%d" % os.getpid())
        code = (
            "import os\n"
            "for path in [%r, os.path.expanduser('~/x'), '/usr/rwb-x', '/etc/rwb-x', '/rwb-x']:\n"
            "    try:\n"
            "        open(path, 'w').write('x')\n"
            "        print('wrote', path)\n"
            "    except OSError as e:\n"
            "        print('refused', e.errno)\n" % target
        )
        run = self.box.run(code=code)["run_result"]
        self.assertNotIn("wrote", run["stdout"], run)
        self.assertEqual(run["stdout"].count("refused"), 5)
        self.assertFalse(os.path.exists(target))

    def test_the_workspace_and_home_are_not_visible(self):
        code = "import os\nprint(os.path.exists(%r), os.path.exists(%r), os.listdir('/proc')[:0], len([p for p in os.listdir('/proc') if p.isdigit()]))" % (
            SERVER, os.path.join(ROOT, "Cargo.toml"))
        run = self.box.run(code=code)["run_result"]
        self.assertEqual(run["stdout"], "False False [] 1\n", run)  # its own process, no other

    def test_files_and_fetch_files_round_trip(self):
        code = (
            "data = open('data/in.txt').read()\n"
            "open('out.txt', 'w').write(data.upper())\n"
            "import os\nos.symlink('/etc/hostname', 'link.txt')\n"
        )
        answer = self.box.run(
            code=code, files={"data/in.txt": b64(b"hello")},
            fetch_files=["out.txt", "data/in.txt", "missing.txt", "link.txt"],
        )
        self.assertEqual(answer["status"], "Success", answer)
        self.assertEqual(answer["files"], {"out.txt": b64(b"HELLO"), "data/in.txt": b64(b"hello")})

    def test_a_path_leaving_the_run_folder_is_refused(self):
        for field, value in (("files", {"../escape.txt": b64(b"x")}), ("files", {"/etc/x": b64(b"x")}),
                             ("fetch_files", ["a/../../etc/passwd"])):
            answer = self.box.run(code="print(1)", **{field: value})
            self.assertEqual(answer["status"], "SandboxError", answer)
            self.assertIn(json.dumps(value)[2:8] if field == "files" else "../etc/passwd"[:6], answer["message"])
            self.assertIsNone(answer["run_result"])

    def test_an_unknown_language_names_itself_and_what_runs(self):
        answer = self.box.run(code="x", language="cobol")
        self.assertEqual(answer["status"], "SandboxError")
        self.assertIn("'cobol'", answer["message"])
        self.assertIn("python", answer["message"])
        missing = [lang for lang in ("go", "rust", "java", "cpp", "nodejs") if lang not in self.box.ready["languages"]]
        for lang in missing[:1]:
            answer = self.box.run(code="x", language=lang)
            self.assertEqual(answer["status"], "SandboxError")
            self.assertIn(lang, answer["message"])
            self.assertIn("not on PATH", answer["message"])

    def test_a_bad_request_is_answered_and_the_server_goes_on(self):
        answer = self.box.send_line("this is not json")
        self.assertEqual(answer["status"], "SandboxError")
        self.assertIsNone(answer["id"])
        answer = self.box.run(code=5)
        self.assertEqual(answer["status"], "SandboxError")
        self.assertIn("code", answer["message"])
        answer = self.box.run(code="print(1)", run_timeout="ten")
        self.assertIn("run_timeout", answer["message"])
        answer = self.box.run(code="print(1)", unknown_field=[1, 2])  # ignored
        self.assertEqual(answer["run_result"]["stdout"], "1\n")

    def test_twenty_requests_at_once_are_all_answered(self):
        boxes = {i: self.box.send({"language": "python", "code": "import time\ntime.sleep(0.05)\nprint(input() * 2)",
                                   "stdin": "%d\n" % i}) for i in range(20)}
        for i, box in boxes.items():
            answer = box.get(timeout=120)
            self.assertEqual(answer["run_result"]["stdout"], "%d%d\n" % (i, i), answer)

    def test_the_nonce_arrives_only_when_the_code_ran_to_its_end(self):
        seen = self.box.run(code="x = 1", nonce="abc123")["run_result"]
        self.assertIs(seen["nonce_seen"], True)
        for early in ("import os\nos._exit(0)\nx = 1", "import sys\nsys.exit(0)\nx = 1", "exit()"):
            run = self.box.run(code=early, nonce="abc123")["run_result"]
            self.assertEqual(run["return_code"], 0)
            self.assertIs(run["nonce_seen"], False, early)
        # the program's own words on the report pipe do not make a sandbox error
        forged = "import os\nfor fd in range(3, 10):\n    try:\n        os.write(fd, b'Eoops\\n')\n    except OSError:\n        pass\n"
        answer = self.box.run(code=forged)
        self.assertEqual(answer["status"], "Success", answer)

    def test_the_environment_carries_none_of_the_servers(self):
        run = self.box.run(code="import os\nprint(sorted(os.environ))")["run_result"]
        names = eval(run["stdout"])
        self.assertIn("PATH", names)
        self.assertNotIn("RWB_BIN", names)
        self.assertTrue(set(names) <= {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME",
                                       "RWB_CONTAINMENT", "TMPDIR", "GOCACHE", "GOPATH", "GO111MODULE"}, names)

    def test_a_compiled_language_when_its_toolchain_is_here(self):
        if "cpp" not in self.box.ready["languages"]:
            self.skipTest("no g++ here")
        good = "#include <iostream>\nint main(){int a,b;std::cin>>a>>b;std::cout<<a*b<<std::endl;}"
        answer = self.box.run(code=good, language="cpp", stdin="6 7")
        self.assertEqual(answer["status"], "Success", answer)
        self.assertEqual(answer["compile_result"]["return_code"], 0)
        self.assertEqual(answer["run_result"]["stdout"], "42\n")
        bad = self.box.run(code="int main(){ return x; }", language="cpp")
        self.assertEqual(bad["status"], "Failed")
        self.assertNotEqual(bad["compile_result"]["return_code"], 0)
        self.assertIn("error", bad["compile_result"]["stderr"])
        self.assertIsNone(bad["run_result"])
        aborted = self.box.run(code="#include <cassert>\nint main(){ assert(1 == 2); }", language="cpp")
        self.assertEqual(aborted["run_result"]["return_code"], -6, aborted)
        hungry = self.box.run(code="#include <vector>\nint main(){ std::vector<char> v(std::size_t(8) << 30); return v[5]; }",
                              language="cpp")
        self.assertTrue(hungry["run_result"].get("memory"), hungry)


if __name__ == "__main__":
    unittest.main()
