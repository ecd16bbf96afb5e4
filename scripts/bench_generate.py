#!/usr/bin/env python3
"""Benchmark `rwb generate` against a plain Python client, in ONE invocation, against
the same stand-in server (tests/standins/openai_server.py, which answers as vLLM's
OpenAI server does).

Scenarios:
  A  1,000 prompts, -n 1 (1,000 completions, one request each), the server answering
     each request after 50 ms, --concurrency 16: `rwb generate` into an empty cache vs
     a plain Python client (16 threads, http.client with keep-alive, json, writing the
     same rows) against the same server.                          (target: rwb <= 4 s)
  B  a fully cached rerun of 10,000 completions (1,250 prompts, -n 8): `rwb generate`
     again after a run that filled the cache, vs the plain Python work of writing the
     same rows from a dict held in memory (reading the prompt set, one json.dumps per
     row).                                                      (target: rwb <= 0.5 s)
Every rwb run must exit 0 and write exactly the expected rows, and the cached rerun
must send no request, so a broken run cannot look fast.

Usage: python3 scripts/bench_generate.py [--rwb PATH] [--repeat 3] [--keep]
Exit status: 0 measured, 1 a scenario could not be measured, 2 setup problems.
"""

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STANDIN = REPO / "tests" / "standins" / "openai_server.py"
MODEL = "policy"


def die(message, code=1):
    print("bench_generate: " + message, file=sys.stderr)
    sys.exit(code)


