#!/usr/bin/env python3
"""Benchmark of the live workbench (issue 3's targets), in one invocation.

Runs the real `rwb` in tmux with RWB_TRACE_FRAMES set, so every frame appends a line
(time, fresh cells, samples, draw ms, resident KB) to a trace file, and measures:

  A. save -> every row updated: 1,000 samples, a cheap evaluator; the time from the
     file write to the first frame in which every score is new (median of N saves).
     Baseline, same invocation: a plain Python print loop over the same samples
     (new interpreter, import, evaluate, print) -- what users do today.
  B. 1,000,000 samples (~600 MB): time from launch to the first frame that shows
     samples; baseline: Python reading the same file line by line.
  C. scrolling: draw time of each frame while paging down through B's file.
  D. resident memory of rwb before evaluation starts on B's file.
  E. idle: frames drawn and CPU used over 5 s when nothing changes.
  F. 1,000,000 samples, one trivial undecorated evaluator, the default (cache on,
     cold): launch -> the first frame in which every row is scored, and rwb's peak
     resident memory (VmHWM) then. Baseline, same invocation: the plain loop over the
     same file (json.loads -> evaluate(**sample) -> json.dumps -> write), as issue 11
     and bench_engine.py time it.
  G. what the user is looking at comes first: 100,000 samples, the trivial evaluator
     saved with a new score; the time from the write to the first frame in which every
     row on screen shows a new score, with the list at the top and scrolled to row
     50,000 (median of N saves each). Target: the middle within ~100 ms, as the top.

  H. a million rows where they live (issue 25): 1,000,000 TRL-shaped rows (bench_engine.py's
     P: 8 generations a prompt, as chat messages) as JSONL and the same rows in one Parquet
     file (one row group, as pandas writes TRL's logs), the trivial evaluator, cache on and
     cold: launch -> the first frame that shows samples, launch -> every row scored, peak
     memory (VmHWM). Baseline, timed in each repetition: the plain loop over the JSONL file.
     Targets: all scored <= 1.0x the loop for both; Parquet's first frame no later than
     JSONL's. Needs pyarrow and pandas (RWB_DATA_PYTHON, else ${TMPDIR:-/tmp}/rwb-ci-data);
     --data DIR keeps the written files there for the next invocation.
  T. what the trainer will see after a save (issue 21): 1,000 and 100,000 of the same rows
     with `[training]` (TRL's GRPO, groups of 8 by prompt) and an evaluator whose scores
     reorder each group on every save: ms from the write to the first frame in which the
     rows on screen show their new scores, and to the first in which they show the new
     advantages (the ones the finished run settles on). Target: the same frame (0 ms
     apart).

Each figure is measured --repeat times (default 3); the median is reported with the
spread (min-max), each ratio against the baseline run in the same repetition.

Usage: python3 scripts/bench_workbench.py [--rwb PATH] [--quick] [--only A,F,G,H,T]
                                          [--repeat N] [--data DIR]
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
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORDS = (
    "the model answer reward score policy gradient value sample token data train result "
    "metric question because however therefore example system assistant user evaluate "
    "function response length format correct final number step reason helpful clear"
).split()


def sentence(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def write_samples(path, n, seed=7):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            row = {
                "messages": [
                    {"role": "user", "content": sentence(rng, 10, 40) + "?"},
                    {"role": "assistant", "content": sentence(rng, 30, 200) + "."},
                ],
                "ground_truth": str(i % 97),
            }
            f.write(json.dumps(row) + "\n")


EVALUATOR = """from reward_kit import reward_function, EvaluateResult, MetricResult

@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    n = len(messages[-1]["content"])
    s = min(n / 2000.0 + {bump}, 1.0)
    return EvaluateResult(score=s, reason="len %d" % n, metrics={{"len": MetricResult(score=s, reason="chars")}})
"""


TRIVIAL = """def evaluate(messages, ground_truth=None, **kwargs):
    return {{"score": {bump}, "reason": "ok", "metrics": {{}}}}
"""

# T: scores that reorder the rollouts of every group on each save (a constant shift
# or scale leaves GRPO's advantages as they were)
REORDERING = """def evaluate(messages, ground_truth=None, **kwargs):
    n = len(messages[-1]["content"])
    return {{"score": (n * {k} % 11) / 10.0, "reason": "ok", "metrics": {{}}}}
