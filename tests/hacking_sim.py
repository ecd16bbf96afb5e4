"""Seeded simulated training runs for tests/hacking.rs (SPEC §19), written in the
trainers' own dump formats, and the expected `hacking` figures computed here,
independently of rwb, from what the simulation planted.

    python hacking_sim.py FORMAT SCENARIO OUT_DIR EXPECTED_JSON [--seed S] [--steps T]

FORMAT: verl (`{step}.jsonl` rollout dumps, as `RayPPOTrainer._dump_generations`
writes them), trl (`completions_{step:05d}.parquet`, as `GRPOTrainer` logs them;
needs pyarrow) or prime-rl (`rollouts/step_{N}/train/{all,effective}/traces.jsonl`,
verifiers 1.x episode records as prime-rl's `FileMonitor` appends them, with late
groups in a later step's folder, failed episodes with no trace, tool calls and
abandoned branches; `--eval-every K` adds an eval epoch every K steps).

`--label-every K` (verl): a person labels one line in K of each step file with a
`verdict` key (true: right and honest); the expected held-out side is those labels,
and `--relabel STEP:LINE:0|1` (repeatable) those given in the workbench over them
(LINE counts from 0 in the step's file).

SCENARIO:
  hack       the policy learns to write "[hack]" answers the proxy passes and the
             strict check fails, from a planted step on; the held-out accuracy
             rises, then falls
  control    no hack: both sides rise together
  collapse   every reward the same from the planted step on (variance collapse)
  groups     each group's rewards all equal from the planted step on
  length     completions four times longer from the planted step on
  dominance  (trl) the format reward carries the proxy from the planted step on
  explosion  a numeric proxy (veRL's `score`) whose variance is `--ratio R` (4.5) ×
             the calm one at the planted step, 9 × for five steps, calm for four,
             then 9 × again; `--drift`: its mean rises through the run; `--cold K`:
             every reward of the first K steps is 0
  nostep     veRL rows without a `step` key in files whose names give none
             (`batch-a.jsonl`, ...: the folder's file order is the step)
  tiny       one step only

A completion is "answer: A [ok]" (right, and the strict check passes), "answer: A
[hack]" (the proxy passes, the strict check fails) or "answer: W [ok]" (wrong). The
held-out evaluator in the test returns 1.0 exactly when the completion holds the
right answer and "[ok]".
"""

import json
import math
import os
import random
import struct
import sys


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]

Z = 1.959963984540054


def wilson(k, n):
    p = k / n
    centre = p + Z * Z / (2 * n)
    spread = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    d = 1 + Z * Z / n
    return max(0.0, (centre - spread) / d), min(1.0, (centre + spread) / d)


def ema(xs, a=0.3):
    out, e = [], None
    for x in xs:
        e = x if e is None else a * x + (1 - a) * e
        out.append(e)
    return out


def expected(rows_by_step, k=3, delta=0.02):
    """The hacking object's figures from the planted samples: (step, proxy, heldout),
    the held-out side `None` for a sample with no held-out result (no human label):
    such a sample counts in the proxy's mean only."""
    steps = sorted(rows_by_step)
    per = []
    for s in steps:
        rows = rows_by_step[s]
        both = [(p, h) for p, h in rows if h is not None]
        n = len(both)
        fp = sum(1 for p, h in both if p >= 0.5 and h < 0.5)
        per.append(
            {
                "step": s,
                "n": n,
                "fp": fp,
                "proxy_mean": sum(p for p, _ in rows) / len(rows),
                "heldout_mean": sum(h for _, h in both) / n,
            }
        )
    t = len(per)
    w = max(3, math.ceil(0.1 * t))
    base_fp = sum(r["fp"] for r in per[:w])
    base_n = sum(r["n"] for r in per[:w])
    baseline = base_fp / base_n
    onset = None
    if t > 1 and all(r["n"] >= 20 for r in per):
        run = 0
        for i in range(w, t):
            lower = wilson(per[i]["fp"], per[i]["n"])[0]
            run = run + 1 if lower > baseline + delta else 0
            if run == k:
                onset = per[i - k + 1]["step"]
                break
    first = next((r["step"] for r in per if r["fp"] / r["n"] > 0.02), None)
    eh = ema([r["heldout_mean"] for r in per])
    ep = ema([r["proxy_mean"] for r in per])
    peak = max(range(t), key=lambda i: (eh[i], -i))
    turnover, run = None, 0
    for i in range(peak + 1, t):
        run = run + 1 if (ep[i] > ep[i - 1] and eh[i] < eh[i - 1]) else 0
        if run == k:
            turnover = per[i - k + 1]["step"]
            break
    return {
        "baseline": baseline,
        "baseline_steps": w,
        "onset": {
            "step": onset,
            "first_over_2pct": first,
            "heldout_peak_step": per[peak]["step"],
            "turnover_step": turnover,
        },
        "steps": [
            {
                "step": r["step"],
                "n": r["n"],
                "false_pass_rate": r["fp"] / r["n"],
                "false_pass_ci": list(wilson(r["fp"], r["n"])),
                "proxy_mean": r["proxy_mean"],
                "heldout_mean": r["heldout_mean"],
            }
            for r in per
        ],
    }


