#!/usr/bin/env python3
"""Benchmark rwb's evaluation engine against a plain single-process Python loop.

Everything is measured in ONE invocation: the baseline is timed in the same run,
on the same machine, the same samples and the same evaluator code, so the ratios
printed at the end compare like with like.

What it does:

  1. Generates conversations in a temp dir (user 10-40 words, assistant 30-200 words,
     sometimes a system message, a ground_truth and an id) with a seeded RNG:
     one file of 10,000 samples and one of 100,000 (1,000 and 10,000 with --quick).
  2. Writes two reward-kit style evaluators as metric folders:
       slow     about 1 ms of pure-Python CPU work per call, calibrated here
       trivial  returns EvaluateResult(score=0.5, reason="ok") at once
  3. Baseline: the leanest loop a user would write, as a separate python process:
     json.loads each line -> fn(**sample) -> json.dumps the result -> write, nothing
     else timed or copied (a reward-kit result is model_dump()ed). reward_kit is
     imported, when the evaluator uses it, the way rwb's worker imports it: the real
     package if the interpreter has it, else rwb's bundled copy (src/engine/python).
  4. Scenarios:
       A  slow evaluator, N samples:        rwb run --no-cache vs loop   (target <= 0.55)
       B  trivial evaluator, 10*N samples:  rwb run --no-cache vs loop   (target <= 1.0)
          plus rwb's per-evaluation overhead in microseconds
       C  warm cache: slow, N samples, cache filled by one (cold) run, then warm runs
          timed: warm / cold                                           (target <= 0.05)
       D  two evaluators, cache filled, one comment line appended to trivial:
          how many evaluations ran per evaluator (expect trivial=N, slow=0)
       E-H an undecorated evaluator returning {"score", "reason", "metrics": {}} on 10*N
          samples, each against the plain loop (json.loads -> evaluate(**sample) ->
          json.dumps -> write) timed in the same repetition:
            E  rwb run --no-cache                        (target <= 0.70)
            F  rwb run, cache on and empty (cached cold) (target <= 0.80)
            G  rwb run again, nothing changed (warm)     (target <= 0.10)
            H  the warm run's peak RSS as GNU time reports it (the largest of rwb and
               the children it waited for), and its ratio to the loop's (target <= 64 MB)
       W  an evaluator that waits 100 ms (sleeps, as an LLM judge waits on the network),
          1,000 samples: rwb run --no-cache --concurrency 32 vs --concurrency 1 in the
          same invocation, rows identical                    (target <= 5 s, ~50 s at 1)
       R  repeat = 5 (SPEC §16): the 100 ms waiting evaluator, 1,000 samples, rwb run
          --no-cache --repeat 5 --concurrency 32 vs 5,000 single calls (the same samples
          five times) at --concurrency 32                          (target <= 1.2)
       I  the slow evaluator made ~1.5 ms per call, N samples: rwb run --no-cache vs loop
                                                         (target <= 0.55)
       M  rwb run on 100*N samples (1,000,000) of which 61.8% are cached: the cache is
          filled by a run over the first 618 of every 1,000 lines, then the whole file
          is run with the cache on; its peak RSS                  (target <= 64 MB)
       S  (only with --only S) 100*N samples (1,000,000) as a folder of 100 step files of
          10,000 rows (`1.jsonl` ... `100.jsonl`) against the same rows in one JSONL file,
          the plain evaluator, rwb run --no-cache: time to the first result row (target
          ~1.0x) and in all (target <= 1.0x the one file)
       K  (only with --only K) OpenAI graders (SPEC §17) on 10*N samples, each against the
          same check written as an undecorated Python reward run by rwb, and the plain
          loop (json.loads -> evaluate(**sample) -> json.dumps -> write) on that reward;
          rwb run --no-cache, alternating grader, reward, loop, at least 5 times:
            string_check  ilike of {{ item.ground_truth }} in {{ sample.output_text }}
            fuzzy_match   text_similarity, rapidfuzz's ratio of the same two
          (target: grader / reward <= 1.00, the median of the pairs' ratios). Needs
          rapidfuzz in the interpreter: --python when it has it, else
          RWB_GRADERS_PYTHON, else .ci/run's ${TMPDIR:-/tmp}/rwb-ci-graders.
       P  (only with --only P) a TRL-shaped log of 100*N rows in one Parquet file (one
          row group, as pandas writes TRL's) against the same rows as JSONL, the plain
          evaluator: rwb run --no-cache time (target <= 1.0x JSONL) and peak RSS
          (target <= JSONL + 32 MB), and a warm rerun (target ~1.0x JSONL's). Needs
          pyarrow and pandas: RWB_DATA_PYTHON, else ${TMPDIR:-/tmp}/rwb-ci-data.
     Every rwb run must exit 0 and produce exactly the expected rows without errors,
     so a broken run cannot look fast.
  5. Prints a table: scenario, rwb s, baseline s, ratio, target, PASS/FAIL.

Exit status: 0 when every scenario was measured (whether it passed or not; this is a
report), 1 when a scenario could not be measured (rwb failed, wrong row count, ...),
2 for usage/setup problems.

Usage:
  python3 scripts/bench_engine.py [--quick] [--rwb PATH] [--python PATH]
                                  [--jobs 2] [--repeat 3] [--keep]
"""

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUNDLED_REWARD_KIT = REPO / "src" / "engine" / "python"  # holds the `reward_kit` package
TARGET_CALL_SECONDS = 1e-3

# --------------------------------------------------------------------------------------
# Sample generation
# --------------------------------------------------------------------------------------

SUBJECTS = (
    "the engine the compiler a database an index the cache the scheduler this function "
    "the network a sensor the battery the garden a recipe the river the museum a bridge "
    "the committee the market a telescope the library the forest a spreadsheet the kernel "
    "the orchestra a protein the satellite the harbor a glacier the patient the budget "
    "the algorithm a volcano the court the festival a neuron the printer the vaccine"
).split()
VERBS = (
    "improves reduces explains measures stores predicts controls follows changes supports "
    "requires produces describes protects connects builds prevents increases limits shows "
    "handles returns compares balances records carries drives moves converts filters "
    "allocates tracks estimates replaces verifies splits merges heats cools feeds"
).split()
ADJECTIVES = (
    "quick careful large small early late simple complex local global stable modern "
    "ancient precise rough fresh quiet noisy bright dark narrow broad strong weak useful "
    "common rare formal public private shallow deep gradual sudden efficient expensive"
).split()
NOUNS = (
    "pressure speed memory energy water light data traffic temperature rainfall income "
    "accuracy latency growth structure history evidence language signal quality balance "
    "surface volume distance weight climate policy design budget method pattern error "
    "result process system model question answer reason example value limit"
).split()
FILLER = (
    "the a an of to in on for with by from at as and but or so because while when if "
    "that this these those it its their our your which also often usually rarely then "
    "however therefore about between over under after before during through"
).split()
QUESTION_STARTS = (
    "How does", "Why does", "What happens when", "Can you explain how", "Is it true that",
    "What is the best way to decide whether", "Could you tell me why", "When should",
    "Which factors determine how", "Do you know if",
)
ANSWER_STARTS = (
    "In short,", "Generally speaking,", "Yes,", "No,", "It depends, but", "The main point is that",
    "Good question:", "Broadly,", "To put it simply,", "There are two parts to this.",
)
SYSTEM_PROMPTS = (
    "You are a helpful assistant. Answer clearly and concisely.",
    "You are a patient tutor who explains things step by step.",
    "You are a careful expert. If you are not sure, say so.",
    "Answer in plain English for a general audience.",
)


def _phrase(rng, words):
    """A run of `words` English-ish words: subjects, verbs, adjectives, nouns, glue."""
    out = []
    while len(out) < words:
        pick = rng.random()
        if pick < 0.3:
            out.extend(rng.choice(SUBJECTS).split())
        elif pick < 0.45:
            out.append(rng.choice(VERBS))
        elif pick < 0.6:
            out.append(rng.choice(ADJECTIVES))
        elif pick < 0.8:
            out.append(rng.choice(NOUNS))
        else:
            out.append(rng.choice(FILLER))
    return out[:words]


def _sentences(rng, words, start=None):
    """`words` words cut into sentences of 6-20 words, capitalised and punctuated."""
    body = start.split() if start else []
    body.extend(_phrase(rng, max(1, words - len(body))))
    text, i = [], 0
    while i < len(body):
        n = rng.randint(6, 20)
        if len(body) - (i + n) < 4:  # no one-word sentence at the end
            n = len(body) - i
        sentence = " ".join(body[i:i + n]).rstrip(",:;.")
        i += n
        end = "!" if rng.random() < 0.05 else "."
        text.append(sentence[0].upper() + sentence[1:] + end)
    return " ".join(text)


def make_sample(rng, index):
    user_words = rng.randint(10, 40)
    # skewed towards shorter replies, as real ones are: mode ~70 words
    assistant_words = int(round(rng.triangular(30, 200, 70)))
    question = _sentences(rng, user_words - 1, rng.choice(QUESTION_STARTS)).rstrip(".!;") + "?"
    answer = _sentences(rng, assistant_words, rng.choice(ANSWER_STARTS))
    messages = []
    if rng.random() < 0.3:
        messages.append({"role": "system", "content": rng.choice(SYSTEM_PROMPTS)})
    messages.append({"role": "user", "content": question})
    messages.append({"role": "assistant", "content": answer})
    if rng.random() < 0.25:
        truth = str(rng.randint(1, 5000))
    else:
        truth = " ".join(_phrase(rng, rng.randint(3, 12)))
    return {"id": "s%06d" % index, "messages": messages, "ground_truth": truth}


def write_samples(path, n, seed):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps(make_sample(rng, i), ensure_ascii=False))
            f.write("\n")


# --------------------------------------------------------------------------------------
# Evaluators (metric folders) and the helper programs run with --python
# --------------------------------------------------------------------------------------

