#!/usr/bin/env python3
"""Benchmark: what running on Ray costs against a local run, on the same machine.

It starts a local Ray cluster of two nodes (one CPU each, in a temp folder, killed at
the end whatever happens), writes a workspace, and times the same invocation

    rwb run WS --no-cache --format jsonl --jobs 2 --python PY [--ray ADDRESS]

with and without `--ray`, alternating, best of --repeat. Scenarios:

    cpu      an evaluator doing about --work-ms of pure-Python work per call
    trivial  an evaluator that returns at once (per-sample overhead dominates)

Each Ray run must give the local run's rows (without `duration_ms`), so a broken
run cannot look fast. Prints, per scenario, local s, Ray s and the ratio Ray/local.
The cluster's own start-up is not timed; the driver's connection to it is.

Usage:
  python3 scripts/bench_ray.py --python /tmp/rwb-ray/bin/python [--rwb target/release/rwb]
                               [--samples 1000] [--work-ms 5] [--repeat 3] [--keep]
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

CPU = """
import time

def evaluate(messages, **kwargs):
    end = time.perf_counter() + {work}
    n = 0
    while time.perf_counter() < end:
        n += 1
    return {{"score": len(messages[-1]["content"]) / 100.0, "reason": "worked"}}
"""

TRIVIAL = """
def evaluate(messages, **kwargs):
    return {"score": 0.5, "reason": "ok"}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A two-node local Ray cluster in a folder of its own."""

    def __init__(self, python):
        self.ray = os.path.join(os.path.dirname(python), "ray")
        self.dir = tempfile.mkdtemp(prefix="rwb-ray-bench-")
        self.address = "127.0.0.1:%d" % free_port()

    def __enter__(self):
        common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats"]
        port = self.address.split(":")[1]
        head = ["start", "--head", "--port=" + port, "--temp-dir=" + self.dir, "--include-dashboard=false"]
        self._ray(head + common)
        self._ray(["start", "--address=" + self.address] + common)
        return self

    def _ray(self, args):
        out = subprocess.run([self.ray] + args, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit("ray %s failed:\n%s" % (" ".join(args), out.stderr))

    def __exit__(self, *exc):
        # only this cluster's processes (named by its folder) and their descendants
        for _ in range(3):
            doomed = cluster_processes(self.dir)
            for pid in doomed:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if not doomed:
                break
            time.sleep(0.2)
        shutil.rmtree(self.dir, ignore_errors=True)


def cluster_processes(marker):
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                named = marker.encode() in f.read()
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry)] = (ppid, named)
    found = [pid for pid, (_, named) in table.items() if named]
    for parent in found:
        found.extend(pid for pid, (ppid, _) in table.items() if ppid == parent and pid not in found)
    return found


def workspace(root, name, code, samples):
    ws = os.path.join(root, name)
    os.makedirs(os.path.join(ws, "metrics", name))
    with open(os.path.join(ws, "metrics", name, "main.py"), "w") as f:
        f.write(code)
    with open(os.path.join(ws, "samples.jsonl"), "w") as f:
        for i in range(samples):
            answer = " ".join(["word"] * (i % 40 + 1))
            sample = {"messages": [{"role": "user", "content": "q%d" % i}, {"role": "assistant", "content": answer}]}
            f.write(json.dumps(sample) + "\n")
    return ws


def timed_run(args, ws, ray=None):
    command = [args.rwb, "run", ws, "--no-cache", "--format", "jsonl", "--jobs", "2", "--python", args.python]
    if ray:
        command += ["--ray", ray]
    started = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True)
    took = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit("rwb failed (%d): %s\n%s" % (out.returncode, " ".join(command), out.stderr[-2000:]))
    rows = sorted(line.rsplit(',"duration_ms":', 1)[0] for line in out.stdout.splitlines())
    return took, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", required=True, help="an interpreter with ray installed")
    parser.add_argument("--rwb", default=os.path.join("target", "release", "rwb"))
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--work-ms", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the workspaces")
    args = parser.parse_args()
    # Ray's token auth would write ~/.ray/auth_token, shared by the user's clusters
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    if not os.path.exists(args.rwb):
        raise SystemExit("no rwb binary at %s (cargo build --release, or give --rwb)" % args.rwb)
    root = tempfile.mkdtemp(prefix="rwb-bench-ray-")
    scenarios = [
        ("cpu", CPU.format(work=args.work_ms / 1000.0), args.samples),
        ("trivial", TRIVIAL, args.samples * 2),
    ]
    results = []
    try:
        with Cluster(args.python) as cluster:
            for name, code, samples in scenarios:
                ws = workspace(root, name, code, samples)
                local_times, ray_times = [], []
                for _ in range(args.repeat):
                    took, local_rows = timed_run(args, ws)
                    local_times.append(took)
                    took, ray_rows = timed_run(args, ws, cluster.address)
                    ray_times.append(took)
                    if ray_rows != local_rows:
                        raise SystemExit("%s: the Ray run's rows differ from the local run's" % name)
                results.append((name, samples, min(local_times), min(ray_times)))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("%-8s %8s %9s %9s %9s" % ("scenario", "samples", "local s", "ray s", "ray/local"))
    for name, samples, local, ray in results:
        print("%-8s %8d %9.2f %9.2f %9.2f" % (name, samples, local, ray, ray / local))
    return 0


if __name__ == "__main__":
    sys.exit(main())