class StandIn:
    def __init__(self, latency_ms):
        self.proc = subprocess.Popen(
            [sys.executable, str(STANDIN), "--latency-ms", str(latency_ms), "--model", MODEL],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            die("the stand-in said %r" % line, 2)
        self.port = int(line.split()[1])
        self.url = "http://127.0.0.1:%d" % self.port

    def requests(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port)
        conn.request("GET", "/stats")
        stats = json.loads(conn.getresponse().read())
        conn.close()
        return len([r for r in stats["requests"] if r["path"].endswith("completions")])

    def reset(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port)
        conn.request("POST", "/stats/reset", body=b"")
        conn.getresponse().read()
        conn.close()

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def write_prompts(path, count):
    with open(path, "w") as f:
        for i in range(count):
            f.write(json.dumps({"messages": [{"role": "user", "content": "question %d: what is %d + %d?" % (i, i, i)}],
                                "ground_truth": str(2 * i)}) + "\n")


def rwb_generate(rwb, workspace, server, n, concurrency):
    args = [rwb, "generate", "prompts.jsonl", "--endpoint", server.url, "--model", MODEL, "-n", str(n),
            "--seed", "1", "--temperature", "1.0", "--concurrency", str(concurrency), "-o", "out.jsonl"]
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    started = time.perf_counter()
    done = subprocess.run(args, cwd=workspace, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        die("rwb generate exited %d: %s" % (done.returncode, done.stderr.strip()))
    return elapsed


def count_rows(path):
    with open(path) as f:
        return sum(1 for _ in f)


def python_client(prompts_path, out_path, server, concurrency):
    """The plain baseline: threads posting one request per prompt (n=1) with
    keep-alive connections, the rows written in prompt order."""
    prompts = [json.loads(line) for line in open(prompts_path)]
    results = [None] * len(prompts)
    lock = threading.Lock()
    next_index = [0]

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", server.port)
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(prompts):
                break
            body = json.dumps({"model": MODEL, "messages": prompts[i]["messages"], "n": 1,
                               "max_tokens": 2048, "temperature": 1.0, "seed": 1})
            conn.request("POST", "/v1/chat/completions", body=body,
                         headers={"Content-Type": "application/json"})
            answer = json.loads(conn.getresponse().read())
            results[i] = answer["choices"][0]
        conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(out_path, "w") as out:
        for prompt, choice in zip(prompts, results):
            row = {"messages": prompt["messages"] + [{"role": "assistant", "content": choice["message"]["content"]}],
                   "ground_truth": prompt["ground_truth"], "finish_reason": choice["finish_reason"]}
            out.write(json.dumps(row) + "\n")
    return time.perf_counter() - started


def python_rows_from_memory(prompts_path, out_path, cached, n):
    """The cached baseline: the prompt set read and every row written from completions
    already in memory."""
    started = time.perf_counter()
    prompts = [json.loads(line) for line in open(prompts_path)]
    with open(out_path, "w") as out:
        for i, prompt in enumerate(prompts):
            for j in range(n):
                row = {"messages": prompt["messages"] + [cached[(i, j)]],
                       "ground_truth": prompt["ground_truth"], "finish_reason": "stop"}
                out.write(json.dumps(row) + "\n")
    return time.perf_counter() - started


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rwb", help="the rwb binary (default target/release/rwb, built if missing)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()
    rwb = Path(args.rwb) if args.rwb else REPO / "target" / "release" / "rwb"
    if not rwb.exists():
        if args.rwb:
            die("--rwb %s does not exist" % rwb, 2)
        print("building rwb: cargo build --release", file=sys.stderr)
        if subprocess.run(["cargo", "build", "--release"], cwd=REPO).returncode != 0:
            die("cargo build --release failed", 2)
    tmp = Path(tempfile.mkdtemp(prefix="rwb-bench-generate-"))
    copy = tmp / "rwb"
    shutil.copy2(rwb, copy)
    rwb = str(copy)
    results = []
    try:
        # A: 1,000 completions, 50 ms a request, 16 in flight
        slow = StandIn(50)
        try:
            rwb_times, py_times = [], []
            for r in range(args.repeat):
                ws = tmp / ("a%d" % r)
                ws.mkdir()
                write_prompts(ws / "prompts.jsonl", 1000)
                slow.reset()
                rwb_times.append(rwb_generate(rwb, ws, slow, 1, 16))
                if count_rows(ws / "out.jsonl") != 1000 or slow.requests() != 1000:
                    die("scenario A: expected 1,000 rows from 1,000 requests")
                py_times.append(python_client(ws / "prompts.jsonl", ws / "py.jsonl", slow, 16))
            results.append(("A 1,000 completions, 50 ms each, concurrency 16",
                            median(rwb_times), median(py_times), 4.0))
        finally:
            slow.stop()
        # B: a fully cached rerun of 10,000 completions
        fast = StandIn(0)
        try:
            ws = tmp / "b"
            ws.mkdir()
            write_prompts(ws / "prompts.jsonl", 1250)
            rwb_generate(rwb, ws, fast, 8, 16)
            first = (ws / "out.jsonl").read_bytes()
            cached = {}
            for k, line in enumerate(first.decode().splitlines()):
                cached[(k // 8, k % 8)] = json.loads(line)["messages"][-1]
            rwb_times, py_times = [], []
            for _ in range(args.repeat):
                fast.reset()
                rwb_times.append(rwb_generate(rwb, ws, fast, 8, 16))
                if fast.requests() != 0 or (ws / "out.jsonl").read_bytes() != first:
                    die("scenario B: the cached rerun asked the server or wrote other bytes")
                py_times.append(python_rows_from_memory(ws / "prompts.jsonl", ws / "py.jsonl", cached, 8))
            results.append(("B cached rerun, 10,000 completions", median(rwb_times), median(py_times), 0.5))
        finally:
            fast.stop()
    finally:
        if args.keep:
            print("kept %s" % tmp, file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%-48s %9s %12s %7s %8s %s" % ("scenario", "rwb s", "baseline s", "ratio", "target", ""))
    for name, rwb_s, base_s, target in results:
        verdict = "PASS" if rwb_s <= target else "FAIL"
        print("%-48s %9.3f %12.3f %7.2f %6.1f s %s" % (name, rwb_s, base_s, rwb_s / base_s, target, verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
