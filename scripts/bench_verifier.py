#!/usr/bin/env python3
"""Benchmark what the verifier statistics (SPEC §20) add to a labelled run.

Everything is measured in ONE invocation: the same samples, the same evaluator, the
same machine, the two workspaces run alternately, so the ratio compares like with like.

What it does:

  1. Writes 100,000 samples (10,000 with --quick) in rollout groups of 8 (same prompt),
     each with a `correct` field (true/false, and "correct"/"incorrect") and a score
     `s` the evaluator returns, with a seeded RNG.
  2. Two workspaces over the same file, both mapped with `[samples.main]`:
       labelled  `label = "correct"`: rwb run computes each evaluator's `verifier`
                 (confusion matrix, Wilson intervals, AUROC, best-of-n, pass@k)
       plain     no `label`: the same run without the verifier statistics (and with
                 RWB_NO_HACKING=1: nothing read off the rows for either report)
  3. Scenarios, each `rwb run --format jsonl` (rows to /dev/null), alternating plain and
     labelled, --repeat times (default 11), the median of each:
       cold   --no-cache: every sample evaluated           (target: labelled/plain - 1 < 2 %)
       warm   the cache filled: every score from the cache  (reported; the smallest run
              there is, so the largest share the statistics can take)
       rows   --no-cache again, after the runs that filled the cache wrote the row
              files: every sample evaluated, no row converted   (target: < 2 %)
     Each is given twice: wall (elapsed) and cpu (user + system seconds of rwb and of
     every process it started, its Python workers included: counted by a cgroup of
     the run's own where one can be made, see scripts/cpu_meter.py, which says how
     it counted): on a shared machine the wall figure moves with the other
     processes, the cpu figure is what the run cost, the statistics included.
     The labelled run must print a `verifier` block naming every sample, so a run that
     skipped the statistics cannot look fast.
  4. Prints a table: scenario, plain s, labelled s, overhead % (the median of the
     rounds' paired ratios, less 1), an interval of at least 90 % confidence for it
     (order statistics: the machine's noise, shown), target, PASS/FAIL.
  5. With --instructions (valgrind on PATH): each scenario once more on each side
     under callgrind, rwb's own process traced (its workers run untraced: their work
     is the same on both sides, the same samples scored by the same evaluator), and
     rwb's instruction counts: what the statistics add, a figure no other process on
     the machine moves.

Exit status: 0 when every scenario was measured, 1 when one could not be, 2 for usage.

Usage:
  python3 scripts/bench_verifier.py [--quick] [--rwb PATH] [--repeat 11] [--instructions] [--keep]
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

EVALUATOR = '''
def evaluate(messages, s, **kwargs):
    return s
'''


def write_samples(path, n, seed=7):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            group = i // 8
            right = rng.random() < 0.4
            score = min(1.0, max(0.0, rng.gauss(0.7 if right else 0.3, 0.2)))
            label = right if i % 2 else ("correct" if right else "incorrect")
            row = {
                "messages": [
                    {"role": "user", "content": f"question {group}: what is {group} + {group}?"},
                    {"role": "assistant", "content": f"answer {i}: {2 * group + (0 if right else 1)}"},
                ],
                "s": round(score, 4),
                "correct": label,
            }
            f.write(json.dumps(row) + "\n")


def workspace(root, samples, labelled):
    os.makedirs(os.path.join(root, "metrics", "judge"), exist_ok=True)
    with open(os.path.join(root, "metrics", "judge", "main.py"), "w") as f:
        f.write(EVALUATOR)
    shutil.copy(samples, os.path.join(root, "samples.jsonl"))
    toml = '[samples.main]\npath = "samples.jsonl"\n'
    if labelled:
        toml += 'label = "correct"\n'
    with open(os.path.join(root, "rwb.toml"), "w") as f:
        f.write(toml)


def command(rwb, root, labelled, cache):
    """The run's arguments and environment."""
    args = [rwb, "run", root, "--format", "jsonl"]
    if not cache:
        args.append("--no-cache")
    env = dict(os.environ)
    env.pop("RWB_NO_HACKING", None)
    if not labelled:
        # the leanest run: no per-step report, and (with no verifier statistics either)
        # rows converted without a row file are not read for their labels and lengths
        env["RWB_NO_HACKING"] = "1"
    return args, env


def check(root, n, labelled, code, stderr):
    """Fails a run that did not do its work: a broken run cannot look fast."""
    if code != 0:
        raise RuntimeError(f"rwb run {root} exited {code}: {stderr[-2000:]}")
    if labelled and f"judge verifier at 0.5: {n} labelled" not in stderr:
        raise RuntimeError(f"the labelled run printed no verifier block for {n} samples:\n{stderr[-2000:]}")
    if not labelled and "verifier at" in stderr:
        raise RuntimeError("the plain run computed verifier statistics")


def run(meter, rwb, root, n, labelled, cache):
    args, env = command(rwb, root, labelled, cache)
    with tempfile.TemporaryFile(mode="w+") as err:
        elapsed, cpu, code = meter.run(args, stdout=subprocess.DEVNULL, stderr=err, env=env)
        err.seek(0)
        stderr = err.read()
    check(root, n, labelled, code, stderr)
    return elapsed, cpu


