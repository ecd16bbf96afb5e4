"""Scores the trainers' corpus by calling each evaluator exactly the way its trainer's own
code calls it, without rwb: the reference rwb's rows are compared with.

    python direct.py WORKSPACE   one JSON line per (sample, evaluator):
                                 {"sample": i, "evaluator": name, "score": x}
                                 plus "metrics" where the trainer reads more than a score
    python direct.py             every workspace under this folder, each line with
                                 "workspace": its folder name

Needs numpy (Tunix hands columns as numpy arrays) and, for a workspace whose rwb.toml names
a template file, transformers + jinja2: run it with the RWB_HF_PYTHON venv
(python3 -m venv /tmp/rwb-ci-hf && /tmp/rwb-ci-hf/bin/pip install transformers jinja2).

`sample` counts every non-blank line of samples.jsonl, as rwb numbers samples. A line is a
sample in chat form (`messages`) or prompt/completion form (`prompt` and `completion`, each
a string or a list of messages); any other line is skipped, as no trainer would see it.

Which trainer calls which evaluator is this file's own knowledge (CALLS below), not rwb's
detection; the chat template is the setup's fact and is read from rwb.toml. Every call
below cites the trainer code it copies the behaviour of (see tests/corpus/TRAINERS.md for
the facts in full):
  Tunix     google/tunix @ c7d8950f12a9c55a976bf2e1a0d8b447d71c20b3
  OpenRLHF  OpenRLHF/OpenRLHF @ 3c3be6234e0cb353e76bb8019947db9dfe99fca7
  TRL       huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8
  veRL (old RewardManager) Jiayi-Pan/TinyZero @ 95df88f2, Unakar/Logic-RL @ 9d2c4575,
            PeterGriffinJin/Search-R1 @ a14dc3a4, agentica-project/rllm @ 874daa4a
"""

import asyncio
import contextlib
import importlib.util
import json
import math
import os
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "templates"))

# (workspace folder, evaluator) -> how the trainer calls it
CALLS = {
    **{("tunix", e): "tunix" for e in ("format_exact", "format_approx", "format_approx_styled", "answer",
                                       "numbers", "cli_approx", "cli_answer")},
    ("tunix", "verl_compatible"): "tunix-verl-compatible",
    **{("openrlhf", e): "openrlhf" for e in ("math", "math_detected", "think", "think_llama", "think_chatml")},
    **{("trl_text", e): "trl" for e in ("format_exact", "format_approx", "answer", "numbers", "unique_chars",
                                        "soft_overlong", "soft_overlong_closure", "repetition", "length_target",
                                        "length_target_wrapped", "keyword_bonus")},
    **{("trl_conversational", e): "trl" for e in ("correctness", "int_answer", "strict_format", "xmlcount",
                                                  "repetition", "reasoning_steps")},
    **{("trl_logging", e): "trl" for e in ("boxed", "curriculum", "format_logged", "async_overlap")},
    ("logic_rl", "kk"): "verl-old",
    ("search_r1", "em"): "verl-old",
    ("search_r1", "em_response_only"): "verl",
    ("deepscaler", "math"): "verl-old-rllm",
}


# ---------------------------------------------------------------- samples and their forms