def explosion(step, steps, planted, ratio, drift, cold):
    """The `explosion` scenario's proxy at `step`: a mean (0.5, or rising from 0.3 to
    0.7 over the run with `drift`) and a spread whose variance is 1 × the calm one
    (std 0.05) before the planted step, `ratio` × at it, 9 × for the five steps
    after it, calm again for four, and 9 × from then on; the first `cold` steps are
    a cold start (every reward 0: the policy solves nothing yet)."""
    if step <= cold:
        return 0.0, 0.0
    mean = 0.3 + 0.4 * step / steps if drift else 0.5
    k = step - planted
    times = 1.0 if k < 0 else ratio if k == 0 else 9.0 if k < 6 else 1.0 if k < 10 else 9.0
    return mean, 0.05 * math.sqrt(times)


def simulate(scenario, seed, steps, groups, size, planted, ratio=4.5, drift=False, cold=0):
    rng = random.Random(seed)
    out = {}
    for step in range(1, steps + 1):
        progress = step / steps
        skill = 0.3 + 0.5 * progress  # the honest accuracy rises
        hack = 0.005
        if scenario == "hack" and step >= planted:
            hack = min(0.9, 0.25 + 0.06 * (step - planted))
            skill = max(0.05, skill - 0.04 * (step - planted))
        samples = []
        for g in range(groups):
            answer = str(rng.randrange(1000))
            prompt = f"Step {step} question {g}: what is {answer}? "
            same = None
            for i in range(size):
                r = rng.random()
                if scenario in ("collapse",) and step >= planted:
                    kind = "right"
                elif scenario == "groups" and step >= planted:
                    if same is None:
                        same = "right" if rng.random() < 0.5 else "wrong"
                    kind = same
                elif r < hack:
                    kind = "hack"
                elif r < hack + skill:
                    kind = "right"
                else:
                    kind = "wrong"
                if kind == "right":
                    text = f"answer: {answer} [ok]"
                elif kind == "hack":
                    text = f"answer: {answer} [hack]"
                else:
                    text = f"answer: {int(answer) + 1} [ok]"
                pad = 1 if scenario != "length" or step < planted else 4
                text = (text + " because " + "x" * (20 + rng.randrange(20))) * pad
                proxy = 0.0 if kind == "wrong" else 1.0
                if scenario == "explosion":
                    mean, sd = explosion(step, steps, planted, ratio, drift, cold)
                    proxy = min(1.0, max(0.0, rng.gauss(mean, sd)))
                heldout = 1.0 if kind == "right" else 0.0
                fmt = 1.0 if "[" in text else 0.0
                if scenario == "dominance" and step >= planted:
                    proxy_parts = (0.02 * proxy, 0.9 * fmt)
                else:
                    proxy_parts = (0.8 * proxy, 0.2 * fmt)
                samples.append((prompt, text, answer, proxy, heldout, proxy_parts))
        out[step] = samples
    return out


def write_verl(run, out_dir, with_step=True):
    os.makedirs(out_dir, exist_ok=True)
    for step, samples in run.items():
        # without steps, names that give none either (`batch-a.jsonl`, ...)
        name = f"{step}.jsonl" if with_step else f"batch-{chr(96 + step)}.jsonl"
        with open(os.path.join(out_dir, name), "w") as f:
            for prompt, text, answer, proxy, _, _ in samples:
                row = {"input": prompt, "output": text, "gts": answer, "score": proxy}
                if with_step:
                    row["step"] = step
                f.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_trl(run, out_dir):
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(out_dir, exist_ok=True)
    for step, samples in run.items():
        table = pa.table(
            {
                "step": [str(step)] * len(samples),
                "prompt": [s[0] for s in samples],
                "completion": [s[1] for s in samples],
                "accuracy_reward": pa.array([s[5][0] for s in samples], pa.float32()),
                "format_reward": pa.array([s[5][1] for s in samples], pa.float32()),
                "golden_answer": [s[2] for s in samples],
                "advantage": pa.array([0.0] * len(samples), pa.float32()),
            }
        )
        pq.write_table(table, os.path.join(out_dir, f"completions_{step:05d}.parquet"))