def instructions(rwb, root, n, labelled, cache, tmp):
    """rwb's own instructions for one run under callgrind (its workers untraced)."""
    out = os.path.join(tmp, "callgrind")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    args, env = command(rwb, root, labelled, cache)
    # --no-contain: the box is built by rwb's own executable, which under valgrind is
    # valgrind's (both sides alike)
    args = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/%p.out", *args, "--no-contain"]
    p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    check(root, n, labelled, p.returncode, p.stderr)
    counts = []
    for name in os.listdir(out):
        with open(os.path.join(out, name)) as f:
            for line in f:
                if line.startswith("summary:"):
                    counts.append(int(line.split()[1]))
                    break
    # rwb's own process is the largest (a child forked to start a worker traces
    # only its few instructions before it executes Python)
    return max(counts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rwb", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "rwb"))
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--instructions", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(a.rwb):
        print(f"no rwb at {a.rwb}: cargo build --release first, or --rwb PATH", file=sys.stderr)
        return 2
    meter = CpuMeter("rwb-bench-verifier")
    n = 10_000 if a.quick else 100_000
    tmp = tempfile.mkdtemp(prefix="rwb-bench-verifier-")
    try:
        samples = os.path.join(tmp, "samples.jsonl")
        write_samples(samples, n)
        plain, labelled = os.path.join(tmp, "plain"), os.path.join(tmp, "labelled")
        workspace(plain, samples, False)
        workspace(labelled, samples, True)
        rows = []
        counted = []
        if a.instructions and shutil.which("valgrind") is None:
            print("no valgrind on PATH: --instructions left out", file=sys.stderr)
            a.instructions = False
        # cold: --no-cache before any run (every row converted, and seen, each time);
        # warm: every score from the cache; rows: --no-cache once an earlier run
        # wrote the row files (a workspace's usual state: nothing converted again)
        for name, cache, target in [("cold", False, 0.02), ("warm", True, None), ("rows", False, 0.02)]:
            if cache:  # fill both caches once
                run(meter, a.rwb, plain, n, False, True)
                run(meter, a.rwb, labelled, n, True, True)
            times = {False: [], True: []}
            for i in range(a.repeat):
                # ABBA: neither workspace always runs right after the other
                for lab in ((False, True) if i % 2 == 0 else (True, False)):
                    times[lab].append(run(meter, a.rwb, labelled if lab else plain, n, lab, cache))
            for what, k in (("wall", 0), ("cpu", 1)):
                p = statistics.median(t[k] for t in times[False])
                l = statistics.median(t[k] for t in times[True])
                # each round's two runs ran back to back: the median of the rounds'
                # paired ratios is what a machine whose speed drifts cannot move
                ratios = [b[k] / a[k] for a, b in zip(times[False], times[True])]
                paired = statistics.median(ratios)
                # the fastest of each: what the run costs when nothing else runs
                best = min(t[k] for t in times[True]) / min(t[k] for t in times[False])
                rows.append((f"{name} {what}", p, l, paired - 1.0, median_interval(ratios), best - 1.0, target))
            if a.instructions:
                counted.append((name, instructions(a.rwb, plain, n, False, cache, tmp),
                                instructions(a.rwb, labelled, n, True, cache, tmp)))
        print(f"\n{n:,} samples in groups of 8, labelled; median of {a.repeat} alternating runs")
        print("wall: elapsed seconds; " + meter.describe())
        print("overhead: the median of the rounds' paired ratios, less 1 (the verdict's), and an")
        print("interval of at least 90 % confidence for it (the rounds' spread: the machine's noise);")
        print("best: the fastest labelled run over the fastest plain one, less 1 (reported)")
        print(f"{'scenario':<12}{'plain s':>10}{'labelled s':>12}{'overhead':>10}{'interval':>20}{'best':>9}{'target':>9}  verdict")
        for name, p, l, over, interval, best, target in rows:
            verdict = "-" if target is None else ("PASS" if over < target else "FAIL")
            t = "-" if target is None else f"<{target:.0%}"
            iv = "-" if interval is None else f"[{interval[0] - 1:+.1%}, {interval[1] - 1:+.1%}] {interval[2]:.0%}"
            print(f"{name:<12}{p:>10.3f}{l:>12.3f}{over:>+10.2%}{iv:>20}{best:>+9.2%}{t:>9}  {verdict}")
        if counted:
            print("\nrwb's own instructions (callgrind; its workers untraced, the same work on both sides)")
            print(f"{'scenario':<12}{'plain':>16}{'labelled':>16}{'added':>14}{'a sample':>10}{'of rwb':>9}")
            for name, p, l in counted:
                print(f"{name:<12}{p:>16,}{l:>16,}{l - p:>+14,}{(l - p) / n:>+10.0f}{(l - p) / p:>+9.2%}")
        return 0
    except RuntimeError as e:
        print(f"could not measure: {e}", file=sys.stderr)
        return 1
    finally:
        meter.close()
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