def samples(root, config=None):
    """(index, sample) of the workspace's samples.jsonl, or of the one JSONL file a
    `[samples.NAME]` table maps (its `step` column taken out as the step the rollout
    was generated at, under STEP: the trainer's state, not a column)."""
    name, step_column = "samples.jsonl", None
    mapped = (config or {}).get("samples")
    if isinstance(mapped, dict):
        (mapping,) = mapped.values()
        name, step_column = mapping["path"], mapping.get("step")
    out, index = [], 0
    with open(os.path.join(root, name), encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
            except ValueError:
                sample = None
            if isinstance(sample, dict) and step_column is not None:
                sample[STEP] = sample.pop(step_column, None)
            if isinstance(sample, dict) and (
                isinstance(sample.get("messages"), list) or ("prompt" in sample and "completion" in sample)
            ):
                out.append((index, sample))
            index += 1
    return out


# where samples() keeps a mapped sample's step (no column has this name)
STEP = "\x00step"


def is_chat(sample):
    return isinstance(sample.get("messages"), list)


def completion_turns(sample):
    """Chat form: the trailing assistant turn(s); prompt/completion: the completion."""
    if is_chat(sample):
        messages = sample["messages"]
        start = len(messages)
        while start > 0 and messages[start - 1].get("role") == "assistant":
            start -= 1
        return messages[start:]
    completion = sample["completion"]
    return [{"role": "assistant", "content": completion}] if isinstance(completion, str) else completion


def prompt_turns(sample):
    """The turns before the completion; None for a string prompt (used as is)."""
    if is_chat(sample):
        return sample["messages"][: len(sample["messages"]) - len(completion_turns(sample))]
    prompt = sample["prompt"]
    return None if isinstance(prompt, str) else prompt


def completion_text(sample):
    if not is_chat(sample) and isinstance(sample["completion"], str):
        return sample["completion"]
    return "".join(m.get("content") or "" for m in completion_turns(sample))


def columns(sample):
    """Every key that is not the conversation (nor the step samples() took out)."""
    skip = ("messages", STEP) if is_chat(sample) else ("prompt", "completion", STEP)
    return {k: v for k, v in sample.items() if k not in skip}


# ---------------------------------------------------------------- the prompt as templated

class Template:
    """`chatml`, `raw`, or a tokenizer_config.json rendered by transformers' own renderer
    (templates/render.py: what apply_chat_template(tokenize=False,
    add_generation_prompt=True) calls)."""

    def __init__(self, root, name):
        self.name = name or "chatml"
        self.config = None
        if self.name not in ("chatml", "raw"):
            path = os.path.join(root, self.name)
            with open(path, encoding="utf-8") as f:
                if path.endswith(".json"):
                    self.config = json.load(f)
                else:
                    self.config = {"chat_template": f.read()}

    def prompt(self, sample):
        turns = prompt_turns(sample)
        if turns is None:
            return sample["prompt"]
        if self.name == "chatml":
            return "".join("<|im_start|>%s\n%s<|im_end|>\n" % (m["role"], m["content"]) for m in turns) + \
                "<|im_start|>assistant\n"
        if self.name == "raw":
            return "\n".join(m["content"] for m in turns)
        import render  # templates/render.py

        return render.render(self.config, turns)


def template_for(root, config, entry):
    return Template(root, entry.get("chat_template", config.get("chat_template")))


# ---------------------------------------------------------------- how each trainer calls

def tunix_batches(fn, batch, template, verl_compatible):
    """Tunix RLLearner / SequenceRewardManager (tunix/rl/reward_manager.py L114-162,
    tunix/rl/grpo/grpo_learner.py L245, L362-367, tunix/rl/rl_learner.py L186-230,
    L419-431): the batch's columns were np.repeat-ed into numpy arrays (a dict column is a
    dict of arrays), `prompts` is list(prompt array) (numpy str elements), `completions`
    the rollout's text list; the call is
    fn(prompts=..., completions=..., mode="train", trajectory_ids=[...], **columns) by
    keyword, once for the whole batch; a list result must have one value per prompt and
    is read with np.array into float64 (None raises there); the values of all functions
    are nansum-med."""
    import numpy as np

    def stack(values):
        if isinstance(values[0], dict):
            return {k: stack([v[k] for v in values]) for k in values[0]}
        return np.array(values)

    rows = [s for _, s in batch]
    cols = [columns(s) for s in rows]
    kwargs = {k: stack([c[k] for c in cols]) for k in cols[0]}
    kwargs["mode"] = "train"
    kwargs["trajectory_ids"] = [f"{i}_0" for i, _ in batch]
    prompts = list(np.array([template.prompt(s) for s in rows]))
    completions = [completion_text(s) for s in rows]
    if verl_compatible:
        # tunix/cli/config.py L1083-1095: the wrapper drops prompts and kwargs and calls
        # compute_score(completion, ground_truth) positionally for each row
        def wrapper(prompts, completions, reward_model, *, lm=fn, **kwargs):
            return [lm(c, gt) for c, gt in zip(completions, reward_model["ground_truth"])]

        result = wrapper(prompts=prompts, completions=completions, **kwargs)
    else:
        result = fn(prompts=prompts, completions=completions, **kwargs)
    if result is None:
        raise RuntimeError("Tunix: the reward function returned None")
    if isinstance(result, list) and len(result) != len(prompts):
        raise RuntimeError("Tunix: length mismatch")
    column = np.zeros((len(prompts), 1))
    column[:, 0] = np.array(result)
    return [float(v) for v in np.nansum(column, axis=1)]


def openrlhf_score(fn, sample, template):
    """OpenRLHF SingleTurnAgentExecutor (openrlhf/utils/agent.py L184-320): one sample per
    call, `reward_func(queries, prompts, labels)` positionally with one-element lists, in a
    thread (asyncio.to_thread). The prompt is the dataset's prompt after
    tokenizer.apply_chat_template(..., tokenize=False, add_generation_prompt=True)
    (openrlhf/datasets/prompts_dataset.py L26-45); the query is prompt + response tokens
    decoded with skip_special_tokens=False (L283), which gives back the prompt text and the
    completion text; labels are the --data.label_key column ("label" here). The reward is
    rewards_info["rewards"] (its single element), the score `scores` or else `rewards`,
    and each extra_logs value a logged number (L288-297,
    openrlhf/trainer/ppo_utils/samples_generator.py L254-297)."""
    prompt = template.prompt(sample)
    query = prompt + completion_text(sample)
    label = sample.get("label")

    async def call():
        return await asyncio.gather(asyncio.to_thread(fn, [query], [prompt], [label]))

    info = asyncio.run(call())[0]
    reward = one(info.get("rewards"))
    score = info.get("scores")
    metrics = {"scores": one(score if score is not None else info.get("rewards"))}
    for key, value in (info.get("extra_logs") or {}).items():
        metrics[key] = one(value)
    return reward, metrics


def one(value):
    """The single number of a one-sample result: a tensor, array, list or number."""
    if value is None:
        return None
    if hasattr(value, "flatten"):
        value = value.flatten()[0]
    elif isinstance(value, (list, tuple)):
        value = value[0]
    return float(value.item() if hasattr(value, "item") else value)


def trl_batch(fn, batch, setup):
    """TRL GRPOTrainer._calculate_rewards (trl/trainer/grpo_trainer.py L1612-1676): by
    keyword, once per batch, prompts and completions in the dataset's own form (strings
    for "standard" data, L2186-2188; message lists for conversational, L2175-2185 --
    completions `[{"role": "assistant", "content": text}]`), completion_ids, every other
    column as a list (prompt, completion and completion_ids excluded), plus trainer_state
    (the trainer's transformers.TrainerState, L1621), log_extra (L1624, the bound
    `_log_completion_extra(column, values)`: `_pending_extra_logs[column].extend(values)`,
    L1587-1596) and log_metric (L1627, `_log_metric(name, value)`:
    `_pending_metrics[name].append(value)`, L1598-1608); an `async def` function is
    awaited with the same arguments (L1677-1693). None becomes NaN (no score).

    TrainerState: `setup` (the run's fields, e.g. max_steps) and the step the batch
    was generated at as global_step (a batch is one step's). Returns the scores and,
    per row, what TRL's logs hold for it: its value of each `log_extra` column (the
    completions table, L2759-2764 and L3310-3317: row i of the batch is table row i)
    and each `log_metric` name's mean over the batch (L2766-2774: `sum / len`)."""
    from transformers.trainer_callback import TrainerState

    rows = [s for _, s in batch]
    if is_chat(rows[0]):
        prompts = [prompt_turns(s) for s in rows]
        completions = [completion_turns(s) for s in rows]
    else:
        prompts = [s["prompt"] for s in rows]
        completions = [s["completion"] for s in rows]
    completion_ids = [s.get("completion_ids") for s in rows]
    cols = [columns(s) for s in rows]
    keys = [k for k in cols[0] if k not in ("prompt", "completion", "completion_ids")]
    kwargs = {k: [c.get(k) for c in cols] for k in keys}
    state = dict(setup)
    if rows[0].get(STEP) is not None:
        state["global_step"] = rows[0][STEP]
    kwargs["trainer_state"] = TrainerState(**state)
    pending_extra, pending_metrics = {}, {}
    kwargs["log_extra"] = lambda column, values: pending_extra.setdefault(column, []).extend(values)
    kwargs["log_metric"] = lambda name, value: pending_metrics.setdefault(name, []).append(value)
    call = lambda: fn(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs)
    out = asyncio.run(call()) if asyncio.iscoroutinefunction(fn) else call()
    logged = []
    for i in range(len(rows)):
        metrics = {name: sum(values) / len(values) for name, values in pending_metrics.items()}
        for column, values in pending_extra.items():
            metrics[column] = values[i]
        logged.append(metrics or None)
    return [None if v is None else float(v) for v in out], logged


def verl_score(fn, sample, template, old, solution_keyword="solution_str"):
    """Old veRL RewardManager (TinyZero, Logic-RL, Search-R1: verl/trainer/main_ppo.py
    RewardManager.__call__; rllm's fork likewise): solution_str = tokenizer.decode(prompt
    ids + response ids) -- special tokens kept, so the templated prompt text followed by
    the response -- and compute_score(solution_str=..., ground_truth=...) by keyword,
    ground_truth = reward_model["ground_truth"]; Search-R1 also passes
    format_score=config (0.0), rllm passes data_source and names the text llm_solution.
    Newer veRL (verl/workers/reward_manager/naive.py @ b178a3cd): the response alone,
    decoded with skip_special_tokens=True, and data_source, solution_str, ground_truth,
    extra_info by keyword."""
    ground_truth = sample["reward_model"]["ground_truth"]
    if old:
        text = template.prompt(sample) + completion_text(sample)
        kwargs = {solution_keyword: text, "ground_truth": ground_truth}
        if solution_keyword == "llm_solution":
            kwargs["data_source"] = sample.get("data_source")
        elif fn.__name__ == "compute_score_em":
            kwargs["format_score"] = 0.0
        value = fn(**kwargs)
    else:
        extra_info = dict(sample.get("extra_info") or {})
        extra_info.update(num_turns=None, rollout_reward_scores={})
        value = fn(data_source=sample.get("data_source"), solution_str=completion_text(sample),
                   ground_truth=ground_truth, extra_info=extra_info)
    return float(value["score"] if isinstance(value, dict) else value)


# ---------------------------------------------------------------- driver

def load(root, entry):
    path, name = entry.split("::", 1)
    path = os.path.join(root, path)
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def score_workspace(root, tag=None):
    root = os.path.abspath(root)
    folder = os.path.basename(root)
    with open(os.path.join(root, "rwb.toml"), "rb") as f:
        config = tomllib.load(f)
    data = samples(root, config)
    lines = []
    for name, entry in config.get("evaluators", {}).items():
        how = CALLS[(folder, name)]
        fn = load(root, entry["function"])
        template = template_for(root, config, entry)
        rows = []  # (sample, score, metrics)
        with contextlib.redirect_stdout(sys.stderr):  # evaluators print; stdout is ours
            if how in ("tunix", "tunix-verl-compatible", "trl"):
                size = entry["batch_size"]
                for start in range(0, len(data), size):
                    batch = data[start : start + size]
                    if how == "trl":
                        values, logged = trl_batch(fn, batch, entry.get("kwargs", {}).get("trainer_state", {}))
                    else:
                        values = tunix_batches(fn, batch, template, how == "tunix-verl-compatible")
                        logged = [None] * len(batch)
                    rows += [(i, v, m) for (i, _), v, m in zip(batch, values, logged)]
            elif how == "openrlhf":
                for i, s in data:
                    reward, metrics = openrlhf_score(fn, s, template)
                    rows.append((i, reward, metrics))
            elif how == "verl-old-rllm":
                rows = [(i, verl_score(fn, s, template, True, "llm_solution"), None) for i, s in data]
            else:
                rows = [(i, verl_score(fn, s, template, how == "verl-old"), None) for i, s in data]
        for i, score, metrics in rows:
            if score is not None and math.isnan(score):
                score = None
            line = {"sample": i, "evaluator": name, "score": score}
            if metrics is not None:
                line["metrics"] = metrics
            if tag:
                line = {"workspace": tag, **line}
            lines.append(line)
    return lines


def main(argv):
    if len(argv) > 1:
        targets = [(argv[1], None)]
    else:
        targets = [(os.path.join(HERE, d), d) for d in sorted(os.listdir(HERE))
                   if os.path.isfile(os.path.join(HERE, d, "rwb.toml"))]
    for root, tag in targets:
        for line in score_workspace(root, tag):
            print(json.dumps(line, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv)
