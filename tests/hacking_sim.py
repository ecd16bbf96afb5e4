"""Seeded simulated training runs for tests/hacking.rs (SPEC §19), written in the
trainers' own dump formats, and the expected `hacking` figures computed here,
independently of rwb, from what the simulation planted.

    python hacking_sim.py FORMAT SCENARIO OUT_DIR EXPECTED_JSON [--seed S] [--steps T]

FORMAT: verl (`{step}.jsonl` rollout dumps, as `RayPPOTrainer._dump_generations`
writes them) or trl (`completions_{step:05d}.parquet`, as `GRPOTrainer` logs them;
needs pyarrow).

SCENARIO:
  hack       the policy learns to write "[hack]" answers the proxy passes and the
             strict check fails, from a planted step on; the held-out accuracy
             rises, then falls
  control    no hack: both sides rise together
  collapse   every reward the same from the planted step on (variance collapse)
  groups     each group's rewards all equal from the planted step on
  length     completions four times longer from the planted step on
  dominance  (trl) the format reward carries the proxy from the planted step on
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
    """The hacking object's figures from the planted samples: (step, proxy, heldout)."""
    steps = sorted(rows_by_step)
    per = []
    for s in steps:
        rows = rows_by_step[s]
        n = len(rows)
        fp = sum(1 for p, h in rows if p >= 0.5 and h < 0.5)
        per.append(
            {
                "step": s,
                "n": n,
                "fp": fp,
                "proxy_mean": sum(p for p, _ in rows) / n,
                "heldout_mean": sum(h for _, h in rows) / n,
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


def simulate(scenario, seed, steps, groups, size, planted):
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


def main():
    fmt, scenario, out_dir, expected_path = sys.argv[1:5]
    args = sys.argv[5:]
    opt = lambda name, default: int(args[args.index(name) + 1]) if name in args else default
    seed, steps = opt("--seed", 7), opt("--steps", 30)
    groups, size, planted = opt("--groups", 16), opt("--size", 8), opt("--planted", 15)
    if scenario == "tiny":
        steps = 1
    run = simulate(scenario, seed, steps, groups, size, planted)
    if fmt == "verl":
        write_verl(run, out_dir, with_step=scenario != "nostep")
    else:
        write_trl(run, out_dir)
    by_step = {}
    for step, samples in run.items():
        if fmt == "trl":
            # the logs keep float32: the proxy is the sum of the values as logged
            rows = [(f32(s[5][0]) + f32(s[5][1]), s[4]) for s in samples]
        else:
            rows = [(s[3], s[4]) for s in samples]
        by_step[step] = rows
    with open(expected_path, "w") as f:
        json.dump(expected(by_step), f, indent=1)


if __name__ == "__main__":
    main()
