#!/usr/bin/env python3
"""Run `rwb run` thousands of times under CPU load and catch any run that never ends.

Issue 24: `rwb run DIR --format jsonl --no-cache` hung, rarely (once in a few hundred runs),
on one shape of workspace: three TRL-style batch evaluators (`completions, **kwargs`, one
returning None for some samples) over 28 chat samples (7 prompts x 4 completions), with
`batch_size = 64`, so each evaluator gets one batch holding every sample.

This script builds that workspace (and also runs the repository's evaluator corpus,
tests/corpus), starts busy loops that hold every core, and runs rwb again and again, each
run bounded by --limit seconds. A run still going at its limit is a hang: the script
prints (and saves under --out) gdb's stacks of every rwb thread and `py-spy dump` of
every Python process under it (the zygote and its workers), or, without py-spy, sends
the workers SIGUSR1 (rwb's worker registers faulthandler for it, writing stacks-PID.txt
in its runtime folder) and keeps what they wrote; then it kills the run and goes on.

Every finished run must exit 0 or 1 and print exactly one row per (sample, evaluator):
a run that finishes with rows missing counts as a failure too.

Usage:
  python3 scripts/stress_hang.py [--runs 5000] [--parallel 2] [--load 2]
                                 [--limit 30] [--rwb PATH] [--out DIR] [--only trl3|corpus]

Exit status: 0 no hang and no bad run, 1 at least one, 2 setup problems.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

TRL3_TOML = """\
# Issue 24's workspace: three TRL batch evaluators, one batch each holding every sample.
samples = ["samples.jsonl"]

[evaluators.length]
function = "rewards.py::length_reward"
batch_size = 64

[evaluators.tagged]
function = "rewards.py::tagged_reward"
batch_size = 64

[evaluators.maybe]
function = "rewards.py::maybe_reward"
batch_size = 64
"""

TRL3_REWARDS = '''\
import re


def length_reward(completions, **kwargs):
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    longest = max(len(t) for t in texts) or 1
    return [len(t) / longest for t in texts]


def tagged_reward(completions, **kwargs):
    pattern = re.compile(r"<answer>.*?</answer>", re.S)
    return [1.0 if pattern.search(c[-1]["content"]) else 0.0 for c in completions]


def maybe_reward(completions, ground_truth=None, **kwargs):
    out = []
    for c, truth in zip(completions, ground_truth or [None] * len(completions)):
        text = c[-1]["content"]
        if truth is None or "skip" in text:
            out.append(None)
        else:
            out.append(1.0 if str(truth) in text else 0.0)
    return out
'''


def trl3_samples():
    lines = []
    for p in range(7):
        question = f"What is {p} + {p + 3}? Think, then answer."
        for k in range(4):
            if k == 3 and p % 2:
                content = "skip this one"
            elif k % 2:
                content = f"<think>add them</think><answer>{2 * p + 3}</answer>"
            else:
                content = f"It is {2 * p + 3 + k}." + " padding" * k
            sample = {
                "messages": [
                    {"role": "user", "content": question},
                    {"role": "assistant", "content": content},
                ],
                "ground_truth": str(2 * p + 3) if p != 5 else None,
                "id": f"p{p}-c{k}",
            }
            lines.append(json.dumps(sample))
    return "\n".join(lines) + "\n"


def make_trl3(root):
    ws = root / "trl3"
    ws.mkdir()
    (ws / "rwb.toml").write_text(TRL3_TOML)
    (ws / "rewards.py").write_text(TRL3_REWARDS)
    (ws / "samples.jsonl").write_text(trl3_samples())
    return ws, 28 * 3


def make_corpus(root):
    ws = root / "corpus"
    shutil.copytree(REPO / "tests" / "corpus", ws, ignore=shutil.ignore_patterns(".rwb", "__pycache__"))
    return ws, None  # row count learned from the first run


def busy(stop):
    # a pure-Python spin in its own process: holds one core until told to stop
    return subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile True:\n    pass\n"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def descendants(pid):
    """Every process under `pid`, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def command_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def diagnose(proc, err_file):
    """gdb's stacks of rwb's threads, and the Python stacks of every process under it."""
    parts = []
    gdb = shutil.which("gdb")
    if gdb:
        r = subprocess.run(
            [gdb, "-p", str(proc.pid), "-batch", "-ex", "thread apply all bt"],
            capture_output=True, text=True, timeout=120,
        )
        parts.append(f"=== gdb: rwb {proc.pid} ===\n{r.stdout}\n{r.stderr[-2000:]}")
    else:
        parts.append("(no gdb on PATH: no Rust stacks)")
    pyspy = shutil.which("py-spy")
    kids = descendants(proc.pid)
    for pid in kids:
        cmd = command_of(pid)
        if pyspy:
            r = subprocess.run(
                [pyspy, "dump", "--pid", str(pid), "--locals"],
                capture_output=True, text=True, timeout=60,
            )
            parts.append(f"=== py-spy: {pid} {cmd} ===\n{r.stdout}{r.stderr[-2000:]}")
        else:
            # each worker's faulthandler writes its threads' stacks to stacks-PID.txt
            # beside the workers' socket (the run's private folder, on its command line)
            script = next((a for a in cmd.split() if a.endswith(".sock")), None) or \
                next((a for a in cmd.split() if a.endswith(".py")), None)
            try:
                os.kill(pid, signal.SIGUSR1)
            except OSError:
                continue
            time.sleep(0.3)
            stacks = Path(script).with_name("stacks-%d.txt" % pid) if script else None
            text = stacks.read_text(errors="replace") if stacks and stacks.exists() else "(none written)"
            parts.append(f"=== faulthandler: {pid} {cmd} ===\n{text}")
    return "\n".join(parts)