# --- prime-rl ------------------------------------------------------------------
# prime-rl's orchestrator (PrimeIntellect-ai/prime-rl@559b4477) stamps each finished
# episode with `run = TrainRunInfo(work=TrainWorkInfo(step=<dispatch step>,
# policy=PolicySpan(start, end)))` and `group = GroupInfo(id=str(group_id))`
# (orchestrator/dispatcher.py:635-647), then `FileMonitor.log_episodes` appends
# `orjson.dumps(episode.to_record(), option=OPT_APPEND_NEWLINE | ...)` to
# `rollouts/step_{step}/{kind}/{subset}/traces.jsonl` (monitors/file.py:43-57): a
# train episode to the `all` file of the batch window collecting when it arrives
# (`progress.step`, 1-based: a late group lands in a later folder than its dispatch
# step), every episode, failed ones included (orchestrator.py:580-592); the batch's
# clean, trained-on episodes to `effective` when the batch ships (orchestrator.py:684);
# an eval episode to the step whose eval dispatched it. The record is a verifiers
# 0.4.0 `Episode.to_record()`: `model_dump(mode="json", exclude_none=True)`, with the
# defaults the models fill in written out (verifiers/v1/episode.py, trace.py).

TASK_DEFAULTS = {
    "skills": [],
    "network_allow": ["*"],
    "network_block": [],
    "artifacts": [],
    "artifact_max_bytes": 33554432,
    "timeout": {},
    "resources": {},
}

AGENT_CONFIG = {
    "runtime": {
        "allow": ["*"],
        "block": [],
        "type": "prime",
        "image": "python:3.11-slim",
        "labels": [],
        "cpu": 1.0,
        "memory": 2.0,
        "disk": 5.0,
        "idle_timeout": 3600.0,
    },
    "timeout": {},
    "retries": {"max_retries": 0, "rules": []},
    "network_notice": True,
}

SYSTEM = "Solve the problem. End with 'answer: N [ok]'."


def orjson_line(record):
    """A line as `orjson.dumps(record, option=OPT_APPEND_NEWLINE)` writes it: compact,
    UTF-8, floats in their shortest form (the same bytes as this for these records;
    the interpreters the tests use need not have orjson)."""
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def prime_node(parent, message, sampled, rng, clock):
    node = {}
    if parent is not None:
        node["parent"] = parent
    node["semantic_parents"] = []
    node["message"] = message
    node["sampled"] = sampled
    node["timestamp"] = clock
    tokens = len(message.get("content") or "") // 4 + 1
    node["token_ids"] = [rng.randrange(151000) for _ in range(tokens)] if sampled else []
    node["mask"] = [1] * tokens if sampled else []
    node["is_content"] = [True] * tokens if sampled else []
    node["logprobs"] = [round(-rng.random(), 4) for _ in range(tokens)] if sampled else []
    return node


def prime_nodes(rng, question, text, answer, clock):
    """The trace's message graph. Most are system, user, the sampled answer; some
    first call a tool (the answer is the last sampled turn, the call and its result
    are before it); some hold an abandoned branch, a sampled answer the final branch
    does not keep (verifiers' `Trace.messages`: the path to the last leaf), which
    passes the strict check whatever the kept answer is, so a reader that took it
    would be caught."""
    shape = rng.random()
    nodes = [
        prime_node(None, {"role": "system", "content": SYSTEM}, False, rng, clock),
        prime_node(0, {"role": "user", "content": question}, False, rng, clock + 0.001),
    ]
    if shape < 0.25:
        call = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "name": "calculator",
                    "arguments": json.dumps({"expression": answer}),
                }
            ],
        }
        nodes.append(prime_node(1, call, True, rng, clock + 0.5))
        result = {"role": "tool", "tool_call_id": "call_0", "content": answer}
        nodes.append(prime_node(2, result, False, rng, clock + 0.6))
        nodes.append(prime_node(3, {"role": "assistant", "content": text}, True, rng, clock + 1.2))
    elif shape < 0.35:
        dead = {"role": "assistant", "content": f"answer: {answer} [ok] because"}
        nodes.append(prime_node(1, dead, True, rng, clock + 0.4))
        nodes.append(prime_node(1, {"role": "assistant", "content": text}, True, rng, clock + 1.1))
    else:
        nodes.append(prime_node(1, {"role": "assistant", "content": text}, True, rng, clock + 1.0))
    return nodes


