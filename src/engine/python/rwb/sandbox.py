"""Run code a policy wrote in rwb's sandbox (SPEC §18), from reward code.

    from rwb.sandbox import run_code, run

    run_code({"code": "print(input())", "language": "python", "stdin": "hi"})
        SandboxFusion's `/run_code`, field for field: a dict in, a dict out.

    run(code, tests, *, language="python", timeout=10, memory_mb=1024)
        Runs the code on each test case (at once) and judges it:
        {"passed", "total", "score", "cases": [{"verdict", "stdout", "stderr",
        "seconds", "return_code"}]}. `tests` is one of
          {"inputs": [...], "outputs": [...]}               stdin -> stdout
          {"inputs": [...], "outputs": [...], "fn_name": f}  call f (Python)
          ["assert f(1) == 2", ...]                          assert statements
        (or the JSON text of one, as veRL's `ground_truth` is). Verdicts: pass,
        wrong, runtime_error, timeout, memory, output_limit, compile_error,
        tampered, sandbox_error.

How `run` judges, so that the hacks a policy learns against code rewards score 0:
- the expected outputs never enter the sandbox: the program's output (or a call's
  result) comes out, and is compared here;
- stdout has as many lines as expected, compared line by line (trailing spaces
  aside): printing the first expected line, or "All tests passed", is wrong;
- a call's result, and each side of an asserted comparison, is serialised inside
  with exact builtin types only: an object whose `__eq__` says yes to everything
  (a subclass of list, dict, str, int... included) is wrong;
- a program that leaves before its last test (`os._exit(0)`, `sys.exit(0)`) is
  tampered: the sandbox writes a per-run nonce on a private descriptor once the
  code has run to its end;
- time, memory and processes are limited and enforced from outside: a run that
  exhausts them scores 0 (never a sandbox error, never retried);
- every run has a fresh /tmp, no network, and sees no file of the user's.

The sandbox is rwb's: the worker reaches it over a Unix socket (`RWB_SANDBOX_SOCKET`)
or HTTP (`RWB_SANDBOX_URL`), which rwb sets. Standard library only.
"""

import ast
import base64
import http.client
import json
import operator
import os
import secrets
import socket
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

try:  # in rwb's workers: each run counted with the sample's result
    from rwb_py import tally as _tally
except ImportError:  # (elsewhere, nothing counts)
    _tally = None

__all__ = ["run_code", "run"]

VERDICTS = (
    "pass", "wrong", "runtime_error", "timeout", "memory", "output_limit", "compile_error",
    "tampered", "sandbox_error",
)

# SandboxFusion's request fields and what each takes; `nonce` and `output_cap` are rwb's
_NUMBER = "a number"
_FIELDS = {
    "code": (str,),
    "language": (str,),
    "compile_timeout": _NUMBER,
    "run_timeout": _NUMBER,
    "memory_limit_MB": (int,),
    "stdin": (str, type(None)),
    "files": (dict,),
    "fetch_files": (list,),
    "nonce": (str, type(None)),
    "output_cap": (int,),
}
_REQUIRED = ("code", "language")


# ---------------------------------------------------------------- run_code

def run_code(request):
    """SandboxFusion's `POST /run_code`, run by rwb's sandbox: `request` is a dict
    of its fields (`code` and `language` required; unknown fields are ignored), and
    the answer is its response as a dict. A field of the wrong type raises
    ValueError naming it."""
    body = _checked(request)
    limit = float(body.get("compile_timeout", 10)) + float(body.get("run_timeout", 10))
    answer = _post("/run_code", body, timeout=limit + 600.0)
    if _tally is not None and isinstance(answer, dict):
        _tally.ran(answer)
    return answer