def kill_tree(proc):
    for pid in [proc.pid] + descendants(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.runs = 0
        self.hangs = []
        self.bad = []
        self.slow = []
        self.seconds = []


def drain_pty(master, sink):
    """Reads what rwb writes to its terminal until the terminal closes."""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            return
        if not chunk:
            return
        sink.write(chunk)


# --vary: each run picks rwb's --jobs and its runtime's thread count from these, so
# that a 2-core machine also runs the lane and thread counts of a bigger one
VARY_JOBS = [1, 2, 3, 4, 8]
VARY_THREADS = [1, 2, 4, 8]


def one_run(rwb, ws, expected, limit, out_dir, tally, name, index, tty=False, vary=False, slow=None,
            task_dump=None):
    run_dir = Path(tempfile.mkdtemp(prefix=f"run-{name}-", dir=out_dir))
    out_path, err_path = run_dir / "stdout", run_dir / "stderr"
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        env = dict(os.environ)
        extra = []
        if task_dump is not None:
            # a build with the task-dump feature writes where each async task waits
            env["RWB_TASK_DUMP_AFTER"] = str(task_dump)
            env["RWB_TASK_DUMP_FILE"] = str(run_dir / "tasks.txt")
        if vary:
            rng = random.Random(index)
            extra = ["--jobs", str(rng.choice(VARY_JOBS))]
            env["TOKIO_WORKER_THREADS"] = str(rng.choice(VARY_THREADS))
        reader = None
        stderr = err
        if tty:
            # stderr on a terminal, as when a person runs it: the progress line is drawn
            env.pop("CI", None)
            master, slave = os.openpty()
            stderr = slave
            reader = threading.Thread(target=drain_pty, args=(master, err), daemon=True)
        proc = subprocess.Popen(
            [rwb, "run", str(ws), "--format", "jsonl", "--no-cache"] + extra,
            stdin=subprocess.DEVNULL, stdout=out, stderr=stderr, env=env,
        )
        if tty:
            os.close(slave)
            reader.start()
        try:
            if slow is not None and slow < limit:
                # a run past --slow is diagnosed once (a bounded stall shows its stacks
                # too), then given the rest of its limit
                try:
                    proc.wait(timeout=slow)
                except subprocess.TimeoutExpired:
                    report = diagnose(proc, err_path)
                    (run_dir / "slow-stacks.txt").write_text(report)
                    with tally.lock:
                        tally.slow.append(f"{name} run {index} {' '.join(extra)} "
                                          f"threads={env.get('TOKIO_WORKER_THREADS', '-')}: {run_dir}")
                    print(f"\nSLOW: {name} run {index} past {slow}s; stacks in {run_dir}/slow-stacks.txt", flush=True)
            code = proc.wait(timeout=limit)
            if reader is not None:
                reader.join(5)
                os.close(master)
        except subprocess.TimeoutExpired:
            report = diagnose(proc, err_path)
            kill_tree(proc)
            (run_dir / "stacks.txt").write_text(report)
            with tally.lock:
                tally.hangs.append(str(run_dir))
                tally.runs += 1
            print(f"\nHANG: {name} run {index} still going after {limit}s; stacks in {run_dir}/stacks.txt", flush=True)
            print(report[:30000], flush=True)
            return
    took = time.monotonic() - t0
    rows = [l for l in out_path.read_text().splitlines() if l.strip()]
    problem = None
    if code not in (0, 1):
        problem = f"exit {code}: {err_path.read_text()[-500:]}"
    elif expected is not None and len(rows) != expected:
        problem = f"{len(rows)} rows, expected {expected}"
    with tally.lock:
        tally.runs += 1
        tally.seconds.append(took)
        if problem:
            tally.bad.append(f"{name} run {index}: {problem} ({run_dir})")
    if problem:
        print(f"\nBAD: {name} run {index}: {problem}", flush=True)
    elif not (run_dir / "slow-stacks.txt").exists():  # a slow run's stacks are kept
        shutil.rmtree(run_dir, ignore_errors=True)
    return len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5000, help="runs in all, shared over the workspaces")
    ap.add_argument("--parallel", type=int, default=2, help="rwb runs at once")
    ap.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy loops beside the runs")
    ap.add_argument("--limit", type=float, default=30.0, help="seconds before a run counts as hung")
    ap.add_argument("--rwb", default=str(REPO / "target" / "release" / "rwb"))
    ap.add_argument("--out", default=None, help="where hung runs' output and stacks are kept")
    ap.add_argument("--only", choices=["trl3", "corpus"], default=None)
    ap.add_argument("--tty", action="store_true", help="rwb's stderr on a terminal (its progress line drawn)")
    ap.add_argument("--vary", action="store_true",
                    help="each run picks --jobs from 1,2,3,4,8 and TOKIO_WORKER_THREADS from 1,2,4,8")
    ap.add_argument("--slow", type=float, default=None,
                    help="seconds after which a run's stacks are taken once (it still runs to --limit)")
    ap.add_argument("--task-dump", type=float, default=None,
                    help="seconds after which a task-dump build of rwb writes its async tasks' "
                         "stacks to tasks.txt in the run's folder (see src/cli/task_dump.rs)")
    args = ap.parse_args()

    if not os.access(args.rwb, os.X_OK):
        print(f"stress_hang: no rwb binary at {args.rwb}: build it (cargo build --release) or give --rwb", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="rwb-stress-"))
    out_dir = Path(args.out) if args.out else root / "runs"
    out_dir.mkdir(parents=True, exist_ok=True)
    workspaces = []
    if args.only in (None, "trl3"):
        workspaces.append(("trl3",) + make_trl3(root))
    if args.only in (None, "corpus"):
        workspaces.append(("corpus",) + make_corpus(root))

    tally = Tally()
    # learn the corpus's row count from one unloaded run, and check trl3's
    for i, (name, ws, expected) in enumerate(workspaces):
        rows = one_run(args.rwb, ws, expected, args.limit * 4, out_dir, tally, name, 0)
        if expected is None:
            workspaces[i] = (name, ws, rows)
    if tally.bad or tally.hangs:
        print("stress_hang: the first unloaded run already failed", file=sys.stderr)
        return 1

    stop = threading.Event()
    loops = [busy(stop) for _ in range(args.load)]
    counter = iter(range(1, args.runs + 1))
    counter_lock = threading.Lock()
    t0 = time.monotonic()

    def worker():
        while True:
            with counter_lock:
                index = next(counter, None)
            if index is None:
                return
            name, ws, expected = workspaces[index % len(workspaces)]
            one_run(args.rwb, ws, expected, args.limit, out_dir, tally, name, index, args.tty,
                    args.vary, args.slow, args.task_dump)
            if index % 100 == 0:
                print(f"{index}/{args.runs} runs, {len(tally.hangs)} hung, {len(tally.bad)} bad, "
                      f"{time.monotonic() - t0:.0f}s", flush=True)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(args.parallel)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(1.0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    finally:
        for p in loops:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()

    secs = sorted(tally.seconds)
    median = secs[len(secs) // 2] if secs else 0.0
    print(f"\n{tally.runs} runs of {[w[0] for w in workspaces]} under {args.load} busy loops, "
          f"{args.parallel} at once: {len(tally.hangs)} hung, {len(tally.bad)} bad; "
          f"median run {median:.2f}s, slowest {secs[-1] if secs else 0:.2f}s")
    for h in tally.hangs:
        print(f"  hung: {h}")
    for b in tally.bad:
        print(f"  bad: {b}")
    for s in tally.slow:
        print(f"  slow: {s}")
    if not tally.hangs and not tally.bad:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if tally.hangs or tally.bad else 0


if __name__ == "__main__":
    sys.exit(main())