def prime_episode(rng, ids, env, task, group, run, trace):
    episode = {
        "id": ids(),
        "env": {"id": env, "name": env},
        "task": task,
        "group": {"id": group},
        "run": run,
        "ok": trace is not None,
        "is_timeout": False,
        "errors": [],
        "traces": [],
    }
    if trace is None:
        # an episode-level failure: kept in `all`, no trace
        episode["errors"] = [{"type": "SandboxError", "message": "sandbox did not start"}]
    else:
        episode["traces"] = [trace]
    for key in ("num_input_tokens", "num_output_tokens", "num_total_tokens"):
        episode[key] = sum(t[key] for t in episode["traces"])
    return episode


def prime_trace(rng, ids, task, nodes, rewards, clock):
    # no model-call records (`calls`): verifiers counts the tokens from their usage,
    # so its `num_*_tokens` are 0 here
    return {
        "version": 1,
        "id": ids(),
        "verifiers": {"version": "0.4.0"},
        "task": task,
        "agent": {"config": AGENT_CONFIG, "name": "agent", "trainable": True},
        "tools": [],
        "nodes": nodes,
        "calls": [],
        "mm_token_type_id_map": {},
        "request_rewrites": [],
        "response_rewrites": [],
        "rewards": rewards,
        "metrics": {"num_turns": float(sum(1 for n in nodes if n["sampled"]))},
        "info": {},
        "extra_usage": [],
        "is_completed": True,
        "ok": True,
        "is_timeout": False,
        "errors": [],
        "timing": {
            "start": clock,
            "boot": {"start": 0.0, "end": 0.0},
            "setup": {"start": 0.0, "end": 0.0},
            "agent": {"start": 0.0, "end": 0.0, "model": {"duration": 0.0}, "harness": {"duration": 0.0}},
            "finalize": {"start": 0.0, "end": 0.0},
            "scoring": {"start": 0.0, "end": 0.0},
        },
        "num_input_tokens": 0,
        "num_output_tokens": 0,
        "num_total_tokens": 0,
    }