"""

TRAINING_TOML = """[training]
algorithm = "grpo"
group_size = 8
"""

PLAIN_LOOP = """import json, sys
sys.path.insert(0, sys.argv[1])
from main import evaluate
with open(sys.argv[2]) as f, open(sys.argv[3], "w") as out:
    for line in f:
        out.write(json.dumps(evaluate(**json.loads(line))) + "\\n")
"""


class Tmux:
    def __init__(self, name, cwd, command, env):
        self.socket = "rwb-bench-%d-%s" % (os.getpid(), name)
        env_words = " ".join("%s=%s" % (k, v) for k, v in env.items())
        subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", "160", "-y", "45",
             "-c", cwd, "env %s %s" % (env_words, command)],
            check=True,
        )

    def keys(self, *keys):
        subprocess.run(["tmux", "-L", self.socket, "send-keys", "-t", "b"] + list(keys), check=True)

    def pid(self):
        out = subprocess.run(["tmux", "-L", self.socket, "list-panes", "-t", "b", "-F", "#{pane_pid}"],
                             capture_output=True, text=True).stdout.strip()
        return int(out) if out else None

    def close(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def read_trace(path):
    frames = []
    try:
        with open(path) as f:
            for line in f:
                if not line.endswith("\n"):
                    break  # being written
                parts = line.split()
                frame = {"t": float(parts[0])}
                for p in parts[1:]:
                    k, _, v = p.partition("=")
                    frame[k] = v
                frames.append(frame)
    except FileNotFoundError:
        pass
    return frames


def wait_until(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.01)
    raise SystemExit("timed out waiting for %s" % what)


def bench_save(rwb, work, n, saves):
    ws = os.path.join(work, "ws_save")
    os.makedirs(os.path.join(ws, "metrics", "judge"))
    write_samples(os.path.join(ws, "samples.jsonl"), n)
    main = os.path.join(ws, "metrics", "judge", "main.py")
    with open(main, "w") as f:
        f.write(EVALUATOR.format(bump=0.0))
    trace = os.path.join(work, "trace_save.txt")
    tmux = Tmux("save", ws, rwb + " .", {"RWB_TRACE_FRAMES": trace, "TERM": "xterm-256color"})
    try:
        total = n  # one evaluator
        wait_until(lambda: any(int(f.get("fresh", 0)) == total for f in read_trace(trace)), 60, "the first run")
        time.sleep(0.5)
        latencies = []
        for i in range(saves):
            start_frames = len(read_trace(trace))
            t0 = time.time()
            with open(main, "w") as f:
                f.write(EVALUATOR.format(bump=0.001 * (i + 1)))

            def done():
                frames = read_trace(trace)[start_frames:]
                seen_stale = False
                for fr in frames:
                    fresh = int(fr.get("fresh", 0))
                    if fresh < total:
                        seen_stale = True
                    elif seen_stale and fr["t"] >= t0:
                        return fr["t"]
                return None

            t1 = wait_until(done, 30, "save %d to show" % i)
            latencies.append((t1 - t0) * 1000.0)
            time.sleep(0.3)
        # E. idle: nothing changes for 5 s
        pid = tmux.pid()
        rwb_pid = child_pid(pid) or pid
        before_frames = len(read_trace(trace))
        cpu0 = cpu_seconds(rwb_pid)
        time.sleep(5)
        cpu1 = cpu_seconds(rwb_pid)
        idle_frames = len(read_trace(trace)) - before_frames
    finally:
        tmux.close()
    # baseline: a print loop in a fresh interpreter over the same samples
    loop = os.path.join(work, "print_loop.py")
    with open(loop, "w") as f:
        f.write(
            "import json, sys\nsys.path[0:0] = [%r, %r]\nfrom main import evaluate\n"
            "for line in open(%r):\n    s = json.loads(line)\n    r = evaluate(messages=s['messages'], ground_truth=s.get('ground_truth'))\n"
            "    print(r.score, r.reason)\n"
            % (os.path.join(ROOT, "src", "engine", "python"), os.path.dirname(main), os.path.join(ws, "samples.jsonl"))
        )
    loop_times = []
    for _ in range(5):
        t0 = time.time()
        subprocess.run([sys.executable, loop], stdout=subprocess.DEVNULL, check=True)
        loop_times.append((time.time() - t0) * 1000.0)
    return latencies, statistics.median(loop_times), idle_frames, cpu1 - cpu0


def child_pid(pid):
    """rwb's pid under the pane's process `pid`: the pane itself when tmux ran rwb
    directly, else its child named rwb (never one of rwb's workers)."""
    def name(p):
        try:
            with open("/proc/%d/comm" % p) as f:
                return f.read().strip()
        except OSError:
            return ""
    if name(pid) == "rwb":
        return pid
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    except Exception:
        return None
    found = [int(p) for p in out if name(int(p)) == "rwb"]
    return found[0] if found else None


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def bench_large(rwb, work, n, pages):
    ws = os.path.join(work, "ws_large")
    os.makedirs(os.path.join(ws, "metrics", "judge"))
    path = os.path.join(ws, "samples.jsonl")
    write_samples(path, n)
    size_mb = os.path.getsize(path) / 1e6
    with open(os.path.join(ws, "metrics", "judge", "main.py"), "w") as f:
        f.write(EVALUATOR.format(bump=0.0))
    # baseline: Python reads the file line by line
    t0 = time.time()
    with open(path) as f:
        count = sum(1 for _ in f)
    read_s = time.time() - t0
    assert count == n
    trace = os.path.join(work, "trace_large.txt")
    t0 = time.time()
    tmux = Tmux("large", ws, rwb + " . --no-cache", {"RWB_TRACE_FRAMES": trace, "TERM": "xterm-256color"})
    try:
        first = wait_until(
            lambda: next((f for f in read_trace(trace) if int(f.get("samples", 0)) > 0), None), 60, "the first frame"
        )
        first_frame_s = first["t"] - t0
        full = wait_until(
            lambda: next((f for f in read_trace(trace) if int(f.get("samples", 0)) == n), None), 120, "the full index"
        )
        frames = read_trace(trace)
        rss_before_eval = max(int(f.get("rss_kb", 0)) for f in frames if int(f.get("fresh", 0)) == 0) / 1024.0
        start = len(read_trace(trace))
        for _ in range(pages):
            tmux.keys("PageDown")
            time.sleep(0.03)
        time.sleep(0.5)
        scroll = [float(f["draw_ms"]) for f in read_trace(trace)[start:]]
    finally:
        tmux.close()
    return size_mb, first_frame_s, read_s, full["t"] - t0, rss_before_eval, scroll


def trivial_workspace(work, name, samples, bump):
    """A new workspace with the trivial evaluator and a hard link to `samples` (named
    samples.jsonl, samples.parquet, ... after it)."""
    ws = os.path.join(work, name)
    shutil.rmtree(ws, ignore_errors=True)
    os.makedirs(os.path.join(ws, "metrics", "trivial"))
    os.link(samples, os.path.join(ws, "samples" + os.path.splitext(samples)[1]))
    main = os.path.join(ws, "metrics", "trivial", "main.py")
    with open(main, "w") as f:
        f.write(TRIVIAL.format(bump=bump))
    return ws, main


def peak_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def plain_loop_s(work, main, samples):
    """The plain Python loop over the samples, in a fresh interpreter (seconds)."""
    loop = os.path.join(work, "plain_loop.py")
    with open(loop, "w") as f:
        f.write(PLAIN_LOOP)
    t0 = time.time()
    out = os.path.join(work, "plain_loop.out")
    subprocess.run([sys.executable, loop, os.path.dirname(main), samples, out], check=True)
    took = time.time() - t0
    os.remove(out)
    return took


def bench_million(rwb, work, samples, n):
    """F: launch -> every row scored (cache on, cold), and the peak memory then."""
    ws, main = trivial_workspace(work, "ws_million", samples, 0.5)
    loop_s = plain_loop_s(work, main, samples)
    _, all_s, peak, rss = launch_to_scored(rwb, work, ws, n)
    return all_s, loop_s, peak, rss


def shown(frame):
    fresh, _, total = frame.get("shown", "0/0").partition("/")
    return int(fresh), int(total)


def save_latencies(trace, main, total, saves, first_bump):
    """Saves the evaluator `saves` times; each time, ms from the write to the first
    frame whose rows on screen all show the new score (after one showed them stale)."""
    latencies = []
    for i in range(saves):
        start = len(read_trace(trace))
        t0 = time.time()
        with open(main, "w") as f:
            f.write(TRIVIAL.format(bump=first_bump + 0.001 * (i + 1)))

        def visible_new():
            seen_stale = False
            for fr in read_trace(trace)[start:]:
                fresh, on_screen = shown(fr)
                if fresh < on_screen:
                    seen_stale = True
                elif seen_stale and on_screen and fr["t"] >= t0:
                    return fr["t"]
            return None

        t1 = wait_until(visible_new, 60, "save %d to show on screen" % i)
        latencies.append((t1 - t0) * 1000.0)
        # let the run finish before the next save
        wait_until(lambda: any(int(f.get("fresh", 0)) == total for f in read_trace(trace)[start:]),
                   600, "save %d to score every row" % i)
        time.sleep(0.3)
    return latencies


def bench_visible(rwb, work, samples, n, saves):
    """G: save -> rows on screen new, at the top and scrolled to the middle."""
    ws, main = trivial_workspace(work, "ws_visible", samples, 0.5)
    trace = os.path.join(work, "trace_visible.txt")
    tmux = Tmux("visible", ws, rwb + " .", {"RWB_TRACE_FRAMES": trace, "TERM": "xterm-256color"})
    try:
        wait_until(lambda: any(int(f.get("fresh", 0)) == n for f in read_trace(trace)), 600, "the first run")
        time.sleep(0.5)
        top = save_latencies(trace, main, n, saves, 0.0)
        # scroll to the middle a page at a time, as a user would
        while True:
            frames = read_trace(trace)
            row = int(frames[-1].get("top", 0))
            if row >= n // 2:
                break
            _, height = shown(frames[-1])
            pages = max(1, (n // 2 - row) // max(height, 1))
            tmux.keys("-N", str(min(pages, 200)), "PageDown")
            wait_until(lambda: len(read_trace(trace)) > len(frames) and
                       time.time() - read_trace(trace)[-1]["t"] > 0.3, 60, "scrolling")
        time.sleep(0.5)
        middle_row = int(read_trace(trace)[-1].get("top", 0))
        middle = save_latencies(trace, main, n, saves, 0.1)
    finally:
        tmux.close()
    return top, middle, middle_row


def trl_files(work, n, data_dir):
    """n TRL-shaped rows as Parquet and as JSONL, written as bench_engine.py's P writes
    them (kept in `data_dir` when given, and taken from there when already written)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_engine

    where = data_dir or work
    os.makedirs(where, exist_ok=True)
    parquet = os.path.join(where, "trl_%d.parquet" % n)
    jsonl = os.path.join(where, "trl_%d.jsonl" % n)
    if not (os.path.exists(parquet) and os.path.exists(jsonl)):
        script = os.path.join(work, "write_trl.py")
        with open(script, "w") as f:
            f.write(bench_engine.WRITE_TRL_SHAPED)
        t0 = time.time()
        done = subprocess.run([bench_engine.data_python(), script, str(n), parquet, jsonl, "chat"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit("writing the Parquet file failed (is pyarrow in %s? set RWB_DATA_PYTHON):\n%s"
                             % (bench_engine.data_python(), done.stderr[-2000:]))
        print("wrote %s and %s in %.0f s" % (parquet, jsonl, time.time() - t0), flush=True)
    return parquet, jsonl


def launch_to_scored(rwb, work, ws, n):
    """Launches rwb on the workspace `ws` of n samples (cache on, cold): seconds to the
    first frame showing samples and to the first in which every row is scored, rwb's
    peak resident memory then and its resident memory in that frame (MB)."""
    name = os.path.basename(ws)
    trace = os.path.join(work, "trace_%s.txt" % name)
    if os.path.exists(trace):
        os.remove(trace)
    t0 = time.time()
    tmux = Tmux(name, ws, rwb + " .", {"RWB_TRACE_FRAMES": trace, "TERM": "xterm-256color"})
    try:
        pid = tmux.pid()
        rwb_pid = child_pid(pid) or pid
        first = wait_until(
            lambda: next((f for f in read_trace(trace) if int(f.get("samples", 0)) > 0), None), 600, "the first frame"
        )
        done = wait_until(
            lambda: next((f for f in read_trace(trace) if int(f.get("fresh", 0)) == n), None),
            1800, "every row scored",
        )
        peak = peak_mb(rwb_pid)
    finally:
        tmux.close()
        # the next launch must not share the machine with this one's exit (its
        # workers ending, its cache written)
        wait_gone(rwb_pid, 30)
    return first["t"] - t0, done["t"] - t0, peak, int(done.get("rss_kb", 0)) / 1024.0


def wait_gone(pid, timeout_s):
    """Waits until process `pid` has exited (at most `timeout_s`)."""
    deadline = time.time() + timeout_s
    while os.path.exists("/proc/%d" % pid) and time.time() < deadline:
        time.sleep(0.02)


def bench_sources(rwb, work, n, repeat, data_dir):
    """H: launch -> first frame and -> all scored, JSONL and Parquet, against the plain
    loop over the JSONL file in each repetition."""
    parquet, jsonl = trl_files(work, n, data_dir)
    loop_dir = os.path.join(work, "loop_eval")
    os.makedirs(loop_dir, exist_ok=True)
    main = os.path.join(loop_dir, "main.py")
    with open(main, "w") as f:
        f.write(TRIVIAL.format(bump=0.5))
    reps = []
    for r in range(repeat):
        loop_s = plain_loop_s(work, main, jsonl)
        got = {"loop": loop_s}
        # each format first in every other repetition: neither always follows the other
        kinds = [("jsonl", jsonl), ("parquet", parquet)]
        for kind, samples in kinds if r % 2 == 0 else kinds[::-1]:
            ws, _ = trivial_workspace(work, "src_%s" % kind, samples, 0.5)
            got[kind] = launch_to_scored(rwb, work, ws, n)[:3]
            shutil.rmtree(ws, ignore_errors=True)
        print("  H %d: loop %.2f s; JSONL first %.1f ms, all %.2f s (%.2fx), %.0f MB; "
              "Parquet first %.1f ms, all %.2f s (%.2fx), %.0f MB"
              % (r + 1, loop_s, 1000 * got["jsonl"][0], got["jsonl"][1], got["jsonl"][1] / loop_s, got["jsonl"][2],
                 1000 * got["parquet"][0], got["parquet"][1], got["parquet"][1] / loop_s, got["parquet"][2]),
              flush=True)
        reps.append(got)
    return reps


def spread(values, fmt="%.2f"):
    """The median and the range of `values`, as text."""
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(values), min(values), max(values))


def spread_ms(seconds):
    """[`spread`] of durations given in seconds, in milliseconds."""
    return spread([1000.0 * s for s in seconds], "%.1f")


def rows_sources(n, reps):
    out = []
    loop = [r["loop"] for r in reps]
    for kind in ("jsonl", "parquet"):
        all_s = [r[kind][1] for r in reps]
        ratios = [r[kind][1] / r["loop"] for r in reps]
        out.append(("H %d %s: all scored (s)" % (n, kind), spread(all_s), "loop " + spread(loop),
                    spread(ratios), "<= 1.0x", statistics.median(ratios) <= 1.0))
        peaks = [r[kind][2] for r in reps]
        out.append(("  peak memory (MB)", spread(peaks, "%.0f"), "", "", "", True))
    firsts = {k: [r[k][0] for r in reps] for k in ("jsonl", "parquet")}
    first_ratio = [r["parquet"][0] / r["jsonl"][0] for r in reps]
    out.append(("H first frame, Parquet vs JSONL (ms)", spread_ms(firsts["parquet"]), "JSONL " + spread_ms(firsts["jsonl"]),
                spread(first_ratio), "<= 1.0x", statistics.median(first_ratio) <= 1.0))
    return out


def adv_frames(trace, start, t0, total):
    """After a save at t0: (ms to the first frame whose rows on screen all show new
    scores, ms to the first from which their advantages are the ones the finished run
    settles on)."""
    frames = [f for f in read_trace(trace)[start:]]
    final = frames[-1].get("adv")
    scores_at = adv_at = None
    seen_stale = False
    for fr in frames:
        fresh, on_screen = shown(fr)
        if fresh < on_screen:
            seen_stale = True
        elif seen_stale and on_screen and scores_at is None:
            scores_at = fr["t"]
    for fr in reversed(frames):
        if fr.get("adv") != final:
            break
        adv_at = fr["t"]
    return (scores_at - t0) * 1000.0, (adv_at - t0) * 1000.0


def bench_advantage(rwb, work, samples, n, saves):
    """T: save -> rows on screen show new scores, and new advantages."""
    ws = os.path.join(work, "ws_adv_%d" % n)
    os.makedirs(os.path.join(ws, "metrics", "reorder"))
    with open(samples) as f, open(os.path.join(ws, "samples.jsonl"), "w") as out:
        for i, line in zip(range(n), f):
            out.write(line)
    with open(os.path.join(ws, "rwb.toml"), "w") as f:
        f.write(TRAINING_TOML)
    main = os.path.join(ws, "metrics", "reorder", "main.py")
    primes = [3, 5, 7, 2, 4, 6, 8, 9]
    with open(main, "w") as f:
        f.write(REORDERING.format(k=1))
    trace = os.path.join(work, "trace_adv_%d.txt" % n)
    tmux = Tmux("adv%d" % n, ws, rwb + " .", {"RWB_TRACE_FRAMES": trace, "TERM": "xterm-256color"})
    out = []
    try:
        wait_until(lambda: any(int(f.get("fresh", 0)) == n and f.get("running") == "false"
                               for f in read_trace(trace)), 600, "the first run")
        time.sleep(1.0)
        for i in range(saves):
            start = len(read_trace(trace))
            t0 = time.time()
            with open(main, "w") as f:
                f.write(REORDERING.format(k=primes[i % len(primes)]))
            wait_until(lambda: any(int(f.get("fresh", 0)) == n and f.get("running") == "false"
                                   for f in read_trace(trace)[start + 1:]), 600, "save %d to finish" % i)
            time.sleep(1.0)  # frames after the run (a deferred refresh) are waited for
            out.append(adv_frames(trace, start, t0, n))
    finally:
        tmux.close()
    return out


def rows_advantage(n, got):
    scores = [g[0] for g in got]
    adv = [g[1] for g in got]
    lag = [a - s for s, a in got]
    return [
        ("T %d, [training]: save -> scores on screen (ms)" % n, spread(scores, "%.0f"), "", "", "", True),
        ("  save -> advantages on screen (ms)", spread(adv, "%.0f"), "scores " + spread(scores, "%.0f"),
         spread(lag, "%+.0f"), "same frame", statistics.median(lag) <= 0.0),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rwb", default=os.path.join(ROOT, "target", "release", "rwb"))
    ap.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    ap.add_argument("--only", default="A,B,F,G,H,T",
                    help="scenarios to run: A (with C, E), B (with C, D), F, G, H, T")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions of H and saves of T (default 3)")
    ap.add_argument("--data", help="H and T: keep the TRL-shaped files in this folder (written once)")
    args = ap.parse_args()
    only = set(args.only.upper().split(","))
    if not os.path.exists(args.rwb):
        subprocess.run(["cargo", "build", "--release"], cwd=ROOT, check=True)
    if not shutil.which("tmux"):
        raise SystemExit("tmux is needed (apt-get install tmux)")
    work = tempfile.mkdtemp(prefix="rwb-bench-ui-")
    rwb = shutil.copy(args.rwb, os.path.join(work, "rwb"))
    large_n = 100_000 if args.quick else 1_000_000
    visible_n = 10_000 if args.quick else 100_000
    rows = []
    try:
        if "A" in only:
            rows += rows_save(*bench_save(rwb, work, 1000, 5 if args.quick else 15))
        if "B" in only:
            rows += rows_large(large_n, *bench_large(rwb, work, large_n, 30))
        if "F" in only:
            samples = os.path.join(work, "million.jsonl")
            write_samples(samples, large_n)
            rows += rows_million(large_n, *bench_million(rwb, work, samples, large_n))
            os.remove(samples)
        if "G" in only:
            samples = os.path.join(work, "visible.jsonl")
            write_samples(samples, visible_n)
            rows += rows_visible(visible_n, *bench_visible(rwb, work, samples, visible_n, 3 if args.quick else 5))
        trl = None
        if "H" in only or "T" in only:
            try:
                trl = trl_files(work, large_n, args.data)
            except SystemExit as why:  # no pyarrow: the other scenarios still report
                print("H and T skipped: %s" % why, flush=True)
        if "H" in only and trl:
            rows += rows_sources(large_n, bench_sources(rwb, work, large_n, args.repeat, args.data))
        if "T" in only and trl:
            _, jsonl = trl
            for n in (1000, visible_n):
                rows += rows_advantage(n, bench_advantage(rwb, work, jsonl, n, args.repeat))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("%-44s %14s %18s %7s %11s %s" % ("scenario", "rwb", "baseline", "ratio", "target", "result"))
    for name, value, base, ratio, target, ok in rows:
        print("%-44s %14s %18s %7s %11s %s" % (name, value, base, ratio, target, ("PASS" if ok else "FAIL") if target else ""))


def rows_million(n, all_s, loop_s, peak, rss):
    return [
        ("F %d samples, trivial: all scored (s)" % n, "%.1f" % all_s, "plain loop %.1f s" % loop_s,
         "%.2f" % (all_s / loop_s), "<= 1.0x", all_s <= loop_s),
        ("  then (s)", "", "", "", "<= 0.6x", all_s <= 0.6 * loop_s),
        ("  peak memory once all are scored (MB)", "%.0f" % peak, "resident %.0f MB" % rss, "", "<= 300 MB", peak <= 300),
        ("  then (MB)", "", "", "", "<= 150 MB", peak <= 150),
    ]


def rows_visible(n, top, middle, middle_row):
    t, m = statistics.median(top), statistics.median(middle)
    return [
        ("G save -> rows on screen new, %d, top (ms)" % n, "%.0f" % t, "", "", "~100 ms", t <= 150),
        ("  scrolled to row %d (median ms)" % middle_row, "%.0f" % m, "top %.0f ms" % t, "%.2f" % (m / t),
         "~ the top", m <= max(150, 1.5 * t)),
        ("  (max ms, top / middle)", "%.0f / %.0f" % (max(top), max(middle)), "", "", "", True),
    ]


def rows_save(lat, loop_ms, idle_frames, idle_cpu):
    med = statistics.median(lat)
    return [
        ("A save -> all 1,000 rows new (median ms)", "%.0f" % med, "print loop %.0f ms" % loop_ms, "%.2f" % (med / loop_ms), "<= 200 ms", med <= 200),
        ("  (p90 ms)", "%.0f" % sorted(lat)[int(len(lat) * 0.9) - 1], "", "", "", True),
        ("E idle 5 s: frames drawn / CPU s", "%d / %.3f" % (idle_frames, idle_cpu), "", "", "0 / ~0", idle_frames == 0 and idle_cpu < 0.05),
    ]


def rows_large(large_n, size_mb, first_s, read_s, index_s, rss_mb, scroll):
    scroll_med = statistics.median(scroll) if scroll else float("nan")
    scroll_max = max(scroll) if scroll else float("nan")
    return [
        ("B first frame, %d samples / %.0f MB (s)" % (large_n, size_mb), "%.2f" % first_s, "py read %.2f s" % read_s, "%.2f" % (first_s / read_s), "<= 1 s", first_s <= 1.0),
        ("  full index (s)", "%.2f" % index_s, "", "", "", True),
        ("C scroll a page: draw ms (median / max)", "%.2f / %.2f" % (scroll_med, scroll_max), "budget 16 ms", "%.3f" % (scroll_max / 16.0), "<= 16 ms", scroll_max <= 16.0),
        ("D resident memory before evaluation (MB)", "%.0f" % rss_mb, "file %.0f MB" % size_mb, "%.2f" % (rss_mb / size_mb), "<= 300 MB", rss_mb <= 300),
    ]


if __name__ == "__main__":
    main()