def _checked(request):
    if not isinstance(request, dict):
        raise ValueError("run_code takes a dict (SandboxFusion's request), not %s" % type(request).__name__)
    body = {}
    for name, kinds in _FIELDS.items():
        if name not in request:
            if name in _REQUIRED:
                raise ValueError("run_code: the request has no %r" % name)
            continue
        value = request[name]
        if kinds is _NUMBER:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if ok and (value != value or value < 0):
                raise ValueError("run_code: %s must not be negative" % name)
        else:
            ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
        if not ok:
            want = kinds if kinds is _NUMBER else " or ".join(
                "null" if k is type(None) else k.__name__ for k in kinds)
            raise ValueError("run_code: %s must be %s, not %s" % (name, want, type(value).__name__))
        body[name] = value
    for path, content in body.get("files", {}).items():
        if not isinstance(path, str) or not (content is None or isinstance(content, str)):
            raise ValueError("run_code: files must map a path to base64 text (or null)")
    for path in body.get("fetch_files", []):
        if not isinstance(path, str):
            raise ValueError("run_code: fetch_files must be a list of paths")
    return body


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a Unix socket (a worker without network still reaches rwb)."""

    def __init__(self, path, timeout):
        http.client.HTTPConnection.__init__(self, "localhost", timeout=timeout)
        self._socket_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def _endpoint(timeout):
    """A connection to rwb's sandbox, and the path prefix of its API."""
    path = os.environ.get("RWB_SANDBOX_SOCKET")
    if path:
        return _UnixHTTPConnection(path, timeout), "", "unix socket %s" % path
    url = os.environ.get("RWB_SANDBOX_URL")
    if url:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RuntimeError("RWB_SANDBOX_URL=%r is not an http:// address" % url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        return kind(parts.hostname, parts.port, timeout=timeout), parts.path.rstrip("/"), url
    raise RuntimeError(
        "rwb.sandbox runs in rwb's workers; rwb tells them where its sandbox is "
        "(RWB_SANDBOX_SOCKET or RWB_SANDBOX_URL), and neither is set here. Run this "
        "reward with `rwb run` (or the workbench), or set RWB_SANDBOX_URL to a running "
        "rwb's sandbox."
    )


def _post(path, body, timeout):
    connection, prefix, where = _endpoint(timeout)
    data = json.dumps(body).encode("utf-8", "surrogatepass")
    try:
        try:
            connection.request("POST", prefix + path, body=data, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise RuntimeError("rwb's sandbox (%s) cannot be reached: %s" % (where, exc)) from None
    finally:
        connection.close()
    text = payload.decode("utf-8", "replace")
    if response.status == 422:
        raise ValueError("run_code: the sandbox refused the request: %s" % text.strip())
    if response.status != 200:
        raise RuntimeError("rwb's sandbox (%s) answered HTTP %d: %s" % (where, response.status, text.strip()[:500]))
    try:
        answer = json.loads(text)
    except ValueError:
        raise RuntimeError("rwb's sandbox (%s) answered with no JSON: %r" % (where, text[:200])) from None
    if isinstance(answer, dict):
        answer.pop("id", None)
    return answer


# ---------------------------------------------------------------- run

def run(code, tests, *, language="python", timeout=10, memory_mb=1024):
    """Runs `code` on each case of `tests` in rwb's sandbox, at once, and judges each
    outside it. Returns {"passed", "total", "score", "cases"}; see the module's
    description for the forms of `tests` and the verdicts."""
    if not isinstance(code, str):
        raise ValueError("run: code must be a string, not %s" % type(code).__name__)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError("run: timeout must be a positive number of seconds")
    if isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or memory_mb <= 0:
        raise ValueError("run: memory_mb must be a positive integer")
    cases = _cases(code, tests, language)
    limits = {
        "language": language,
        "run_timeout": timeout,
        "compile_timeout": max(float(timeout), 10.0),
        "memory_limit_MB": memory_mb,
    }
    if not cases:
        return {"passed": 0, "total": 0, "score": 0.0, "cases": []}

    def one(case):
        request = dict(limits, code=case.code, stdin=case.stdin)
        if case.nonce is not None:
            request["nonce"] = case.nonce
        try:
            response = run_code(request)
        except (RuntimeError, ValueError) as exc:
            return {"verdict": "sandbox_error", "stdout": "", "stderr": str(exc), "seconds": 0.0, "return_code": None}
        return case.judge(response)

    with ThreadPoolExecutor(max_workers=min(32, len(cases))) as pool:
        judged = list(pool.map(one, cases))
    if _tally is not None:
        _tally.judged(judged)
    passed = sum(1 for c in judged if c["verdict"] == "pass")
    return {"passed": passed, "total": len(judged), "score": passed / len(judged), "cases": judged}


class _Case:
    """One run: the code sent, its stdin, the nonce, and how its answer is judged."""

    def __init__(self, code, stdin, judge, nonce=None, asserts=False, values=False):
        self.code = code
        self.stdin = stdin
        self.nonce = nonce
        self.asserts = asserts  # assert statements: a failed one is `wrong`
        self.values = values  # judged by values the run writes out
        self._judge = judge

    def judge(self, response):
        run_result = response.get("run_result") or {}
        compile_result = response.get("compile_result") or {}
        shown = {
            "stdout": run_result.get("stdout") or "",
            "stderr": (run_result.get("stderr") or "") or (compile_result.get("stderr") or ""),
            "seconds": float(run_result.get("execution_time") or 0.0),
            "return_code": run_result.get("return_code"),
        }
        verdict = _failure(response, self.nonce is not None)
        if verdict == _NO_WORD:
            if self.values:
                verdict = None  # the values tell: a run that left early wrote none
            else:
                verdict = "sandbox_error"
                shown["stderr"] = (shown["stderr"] + "\n" if shown["stderr"] else "") + (
                    "rwb: the sandbox's answer says nothing of the nonce (does its relay pass `nonce` "
                    "through?): whether the tests ran to their end is unknown")
        if verdict is None:
            verdict, note = self._judge(shown["stdout"])
            if note:
                shown["stderr"] = (shown["stderr"] + "\n" if shown["stderr"] else "") + note
        elif verdict == "sandbox_error" and response.get("message"):
            shown["stderr"] = (shown["stderr"] + "\n" if shown["stderr"] else "") + response["message"]
        elif verdict == "runtime_error" and self.asserts and _assertion_failed(shown["stderr"]):
            verdict = "wrong"  # the test's own assert failed
        if self.nonce is not None:
            shown["stdout"] = _without_values(shown["stdout"])
        return dict(shown, verdict=verdict)


def _failure(response, nonce_expected):
    """The verdict a response gets before any output is compared (None: compare)."""
    if not isinstance(response, dict) or response.get("status") == "SandboxError":
        return "sandbox_error"
    compiled = response.get("compile_result")
    if compiled and (compiled.get("status") != "Finished" or compiled.get("return_code") != 0):
        return "compile_error"
    ran = response.get("run_result")
    if not ran:
        return "sandbox_error"
    if ran.get("status") == "TimeLimitExceeded":
        return "timeout"
    if ran.get("memory"):
        return "memory"
    if ran.get("truncated"):
        return "output_limit"
    if ran.get("status") != "Finished":
        return "sandbox_error"
    if ran.get("return_code") != 0:
        return "runtime_error"
    if nonce_expected:
        if "nonce_seen" not in ran:
            return _NO_WORD
        if not ran["nonce_seen"]:
            return "tampered"  # it left before the end of the tests, saying all was well
    return None


_NO_WORD = "no word of the nonce"


def _assertion_failed(stderr):
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return bool(lines) and lines[-1].startswith("AssertionError")


def _cases(code, tests, language):
    if isinstance(tests, (str, bytes)):
        try:
            tests = json.loads(tests)
        except ValueError:
            raise ValueError("run: tests is text but not JSON") from None
    if isinstance(tests, dict) and "assert_case" in tests and not tests.get("inputs"):
        tests = tests["assert_case"]
    if isinstance(tests, (list, tuple)):
        if not all(isinstance(t, str) for t in tests):
            raise ValueError("run: a list of tests is a list of assert statements (strings)")
        if language != "python":
            raise ValueError("run: assert statements run as Python (language=%r)" % language)
        return [_assert_case(code, t) for t in tests]
    if not isinstance(tests, dict) or "inputs" not in tests or "outputs" not in tests:
        raise ValueError('run: tests is {"inputs": [...], "outputs": [...]} (with "fn_name" to call a '
                         'function) or a list of assert statements')
    inputs, outputs = tests["inputs"], tests["outputs"]
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise ValueError("run: tests has %s inputs for %s outputs" % (
            len(inputs) if isinstance(inputs, list) else "no list of",
            len(outputs) if isinstance(outputs, list) else "no list of"))
    fn_name = tests.get("fn_name")
    if fn_name:
        if not isinstance(fn_name, str) or not fn_name.isidentifier():
            raise ValueError("run: fn_name must name a function, not %r" % (fn_name,))
        if language != "python":
            raise ValueError("run: fn_name calls a Python function (language=%r)" % language)
        return [_call_case(code, fn_name, i, o) for i, o in zip(inputs, outputs)]
    return [_stdio_case(code, i, o) for i, o in zip(inputs, outputs)]


# -- stdin/stdout

def _text_of(value):
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value) + ("\n" if value else "")
    return json.dumps(value)


def _lines(text):
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _stdio_case(code, given, expected):
    want = _lines(_text_of(expected))

    def judge(stdout):
        got = _lines(stdout)
        if got == want:
            return "pass", None
        if len(got) != len(want):
            return "wrong", "rwb: %d line(s) of output, %d expected" % (len(got), len(want))
        return "wrong", None

    return _Case(code, _text_of(given), judge)


# -- values out of the sandbox

# The sandbox's end of it: each value is serialised with exact builtin types only,
# tagged, on a line of its own. Appended to the code sent; defines one name.
_MARK = "\x1erwb-value "
_EMITTER = r'''

def __rwb_emit(__rwb_slot, __rwb_value):
    import builtins as B, json as J, os as O, sys as S
    def enc(v, depth):
        t = B.type(v)
        if depth > 200:
            raise B.ValueError("nested too deep")
        if v is None or t is B.bool or t is B.str:
            return v
        if t is B.int:
            return v if B.abs(v) < (1 << 1000) else {"$i": B.hex(v)}
        if t is B.float:
            return v if v == v and v not in (B.float("inf"), B.float("-inf")) else {"$f": B.repr(v)}
        if t is B.list:
            return [enc(x, depth + 1) for x in v]
        if t is B.tuple:
            return {"$t": [enc(x, depth + 1) for x in v]}
        if t is B.dict:
            return {"$d": [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in B.list(B.dict.items(v))]}
        if t is B.set or t is B.frozenset:
            return {"$s" if t is B.set else "$z": [enc(x, depth + 1) for x in v]}
        if t is B.bytes:
            import base64
            return {"$b": base64.b64encode(v).decode()}
        if t is B.complex:
            return {"$c": [enc(v.real, depth + 1), enc(v.imag, depth + 1)]}
        raise Foreign(t)
    class Foreign(B.Exception):
        pass
    try:
        out = {"v": enc(__rwb_value, 0)}
    except Foreign as why:
        t = why.args[0]
        out = {"x": "%s.%s" % (B.getattr(t, "__module__", "?"), B.getattr(t, "__qualname__", "?"))}
    except (B.ValueError, B.RecursionError) as why:
        out = {"x": "a value rwb cannot read: %s" % why}
    for stream in (S.stdout, S.__stdout__):
        try:
            stream.flush()
        except B.Exception:
            pass
    line = "\n%s%d %s\n" % (''' + repr(_MARK) + r''', __rwb_slot, J.dumps(out))
    data = line.encode("utf-8", "surrogatepass")
    while data:
        data = data[O.write(1, data):]
'''


def _decode(node):
    if isinstance(node, list):
        return [_decode(x) for x in node]
    if not isinstance(node, dict):
        return node
    (tag, body), = node.items()
    if tag == "$t":
        return tuple(_decode(x) for x in body)
    if tag == "$d":
        return {_decode(k): _decode(v) for k, v in body}
    if tag == "$s":
        return {_decode(x) for x in body}
    if tag == "$z":
        return frozenset(_decode(x) for x in body)
    if tag == "$b":
        return base64.b64decode(body)
    if tag == "$c":
        return complex(body[0], body[1])
    if tag == "$i":
        return int(body, 16)
    if tag == "$f":
        return float(body)
    raise ValueError(tag)


class _NotBuiltin(Exception):
    pass


def _values(stdout, slots):
    """The values the code's run wrote out, by slot: {slot: value}; raises
    _NotBuiltin for a value of another type, ValueError when a slot is missing or
    written twice (the program wrote the mark itself)."""
    found = {}
    for line in stdout.split("\n"):
        if not line.startswith(_MARK):
            continue
        slot, _, payload = line[len(_MARK):].partition(" ")
        if slot in found:
            raise ValueError("written twice")
        found[slot] = payload
    values = {}
    for slot in range(slots):
        payload = found.get(str(slot))
        if payload is None:
            raise ValueError("missing")
        try:
            out = json.loads(payload)
        except ValueError:
            raise ValueError("unreadable") from None
        if not isinstance(out, dict):
            raise ValueError("unreadable")
        if "x" in out:
            raise _NotBuiltin(str(out["x"]))
        try:
            values[slot] = _decode(out["v"])
        except (KeyError, TypeError, ValueError):
            raise ValueError("unreadable") from None
    if len(found) != slots:
        raise ValueError("written twice")
    return values


def _without_values(stdout):
    return "\n".join(line for line in stdout.split("\n") if not line.startswith(_MARK))


def _read_values(stdout, slots):
    """(values, verdict, note): the values, or the verdict they earn."""
    try:
        return _values(stdout, slots), None, None
    except _NotBuiltin as exc:
        return None, "wrong", "rwb: the value is a %s, not a builtin type: it is not compared" % exc
    except ValueError as exc:
        if str(exc) == "written twice":
            return None, "tampered", "rwb: the program wrote rwb's value mark itself"
        return None, "wrong", "rwb: the program gave no value"


# -- calls (fn_name)

# veRL's wrapper runs a solution with the usual modules star-imported; so does rwb
# (one line, so that line numbers move by one), keeping the builtin pow.
_PRELUDE = (
    "import sys, os, json, math, re, string, random, datetime, copy, operator, io, traceback, statistics, "
    "collections, itertools, functools, heapq, bisect, typing, fractions, decimal; from typing import *; "
    "from collections import *; from itertools import *; from functools import *; from heapq import *; "
    "from bisect import *; from math import *; from builtins import pow\n"
)

_CALLER = r'''

def __rwb_call():
    import builtins as B, json as J, sys as S
    args = [J.loads(line) for line in S.stdin.read().split("\n") if line.strip()]
    name = %r
    space = B.globals()
    target = space.get(name)
    if not B.callable(target):
        holder = space.get("Solution")
        if holder is None or not B.hasattr(holder, name):
            raise B.NameError("rwb: the code defines no function %%r (nor Solution.%%s)" %% (name, name))
        target = B.getattr(holder(), name)
    __rwb_emit(0, target(*args))


__rwb_call()
'''


def _args_text(given):
    if isinstance(given, str):
        return given if given.endswith("\n") or not given else given + "\n"
    if isinstance(given, list):
        return "".join(json.dumps(a) + "\n" for a in given)
    return json.dumps(given) + "\n"


def _json_like(value):
    """A call's result as JSON would carry it (tuples as lists)."""
    if isinstance(value, (list, tuple)):
        return [_json_like(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_like(v) for k, v in value.items()}
    return value


def _same(a, b):
    """Equality of plain values, with booleans apart from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _call_matches(result, expected):
    got = _json_like(result)
    wanted = [expected]
    if isinstance(expected, list) and len(expected) == 1:
        wanted.append(expected[0])  # APPS wraps a call's result in a list
    if isinstance(expected, str):
        try:
            wanted.append(json.loads(expected))
        except ValueError:
            pass
    return any(_same(got, _json_like(w)) for w in wanted)


def _call_case(code, fn_name, given, expected):
    nonce = secrets.token_hex(16)
    sent = _PRELUDE + code + _EMITTER + (_CALLER % fn_name)

    def judge(stdout):
        values, verdict, note = _read_values(stdout, 1)
        if values is None:
            return verdict, note
        return ("pass", None) if _call_matches(values[0], expected) else ("wrong", None)

    return _Case(sent, _args_text(given), judge, nonce, values=True)


# -- assert statements

_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _literal(node):
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _assert_case(code, test):
    """A test: assert statements, with any statements they need. The sides of each
    top-level assert's comparison (or its whole condition) are computed in the
    sandbox, written out with exact builtin types, and compared here; a literal side
    (the expected value, usually) is never sent. What is not a top-level assert runs
    as written; the nonce tells whether the run reached its end."""
    nonce = secrets.token_hex(16)
    try:
        tree = ast.parse(test)
    except SyntaxError:
        tree = None
    asserts = [] if tree is None else [
        node for node in tree.body
        if isinstance(node, ast.Assert) and node.col_offset == 0 and not _shares_a_line(tree, node)
    ]
    if not asserts:
        return _Case(code + "\n" + test + "\n", "", lambda stdout: ("pass", None), nonce, asserts=True)
    lines = test.split("\n")
    checks = []  # (compare or None, {position: value kept here}, [(position, slot)])
    slot = 0
    replaced = {}  # first line index -> (last line index, the lines sent instead)
    for node in asserts:
        check = node.test
        if isinstance(check, ast.Compare) and len(check.ops) == 1 and type(check.ops[0]) in _COMPARE:
            sides, compare = [check.left, check.comparators[0]], _COMPARE[type(check.ops[0])]
            literal = [_literal(side) for side in sides]
        else:
            sides, compare, literal = [check], None, [(False, None)]
        known = {}
        if sum(1 for is_literal, _v in literal if is_literal) == 1:
            position = 0 if literal[0][0] else 1
            known[position] = literal[position][1]  # the expected value: it stays here
        sent, emits = [], []
        for position, side in enumerate(sides):
            if position in known:
                continue
            sent.append((position, slot))
            emits.append("__rwb_emit(%d, (%s))" % (slot, ast.get_source_segment(test, side)))
            slot += 1
        checks.append((compare, known, sent))
        replaced[node.lineno - 1] = (node.end_lineno - 1, emits)
    body, at = [], 0
    while at < len(lines):
        if at in replaced:
            last, emits = replaced[at]
            body.extend(emits)
            at = last + 1
        else:
            body.append(lines[at])
            at += 1
    sent_code = code + _EMITTER + "\n" + "\n".join(body) + "\n"
    slots = slot

    def judge(stdout):
        values, verdict, note = _read_values(stdout, slots)
        if values is None:
            return verdict, note
        for compare, known, sent in checks:
            got = dict(known)
            for position, at_slot in sent:
                got[position] = values[at_slot]
            try:
                ok = compare(got[0], got[1]) if compare is not None else bool(got[0])
            except Exception:  # noqa: BLE001  (values that do not compare: not equal)
                ok = False
            if ok is not True:
                return "wrong", None
        return "pass", None

    return _Case(sent_code, "", judge, nonce, asserts=True, values=True)


def _shares_a_line(tree, node):
    """Whether another statement stands on one of the lines of `node`."""
    return any(
        other is not node and other.lineno <= node.end_lineno and other.end_lineno >= node.lineno
        for other in tree.body
    )

