#!/usr/bin/env python3
"""How fast rwb's sandbox runs short Python programs (SPEC §18): N stdin/stdout programs
through the fork server (in rwb's box, SLOTS at once) against `subprocess.run([python,
"-c", code])` per program at the same concurrency, no box.

    python3 scripts/bench_sandbox.py [--n 1000] [--slots CORES] [--rwb target/debug/rwb]
                                     [--without-namespaces]

`--without-namespaces` runs the server where the kernel refuses user namespaces (a user
namespace of the script's own that allows no further one, through unshare(1)): rwb
then confines it with Landlock and seccomp (SPEC §18, "where the kernel says no").

Prints both rates (programs per second), the ratio, and the p50/p95 time of one run
as the server measured it.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "src", "engine", "python", "rwb_sandbox_server.py")

# a typical short solution: read numbers, print their sum
CODE = "import sys\nnums = list(map(int, sys.stdin.read().split()))\nprint(sum(nums))\n"


def stdin_of(i):
    return "%d %d %d\n" % (i, i + 1, i + 2)


def expected(i):
    return "%d\n" % (3 * i + 3)


def bench_server(rwb, n, slots, without_namespaces=False):
    command = [sys.executable, "-X", "utf8", SERVER, str(slots)]
    if rwb:
        plan = {"writable": [], "network": False, "tmp_read_only": False, "confine": True}
        command = [rwb, "__contain", json.dumps(plan), "--"] + command
    if without_namespaces:
        deny = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
        command = ["unshare", "--user", "--map-root-user", "sh", "-c", deny, "sh"] + command
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    ready = json.loads(proc.stdout.readline())
    assert ready.get("ready"), ready
    times, wrong = [], [0]
    done = threading.Event()

    def read():
        for _ in range(n):
            resp = json.loads(proc.stdout.readline())
            run = resp["run_result"] or {}
            if resp["status"] != "Success" or run.get("stdout") != expected(resp["id"]):
                wrong[0] += 1
            times.append(run.get("execution_time") or 0.0)
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    started = time.perf_counter()
    reader.start()
    for i in range(n):
        req = {"id": i, "code": CODE, "language": "python", "stdin": stdin_of(i), "run_timeout": 10}
        proc.stdin.write((json.dumps(req) + "\n").encode())
    proc.stdin.flush()
    done.wait()
    elapsed = time.perf_counter() - started
    proc.stdin.close()
    proc.wait()
    times.sort()
    return elapsed, wrong[0], ready.get("isolation"), times[len(times) // 2], times[int(len(times) * 0.95)]


def bench_subprocess(n, slots):
    wrong = [0]
    lock = threading.Lock()

    def one(i):
        out = subprocess.run(
            [sys.executable, "-c", CODE], input=stdin_of(i).encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        if out.returncode != 0 or out.stdout.decode() != expected(i):
            with lock:
                wrong[0] += 1

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=slots) as pool:
        list(pool.map(one, range(n)))
    return time.perf_counter() - started, wrong[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--slots", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rwb", default=os.path.join(ROOT, "target", "debug", "rwb"),
                        help="rwb's binary, for its box ('' runs the server unboxed)")
    parser.add_argument("--without-namespaces", action="store_true",
                        help="deny user namespaces: the server is confined by Landlock and seccomp")
    args = parser.parse_args()
    rwb = args.rwb if args.rwb and os.path.exists(args.rwb) else None
    print("%d short Python programs, %d at once, %s" % (args.n, args.slots, sys.version.split()[0]))
    elapsed, wrong, isolation, p50, p95 = bench_server(rwb, args.n, args.slots, args.without_namespaces)
    server_rate = args.n / elapsed
    where = " (no box)" if not rwb else (" (confined: no namespaces)" if args.without_namespaces else " (in rwb's box)")
    print("fork server%s: %.2f s, %.0f programs/s (%.2f ms each), %d wrong; one run p50 %.2f ms, p95 %.2f ms; %s" % (
        where, elapsed, server_rate, 1000 * elapsed / args.n, wrong,
        1000 * p50, 1000 * p95, json.dumps(isolation)))
    elapsed, wrong = bench_subprocess(args.n, args.slots)
    sub_rate = args.n / elapsed
    print("subprocess.run per program: %.2f s, %.0f programs/s (%.2f ms each), %d wrong" % (
        elapsed, sub_rate, 1000 * elapsed / args.n, wrong))
    print("ratio: %.1fx" % (server_rate / sub_rate))


if __name__ == "__main__":
    main()