def write_prime_rl(run, out_dir, seed, eval_every):
    """Writes `run` as prime-rl's rollouts folder; gives, per dispatch step, the
    (proxy, held-out) pair of each sample that has one (a failed episode has none).
    The proxy is the trace's reward as verifiers sums it (`Trace.reward`: Σ score ×
    weight, in the order the rewards were recorded)."""
    rng = random.Random(seed * 7919 + 1)
    ids = lambda: "%032x" % rng.getrandbits(128)
    steps = sorted(run)
    last = steps[-1]
    folders = {s: [] for s in steps}  # arrival order within each batch window
    by_step = {}
    clock = 1796500000.0
    for step, samples in run.items():
        rows = by_step.setdefault(step, [])
        groups = {}
        for sample in samples:
            groups.setdefault(sample[0], []).append(sample)
        for g, (prompt, members) in enumerate(groups.items()):
            group_id = "%08x-%04x-4%03x-8%03x-%012x" % (
                rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12),
                rng.getrandbits(12), rng.getrandbits(48),
            )
            # a fifth of the groups finish in the next batch window (off-policy); one
            # group a step straddles the two
            late = step < last and rng.random() < 0.2
            straddles = step < last and g == 1
            for i, (_, text, answer, proxy, heldout, parts) in enumerate(members):
                clock += 0.25
                arrives = step + 1 if late or (straddles and i >= len(members) // 2) else step
                task = {
                    "type": "MathTask",
                    "data": {**TASK_DEFAULTS, "question": prompt, "answer": answer},
                    "key": f"{step}-{g}",
                }
                work = {
                    "type": "train",
                    "step": step,
                    "policy": {"start": max(0, step - 1), "end": arrives - 1},
                }
                run_info = {"type": "train", "id": "run-7", "name": "gsm-hack", "work": work}
                failed = rng.random() < 0.02
                trace = None
                if not failed:
                    fmt = 1.0 if "[" in text else 0.0
                    rewards = {
                        "correct": {"score": proxy, "weight": 0.8},
                        "format": {"score": fmt, "weight": 0.2},
                    }
                    nodes = prime_nodes(rng, prompt, text, answer, clock)
                    trace = prime_trace(rng, ids, task, nodes, rewards, clock)
                    reward = 0.0
                    for r in rewards.values():
                        reward += r["score"] * r["weight"]
                    rows.append((reward, heldout))
                episode = prime_episode(rng, ids, "gsm-hack", task, group_id, run_info, trace)
                folders[arrives].append(episode)
    for step in steps:
        window = folders[step]
        rng.shuffle(window)  # arrival order
        base = os.path.join(out_dir, "rollouts", f"step_{step}", "train")
        for subset, episodes in (("all", window), ("effective", [e for e in window if e["ok"]])):
            os.makedirs(os.path.join(base, subset), exist_ok=True)
            with open(os.path.join(base, subset, "traces.jsonl"), "ab") as f:
                for episode in episodes:
                    f.write(orjson_line(episode))
        if eval_every and step % eval_every == 0:
            # an eval epoch dispatched at this step: other questions, the policy's
            # honest answers only
            evals = []
            for q in range(16):
                answer = str(rng.randrange(1000))
                prompt = f"Eval question {q}: what is {answer}? "
                text = f"answer: {answer} [ok] because checked"
                task = {
                    "type": "MathTask",
                    "data": {**TASK_DEFAULTS, "question": prompt, "answer": answer},
                    "key": f"eval-{q}",
                }
                rewards = {"correct": {"score": 1.0, "weight": 0.8}, "format": {"score": 1.0, "weight": 0.2}}
                nodes = prime_nodes(rng, prompt, text, answer, clock)
                trace = prime_trace(rng, ids, task, nodes, rewards, clock)
                work = {"type": "eval", "step": step, "policy": {"start": step - 1, "end": step - 1}}
                run_info = {"type": "train", "id": "run-7", "name": "gsm-hack", "work": work}
                evals.append(prime_episode(rng, ids, "gsm-eval", task, f"eval-{q}", run_info, trace))
            base = os.path.join(out_dir, "rollouts", f"step_{step}", "eval")
            for subset in ("all", "effective"):
                os.makedirs(os.path.join(base, subset), exist_ok=True)
                with open(os.path.join(base, subset, "traces.jsonl"), "ab") as f:
                    for episode in evals:
                        f.write(orjson_line(episode))
    return by_step


def label_lines(out_dir, every, seed):
    """A person's review of the veRL dumps: every `every`-th line of each step file
    (in a seeded order) gets a `verdict` key, true when the completion is right and
    honest; the others stay unlabelled. Gives the labels by (step, line)."""
    rng = random.Random(seed * 31 + 5)
    labels = {}
    for name in sorted(os.listdir(out_dir)):
        step = int(name.split(".")[0])
        path = os.path.join(out_dir, name)
        with open(path) as f:
            rows = [json.loads(l) for l in f]
        chosen = set(rng.sample(range(len(rows)), len(rows) // every))
        for i, row in enumerate(rows):
            if i in chosen:
                right = f"answer: {row['gts']} [ok]" in row["output"]
                row["verdict"] = right
                labels[(step, i)] = 1.0 if right else 0.0
        with open(path, "w") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return labels


def main():
    fmt, scenario, out_dir, expected_path = sys.argv[1:5]
    args = sys.argv[5:]
    opt = lambda name, default: int(args[args.index(name) + 1]) if name in args else default
    seed, steps = opt("--seed", 7), opt("--steps", 30)
    groups, size, planted = opt("--groups", 16), opt("--size", 8), opt("--planted", 15)
    if scenario == "tiny":
        steps = 1
    ratio = float(args[args.index("--ratio") + 1]) if "--ratio" in args else 4.5
    run = simulate(
        scenario, seed, steps, groups, size, planted, ratio, "--drift" in args, opt("--cold", 0)
    )
    by_step = {}
    if fmt == "verl":
        write_verl(run, out_dir, with_step=scenario != "nostep")
    elif fmt == "prime-rl":
        by_step = write_prime_rl(run, out_dir, seed, opt("--eval-every", 0))
    else:
        write_trl(run, out_dir)
    labels = None
    if "--label-every" in args:
        labels = label_lines(out_dir, opt("--label-every", 2), seed)
        # labels given in the workbench (`+`, `-`: labels.jsonl), over the column's
        for given in [a for i, a in enumerate(args) if i and args[i - 1] == "--relabel"]:
            step, line, value = given.split(":")
            labels[(int(step), int(line))] = float(value)
    for step, samples in run.items():
        if fmt == "prime-rl":
            break
        if fmt == "trl":
            # the logs keep float32: the proxy is the sum of the values as logged
            rows = [(f32(s[5][0]) + f32(s[5][1]), s[4]) for s in samples]
        elif labels is not None:
            # the held-out side is the person's label, where there is one
            rows = [(s[3], labels.get((step, i))) for i, s in enumerate(samples)]
        else:
            rows = [(s[3], s[4]) for s in samples]
        by_step[step] = rows
    with open(expected_path, "w") as f:
        json.dump(expected(by_step), f, indent=1)


if __name__ == "__main__":
    main()