SLOW_EVALUATOR = '''\
"""Benchmark evaluator "slow": about 1 ms of pure-Python CPU work per call.

A rolling hash and a letter count over the last assistant message, ROUNDS steps per
call whatever the reply's length, so every call costs the same. ROUNDS is calibrated
by scripts/bench_engine.py on the machine it runs on.
"""

from reward_kit import EvaluateResult, MetricResult, reward_function

ROUNDS = __ROUNDS__


def _reply(messages):
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "assistant":
            return m.get("content") or ""
    return ""


@reward_function
def evaluate(messages, ground_truth=None, **kwargs) -> EvaluateResult:
    text = _reply(messages)
    data = text.encode("utf-8") or b" "
    n = len(data)
    acc = 7
    vowels = 0
    for i in range(ROUNDS):
        c = data[i % n]
        acc = (acc * 31 + c) % 1000003
        if c in (97, 101, 105, 111, 117):
            vowels += 1
    words = set(text.lower().split())
    truth = str(ground_truth or "").lower().split()
    overlap = sum(1 for w in truth if w in words) / len(truth) if truth else 0.0
    jitter = (acc % 1000) / 1000.0
    score = round(0.8 * overlap + 0.2 * jitter, 6)
    return EvaluateResult(
        score=score,
        reason="overlap %.3f, checksum %d" % (overlap, acc),
        metrics={
            "vowel_rate": MetricResult(
                score=vowels / ROUNDS, reason="%d vowels in %d steps" % (vowels, ROUNDS)
            )
        },
    )
'''

TRIVIAL_EVALUATOR = '''\
"""Benchmark evaluator "trivial": no work at all, to expose per-evaluation overhead."""

from reward_kit import EvaluateResult, MetricResult, reward_function  # noqa: F401


@reward_function
def evaluate(messages, ground_truth=None, **kwargs) -> EvaluateResult:
    return EvaluateResult(score=0.5, reason="ok")
'''

PLAIN_EVALUATOR = '''\
"""Benchmark evaluator "plain": undecorated, returns a plain dict (no reward_kit)."""


def evaluate(messages, ground_truth=None, **kwargs):
    reply = messages[-1].get("content") or ""
    return {"score": min(1.0, len(reply) / 1000.0), "reason": "length", "metrics": {}}
'''

# K: the graders' checks written as undecorated Python rewards (the bench samples end
# with the assistant's turn, so its content is sample.output_text, and always have a
# string ground_truth)
ILIKE_EVALUATOR = '''\
"""Benchmark evaluator "ilike": string_check ilike as an undecorated Python reward."""


def evaluate(messages, ground_truth=None, **kwargs):
    reply = messages[-1].get("content") or ""
    return {"score": 1.0 if ground_truth.lower() in reply.lower() else 0.0, "reason": None, "metrics": {}}
'''

FUZZY_EVALUATOR = '''\
"""Benchmark evaluator "fuzzy": text_similarity fuzzy_match as an undecorated Python reward."""

from rapidfuzz import fuzz


def evaluate(messages, ground_truth=None, **kwargs):
    reply = messages[-1].get("content") or ""
    return {"score": fuzz.ratio(reply, ground_truth) / 100.0, "reason": None, "metrics": {}}
'''

GRADERS = (
    ("ilike", "string_check ilike", {"type": "string_check", "name": "ilike", "operation": "ilike",
                                     "input": "{{ sample.output_text }}", "reference": "{{ item.ground_truth }}"}),
    ("fuzzy", "text_similarity fuzzy_match",
     {"type": "text_similarity", "name": "fuzzy", "evaluation_metric": "fuzzy_match",
      "input": "{{ sample.output_text }}", "reference": "{{ item.ground_truth }}"}),
)

WAITING_EVALUATOR = '''\
"""Benchmark evaluator "waiting": 100 ms of waiting per call, no CPU."""

import time


def evaluate(messages, ground_truth=None, **kwargs):
    time.sleep(0.1)
    reply = messages[-1].get("content") or ""
    return {"score": min(1.0, len(reply) / 1000.0), "reason": "%d chars" % len(reply)}
'''

# Shared by the baseline loop and the calibration: load reward_kit and one evaluator
# the way rwb's worker (src/engine/python/rwb_worker.py) does.
LOADER = '''\
import importlib.util
import os
import sys


def load_reward_kit(compat_dir):
    """The real reward_kit when it imports, else the bundled copy (as rwb's zygote)."""
    try:
        import reward_kit  # noqa: F401
        return "real"
    except ModuleNotFoundError as exc:
        if exc.name != "reward_kit":
            raise
    for name in [m for m in sys.modules if m == "reward_kit" or m.startswith("reward_kit.")]:
        del sys.modules[name]
    sys.path.append(compat_dir)
    import reward_kit  # noqa: F401,F811
    return "bundled"


def load_evaluator(path, root, function="evaluate"):
    """Import one evaluator file as rwb's worker does; return the function."""
    path = os.path.realpath(path)
    root = os.path.realpath(root)
    folder = os.path.dirname(path)
    os.chdir(root)
    for entry in (root, folder):
        while entry in sys.path:
            sys.path.remove(entry)
    sys.path[0:0] = [folder, root]
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module, function)
'''

LEAN_LOOP = LOADER + '''

def main():
    """The leanest loop a user would write: json.loads -> call -> json.dumps -> write,
    nothing else timed or copied (issue 36's baseline)."""
    compat_dir, evaluator, root, samples, out_path = sys.argv[1:6]
    part, parts = map(int, sys.argv[6].split("/")) if len(sys.argv) > 6 else (0, 1)
    import json

    with open(evaluator, encoding="utf-8") as f:
        uses = any(line.lstrip().startswith(("import reward_kit", "from reward_kit")) for line in f)
    kind = load_reward_kit(compat_dir) if uses else "not imported"
    fn = load_evaluator(evaluator, root)
    loads, dumps = json.loads, json.dumps
    n = 0
    with open(samples, "rb") as src, open(out_path, "w", encoding="utf-8") as out:
        write = out.write
        for index, line in enumerate(src):
            if parts > 1 and index % parts != part:
                continue
            result = fn(**loads(line))
            if type(result) is not dict:
                result = result.model_dump()  # reward-kit's EvaluateResult
            write(dumps(result))
            write("\\n")
            n += 1
    print(json.dumps({"n": n, "call_seconds": None, "reward_kit": kind}))


main()
'''

CALIBRATE = LOADER + '''

def main():
    compat_dir, evaluator, root, samples, count = sys.argv[1:6]
    import json
    import time

    load_reward_kit(compat_dir)
    fn = load_evaluator(evaluator, root)
    rows = []
    with open(samples, "rb") as src:
        for line in src:
            rows.append(json.loads(line))
            if len(rows) >= 200:
                break
    calls = []
    for s in rows:
        other = {k: v for k, v in s.items() if k not in ("messages", "ground_truth")}
        calls.append((s["messages"], s.get("ground_truth"), other))
    for m, g, o in calls[:20]:  # warm up
        fn(messages=m, ground_truth=g, **o)
    count = int(count)
    best = None
    for _ in range(3):  # best of 3 passes: the least disturbed by other processes
        t0 = time.perf_counter()
        for i in range(count):
            m, g, o = calls[i % len(calls)]
            fn(messages=m, ground_truth=g, **o)
        per_call = (time.perf_counter() - t0) / count
        best = per_call if best is None else min(best, per_call)
    print(json.dumps({"per_call": best}))


main()
'''


# --------------------------------------------------------------------------------------
# Running things
# --------------------------------------------------------------------------------------


def die(message):
    """A setup problem: nothing can be measured (exit status 2)."""
    print("bench_engine: " + message, file=sys.stderr)
    sys.exit(2)


class BenchError(Exception):
    """Something broke: the scenario cannot be measured."""


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_times():
    """{pid: (name, session id, CPU seconds so far)} of every process (Linux /proc)."""
    out = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                data = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        close = data.rfind(")")
        fields = data[close + 2:].split()
        try:
            cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            out[int(name)] = (data[data.find("(") + 1:close], int(fields[3]), cpu)
        except (IndexError, ValueError):
            continue
    return out


def foreign_cpu(before, after, ours):
    """CPU seconds that processes outside this benchmark used between two snapshots,
    and the busiest of them. `ours`: session ids that belong to us (this process is
    always left out).
    (Processes that started and ended between the snapshots are not seen.)"""
    total, by_name = 0.0, {}
    for pid, (name, session, cpu) in after.items():
        if session in ours or pid == os.getpid():
            continue
        old = before.get(pid)
        used = cpu - old[2] if old else cpu
        if used < 0:  # the pid was reused
            used = cpu
        if used > 0:
            total += used
            by_name[name] = by_name.get(name, 0.0) + used
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:3]
    return total, ", ".join("%s %.1f" % kv for kv in top)


def steal_seconds():
    """CPU time the hypervisor took from this VM so far (/proc/stat 'steal'), in seconds."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


class Monitor:
    """Watches /proc while a timed run goes on (a poll every half second, so that the
    short-lived compilers of a concurrent build are seen too) and tells how many CPUs
    processes outside the run used meanwhile, counting the hypervisor's steal."""

    def __init__(self, interval=0.5):
        self.interval = interval
        self.ours = set()  # session ids of the processes we started for the run
        self.last = {}
        self.done = threading.Event()

    def __enter__(self):
        self.start, self.stolen = process_times(), steal_seconds()
        self.t0 = time.perf_counter()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()
        return self

    def _poll(self):
        while not self.done.wait(self.interval):
            self.last.update(process_times())

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self.last.update(process_times())
        self.seconds = max(time.perf_counter() - self.t0, 1e-9)
        cpu, self.top = foreign_cpu(self.start, self.last, self.ours)
        self.load = (cpu + steal_seconds() - self.stolen) / self.seconds
        return False


