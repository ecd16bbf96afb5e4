#!/usr/bin/env python3
"""The sandbox under a veRL-shaped load (issue 47): 1,000 problems x 5 tests through
`rwb serve`'s POST /run_code, one request per test case as veRL's
`sandbox_fusion.check_correctness` sends them (a thread pool of max(32, 5 x CPUs),
throttled by a semaphore of `max_concurrent` = 64, the payload veRL builds), the
stdout compared as veRL compares it.

Prints programs per second, and checks that no answer is a SandboxError and no
request is lost (every one answered, every verdict the one known by construction:
the solutions pass 3, 4 or 5 of their 5 tests).

Usage:
  python3 scripts/bench_sandbox_http.py [--rwb target/release/rwb] [--problems 1000]
                                        [--tests 5] [--max-concurrent 64]
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def start_server(rwb, workspace):
    process = subprocess.Popen(
        [rwb, "serve", str(workspace), "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "RK_ENDPOINT_API_KEY"},
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        if "serving on " in line:
            url = line.split("serving on ", 1)[1].split()[0]
            threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
            return process, url
    process.kill()
    raise SystemExit("rwb serve did not start")


def problem(k):
    """Problem k: print n * (k % 7 + 2) for n on stdin. Its solution is wrong for n
    above a threshold, so it passes a known number of its tests (3, 4 or 5)."""
    factor = k % 7 + 2
    passes = 3 + k % 3
    code = "n = int(input())\nprint(n * %d if n < %d else -1)\n" % (factor, passes)
    tests = [(str(n), str(n * factor)) for n in range(5)]
    return code, tests, passes


def post(url, payload):
    request = urllib.request.Request(url, data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rwb", default=str(REPO / "target" / "release" / "rwb"))
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--tests", type=int, default=5)
    parser.add_argument("--max-concurrent", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rwb-bench-sandbox-") as tmp:
        ws = Path(tmp)
        (ws / "metrics" / "n").mkdir(parents=True)
        (ws / "metrics" / "n" / "main.py").write_text("def evaluate(messages, **kwargs):\n    return 1.0\n")
        (ws / "samples.jsonl").write_text('{"prompt": "p", "completion": "c"}\n')
        server, base = start_server(args.rwb, ws)
        try:
            url = base.rstrip("/") + "/run_code"
            # warm: the fork server starts with the first request
            post(url, {"code": "print(1)", "language": "python"})
            semaphore = threading.Semaphore(args.max_concurrent)
            jobs = []
            for k in range(args.problems):
                code, tests, passes = problem(k)
                for n, (stdin, expected) in enumerate(tests[: args.tests]):
                    jobs.append((k, n, code, stdin, expected, n < passes))

            def one(job):
                k, n, code, stdin, expected, should_pass = job
                payload = {"compile_timeout": 10, "run_timeout": 10, "code": code, "stdin": stdin,
                           "memory_limit_MB": 1024, "language": "python", "files": {}, "fetch_files": []}
                with semaphore:
                    answer = post(url, payload)
                run = answer.get("run_result") or {}
                passed = answer["status"] == "Success" and run.get("stdout", "").rstrip("\n") == expected
                return answer["status"], passed == should_pass

            workers = max(32, 5 * (os.cpu_count() or 1))
            t0 = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                results = list(pool.map(one, jobs))
            seconds = time.perf_counter() - t0
        finally:
            server.kill()
            server.wait()
    errors = sum(1 for status, _ in results if status == "SandboxError")
    wrong = sum(1 for _, ok in results if not ok)
    print("veRL-shaped load: %d problems x %d tests = %d programs through /run_code, max_concurrent %d, "
          "%d client threads" % (args.problems, args.tests, len(jobs), args.max_concurrent, workers))
    print("  %.2f s, %.0f programs/s; answered %d of %d; SandboxError %d; verdicts not as built %d"
          % (seconds, len(jobs) / seconds, len(results), len(jobs), errors, wrong))
    return 0 if errors == 0 and wrong == 0 and len(results) == len(jobs) else 1


if __name__ == "__main__":
    sys.exit(main())
