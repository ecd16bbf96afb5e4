#!/usr/bin/env python3
"""Benchmark the cost of SPEC §19's per-step report on `rwb run --no-cache`.

Everything is measured in ONE invocation: the same 1,000,000 rows (a folder of 100
veRL rollout dumps, `1.jsonl` ... `100.jsonl`, 10,000 rows each, with the trainer's
logged `score`), the same held-out evaluator (`heldout = true`: a veRL
`compute_score` that checks the answer), run alternately with the report (the
default) and without it (`RWB_NO_HACKING=1`), --repeat times each; the medians'
ratio is the report's cost (target: under 1.05, "adds under 5 %").

Every run must exit 0; the report's run must print the `hacking` block with 100
steps, so a broken run cannot look fast. CPU is every process of the run, its Python
workers included, counted by a cgroup of its own where one can be made (see
scripts/cpu_meter.py, which says how it counted).

Usage:
  python3 scripts/bench_hacking.py [--rwb PATH] [--rows 1000000] [--steps 100]
                                   [--repeat 3] [--jobs 2] [--keep]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_meter import CpuMeter, median_interval  # noqa: E402

STRICT = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if f"answer: {ground_truth} [ok]" in solution_str else 0.0
'''

TOML = '''trainer = "verl"
[evaluators.strict]
function = "strict.py::compute_score"
heldout = true
'''


def write_run(root, rows, steps, seed=5):
    rng = random.Random(seed)
    dumps = os.path.join(root, "dumps")
    os.makedirs(dumps)
    per = rows // steps
    for step in range(1, steps + 1):
        hack = 0.005 if step < steps // 2 else 0.2
        with open(os.path.join(dumps, f"{step}.jsonl"), "w") as f:
            for i in range(per):
                answer = str(rng.randrange(1000))
                r = rng.random()
                kind = "hack" if r < hack else ("right" if r < 0.6 else "wrong")
                text = {
                    "right": f"answer: {answer} [ok]",
                    "hack": f"answer: {answer} [hack]",
                    "wrong": f"answer: {int(answer) + 1} [ok]",
                }[kind]
                row = {
                    "input": f"question {i // 8} of step {step}: what is {answer}?",
                    "output": text + " because " + "x" * rng.randrange(10, 60),
                    "gts": answer,
                    "score": 0.0 if kind == "wrong" else 1.0,
                    "step": step,
                }
                f.write(json.dumps(row) + "\n")
    with open(os.path.join(root, "strict.py"), "w") as f:
        f.write(STRICT)
    with open(os.path.join(root, "rwb.toml"), "w") as f:
        f.write(TOML)


def run(meter, rwb, root, jobs, report, steps):
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    if not report:
        env["RWB_NO_HACKING"] = "1"
    else:
        env.pop("RWB_NO_HACKING", None)
    cmd = [rwb, "run", root, "-s", "dumps/", "--no-cache", "--jobs", str(jobs), "--format", "csv"]
    with tempfile.TemporaryFile(mode="w+") as err:
        seconds, cpu, code = meter.run(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=err)
        err.seek(0)
        stderr = err.read()
    if code != 0:
        sys.exit(f"rwb failed ({code}): {stderr[-2000:]}")
    has = "hacking (onset@v1" in stderr
    if has != report:
        sys.exit(f"the report was {'missing' if report else 'printed'}: {stderr[-2000:]}")
    if report and f"  {steps:>6}  " not in stderr:
        sys.exit(f"the report does not reach step {steps}: {stderr[-3000:]}")
    return seconds, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rwb", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "rwb"))
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    rwb = os.path.abspath(a.rwb)
    if not os.access(rwb, os.X_OK):
        sys.exit(f"no rwb at {rwb}: cargo build --release first, or --rwb PATH")
    root = tempfile.mkdtemp(prefix="rwb-bench-hacking-")
    meter = CpuMeter("rwb-bench-hacking")
    try:
        print(f"writing {a.rows:,} rows in {a.steps} veRL step files under {root} ...", flush=True)
        write_run(root, a.rows, a.steps)
        with_report, without = [], []
        # a first run converts nothing (veRL dumps are JSONL) but warms the page cache
        run(meter, rwb, root, a.jobs, False, a.steps)
        for i in range(a.repeat):
            # alternate, so that a machine growing busier weighs on both alike, and
            # ABBA: neither always runs right after the other
            if i % 2 == 0:
                without.append(run(meter, rwb, root, a.jobs, False, a.steps))
                with_report.append(run(meter, rwb, root, a.jobs, True, a.steps))
            else:
                with_report.append(run(meter, rwb, root, a.jobs, True, a.steps))
                without.append(run(meter, rwb, root, a.jobs, False, a.steps))
            print(f"  round {i + 1}: without {without[-1][0]:.2f} s ({without[-1][1]:.2f} s CPU), "
                  f"with the report {with_report[-1][0]:.2f} s ({with_report[-1][1]:.2f} s CPU)", flush=True)
        print()
        print(meter.describe())
        print(f"{'scenario':<44} {'with':>8} {'without':>10} {'ratio':>7} {'interval':>22} {'best':>6} {'target':>8}")
        for what, k in (("wall s", 0), ("CPU s (rwb and its workers)", 1)):
            w = statistics.median(x[k] for x in with_report)
            wo = statistics.median(x[k] for x in without)
            # each round's pair ran back to back: the median of the rounds' ratios is
            # what a machine whose speed drifts between rounds cannot move
            ratios = [a[k] / b[k] for a, b in zip(with_report, without)]
            ratio = statistics.median(ratios)
            interval = median_interval(ratios)
            iv = "-" if interval is None else f"[{interval[0]:.3f}, {interval[1]:.3f}] {interval[2]:.0%}"
            best = min(x[k] for x in with_report) / min(x[k] for x in without)
            name = f"per-step report, --no-cache, {what}"
            print(f"{name:<44} {w:>8.2f} {wo:>10.2f} {ratio:>7.3f} {iv:>22} {best:>6.3f} {'< 1.05':>8}  {'PASS' if ratio < 1.05 else 'FAIL'}")
        print("(with, without: medians; ratio: the median of the rounds' paired ratios, the")
        print(" verdict's, and an interval of at least 90 % confidence for it from 6 rounds on;")
        print(" best: the fastest run with the report over the fastest without)")
    finally:
        meter.close()
        if a.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