def wait_until_quiet(limit, log):
    """Before a timed run: wait (up to `limit` s) until other processes use less than
    a quarter of a CPU, for three seconds in a row once they were seen busy, so that a
    concurrent build does not land in the figures. Returns the last load seen."""
    waited, said, streak = 0.0, False, 0
    while True:
        before = process_times()
        time.sleep(1.0)
        load, top = foreign_cpu(before, process_times(), set())
        if not before:  # no /proc: nothing to wait for
            return 0.0
        streak = streak + 1 if load < 0.25 else 0
        if streak >= (3 if said else 1):
            return load
        if waited >= limit:
            log("  ! machine still busy after %.0f s (%.2f CPUs: %s); measuring anyway" % (waited, load, top))
            return load
        if not said:
            log("  ... waiting for other processes to finish (%.2f CPUs busy: %s)" % (load, top))
            said = True
        waited += 1.0


# GNU time reports a command's peak RSS (wait4's ru_maxrss) from a small process of its
# own: the ru_maxrss this script would see includes its own size, which a forked child
# carries until it calls exec.
GNU_TIME = "/usr/bin/time"


def run_timed(cmd, stdout_path, timeout, cwd=None):
    """Run cmd with stdout to a file. Returns (seconds, stderr text, CPUs that other
    processes kept busy, or the hypervisor stole, meanwhile, peak RSS in MB: the largest
    of the process and the children it waited for, or None without GNU time). Raises
    BenchError on a non-zero exit or a timeout (the run's whole process group is killed
    then)."""
    rss_path = str(stdout_path) + ".rss"
    timed = os.access(GNU_TIME, os.X_OK)
    full = [GNU_TIME, "-f", "%M", "-o", rss_path, "--"] + list(cmd) if timed else cmd
    with open(stdout_path, "wb") as out, Monitor() as monitor:
        proc = subprocess.Popen(full, stdout=out, stderr=subprocess.PIPE, cwd=cwd,
                                start_new_session=True)
        monitor.ours.add(proc.pid)  # rwb's zygote and workers stay in this session
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.communicate()
            raise BenchError("%s: no exit after %.0f s (stalled?), killed" % (_short_cmd(cmd), timeout))
    err_text = err.decode("utf-8", "replace")
    if proc.returncode != 0:
        tail = "\n".join(err_text.strip().splitlines()[-15:])
        raise BenchError("%s exited %d:\n%s" % (_short_cmd(cmd), proc.returncode, tail))
    peak = None
    if timed:
        try:
            with open(rss_path) as f:
                peak = int(f.read().split()[-1]) / 1024.0
        except (OSError, ValueError, IndexError):
            pass
    return monitor.seconds, err_text, monitor.load, peak


def _short_cmd(cmd):
    return " ".join(os.path.basename(str(c)) if i == 0 else str(c) for i, c in enumerate(cmd))


def parse_summary(stderr_text):
    """rwb's per-evaluator summary table (count ... evaluated cached) -> {name: {col: int}}.
    None when the text holds no such table."""
    lines = stderr_text.splitlines()
    for i, line in enumerate(lines):
        cols = line.split()
        if cols[:1] == ["evaluator"] and "evaluated" in cols and "cached" in cols:
            # the "runs" cell may hold spaces ("local ×2"): read the counts from the right
            counts = cols[cols.index("runs") + 1:] if "runs" in cols else cols[1:]
            table = {}
            for row in lines[i + 1:]:
                cells = row.split()
                if len(cells) < len(cols) or cells[1:2] == ["samples"]:
                    break  # the totals line ("100000 samples × 1 evaluators: ...")
                entry = {}
                for key, cell in zip(counts, cells[len(cells) - len(counts):]):
                    try:
                        entry[key] = int(cell)
                    except ValueError:
                        entry[key] = cell
                table[cells[0]] = entry
            return table
    return None


def check_rows(rows, evaluators, n, what):
    """Every (sample, evaluator) exactly once, each with a score and no error."""
    if len(rows) != n * len(evaluators):
        raise BenchError("%s: %d result rows, expected %d (%d samples x %d evaluators)"
                         % (what, len(rows), n * len(evaluators), n, len(evaluators)))
    seen = set()
    for row in rows:
        if row.get("error") is not None:
            raise BenchError("%s: sample %s, %s failed: %s"
                             % (what, row.get("sample"), row.get("evaluator"), json.dumps(row["error"])[:300]))
        if row.get("score") is None:
            raise BenchError("%s: sample %s, %s has no score" % (what, row.get("sample"), row.get("evaluator")))
        seen.add((row.get("sample"), row.get("evaluator")))
    want = {(i, e) for i in range(n) for e in evaluators}
    if seen != want:
        raise BenchError("%s: rows do not cover every (sample, evaluator) exactly once" % what)


def read_jsonl(path):
    rows = []
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    return rows


