"""Scores the corpus by calling each evaluator directly, the way its trainer does,
without rwb: the reference tests/corpus.rs compares rwb's rows with.

    python direct.py WORKSPACE  ->  one JSON line per (sample, evaluator):
                                    {"sample": i, "evaluator": name, "score": x}

`sample` counts every non-blank line of samples.jsonl, as rwb numbers samples; lines
that are not samples (no list `messages`) are skipped, as no trainer would see them.
"""

import asyncio
import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
import tomllib

# How each trainer calls an evaluator of the corpus. This is the test's own knowledge,
# not rwb's detection.
TRAINER = {
    "accuracy": "trl",
    "format": "trl",
    "len": "trl",
    "length_penalty": "trl",
    "pkg_accuracy": "trl",
    "gsm8k": "verl",
    "countdown": "verl",
    "rk_math": "reward-kit",
    "lazy": "reward-kit",
    "vf_answer": "verifiers",
    "vf_format": "verifiers",
}


def load_callable(root, entry):
    """`FILE.py::NAME`, `package.module:NAME`, or a metric folder's main.py::evaluate."""
    if "::" in entry:
        path, name = entry.split("::", 1)
        path = os.path.join(root, path)
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, name)
    module, name = entry.split(":", 1)
    return getattr(importlib.import_module(module), name)


def evaluators(root):
    with open(os.path.join(root, "rwb.toml"), "rb") as f:
        config = tomllib.load(f)
    found = {}
    for name, entry in config.get("evaluators", {}).items():
        found[name] = entry
    metrics = os.path.join(root, "metrics")
    for name in sorted(os.listdir(metrics)):
        if os.path.isfile(os.path.join(metrics, name, "main.py")):
            found.setdefault(name, {"path": "metrics/" + name})
    return found


def samples(root):
    out = []
    index = 0
    with open(os.path.join(root, "samples.jsonl"), encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
            except ValueError:
                sample = None
            if isinstance(sample, dict) and isinstance(sample.get("messages"), list):
                out.append((index, sample))
            index += 1
    return out


def chatml(messages):
    return "".join("<|im_start|>%s\n%s<|im_end|>\n" % (m["role"], m["content"]) for m in messages)


def trl_scores(fn, batch):
    """GRPOTrainer: one call per generation batch, by keyword; the prompt and the
    completion (conversational), every other dataset column as a list."""
    inputs = []
    for sample in batch:
        row = {k: v for k, v in sample.items() if k != "messages"}
        row["prompt"] = sample["messages"][:-1]
        row["completion"] = sample["messages"][-1:]
        inputs.append(row)
    keys = [k for k in inputs[0] if k not in ("prompt", "completion", "completion_ids")]
    columns = {k: [row[k] for row in inputs] for k in keys}
    return fn(prompts=[r["prompt"] for r in inputs], completions=[r["completion"] for r in inputs], **columns)


def verl_score(fn, sample, with_prompt):
    """veRL's reward manager: the decoded response (older veRL: prompt and response)."""
    response = sample["messages"][-1]["content"]
    text = response
    if with_prompt:
        text = chatml(sample["messages"][:-1]) + "<|im_start|>assistant\n" + response
    value = fn(
        data_source=sample.get("data_source"),
        solution_str=text,
        ground_truth=sample["reward_model"]["ground_truth"],
        extra_info=sample.get("extra_info"),
    )
    return value["score"] if isinstance(value, dict) else float(value)


def verifiers_score(fn, sample):
    """A verifiers Rubric: the prompt messages and the completion messages, the answer,
    a state, task "default" and info {} by keyword, only those the function declares
    unless it takes **kwargs; the value awaited if it is a coroutine, read with
    float(); an Exception counts as 0.0."""
    messages = sample["messages"]
    given = dict(prompt=messages[:-1], completion=messages[-1:], answer=sample.get("ground_truth"),
                 state={}, task="default", info={})
    params = inspect.signature(fn).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        given = {k: v for k, v in given.items() if k in params}
    try:
        value = fn(**given)
        if inspect.isawaitable(value):
            value = asyncio.run(value)
        return float(value)
    except Exception:
        return 0.0


def reward_kit_score(fn, sample):
    """reward-kit: messages and ground_truth by keyword, every other key as well."""
    kwargs = {k: v for k, v in sample.items() if k not in ("messages", "ground_truth")}
    value = fn(messages=sample["messages"], ground_truth=sample.get("ground_truth"), **kwargs)
    return value["score"]


def main(root):
    root = os.path.abspath(root)
    sys.path.insert(0, root)
    data = samples(root)
    for name, entry in evaluators(root).items():
        trainer = TRAINER[name]
        if "path" in entry:
            folder = os.path.join(root, entry["path"])
            sys.path.insert(0, folder)
            fn = load_callable(root, os.path.join(entry["path"], "main.py") + "::evaluate")
        else:
            fn = load_callable(root, entry["function"])
        scores = []
        if trainer == "trl":
            size = entry["batch_size"]
            for start in range(0, len(data), size):
                batch = data[start : start + size]
                values = trl_scores(fn, [s for _, s in batch])
                scores += [(i, v) for (i, _), v in zip(batch, values)]
        elif trainer == "verl":
            with_prompt = entry.get("solution_str") == "prompt+response"
            scores = [(i, verl_score(fn, s, with_prompt)) for i, s in data]
        elif trainer == "verifiers":
            scores = [(i, verifiers_score(fn, s)) for i, s in data]
        else:
            scores = [(i, reward_kit_score(fn, s)) for i, s in data]
        for i, score in scores:
            if score is not None and not isinstance(score, (int, float)):
                score = score.score
            if score is not None:
                score = float(score)
                assert math.isfinite(score), (name, i, score)
            print(json.dumps({"sample": i, "evaluator": name, "score": score}))


if __name__ == "__main__":
    main(sys.argv[1])
