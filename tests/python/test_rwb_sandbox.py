"""`from rwb.sandbox import run_code, run` (SPEC §18), against the real fork server in
rwb's box behind a stand-in of rwb's relay: POST /run_code with SandboxFusion's
request, answered with the fork server's response minus its `id`, over HTTP on
127.0.0.1 and over a Unix socket.

`run` must score 0 on the hacks of notes/code-rewards.md §3 (H1, H2, H3, H5, H6, H9,
H10, H11): one test each.
"""

import json
import os
import secrets
import shutil
import socketserver
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "src", "engine", "python"))

from test_sandbox_server import Sandbox  # noqa: E402

from rwb import sandbox  # noqa: E402
from rwb.sandbox import run, run_code  # noqa: E402


def relay_handler(box):
    class Relay(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/v1/ping":
                self.answer(200, "pong")
            else:
                self.answer(404, {"detail": "Not Found"})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/run_code":
                self.answer(404, {"detail": "Not Found"})
                return
            try:
                request = json.loads(body)
            except ValueError:
                self.answer(422, {"detail": [{"msg": "not JSON"}]})
                return
            if not isinstance(request, dict):
                self.answer(422, {"detail": [{"msg": "not an object"}]})
                return
            request.pop("id", None)
            response = box.send(request).get(timeout=300)
            response.pop("id", None)
            self.answer(200, response)

    return Relay


class UnixRelay(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class RwbSandboxTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.box = Sandbox(slots=4)
        if not cls.box.ready.get("isolation", {}).get("namespaces"):
            cls.box.close()
            raise unittest.SkipTest("the kernel refuses namespaces here")
        handler = relay_handler(cls.box)
        cls.http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        cls.http.daemon_threads = True
        cls.folder = tempfile.mkdtemp(prefix="rwb-sandbox-test-")
        cls.socket_path = os.path.join(cls.folder, "sandbox.sock")
        cls.unix = UnixRelay(cls.socket_path, handler)
        for server in (cls.http, cls.unix):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        cls.saved = {k: os.environ.get(k) for k in ("RWB_SANDBOX_URL", "RWB_SANDBOX_SOCKET")}
        os.environ.pop("RWB_SANDBOX_SOCKET", None)
        os.environ["RWB_SANDBOX_URL"] = "http://127.0.0.1:%d" % cls.http.server_address[1]

    @classmethod
    def tearDownClass(cls):
        for name, value in cls.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for server in (cls.http, cls.unix):
            server.shutdown()
            server.server_close()
        shutil.rmtree(cls.folder, ignore_errors=True)
        cls.box.close()

    def assertScoresZero(self, result, verdict):
        verdicts = [c["verdict"] for c in result["cases"]]
        self.assertEqual(result["passed"], 0, verdicts)
        self.assertEqual(result["score"], 0.0)
        self.assertEqual(set(verdicts), {verdict}, result["cases"])

    # -- run_code

    def test_run_code_is_sandboxfusions_call(self):
        answer = run_code({"code": "print(input()[::-1])", "language": "python", "stdin": "abc", "whatever": 1})
        self.assertEqual(set(answer), {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"})
        self.assertEqual(answer["status"], "Success")
        self.assertEqual(answer["run_result"]["stdout"], "cba\n")
        self.assertEqual(answer["run_result"]["return_code"], 0)

    def test_run_code_names_a_field_of_the_wrong_type(self):
        for request, field in (
            ({"code": 5, "language": "python"}, "code"),
            ({"code": "x", "language": "python", "run_timeout": "10"}, "run_timeout"),
            ({"code": "x", "language": "python", "memory_limit_MB": True}, "memory_limit_MB"),
            ({"code": "x", "language": "python", "stdin": 3}, "stdin"),
            ({"code": "x", "language": "python", "files": []}, "files"),
            ({"code": "x"}, "language"),
        ):
            with self.assertRaises(ValueError) as caught:
                run_code(request)
            self.assertIn(field, str(caught.exception))

    def test_run_code_over_the_unix_socket_first(self):
        os.environ["RWB_SANDBOX_SOCKET"] = self.socket_path
        url = os.environ["RWB_SANDBOX_URL"]
        os.environ["RWB_SANDBOX_URL"] = "http://127.0.0.1:9"  # nothing there: the socket is used
        try:
            answer = run_code({"code": "print(6 * 7)", "language": "python"})
        finally:
            os.environ.pop("RWB_SANDBOX_SOCKET")
            os.environ["RWB_SANDBOX_URL"] = url
        self.assertEqual(answer["run_result"]["stdout"], "42\n")

    def test_run_code_outside_rwb_says_so(self):
        url = os.environ.pop("RWB_SANDBOX_URL")
        try:
            with self.assertRaises(RuntimeError) as caught:
                run_code({"code": "print(1)", "language": "python"})
        finally:
            os.environ["RWB_SANDBOX_URL"] = url
        self.assertIn("rwb.sandbox runs in rwb's workers", str(caught.exception))

    # -- run: honest code

    def test_stdin_stdout_cases(self):
        tests = {"inputs": ["1 2\n", "5 5\n", "0 0\n"], "outputs": ["3\n", "10", "0\n"]}
        result = run("a, b = map(int, input().split())\nprint(a + b)", tests)
        self.assertEqual((result["passed"], result["total"], result["score"]), (3, 3, 1.0), result)
        case = result["cases"][0]
        self.assertEqual(set(case), {"verdict", "stdout", "stderr", "seconds", "return_code"})
        self.assertEqual(case["stdout"], "3\n")
        self.assertEqual(case["return_code"], 0)
        wrong = run("print(0)", tests)
        self.assertEqual([c["verdict"] for c in wrong["cases"]], ["wrong", "wrong", "pass"])
        self.assertAlmostEqual(wrong["score"], 1 / 3)

    def test_a_ground_truth_as_veRL_stores_it(self):
        truth = json.dumps({"inputs": ["2\n"], "outputs": ["4\n"]})
        self.assertEqual(run("print(int(input()) ** 2)", truth)["score"], 1.0)

    def test_fn_name_cases(self):
        tests = {"fn_name": "add", "inputs": ["1\n2", "[1]\n[2]", "\"a\"\n\"b\""], "outputs": [3, [1, 2], "ab"]}
        self.assertEqual(run("def add(a, b):\n    return a + b", tests)["score"], 1.0)
        solution = "class Solution:\n    def add(self, a: List[int], b) -> int:\n        return a + b\n"
        self.assertEqual(run(solution, tests)["score"], 1.0)
        # APPS wraps the result in a list; some sets store it as text
        wrapped = {"fn_name": "pair", "inputs": [[3]], "outputs": [[[3, 3]]]}
        self.assertEqual(run("def pair(x):\n    return (x, x)", wrapped)["score"], 1.0)
        text = {"fn_name": "pair", "inputs": ["3"], "outputs": ["[3, 3]"]}
        self.assertEqual(run("def pair(x):\n    return [x, x]", text)["score"], 1.0)
        self.assertEqual(run("def pair(x):\n    return [x, x + 1]", text)["cases"][0]["verdict"], "wrong")
        boolean = {"fn_name": "odd", "inputs": ["3"], "outputs": [True]}
        self.assertEqual(run("def odd(x):\n    return 1", boolean)["cases"][0]["verdict"], "wrong")
        self.assertEqual(run("def odd(x):\n    return x % 2 == 1", boolean)["score"], 1.0)

    def test_assert_cases(self):
        code = "def sq(x):\n    return x * x\n"
        tests = ["assert sq(2) == 4", "assert sq(3) == 9", "assert 1 == sq(-1)", "assert sq(2) == sq(-2)",
                 "assert abs(sq(1.5) - 2.25) < 1e-9", "x = 4\nassert sq(x) == 16", "assert sq(2) in (4, 5)",
                 "assert isinstance(sq(2), int)", "for i in range(3):\n    assert sq(i) == i * i",
                 "assert sq(1) == 1\nassert sq(\n    4\n) == 16, 'message'", "import math; assert sq(3) == 9"]
        result = run(code, tests)
        self.assertEqual(result["score"], 1.0, result["cases"])
        wrong = run(code, ["assert sq(2) == 5", "assert sq(2) > 4", "assert not isinstance(sq(2), int)",
                           "for i in range(3):\n    assert sq(i) == i"])
        self.assertScoresZero(wrong, "wrong")

    def test_the_other_verdicts(self):
        tests = {"inputs": ["1\n"], "outputs": ["1\n"]}
        self.assertEqual(run("raise ValueError('x')", tests)["cases"][0]["verdict"], "runtime_error")
        self.assertEqual(run("print('x' * (2 << 20))", tests)["cases"][0]["verdict"], "output_limit")
        self.assertEqual(run("x = bytearray(10**10)", tests, memory_mb=256)["cases"][0]["verdict"], "memory")
        self.assertEqual(run("while True: pass", tests, timeout=0.5)["cases"][0]["verdict"], "timeout")
        self.assertEqual(run("def f(:", tests)["cases"][0]["verdict"], "runtime_error")
        self.assertEqual(run("print(1)", tests, language="cobol")["cases"][0]["verdict"], "sandbox_error")
        if "cpp" in self.box.ready["languages"]:
            self.assertEqual(run("int main() { return x; }", tests, language="cpp")["cases"][0]["verdict"],
                             "compile_error")
            good = "#include <cstdio>\nint main(){int x; scanf(\"%d\", &x); printf(\"%d\\n\", x);}"
            self.assertEqual(run(good, tests, language="cpp")["score"], 1.0)

    def test_cases_run_at_once(self):
        tests = {"inputs": [""] * 8, "outputs": ["ok"] * 8}
        started = time.monotonic()
        result = run("import time\ntime.sleep(0.5)\nprint('ok')", tests)
        self.assertEqual(result["score"], 1.0)
        self.assertLess(time.monotonic() - started, 8 * 0.5)  # 4 slots: about 1 s, not 4

    # -- run: the hacks, each scoring 0

    def test_h1_leaving_before_the_tests(self):
        asserts = ["assert sq(2) == 4", "assert sq(3) == 9"]
        for leave in ("import os\nos._exit(0)", "import sys\nsys.exit(0)", "exit(0)", "raise SystemExit"):
            code = "def sq(x):\n    return 0\n" + leave
            self.assertScoresZero(run(code, asserts), "tampered")
            self.assertScoresZero(run(code, {"fn_name": "sq", "inputs": ["2"], "outputs": [4]}), "tampered")
        self.assertScoresZero(run("import os\nos._exit(0)", {"inputs": ["2"], "outputs": ["4"]}), "wrong")

    def test_h2_an_object_equal_to_everything(self):
        always = (
            "class A(%s):\n"
            "    __eq__ = lambda self, other: True\n"
            "    __ne__ = lambda self, other: False\n"
            "    __hash__ = lambda self: 0\n"
            "def sq(x):\n    return A(%s)\n"
        )
        for base, arg in (("list", ""), ("dict", ""), ("str", "'no'"), ("int", "0"), ("float", "0"),
                          ("tuple", ""), ("object", "")):
            code = always % (base, arg)
            self.assertScoresZero(run(code, ["assert sq(2) == 4", "assert sq(3) == [9]", "assert 'x' == sq(1)",
                                             "assert sq(2) == 4\nassert sq(3) == 9", "x = 2\nassert sq(x) == 4"]),
                                  "wrong")
            self.assertScoresZero(run(code, {"fn_name": "sq", "inputs": ["2"], "outputs": [4]}), "wrong")
        nested = "class A(int):\n    __eq__ = lambda s, o: True\n    __hash__ = lambda s: 0\ndef sq(x):\n    return [A(1)]\n"
        self.assertScoresZero(run(nested, ["assert sq(2) == [4]"]), "wrong")

    def test_h3_a_swallowed_error(self):
        raising = "def f(x):\n    raise ValueError('no')\n"
        self.assertScoresZero(run(raising, {"fn_name": "f", "inputs": ["1"], "outputs": [""]}), "runtime_error")
        swallowing = "def f(x):\n    try:\n        raise ValueError\n    except Exception:\n        pass\n"
        self.assertScoresZero(run(swallowing, {"fn_name": "f", "inputs": ["1"], "outputs": [""]}), "wrong")
        self.assertScoresZero(run(swallowing, ["assert f(1) == 2"]), "wrong")
        silent = "try:\n    print(1 / 0)\nexcept Exception:\n    pass\n"
        self.assertScoresZero(run(silent, {"inputs": ["1"], "outputs": ["1"]}), "wrong")

    def test_h5_a_partial_or_canned_answer(self):
        tests = {"inputs": ["3\n1\n2\n3\n"], "outputs": ["YES\nNO\nYES\n"]}
        self.assertScoresZero(run("print('YES')", tests), "wrong")
        self.assertScoresZero(run("print('All tests passed')", tests), "wrong")
        self.assertScoresZero(run("print('YES\\nNO')", tests), "wrong")

    def test_h6_reading_the_expected_outputs(self):
        secret = "rwb-expected-" + secrets.token_hex(8)
        folder = tempfile.mkdtemp(prefix="rwb-h6-")
        try:
            path = os.path.join(folder, "tests.json")
            with open(path, "w") as f:
                json.dump({"inputs": ["1"], "outputs": [secret]}, f)
            tests = {"inputs": ["1"], "outputs": [secret]}
            from_disk = (
                "import json\n"
                "for path in [%r, %r]:\n"
                "    try:\n"
                "        print(json.load(open(path))['outputs'][0])\n"
                "        break\n"
                "    except (OSError, ValueError, KeyError):\n"
                "        pass\n" % (path, os.path.abspath(__file__))
            )
            self.assertScoresZero(run(from_disk, tests), "wrong")
            searching = (
                "import gc, sys\n"
                "found = ''\n"
                "frame = sys._getframe()\n"
                "while frame is not None:\n"
                "    for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):\n"
                "        if isinstance(value, str) and value.startswith('rwb-expected-'):\n"
                "            found = value\n"
                "    frame = frame.f_back\n"
                "for obj in gc.get_objects():\n"
                "    if isinstance(obj, dict):\n"
                "        for value in list(obj.values()):\n"
                "            if isinstance(value, str) and value.startswith('rwb-expected-') and len(value) == 29:\n"
                "                found = value\n"
                "print(found)\n"
            )
            self.assertScoresZero(run(searching, tests), "wrong")
            inside = "def f(x):\n" + "".join("    " + line + "\n" for line in searching.splitlines()[:-1]) + \
                "    return found\n"
            self.assertScoresZero(run(inside, dict(tests, fn_name="f")), "wrong")
            # the asserted value is not sent: the code cannot read it from its own file
            reading = (
                "import re\n"
                "def f(x):\n"
                "    found = re.findall(r'== (\\d+)', open(__file__).read())\n"
                "    return int(found[-1]) if found else -1\n"
            )
            self.assertScoresZero(run(reading, ["assert f(1) == 12345"]), "wrong")
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def test_h9_cancelling_the_alarm(self):
        code = "import signal\nsignal.alarm(0)\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass\n"
        started = time.monotonic()
        self.assertScoresZero(run(code, {"inputs": ["1"], "outputs": ["1"]}, timeout=1), "timeout")
        self.assertLess(time.monotonic() - started, 5)

    def test_h10_exhausting_memory_or_processes(self):
        tests = {"inputs": ["1"], "outputs": ["1"]}
        self.assertScoresZero(run("b = bytearray(10**11)\nprint(1)", tests), "memory")
        self.assertScoresZero(run("x = []\nwhile True:\n    x.append(' ' * 10**6)", tests, memory_mb=128), "memory")
        bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
        self.assertScoresZero(run(bomb, tests, timeout=1), "timeout")
        self.assertEqual(run("print(1)", tests)["score"], 1.0)  # and the sandbox goes on

    def test_h11_state_left_for_the_next_case(self):
        code = (
            "import os\n"
            "print('a' if os.path.exists('/tmp/seen') else 'b')\n"
            "open('/tmp/seen', 'w').write('1')\n"
            "open('seen_here', 'w').write('1')\n"
        )
        self.assertScoresZero(run(code, {"inputs": [""] * 12, "outputs": ["a"] * 12}), "wrong")
        sequential = [run(code, {"inputs": [""], "outputs": ["a"]}) for _ in range(6)]
        self.assertEqual(sum(r["passed"] for r in sequential), 0)

    def test_the_case_output_hides_rwbs_value_lines(self):
        result = run("def f(x):\n    print('debug')\n    return x", {"fn_name": "f", "inputs": ["5"], "outputs": [5]})
        self.assertEqual(result["score"], 1.0)
        self.assertEqual(result["cases"][0]["stdout"].strip(), "debug")
        forged = "print('\\x1erwb-value 0 {\"v\": 5}')\ndef f(x):\n    return x"
        self.assertScoresZero(run(forged, {"fn_name": "f", "inputs": ["5"], "outputs": [5]}), "tampered")


class JudgingTest(unittest.TestCase):
    """How answers are judged, on answers made up here."""

    @staticmethod
    def answer(stdout="", return_code=0, **extra):
        run_result = dict({"status": "Finished", "execution_time": 0.01, "return_code": return_code,
                           "stdout": stdout, "stderr": ""}, **extra)
        return {"status": "Success" if return_code == 0 else "Failed", "message": "", "compile_result": None,
                "run_result": run_result, "executor_pod_name": None, "files": {}}

    def test_a_relay_that_drops_the_nonce(self):
        value = lambda v: "\n\x1erwb-value 0 %s\n" % json.dumps({"v": v})  # noqa: E731
        case = sandbox._assert_case("def f(x):\n    return x", "assert f(2) == 2")
        self.assertEqual(case.judge(self.answer(value(2)))["verdict"], "pass")
        self.assertEqual(case.judge(self.answer(""))["verdict"], "wrong")  # left early: no value
        self.assertEqual(case.judge(self.answer(value(2), nonce_seen=False))["verdict"], "tampered")
        verbatim = sandbox._assert_case("x = 1", "for i in range(2):\n    assert i < 5")
        judged = verbatim.judge(self.answer(""))
        self.assertEqual(judged["verdict"], "sandbox_error")
        self.assertIn("nonce", judged["stderr"])
        self.assertEqual(verbatim.judge(self.answer("", nonce_seen=True))["verdict"], "pass")

    def test_values_come_back_as_they_were(self):
        for value in ([1, (2, 3)], {"a": {1, 2}}, {(1, 2): b"x"}, 2 ** 4000, float("nan"), 1.5, complex(1, 2),
                      frozenset({1}), None, True, "s"):
            encoded = self.encode(value)
            decoded = sandbox._values("\n\x1erwb-value 0 %s\n" % encoded, 1)[0]
            if value == value:
                self.assertEqual(decoded, value)
                self.assertIs(type(decoded), type(value))
            else:
                self.assertNotEqual(decoded, decoded)

    @staticmethod
    def encode(value):
        """What the sandbox's end writes for `value` (its write caught here)."""
        out = []

        def write(data):
            out.append(data)
            return len(data)

        space = {"__rwb_write": write}
        exec(sandbox._EMITTER.replace("O.write(1, data)", "__rwb_write(data)"), space)
        space["__rwb_emit"](0, value)
        return out[0].decode().split(" ", 2)[2].strip()


class WithoutSandboxTest(unittest.TestCase):
    def test_run_is_a_sandbox_error_per_case(self):
        saved = {k: os.environ.pop(k, None) for k in ("RWB_SANDBOX_URL", "RWB_SANDBOX_SOCKET")}
        try:
            result = run("print(1)", {"inputs": ["", ""], "outputs": ["1", "1"]})
        finally:
            for k, v in saved.items():
                if v is not None:
                    os.environ[k] = v
        self.assertScoresZero = RwbSandboxTest.assertScoresZero.__get__(self)
        self.assertScoresZero(result, "sandbox_error")
        self.assertIn("rwb.sandbox runs in rwb's workers", result["cases"][0]["stderr"])

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            run("x", {"inputs": ["1"], "outputs": []})
        with self.assertRaises(ValueError):
            run("x", {"inputs": ["1"]})
        with self.assertRaises(ValueError):
            run("x", [1, 2])
        with self.assertRaises(ValueError):
            run("x", ["assert True"], language="cpp")
        with self.assertRaises(ValueError):
            run("x", {"fn_name": "a b", "inputs": [], "outputs": []})
        with self.assertRaises(ValueError):
            run("x", [], timeout=0)
        self.assertEqual(run("x", []), {"passed": 0, "total": 0, "score": 0.0, "cases": []})
        self.assertEqual(sandbox.VERDICTS[0], "pass")


if __name__ == "__main__":
    unittest.main()