class Bench:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.python = args.python
        self.jobs = args.jobs
        self.timeout = args.timeout
        self.rwb = None
        self.out = tmp / "out"
        self.out.mkdir()
        self.runs = 0
        self.disturbance = 0.0  # the most CPUs other processes used during a timed run
        self.call_seconds = 0.0  # sum of duration_ms of the last rwb run's rows, in s
        self.rwb_call_seconds = 0.0
        self.peak_mb = None  # peak RSS of the last timed run in MB (None: not measured)

    def log(self, text=""):
        print(text, flush=True)

    # -- setup --------------------------------------------------------------------------

    def find_rwb(self):
        given = Path(self.args.rwb) if self.args.rwb else REPO / "target" / "release" / "rwb"
        if not given.exists():
            if self.args.rwb:
                die("--rwb %s does not exist" % given)
            self.log("building rwb: cargo build --release (in %s)" % REPO)
            done = subprocess.run(["cargo", "build", "--release"], cwd=REPO)
            if done.returncode != 0 or not given.exists():
                die("cargo build --release failed")
        # A private copy: a rebuild of target/release/rwb during the benchmark must not
        # change the binary between scenarios.
        copy = self.tmp / "rwb"
        shutil.copy2(given, copy)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(given.stat().st_mtime))
        self.rwb = str(copy)
        self.log("rwb:     %s (built %s; benchmarking a copy)" % (given, stamp))

    def check_python(self):
        try:
            done = subprocess.run([self.python, "-c", "import sys; print(sys.version.split()[0])"],
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            die("cannot run --python %s: %s" % (self.python, exc))
        if done.returncode != 0:
            die("--python %s fails: %s" % (self.python, done.stderr.strip()))
        self.log("python:  %s (%s); bundled reward_kit from %s" % (self.python, done.stdout.strip(), BUNDLED_REWARD_KIT))
        if not (BUNDLED_REWARD_KIT / "reward_kit" / "__init__.py").is_file():
            die("no bundled reward_kit at %s" % BUNDLED_REWARD_KIT)

    def generate(self, small, large):
        data = self.tmp / "data"
        data.mkdir()
        self.samples = {}
        for n, seed in ((small, 1001), (large, 2002), (WAITING_SAMPLES, 3003)):
            if n in self.samples:
                continue  # W's 1,000 samples are --quick's small file
            path = data / ("samples_%d.jsonl" % n)
            t0 = time.perf_counter()
            write_samples(path, n, seed)
            size = path.stat().st_size
            self.samples[n] = path
            self.log("samples: %s: %d samples, %.1f MB, written in %.1f s"
                     % (path.name, n, size / 1e6, time.perf_counter() - t0))
        (self.tmp / "lean.py").write_text(LEAN_LOOP)
        (self.tmp / "calibrate.py").write_text(CALIBRATE)

    def calibrate(self):
        """Pick ROUNDS so that one decorated call of `slow` takes about 1 ms here."""
        folder = self.tmp / "calibration" / "metrics" / "slow"
        folder.mkdir(parents=True)
        rounds = 20000
        wait_until_quiet(self.args.settle, self.log)
        samples = self.samples[min(self.samples)]
        per_call = None
        for _ in range(4):
            (folder / "main.py").write_text(SLOW_EVALUATOR.replace("__ROUNDS__", str(rounds)))
            per_call = self._time_calls(folder / "main.py", samples, max(50, int(0.3 / TARGET_CALL_SECONDS)))
            if abs(per_call - TARGET_CALL_SECONDS) / TARGET_CALL_SECONDS < 0.03:
                break
            rounds = max(100, int(round(rounds * TARGET_CALL_SECONDS / per_call)))
        self.rounds = rounds
        self.slow_call = per_call
        self.log("calibrated slow evaluator: ROUNDS=%d -> one call takes %.3f ms (target %.3f ms)"
                 % (rounds, per_call * 1e3, TARGET_CALL_SECONDS * 1e3))

    def _time_calls(self, evaluator, samples, count):
        done = subprocess.run(
            [self.python, str(self.tmp / "calibrate.py"), str(BUNDLED_REWARD_KIT), str(evaluator),
             str(evaluator.parent.parent.parent), str(samples), str(count)],
            capture_output=True, text=True, timeout=self.timeout)
        if done.returncode != 0:
            die("calibration failed:\n%s" % done.stderr)
        return json.loads(done.stdout.strip().splitlines()[-1])["per_call"]

    def workspace(self, name, evaluators, n):
        """DIR/metrics/<evaluator>/main.py and DIR/samples.jsonl (a hard link when possible)."""
        root = self.tmp / name
        for evaluator in evaluators:
            folder = root / "metrics" / evaluator
            folder.mkdir(parents=True)
            code = {"slow": SLOW_EVALUATOR.replace("__ROUNDS__", str(self.rounds)),
                    "slow15": SLOW_EVALUATOR.replace("__ROUNDS__", str(int(round(self.rounds * 1.5)))),
                    "plain": PLAIN_EVALUATOR, "waiting": WAITING_EVALUATOR, "ilike": ILIKE_EVALUATOR,
                    "fuzzy": FUZZY_EVALUATOR}.get(evaluator, TRIVIAL_EVALUATOR)
            (folder / "main.py").write_text(code)
        target = root / "samples.jsonl"
        try:
            os.link(self.samples[n], target)
        except OSError:
            shutil.copyfile(self.samples[n], target)
        return root

    # -- the two things we time ---------------------------------------------------------

    def timed(self, cmd, out):
        """run_timed after waiting for a quiet machine; remembers how disturbed it was."""
        wait_until_quiet(self.args.settle, self.log)
        seconds, err, foreign, self.peak_mb = run_timed(cmd, out, self.timeout)
        self.disturbance = max(self.disturbance, foreign)
        return seconds, err, foreign

    def rwb_run(self, root, evaluators, n, fmt="jsonl", cache=False, label="", extra=()):
        """One `rwb run`, its rows verified. Returns (seconds, stderr summary table or
        None, result rows, the parsed document for --format json, stderr)."""
        self.runs += 1
        out = self.out / ("rwb_%02d_%s.%s" % (self.runs, root.name, fmt))
        cmd = [self.rwb, "run", str(root), "--format", fmt, "--jobs", str(self.jobs), "--python", self.python]
        if not cache:
            cmd.append("--no-cache")
        cmd.extend(extra)
        seconds, err, foreign = self.timed(cmd, out)
        what = "rwb run %s%s" % (root.name, (" (%s)" % label) if label else "")
        if fmt == "jsonl":
            rows = read_jsonl(out)
            doc = None
        else:
            with open(out, "rb") as f:
                doc = json.load(f)
            rows = doc.get("results", [])
        check_rows(rows, evaluators, n, what)
        summary = parse_summary(err)
        self.log("  %-62s %8.3f s  %s, peak RSS %s%s"
                 % (what, seconds, _evaluated_text(summary), _mb(self.peak_mb), _noise(foreign)))
        extra = [line for line in err.splitlines() if line.strip() and not _summary_line(line, summary)]
        for line in extra[:5]:
            self.log("    rwb stderr: %s" % line[:200])
        if len(extra) > 5:
            self.log("    rwb stderr: ... %d more lines" % (len(extra) - 5))
        self.call_seconds = sum(r.get("duration_ms") or 0.0 for r in rows) / 1000.0
        return seconds, summary, rows, doc, err

    def loop_command(self, root, evaluator, out, part=None):
        """The lean loop (json.loads -> call -> json.dumps -> write) over DIR/samples.jsonl."""
        cmd = [self.python, str(self.tmp / "lean.py"), str(BUNDLED_REWARD_KIT),
               str(root / "metrics" / evaluator / "main.py"), str(root), str(root / "samples.jsonl"), str(out)]
        return cmd + (["%d/%d" % part] if part else [])

    def loop_run(self, root, evaluator, n):
        """The lean baseline loop over DIR/samples.jsonl; returns (seconds, None): it times
        no call of its own (the lean loop's figure is the whole process)."""
        self.runs += 1
        out = self.out / ("loop_%02d_%s.jsonl" % (self.runs, root.name))
        stats = self.out / ("loop_%02d_%s.stats" % (self.runs, root.name))
        seconds, _, foreign = self.timed(self.loop_command(root, evaluator, out), stats)
        info = json.loads(stats.read_text().strip().splitlines()[-1])
        check_loop_rows(out, info, n, "baseline loop on %s" % root.name)
        self.log("  %-62s %8.3f s  (reward_kit: %s), peak RSS %s%s"
                 % ("lean python loop %s" % root.name, seconds, info["reward_kit"],
                    _mb(self.peak_mb), _noise(foreign)))
        return seconds, info["call_seconds"]

    def parallel_loops(self, root, evaluator, n):
        """Reference, not a target: `jobs` copies of the loop at once, each taking every
        jobs-th sample. What plain multiprocessing gets from this machine's CPUs."""
        self.runs += 1
        wait_until_quiet(self.args.settle, self.log)
        procs, outs = [], []
        with Monitor() as monitor:
            for k in range(self.jobs):
                out = self.out / ("par_%02d_%d_%s.jsonl" % (self.runs, k, root.name))
                stats = open(self.out / ("par_%02d_%d_%s.stats" % (self.runs, k, root.name)), "w+b")
                proc = subprocess.Popen(self.loop_command(root, evaluator, out, (k, self.jobs)),
                                        stdout=stats, stderr=subprocess.PIPE, start_new_session=True)
                monitor.ours.add(proc.pid)
                procs.append((proc, stats))
                outs.append(out)
            for k, (proc, stats) in enumerate(procs):
                try:
                    _, err = proc.communicate(timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    for other, _ in procs:
                        other.kill()
                    raise BenchError("parallel loops on %s: no exit after %.0f s" % (root.name, self.timeout))
                if proc.returncode != 0:
                    raise BenchError("parallel loop %d on %s exited %d: %s"
                                     % (k, root.name, proc.returncode, err.decode("utf-8", "replace")[-800:]))
        seconds, foreign = monitor.seconds, monitor.load
        self.disturbance = max(self.disturbance, foreign)
        for k, (proc, stats) in enumerate(procs):
            stats.seek(0)
            info = json.loads(stats.read().decode().strip().splitlines()[-1])
            stats.close()
            check_loop_rows(outs[k], info, len(range(k, n, self.jobs)), "parallel loop %d on %s" % (k, root.name))
        self.log("  %-62s %8.3f s%s" % ("%d python loops at once, 1/%d of %s each" % (self.jobs, self.jobs, root.name),
                                          seconds, _noise(foreign)))
        return seconds

    def compare(self, root, evaluator, n):
        """rwb --no-cache vs the loop (and the parallel reference), interleaved,
        `repeat` times each. Returns medians: rwb, loop, None (the lean loop times no
        call of its own), parallel."""
        rwb_times, loop_times, par_times, rwb_calls = [], [], [], []
        for _ in range(self.args.repeat):
            rwb_times.append(self.rwb_run(root, [evaluator], n)[0])
            rwb_calls.append(self.call_seconds)
            loop_times.append(self.loop_run(root, evaluator, n)[0])
            par_times.append(self.parallel_loops(root, evaluator, n))
        med = statistics.median
        self.rwb_call_seconds = med(rwb_calls)
        return med(rwb_times), med(loop_times), None, med(par_times)


def check_loop_rows(out, info, n, what):
    rows = read_jsonl(out)
    if info["n"] != n or len(rows) != n or any(r.get("score") is None for r in rows):
        raise BenchError("%s: %d rows (it reported %d), expected %d" % (what, len(rows), info["n"], n))


def _summary_line(line, summary):
    """Whether a stderr line belongs to rwb's summary table."""
    first = line.split()[0] if line.split() else ""
    return (first == "evaluator" and "evaluated" in line) or (summary is not None and first in summary) \
        or " evaluators: " in line


def _mb(peak):
    return "?" if peak is None else "%.0f MB" % peak


def _noise(foreign):
    return "  [other processes busy: %.2f CPUs]" % foreign if foreign >= 0.1 else ""


def _evaluated_text(summary):
    if summary is None:
        return "(no summary table on stderr)"
    return "  ".join("%s: evaluated %s, cached %s" % (name, s.get("evaluated"), s.get("cached"))
                     for name, s in summary.items())


def append_text(path, text):
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


# --------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------


def _versus_loop(bench, key, evaluator, n, target):
    """A and B: rwb --no-cache against the loop on one evaluator."""
    root = bench.workspace("ws_%s_%s_%d" % (key.lower(), evaluator, n), [evaluator], n)
    rwb_s, loop_s, _, par_s = bench.compare(root, evaluator, n)
    ratio = rwb_s / loop_s
    calls_s = bench.rwb_call_seconds
    overhead_us = (rwb_s * bench.jobs - calls_s) / n * 1e6
    bench.log("  medians of %d: rwb %.3f s, lean loop %.3f s -> rwb/loop = %.3f (target %s)"
              % (bench.args.repeat, rwb_s, loop_s, ratio, target))
    bench.log("  reference, not a target: %d lean loops at once took %.3f s (ratio %.3f); "
              "rwb's own calls split %d ways: %.3f s (ratio %.3f)"
              % (bench.jobs, par_s, par_s / loop_s, bench.jobs, calls_s / bench.jobs, calls_s / bench.jobs / loop_s))
    bench.log("  rwb overhead per evaluation = (rwb wall x jobs - its workers' call time) / n")
    bench.log("                              = (%.3f s x %d - %.3f s) / %d = %.1f us"
              % (rwb_s, bench.jobs, calls_s, n, overhead_us))
    bench.log("    (its workers' call time: the sum of its rows' duration_ms, median of runs)")
    return rwb_s, loop_s, ratio, overhead_us, par_s


def _disturbed(bench):
    if bench.disturbance >= 0.25:
        return "other processes (or the hypervisor) took up to %.2f CPUs during a timed run: figures are disturbed" % bench.disturbance
    return None


def scenario_a(bench, n):
    bench.log("\n[A] slow evaluator (%.2f ms/call), %d samples: rwb run --no-cache --jobs %d vs python loop"
              % (bench.slow_call * 1e3, n, bench.jobs))
    rwb_s, loop_s, ratio, overhead_us, par_s = _versus_loop(bench, "A", "slow", n, "<= 0.55")
    notes = ["%d plain loops in parallel: ratio %.3f; rwb overhead %.1f us/evaluation"
             % (bench.jobs, par_s / loop_s, overhead_us), _disturbed(bench)]
    return {"scenario": "A slow %dk --no-cache" % (n // 1000), "rwb": rwb_s, "base": loop_s,
            "ratio": "%.3f" % ratio, "target": "<= 0.55", "ok": ratio <= 0.55,
            "note": "; ".join(x for x in notes if x)}


def scenario_b(bench, n):
    bench.log("\n[B] trivial evaluator, %d samples: rwb run --no-cache --jobs %d vs python loop" % (n, bench.jobs))
    rwb_s, loop_s, ratio, overhead_us, par_s = _versus_loop(bench, "B", "trivial", n, "<= 1.0")
    notes = ["rwb overhead %.1f us/evaluation (wall x jobs - pure calls) / n" % overhead_us,
             "%d plain loops in parallel: ratio %.3f" % (bench.jobs, par_s / loop_s), _disturbed(bench)]
    return {"scenario": "B trivial %dk --no-cache" % (n // 1000), "rwb": rwb_s, "base": loop_s,
            "ratio": "%.3f" % ratio, "target": "<= 1.0", "ok": ratio <= 1.0,
            "note": "; ".join(x for x in notes if x)}


def scenario_c(bench, n):
    bench.log("\n[C] warm cache: slow evaluator, %d samples, rwb run (cache on): one cold run, then warm runs" % n)
    root = bench.workspace("ws_c_slow_%d" % n, ["slow"], n)
    shutil.rmtree(root / ".rwb", ignore_errors=True)
    cold, summary, _, _, _ = bench.rwb_run(root, ["slow"], n, cache=True, label="cold, fills the cache")
    problems = []
    got = (summary or {}).get("slow", {})
    if summary is not None and got.get("evaluated") != n:
        problems.append("cold run evaluated %s, expected %d" % (got.get("evaluated"), n))
    warm_times = []
    for _ in range(bench.args.repeat):
        warm, summary, _, _, _ = bench.rwb_run(root, ["slow"], n, cache=True, label="warm")
        warm_times.append(warm)
        got = (summary or {}).get("slow", {})
        if summary is not None and (got.get("cached") != n or got.get("evaluated") != 0):
            problems.append("a warm run evaluated %s and took %s from the cache (expected 0 and %d)"
                            % (got.get("evaluated"), got.get("cached"), n))
    warm = statistics.median(warm_times)
    ratio = warm / cold
    bench.log("  cold %.3f s, warm (median of %d) %.3f s -> warm/cold = %.4f (target <= 0.05)"
              % (cold, len(warm_times), warm, ratio))
    for p in problems:
        bench.log("  ! " + p)
    notes = ["baseline = the cold run that filled the cache"] + problems + [_disturbed(bench)]
    return {"scenario": "C warm cache %dk" % (n // 1000), "rwb": warm, "base": cold,
            "ratio": "%.4f" % ratio, "target": "<= 0.05", "ok": ratio <= 0.05 and not problems,
            "note": "; ".join(x for x in notes if x)}


def scenario_d(bench, n):
    bench.log("\n[D] edit one of two evaluators: slow + trivial, %d samples" % n)
    evaluators = ["slow", "trivial"]
    root = bench.workspace("ws_d_edit_%d" % n, evaluators, n)
    shutil.rmtree(root / ".rwb", ignore_errors=True)
    fill_s, _, fill_rows, _, _ = bench.rwb_run(root, evaluators, n, cache=True, label="fills the cache")
    trivial_py = root / "metrics" / "trivial" / "main.py"
    append_text(trivial_py, "# edited by bench_engine.py: a code change that does nothing\n")
    edit_s, summary, rows, doc, err = bench.rwb_run(root, evaluators, n, fmt="json", cache=True,
                                                    label="trivial edited, --format json")
    counts, source, notes = None, None, []
    if summary is not None:
        counts = {e: summary.get(e, {}).get("evaluated") for e in evaluators}
        source = "the stderr summary of the --format json run"
    else:
        notes.append("rwb run --format json printed no summary table to stderr (stderr: %s)"
                     % ("empty" if not err.strip() else repr(err.strip()[:200])))
        json_summary = (doc or {}).get("summary", {})
        if all(isinstance(json_summary.get(e), dict) and "evaluated" in json_summary[e] for e in evaluators):
            counts = {e: json_summary[e]["evaluated"] for e in evaluators}
            source = "the 'summary' object of the --format json output"
    # Evidence from the rows themselves: a cached outcome comes back with the
    # duration_ms recorded when it was evaluated, a fresh evaluation with a new one
    # (a trivial call's duration can repeat by chance, so this is a lower bound).
    before = {(r["sample"], r["evaluator"]): r.get("duration_ms") for r in fill_rows}
    changed = {e: 0 for e in evaluators}
    for r in rows:
        if r.get("duration_ms") != before.get((r["sample"], r["evaluator"])):
            changed[r["evaluator"]] += 1
    bench.log("  rows of the --format json run whose duration_ms differs from the filling run: %s"
              % ", ".join("%s %d" % (e, changed[e]) for e in evaluators))
    if counts is None:
        # Read the evaluated column where rwb does print it: the same kind of edit
        # again, run with --format jsonl, whose summary goes to stderr.
        append_text(trivial_py, "# edited again by bench_engine.py\n")
        _, again, _, _, _ = bench.rwb_run(root, evaluators, n, fmt="jsonl", cache=True,
                                          label="trivial edited again, --format jsonl")
        if again is not None:
            counts = {e: again.get(e, {}).get("evaluated") for e in evaluators}
            source = "the stderr summary of a second edit + run with --format jsonl"
        else:
            counts = changed
            source = "rows whose duration_ms changed (no summary table anywhere)"
    bench.log("  evaluations that ran after the edit (from %s): %s"
              % (source, ", ".join("%s %s" % (e, counts[e]) for e in evaluators)))
    for note in notes:
        bench.log("  ! " + note)
    ok = counts.get("trivial") == n and counts.get("slow") == 0
    if changed["slow"] != 0 or changed["trivial"] < 0.95 * n:
        notes.append("but by duration_ms, %d trivial and %d slow rows were evaluated afresh"
                     % (changed["trivial"], changed["slow"]))
        ok = False
    notes.append("baseline = the run that filled the cache; counts from %s" % source)
    return {"scenario": "D edit 1 of 2 evaluators %dk" % (n // 1000), "rwb": edit_s, "base": fill_s,
            "ratio": "triv=%s slow=%s" % (counts.get("trivial"), counts.get("slow")),
            "target": "triv=%d slow=0" % n, "ok": ok,
            "note": "; ".join(x for x in notes + [_disturbed(bench)] if x)}


def scenario_plain(bench, n):
    """E-H: the undecorated evaluator on n ~1 KB chat samples, every figure against the
    plain loop in this invocation: --no-cache, the default run on an empty cache
    (cached cold), the same run again (warm), and the warm run's peak memory."""
    bench.log("\n[E-H] undecorated evaluator returning a dict, %d samples: rwb run (--jobs %d) vs python loop"
              % (n, bench.jobs))
    root = bench.workspace("ws_plain_%d" % n, ["plain"], n)
    times = {"nocache": [], "cold": [], "warm": [], "loop": []}
    peaks = {"warm": [], "loop": []}
    problems = []
    for _ in range(bench.args.repeat):
        times["nocache"].append(bench.rwb_run(root, ["plain"], n, label="--no-cache")[0])
        times["loop"].append(bench.loop_run(root, "plain", n)[0])
        peaks["loop"].append(bench.peak_mb)
        shutil.rmtree(root / ".rwb", ignore_errors=True)
        seconds, summary, _, _, _ = bench.rwb_run(root, ["plain"], n, cache=True, label="cached cold")
        times["cold"].append(seconds)
        _expect_counts(summary, n, 0, "the cold run", problems)
        seconds, summary, _, _, _ = bench.rwb_run(root, ["plain"], n, cache=True, label="warm")
        times["warm"].append(seconds)
        peaks["warm"].append(bench.peak_mb)
        _expect_counts(summary, 0, n, "the warm run", problems)
    med = {k: statistics.median(v) for k, v in times.items()}
    loop = med["loop"]
    for p in problems:
        bench.log("  ! " + p)
    spread = ", ".join("%s %.3f-%.3f s" % (k, min(v), max(v)) for k, v in times.items())
    bench.log("  medians of %d: no-cache %.3f s, cold %.3f s, warm %.3f s, loop %.3f s (ranges: %s)"
              % (bench.args.repeat, med["nocache"], med["cold"], med["warm"], loop, spread))
    notes = [x for x in problems + [_disturbed(bench)] if x]
    k = n // 1000
    rows = []
    for key, name, target in (("nocache", "E plain %dk --no-cache" % k, 0.70),
                              ("cold", "F plain %dk cached cold" % k, 0.80),
                              ("warm", "G plain %dk warm" % k, 0.10)):
        ratio = med[key] / loop
        rows.append({"scenario": name, "rwb": med[key], "base": loop, "ratio": "%.3f" % ratio,
                     "target": "<= %.2f" % target, "ok": ratio <= target and not problems,
                     "note": "; ".join(notes)})
    if None in peaks["warm"] or None in peaks["loop"]:
        rows.append({"scenario": "H plain %dk warm peak RSS" % k, "error": "no %s to measure memory" % GNU_TIME})
        return rows
    warm_mb, loop_mb = statistics.median(peaks["warm"]), statistics.median(peaks["loop"])
    bench.log("  peak RSS (GNU time %%M): warm rwb %.1f MB, loop %.1f MB -> %.2f x the loop (target <= 64 MB)"
              % (warm_mb, loop_mb, warm_mb / loop_mb))
    rows.append({"scenario": "H plain %dk warm peak RSS MB" % k, "rwb": warm_mb, "base": loop_mb,
                 "ratio": "%.2f" % (warm_mb / loop_mb), "target": "<= 64 MB", "ok": warm_mb <= 64.0,
                 "note": "rwb and base columns are MB here, not seconds"})
    return rows


WAITING_SAMPLES = 1000
WAITING_CONCURRENCY = 32


def scenario_waiting(bench, n):
    """W: an evaluator that waits 100 ms per call, at concurrency 32 against concurrency
    1 (today's one evaluation per worker), timed in this invocation; the rows of both
    must be identical but for their timing."""
    bench.log("\n[W] waiting evaluator (100 ms/call), %d samples: rwb run --no-cache --jobs %d, "
              "--concurrency %d vs --concurrency 1" % (n, bench.jobs, WAITING_CONCURRENCY))
    root = bench.workspace("ws_w_waiting_%d" % n, ["waiting"], n)
    one_s, _, one_rows, _, _ = bench.rwb_run(root, ["waiting"], n, label="--concurrency 1",
                                             extra=("--concurrency", "1"))
    many_s, _, many_rows, _, _ = bench.rwb_run(root, ["waiting"], n, label="--concurrency %d" % WAITING_CONCURRENCY,
                                               extra=("--concurrency", str(WAITING_CONCURRENCY)))

    def timeless(rows):
        # a row's time is in `duration_ms` and (SPEC §16) again in `seconds`
        timing = ("duration_ms", "seconds")
        return sorted(json.dumps({k: v for k, v in r.items() if k not in timing}, sort_keys=True) for r in rows)

    problems = [] if timeless(one_rows) == timeless(many_rows) else ["the rows differ from concurrency 1's"]
    ratio = many_s / one_s
    bench.log("  concurrency %d %.3f s, concurrency 1 %.3f s -> %.3f (target <= 5 s)"
              % (WAITING_CONCURRENCY, many_s, one_s, ratio))
    for p in problems:
        bench.log("  ! " + p)
    notes = ["baseline = the same run at --concurrency 1"] + problems + [_disturbed(bench)]
    return {"scenario": "W waiting 100 ms x %d, concurrency %d" % (n, WAITING_CONCURRENCY), "rwb": many_s,
            "base": one_s, "ratio": "%.3f" % ratio, "target": "<= 5 s", "ok": many_s <= 5.0 and not problems,
            "note": "; ".join(x for x in notes if x)}


REPEAT_K = 5


def scenario_repeat(bench, n):
    """R: K separate calls per sample cost K calls and no more: --repeat K over n samples
    against n*K single calls, both at concurrency 32; every row has K scores."""
    bench.log("\n[R] waiting evaluator (100 ms/call), %d samples --repeat %d vs %d single calls, "
              "--concurrency %d --jobs %d" % (n, REPEAT_K, n * REPEAT_K, WAITING_CONCURRENCY, bench.jobs))
    root = bench.workspace("ws_r_repeat_%d" % n, ["waiting"], n)
    single = bench.tmp / ("ws_r_single_%d" % n)
    (single / "metrics" / "waiting").mkdir(parents=True)
    (single / "metrics" / "waiting" / "main.py").write_text(WAITING_EVALUATOR)
    write_copies(bench.samples[n], single / "samples.jsonl", n * REPEAT_K)
    concurrency = ("--concurrency", str(WAITING_CONCURRENCY))
    many_s, _, many_rows, _, _ = bench.rwb_run(single, ["waiting"], n * REPEAT_K,
                                               label="%d single calls" % (n * REPEAT_K), extra=concurrency)
    rep_s, _, rep_rows, _, _ = bench.rwb_run(root, ["waiting"], n, label="--repeat %d" % REPEAT_K,
                                             extra=concurrency + ("--repeat", str(REPEAT_K)))
    problems = []
    if any(len(r.get("scores") or []) != REPEAT_K or None in r["scores"] for r in rep_rows):
        problems.append("a row without %d scores" % REPEAT_K)
    ratio = rep_s / many_s
    bench.log("  --repeat %d %.3f s, %d single calls %.3f s -> %.3f (target <= 1.2)"
              % (REPEAT_K, rep_s, n * REPEAT_K, many_s, ratio))
    for p in problems:
        bench.log("  ! " + p)
    notes = ["baseline = %d single calls in one run" % (n * REPEAT_K)] + problems + [_disturbed(bench)]
    return {"scenario": "R repeat %d x %d, waiting 100 ms, concurrency %d" % (REPEAT_K, n, WAITING_CONCURRENCY),
            "rwb": rep_s, "base": many_s, "ratio": "%.3f" % ratio, "target": "<= 1.2",
            "ok": ratio <= 1.2 and not problems, "note": "; ".join(x for x in notes if x)}


def graders_python(bench):
    """An interpreter with rapidfuzz: --python when it has it, else RWB_GRADERS_PYTHON,
    else .ci/run's graders venv."""
    candidates = [bench.python, os.environ.get("RWB_GRADERS_PYTHON"),
                  str(Path(os.environ.get("TMPDIR", "/tmp")) / "rwb-ci-graders" / "bin" / "python")]
    for python in candidates:
        if python and subprocess.run([python, "-c", "import rapidfuzz"], capture_output=True).returncode == 0:
            return python
    raise BenchError("no interpreter with rapidfuzz (tried %s): set RWB_GRADERS_PYTHON or run .ci/run"
                     % ", ".join(c for c in candidates if c))


def _range(values):
    return "%.3f-%.3f" % (min(values), max(values))


def scenario_graders(bench, n):
    """K: each grader against the same check as an undecorated reward, both run by rwb
    --no-cache, and the plain loop on that reward, alternating; the scores must agree
    row for row."""
    python, bench.python = bench.python, graders_python(bench)
    try:
        return [_grader_versus_reward(bench, n, *g) for g in GRADERS]
    finally:
        bench.python = python


def _grader_versus_reward(bench, n, name, what, grader):
    bench.log("\n[K] %s grader, %d samples: rwb run --no-cache (--jobs %d) vs the same check as an "
              "undecorated reward, and the python loop (%s)" % (what, n, bench.jobs, bench.python))
    reward = bench.workspace("ws_k_%s_reward_%d" % (name, n), [name], n)
    root = bench.tmp / ("ws_k_%s_grader_%d" % (name, n))
    root.mkdir()
    (root / "grader.json").write_text(json.dumps(grader))
    (root / "rwb.toml").write_text('[evaluators.%s]\ngrader = "grader.json"\n' % name)
    os.link(reward / "samples.jsonl", root / "samples.jsonl")
    times = {"grader": [], "reward": [], "loop": []}
    for turn in range(max(5, bench.args.repeat)):
        seconds, _, rows, _, _ = bench.rwb_run(root, [name], n, label="grader")
        times["grader"].append(seconds)
        graded = {r["sample"]: r["score"] for r in rows}
        seconds, _, rows, _, _ = bench.rwb_run(reward, [name], n, label="reward")
        times["reward"].append(seconds)
        if turn == 0:
            differ = [r["sample"] for r in rows if graded[r["sample"]] != r["score"]]
            if differ:
                raise BenchError("%s: the grader and the reward score %d samples differently (first: %s)"
                                 % (what, len(differ), differ[:5]))
        times["loop"].append(bench.loop_run(reward, name, n)[0])
    med = {k: statistics.median(v) for k, v in times.items()}
    pairs = [g / r for g, r in zip(times["grader"], times["reward"])]
    ratio = statistics.median(pairs)
    bench.log("  medians of %d: grader %.3f s (%s), reward %.3f s (%s), loop %.3f s (%s)"
              % (len(pairs), med["grader"], _range(times["grader"]), med["reward"], _range(times["reward"]),
                 med["loop"], _range(times["loop"])))
    bench.log("  grader / reward: %.3f (median of the %d pairs' ratios, %s; ratio of the medians %.3f); "
              "grader / loop %.3f, reward / loop %.3f"
              % (ratio, len(pairs), _range(pairs), med["grader"] / med["reward"], med["grader"] / med["loop"],
                 med["reward"] / med["loop"]))
    notes = ["pairs %s; loop %.3f s, grader/loop %.3f" % (_range(pairs), med["loop"], med["grader"] / med["loop"])]
    disturbed = _disturbed(bench)
    if disturbed:
        notes.append(disturbed)
    return {"scenario": "K %s %dk --no-cache vs reward" % (what, n // 1000), "rwb": med["grader"],
            "base": med["reward"], "ratio": "%.3f" % ratio, "target": "<= 1.00", "ok": ratio <= 1.0,
            "note": "; ".join(notes)}


def scenario_i(bench, n):
    bench.log("\n[I] slow evaluator at ~%.2f ms/call, %d samples: rwb run --no-cache --jobs %d vs python loop"
              % (bench.slow_call * 1.5e3, n, bench.jobs))
    rwb_s, loop_s, ratio, overhead_us, par_s = _versus_loop(bench, "I", "slow15", n, "<= 0.55")
    notes = ["%d plain loops in parallel: ratio %.3f; rwb overhead %.1f us/evaluation"
             % (bench.jobs, par_s / loop_s, overhead_us), _disturbed(bench)]
    return {"scenario": "I slow 1.5 ms %dk --no-cache" % (n // 1000), "rwb": rwb_s, "base": loop_s,
            "ratio": "%.3f" % ratio, "target": "<= 0.55", "ok": ratio <= 0.55,
            "note": "; ".join(x for x in notes if x)}


def scenario_o(bench, n):
    """O: what containment (SPEC §18) costs: the same runs contained (the default) and
    open (--no-contain), alternating, in this invocation: the undecorated evaluator on
    n samples --no-cache and warm from the cache, and the ~1.5 ms evaluator on n // 10.
    The box is built once per fork server, so the ratio should be ~1.0 (noise aside)."""
    bench.log("\n[O] contained vs --no-contain, alternating, %d repeats" % bench.args.repeat)
    rows = []
    cases = (("plain --no-cache", "plain", n, False), ("plain warm", "plain", n, True),
             ("slow 1.5 ms --no-cache", "slow15", n // 10, False))
    for number, (label, evaluator, count, cache) in enumerate(cases):
        root = bench.workspace("ws_o%d_%s_%d" % (number, evaluator, count), [evaluator], count)
        if cache:
            bench.rwb_run(root, [evaluator], count, cache=True, label="filling the cache")
        times = {"contained": [], "open": []}
        for _ in range(bench.args.repeat):
            times["contained"].append(bench.rwb_run(root, [evaluator], count, cache=cache, label="contained")[0])
            times["open"].append(bench.rwb_run(root, [evaluator], count, cache=cache, label="open",
                                               extra=["--no-contain"])[0])
        contained, opened = statistics.median(times["contained"]), statistics.median(times["open"])
        ratio = contained / opened
        rows.append({"scenario": "O %s %dk contained/open" % (label, max(1, count // 1000)), "rwb": contained,
                     "base": opened, "ratio": "%.3f" % ratio, "target": "<= 1.10", "ok": ratio <= 1.10,
                     "note": "; ".join(x for x in ["base = the same run with --no-contain", _disturbed(bench)] if x)})
    return rows


def check_rows_streaming(path, evaluator, n, what):
    """check_rows for one evaluator without holding the rows (a million of them)."""
    seen = bytearray(n)
    count = 0
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            count += 1
            if row.get("error") is not None or row.get("score") is None or row.get("evaluator") != evaluator:
                raise BenchError("%s: sample %s has no score: %s" % (what, row.get("sample"), line[:300]))
            sample = row.get("sample")
            if not isinstance(sample, int) or not 0 <= sample < n or seen[sample]:
                raise BenchError("%s: sample %r is out of range or twice" % (what, sample))
            seen[sample] = 1
    if count != n:
        raise BenchError("%s: %d result rows, expected %d" % (what, count, n))


def write_copies(source, path, n):
    """n samples: those of `source` again and again, each with an id of its own (so
    every line is a sample of its own to the cache). Much faster than generating."""
    with open(source, "rb") as f:
        base = [json.loads(line) for line in f if line.strip()]
    with open(path, "w", encoding="utf-8") as out:
        for index in range(n):
            sample = dict(base[index % len(base)], id="m%07d" % index)
            out.write(json.dumps(sample, ensure_ascii=False))
            out.write("\n")


def scenario_m(bench, n):
    """M: the default run on n samples of which 61.8% are in the cache, peak RSS."""
    cached = n * 618 // 1000
    bench.log("\n[M] rwb run (cache on) over %d samples, %d of them cached: peak RSS" % (n, cached))
    path = bench.tmp / "data" / ("samples_%d.jsonl" % n)
    if not path.exists():
        t0 = time.perf_counter()
        write_copies(bench.samples[max(bench.samples)], path, n)
        bench.log("samples: %s: %d samples, %.1f MB, written in %.1f s"
                  % (path.name, n, path.stat().st_size / 1e6, time.perf_counter() - t0))
    root = bench.tmp / ("ws_m_plain_%d" % n)
    (root / "metrics" / "plain").mkdir(parents=True)
    (root / "metrics" / "plain" / "main.py").write_text(PLAIN_EVALUATOR)
    # the cache holds the first 618 of every 1,000 lines: cached and new samples alternate
    with open(path, "rb") as src, open(root / "samples.jsonl", "wb") as part:
        for index, line in enumerate(src):
            if index % 1000 < 618:
                part.write(line)
    cmd = [bench.rwb, "run", str(root), "--format", "jsonl", "--jobs", str(bench.jobs), "--python", bench.python]
    out = bench.out / "rwb_m_fill.jsonl"
    seconds, err, foreign = bench.timed(cmd, out)
    fill = parse_summary(err)
    out.unlink()
    bench.log("  %-62s %8.3f s  %s%s" % ("rwb run, fills the cache with %d" % cached, seconds,
                                         _evaluated_text(fill), _noise(foreign)))
    os.unlink(root / "samples.jsonl")
    os.link(path, root / "samples.jsonl")
    out = bench.out / "rwb_m_run.jsonl"
    seconds, err, foreign = bench.timed(cmd, out)
    peak = bench.peak_mb
    summary = parse_summary(err)
    check_rows_streaming(out, "plain", n, "rwb run on %d, %d cached" % (n, cached))
    out.unlink()
    bench.log("  %-62s %8.3f s  %s, peak RSS %s%s" % ("rwb run on all %d" % n, seconds, _evaluated_text(summary),
                                                     _mb(peak), _noise(foreign)))
    problems = []
    _expect_counts(summary, n - cached, cached, "the run", problems)
    for p in problems:
        bench.log("  ! " + p)
    if peak is None:
        return {"scenario": "M %dk, %dk cached, peak RSS" % (n // 1000, cached // 1000),
                "error": "no %s to measure memory" % GNU_TIME}
    notes = ["rwb column: peak RSS in MB; baseline column: the run's seconds"] + problems + [_disturbed(bench)]
    return {"scenario": "M %dk, %dk cached, peak RSS MB" % (n // 1000, cached // 1000), "rwb": peak,
            "base": seconds, "ratio": "-", "target": "<= 64 MB", "ok": peak <= 64.0 and not problems,
            "note": "; ".join(x for x in notes if x)}


def _expect_counts(summary, evaluated, cached, what, problems):
    got = (summary or {}).get("plain", {})
    if summary is not None and (got.get("evaluated"), got.get("cached")) != (evaluated, cached):
        problems.append("%s evaluated %s and took %s from the cache (expected %d and %d)"
                        % (what, got.get("evaluated"), got.get("cached"), evaluated, cached))


# --------------------------------------------------------------------------------------
# P: a trainer's log in Parquet against the same rows as JSONL (SPEC §13)
# --------------------------------------------------------------------------------------

WRITE_TRL_SHAPED = r"""
import json, random, sys
import pandas as pd
n, parquet_path, jsonl_path, text_form = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "text"
rng = random.Random(7)
words = "the of and a to in is it that for on with as was by at be this from or an".split() + [
    "reward", "policy", "gradient", "answer", "number", "prime", "sum", "proof", "value", "model"]
def text(k):
    return " ".join(rng.choice(words) for _ in range(k))
prompts = [text(rng.randint(20, 40)) for _ in range(n // 8 + 1)]
rows = {"step": [], "prompt": [], "completion": [], "accuracy_reward": [], "golden_answer": [], "advantage": []}
for i in range(n):
    group = i // 8  # 8 generations a prompt, as GRPO's num_generations
    rows["step"].append(1 + group // 64)
    rows["prompt"].append(prompts[group])
    rows["completion"].append(text(rng.randint(30, 120)))
    r = float(rng.random() < 0.5)
    rows["accuracy_reward"].append(r)
    rows["golden_answer"].append(str(group % 97))
    rows["advantage"].append(r - 0.5)
if not text_form:
    # before prompt/completion samples are evaluated: the same texts as chat turns
    rows["messages"] = [[{"role": "user", "content": p}, {"role": "assistant", "content": c}]
                        for p, c in zip(rows.pop("prompt"), rows.pop("completion"))]
    rows = {k: rows[k] for k in ["messages", "golden_answer", "step", "accuracy_reward", "advantage"]}
df = pd.DataFrame(rows)
df.to_parquet(parquet_path)  # as TRL writes its log: pyarrow's default row group, a million rows
with open(jsonl_path, "w", encoding="utf-8") as out:
    for record in df.to_dict(orient="records"):
        out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
"""


def data_python():
    """An interpreter with pyarrow and pandas: RWB_DATA_PYTHON, else .ci/run's venv."""
    given = os.environ.get("RWB_DATA_PYTHON")
    if given:
        return given
    return str(Path(os.environ.get("TMPDIR", "/tmp")) / "rwb-ci-data" / "bin" / "python")


def scenario_p(bench, n):
    """P: n TRL-shaped rows (8 generations a prompt) in one Parquet file (one row group)
    against the same rows as JSONL, the plain evaluator: rwb run --no-cache time and
    peak RSS, and a warm rerun's time (the row file and its line memo against the JSONL
    file and its memo)."""
    text_form = bench.args.text_form
    bench.log("\n[P] %d TRL-shaped rows (%s): Parquet vs the same rows as JSONL, rwb run (--jobs %d)"
              % (n, "prompt/completion" if text_form else "as chat messages", bench.jobs))
    data = bench.tmp / "data"
    data.mkdir(exist_ok=True)
    parquet, jsonl = data / ("trl_%d.parquet" % n), data / ("trl_%d.jsonl" % n)
    if not parquet.exists():
        t0 = time.perf_counter()
        script = bench.tmp / "write_trl.py"
        script.write_text(WRITE_TRL_SHAPED)
        done = subprocess.run([data_python(), str(script), str(n), str(parquet), str(jsonl),
                               "text" if text_form else "chat"], capture_output=True, text=True)
        if done.returncode != 0:
            raise BenchError("writing the Parquet file failed (is pyarrow in %s? set RWB_DATA_PYTHON):\n%s"
                             % (data_python(), done.stderr[-2000:]))
        bench.log("samples: %s %.1f MB, %s %.1f MB, written in %.1f s"
                  % (parquet.name, parquet.stat().st_size / 1e6, jsonl.name, jsonl.stat().st_size / 1e6,
                     time.perf_counter() - t0))
    roots = {}
    for kind, source in (("jsonl", jsonl), ("parquet", parquet)):
        root = bench.tmp / ("ws_p_%s_%d" % (kind, n))
        (root / "metrics" / "plain").mkdir(parents=True, exist_ok=True)
        (root / "metrics" / "plain" / "main.py").write_text(PLAIN_EVALUATOR)
        roots[kind] = (root, source)

    def run(kind, cache, label):
        root, source = roots[kind]
        cmd = [bench.rwb, "run", str(root), "-s", str(source), "--format", "jsonl", "--jobs", str(bench.jobs),
               "--python", bench.python] + ([] if cache else ["--no-cache"])
        out = bench.out / ("rwb_p_%s.jsonl" % kind)
        seconds, err, foreign = bench.timed(cmd, out)
        peak = bench.peak_mb
        check_rows_streaming(out, "plain", n, "%s %s" % (kind, label))
        out.unlink()
        summary = parse_summary(err)
        bench.log("  %-62s %8.3f s  %s, peak RSS %s%s" % ("%s %s" % (kind, label), seconds,
                                                         _evaluated_text(summary), _mb(peak), _noise(foreign)))
        return seconds, peak, summary

    times = {"jsonl": [], "parquet": []}
    peaks = {"jsonl": [], "parquet": []}
    for _ in range(bench.args.repeat):
        for kind in ("jsonl", "parquet"):
            seconds, peak, _ = run(kind, False, "--no-cache")
            times[kind].append(seconds)
            peaks[kind].append(peak)
    # warm: a cold run fills the cache (and writes the Parquet file's row file), a
    # second run, past the line memos' 2 s settling time, writes the memos, then the
    # timed runs take everything from there
    warm = {"jsonl": [], "parquet": []}
    problems = []
    for kind in ("jsonl", "parquet"):
        shutil.rmtree(roots[kind][0] / ".rwb", ignore_errors=True)
        run(kind, True, "cold, fills the cache")
        time.sleep(2.5)
        run(kind, True, "warm, writes the line memo")
    for _ in range(bench.args.repeat):
        for kind in ("jsonl", "parquet"):
            seconds, _, summary = run(kind, True, "warm")
            warm[kind].append(seconds)
            _expect_counts(summary, 0, n, "the warm %s run" % kind, problems)
    med = {k: statistics.median(v) for k, v in times.items()}
    wmed = {k: statistics.median(v) for k, v in warm.items()}
    notes = [x for x in problems + [_disturbed(bench)] if x]
    k = n // 1000
    rows = [{"scenario": "P parquet %dk --no-cache" % k, "rwb": med["parquet"], "base": med["jsonl"],
             "ratio": "%.3f" % (med["parquet"] / med["jsonl"]), "target": "<= 1.00 (vs JSONL)",
             "ok": med["parquet"] <= med["jsonl"] and not problems, "note": "; ".join(notes)},
            {"scenario": "P parquet %dk warm" % k, "rwb": wmed["parquet"], "base": wmed["jsonl"],
             "ratio": "%.3f" % (wmed["parquet"] / wmed["jsonl"]), "target": "~1.00 (vs JSONL)",
             "ok": wmed["parquet"] <= 1.05 * wmed["jsonl"] and not problems, "note": ""}]
    if None in peaks["parquet"] or None in peaks["jsonl"]:
        rows.append({"scenario": "P parquet %dk peak RSS" % k, "error": "no %s to measure memory" % GNU_TIME})
        return rows
    pmb, jmb = statistics.median(peaks["parquet"]), statistics.median(peaks["jsonl"])
    rows.append({"scenario": "P parquet %dk --no-cache peak RSS MB" % k, "rwb": pmb, "base": jmb,
                 "ratio": "%+.1f MB" % (pmb - jmb), "target": "<= JSONL + 32 MB", "ok": pmb <= jmb + 32.0,
                 "note": "rwb and base columns are MB here (Parquet and JSONL), not seconds"})
    return rows


def scenario_s(bench, n):
    """S: n samples as a trainer's folder of 100 step files (`{step}.jsonl`, veRL's
    unpadded names: natural order matters) against the same rows in one JSONL file, the
    plain evaluator, rwb run --no-cache: the time to the first result row and the total."""
    files = 100
    per = n // files
    bench.log("\n[S] %d samples: a folder of %d step files of %d rows vs one JSONL file (--jobs %d)"
              % (n, files, per, bench.jobs))
    data = bench.tmp / "data"
    whole = data / ("samples_%d.jsonl" % n)
    if not whole.exists():
        write_copies(bench.samples[max(bench.samples)], whole, n)
    folder = data / ("steps_%d" % n)
    if not folder.exists():
        folder.mkdir()
        with open(whole, "rb") as src:
            for step in range(1, files + 1):
                with open(folder / ("%d.jsonl" % step), "wb") as out:
                    for _ in range(per):
                        out.write(src.readline())
    root = bench.tmp / ("ws_s_%d" % n)
    (root / "metrics" / "plain").mkdir(parents=True, exist_ok=True)
    (root / "metrics" / "plain" / "main.py").write_text(PLAIN_EVALUATOR)

    def run(source, label):
        cmd = [bench.rwb, "run", str(root), "-s", str(source), "--format", "jsonl", "--jobs", str(bench.jobs),
               "--python", bench.python, "--no-cache"]
        wait_until_quiet(bench.args.settle, bench.log)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first = proc.stdout.readline()
        t_first = time.perf_counter() - t0
        rows = 1 if first else 0
        for _ in proc.stdout:
            rows += 1
        err = proc.stderr.read().decode("utf-8", "replace")
        code = proc.wait()
        total = time.perf_counter() - t0
        if code != 0 or rows != n:
            raise BenchError("%s: exit %d, %d rows of %d:\n%s" % (label, code, rows, n, err[-2000:]))
        bench.log("  %-40s first row %7.3f s, all %8.3f s" % (label, t_first, total))
        return t_first, total

    firsts = {"jsonl": [], "folder": []}
    totals = {"jsonl": [], "folder": []}
    for i in range(bench.args.repeat):
        # A B B A: which runs first in a pair alternates, so that neither gains from
        # going first (or second) after the quiet wait
        pair = [("jsonl", whole), ("folder", folder)]
        for kind, source in (pair if i % 2 == 0 else pair[::-1]):
            f, t = run(source, "%s %s" % (kind, source.name))
            firsts[kind].append(f)
            totals[kind].append(t)
    fmed = {k: statistics.median(v) for k, v in firsts.items()}
    tmed = {k: statistics.median(v) for k, v in totals.items()}
    pairs = sorted(f / j for f, j in zip(totals["folder"], totals["jsonl"]))
    bench.log("  folder/jsonl per pair: %s (median %.3f)"
              % (", ".join("%.3f" % r for r in pairs), statistics.median(pairs)))
    k = n // 1000
    note = _disturbed(bench) or ""
    return [{"scenario": "S folder %dx%d first row" % (files, per), "rwb": fmed["folder"], "base": fmed["jsonl"],
             "ratio": "%.3f" % (fmed["folder"] / fmed["jsonl"]), "target": "~1.00 (vs one JSONL)",
             "ok": fmed["folder"] <= 1.25 * fmed["jsonl"] + 0.05, "note": note},
            {"scenario": "S folder %dk --no-cache total" % k, "rwb": tmed["folder"], "base": tmed["jsonl"],
             "ratio": "%.3f" % (tmed["folder"] / tmed["jsonl"]), "target": "<= 1.00 (vs one JSONL)",
             "ok": tmed["folder"] <= tmed["jsonl"], "note": ""}]


# --------------------------------------------------------------------------------------


def print_table(results, rwb_label):
    print()
    print("=" * 100)
    print("rwb vs baseline, measured in this invocation (%s)" % rwb_label)
    header = ("scenario", "rwb s", "baseline s", "ratio", "target", "result")
    rows = []
    for r in results:
        if "error" in r:
            rows.append((r["scenario"], "-", "-", "-", r.get("target", "-"), "ERROR"))
        else:
            rows.append((r["scenario"], "%.3f" % r["rwb"], "%.3f" % r["base"], r["ratio"], r["target"],
                         "PASS" if r["ok"] else "FAIL"))
    widths = [max(len(str(x[i])) for x in rows + [header]) for i in range(len(header))]
    fmt = "  ".join("%%-%ds" % w if i == 0 else "%%%ds" % w for i, w in enumerate(widths))
    print(fmt % header)
    print(fmt % tuple("-" * w for w in widths))
    for row in rows:
        print(fmt % row)
    for r in results:
        if r.get("note"):
            print("  %s: %s" % (r["scenario"], r["note"]))
        if r.get("error"):
            print("  %s: ERROR: %s" % (r["scenario"], r["error"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer samples (1,000 and 10,000)")
    parser.add_argument("--rwb", help="the rwb binary (default: target/release/rwb, built if missing)")
    parser.add_argument("--python", default="python3", help="interpreter for rwb's workers and the baseline loop")
    parser.add_argument("--jobs", type=int, default=2, help="rwb --jobs (default 2)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed repetitions of A, B and C's warm run; medians are reported (default 3)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before one run counts as stalled")
    parser.add_argument("--settle", type=float, default=300,
                        help="before each timed run, wait up to this many seconds for other processes "
                             "to go quiet (default 300)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (its path is printed)")
    parser.add_argument("--text-form", action="store_true",
                        help="P: TRL's own prompt/completion text columns (needs prompt/completion samples "
                             "evaluated); without it the same texts as chat messages")
    parser.add_argument("--only", default="ABCDEIMWR",
                        help="scenarios to run, e.g. AC (default ABCDEIMWR; E runs E-H, the undecorated evaluator; "
                             "M generates 1,000,000 samples, about 1 GB; K, not in the default, the graders "
                             "against the same checks as rewards (needs rapidfuzz); P, not in the default, a 1,000,000-row "
                             "Parquet file and the same rows as JSONL; S, not in the default, a folder of 100 step "
                             "files against one JSONL)")
    args = parser.parse_args()
    if args.repeat < 1 or args.jobs < 1:
        parser.error("--repeat and --jobs must be at least 1")

    small, large = (1000, 10000) if args.quick else (10000, 100000)
    tmp = Path(tempfile.mkdtemp(prefix="rwb-bench-"))
    bench = Bench(args, tmp)
    results = []
    try:
        print("bench_engine: temp dir %s; %d CPUs; jobs %d; repeat %d%s"
              % (tmp, os.cpu_count() or 0, args.jobs, args.repeat, "; QUICK" if args.quick else ""))
        bench.find_rwb()
        bench.check_python()
        bench.generate(small, large)
        bench.calibrate()
        scenarios = {"A": (scenario_a, small), "B": (scenario_b, large),
                     "C": (scenario_c, small), "D": (scenario_d, small), "E": (scenario_plain, large),
                     "W": (scenario_waiting, WAITING_SAMPLES),
                     "R": (scenario_repeat, WAITING_SAMPLES),
                     "I": (scenario_i, small), "M": (scenario_m, 10 * large),
                     "P": (scenario_p, 10 * large), "S": (scenario_s, 10 * large),
                     "K": (scenario_graders, large), "O": (scenario_o, large)}
        for key in args.only.upper():
            if key not in scenarios:
                parser.error("--only: unknown scenario %r" % key)
            fn, n = scenarios[key]
            bench.disturbance = 0.0
            try:
                got = fn(bench, n)
                results.extend(got if isinstance(got, list) else [got])
            except BenchError as exc:
                bench.log("  ERROR: %s" % exc)
                results.append({"scenario": "%s (%d samples)" % (key, n), "error": str(exc)})
        print_table(results, "slow call calibrated to %.3f ms; %d/%d samples" % (bench.slow_call * 1e3, small, large))
    finally:
        if args.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
