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
  AReaL     inclusionAI/AReaL @ 4aef98d8d818af55b43621aaadba047ae10f4e77
  EasyR1    hiyouga/EasyR1 @ b44b311b669bf1fd1aa2fc36f2251482ba33cb16
  ms-swift  modelscope/ms-swift @ 3602360a562313afbf2ef6065fdf61f271a2c5b9
  slime     THUDM/slime @ 624b824a898ab0ec1fcb4d373004c7f3852bf515
  SkyRL     NovaSky-AI/SkyRL @ a9564572eb8e91076be43c1bd5e4615e3de17265
  open-instruct  allenai/open-instruct @ e6c3044aa6201c8bfa4573c1b03142af599e730d
  NeMo-RL   NVIDIA-NeMo/RL @ 7ea279abfbeb698b092856d0dab61e7cf39bc909

Where the trainer itself catches an exception and scores the sample anyway (NeMo-RL's
`except: score = 0.0`), the line also has "warned": true: rwb's row must carry the
exception beside the score (its result_error).
"""

import argparse
import asyncio
import concurrent.futures
import contextlib
import dataclasses
import enum
import functools
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
    **{("areal", e): "areal" for e in ("gsm8k", "clevr_count", "geometry3k", "think_format")},
    ("areal", "countdown"): "areal-countdown",
    **{("easyr1", e): "easyr1" for e in ("math", "math_format_heavy", "dapo", "r1v", "r1v_weighted")},
    **{("swift", e): "swift" for e in ("accuracy", "format", "cosine", "repetition", "repetition_bigrams", "warmup")},
    **{("slime", e): "slime" for e in ("math", "detailed", "detailed_raw_prompt")},
    ("slime", "group_majority"): "slime-group",
    ("slime", "f1"): "slime-rm-f1",
    **{("skyrl", e): "skyrl" for e in ("strict", "flexible")},
    **{("open_instruct", e): "open-instruct" for e in ("gsm8k", "string_f1", "up_to_max_length")},
    **{("open_instruct_code", e): "open-instruct" for e in ("code", "code_all_or_nothing")},
    ("nemo_rl", "math"): "nemo-math",
    ("nemo_rl", "vlm"): "nemo-vlm",
    ("nemo_rl", "math_worker"): "nemo-math-worker",
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


# ---------------------------------------------------------------- the 2026 frameworks

def trainer_args(config, entry):
    """The trainer's own parsed arguments (argparse / a config dataclass in the
    framework): the workspace's trainer_args table, the evaluator's over it."""
    return argparse.Namespace(**{**config.get("trainer_args", {}), **entry.get("trainer_args", {})})


ID_COLUMNS = ("prompt_ids", "completion_ids", "input_tokens", "output_tokens")


def areal_score(fn, sample, template):
    """AReaL RLVRWorkflow (areal/workflow/rlvr.py): the prompt's ids are
    apply_chat_template(data["messages"], tokenize=True, add_generation_prompt=True)
    (L31-46, L147-151) and prompt_str = tokenizer.decode(input_ids) (L159), default
    decode, special tokens kept: the templated text (Qwen's markers are single special
    tokens, so the round trip gives the rendered text back); completions_str =
    tokenizer.decode(resp.output_tokens) (L100), the completion text as generated. The
    call (L101-107) is positional, then the whole data row by keyword:
    reward_fn(prompt_str, completions_str, resp.input_tokens, resp.output_tokens, **data)
    -- data is the dataset row unchanged (L162), its `messages` the prompt turns; the
    token ids are the engine's response, not data fields (a sample's id columns stand
    for them; None without). AsyncRewardWrapper (areal/api/reward_api.py L148-158) runs
    it in an executor under asyncio.wait_for(timeout=15): a process pool there, a
    thread here (this file's modules are not importable by a child process); the
    return is used as is (rlvr.py L135, L176)."""
    row = {k: v for k, v in columns(sample).items() if k not in ID_COLUMNS}
    turns = prompt_turns(sample)
    row["messages"] = turns if turns is not None else [{"role": "user", "content": sample["prompt"]}]
    input_tokens = sample.get("prompt_ids", sample.get("input_tokens"))
    output_tokens = sample.get("completion_ids", sample.get("output_tokens"))
    args = (template.prompt(sample), completion_text(sample), input_tokens, output_tokens)

    async def call():
        loop = asyncio.get_running_loop()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            future = loop.run_in_executor(pool, functools.partial(fn, *args, **row))
            return await asyncio.wait_for(future, timeout=15)

    return asyncio.run(call())


def areal_countdown_score(fn, sample, template):
    """AReaL's countdown example (examples/countdown/train.py L33-66): no reward
    wrapper; `reward = compute_score(completions_str, data)` in the event loop,
    positional, data the JSONL row {query, target, numbers} (countdown.py L359-371:
    `query` is the chat-templated prompt), completions_str the decoded generation; read
    as float(reward)."""
    data = {"query": template.prompt(sample), **columns(sample)}
    return float(fn(completion_text(sample), data))


def load_easyr1(root, entry):
    """EasyR1 AutoRewardManager (verl/workers/reward/function.py L117-133): the file is
    loaded by path under the module name `custom_reward_fn` (so a file called math.py
    does not stand in for the standard library's), REWARD_TYPE read from it (default
    "batch"), and the function bound with partial(fn, **reward_function_kwargs)."""
    path, name = entry["function"].split("::", 1)
    spec = importlib.util.spec_from_file_location("custom_reward_fn", os.path.join(root, path))
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_reward_fn"] = module
    spec.loader.exec_module(module)
    fn = functools.partial(getattr(module, name), **entry.get("kwargs", {}))
    return fn, getattr(module, "REWARD_TYPE", "batch")


def easyr1_rows(fn, reward_type, batch):
    """EasyR1 compute_reward_batch / compute_reward_sequential (function.py L49-104):
    each sample is {"response": decode(valid response ids, skip_special_tokens=True),
    "response_length": the count of response tokens, "ground_truth":
    non_tensor_batch["ground_truth"][i]} -- the dataset's answer_key column, `answer`
    by default (verl/utils/dataset.py L103, L313). "batch": one call with the list;
    "sequential": one call per dict. score["overall"] is the token-level reward
    (L67, L100); every key is logged as reward/KEY (L68-69, L101-102): here `overall`
    is the score and the other keys the metrics (SPEC §3)."""
    inputs = [{"response": completion_text(s), "response_length": s.get("response_length"),
               "ground_truth": s.get("answer")} for _, s in batch]
    if reward_type == "batch":
        scores = fn(inputs)
    else:
        scores = [fn(one_input) for one_input in inputs]
    return [(float(d["overall"]), {k: float(v) for k, v in d.items() if k != "overall"}) for d in scores]


def swift_rows(instance, batch):
    """ms-swift compute_rewards_per_func (swift/rl_core/grpo_algorithm.py L45-67):
    completions = [s.messages[-1]["content"]] (the generated reply's text); the keywords
    are trainer_state (the trainer's TrainerState, L48) and
    RowPreprocessor.rows_to_batched of each sample's to_reward_row()
    (swift/dataset/preprocessor/core.py L131-141, swift/rl_core/data.py L128-148): the
    conversation `messages` with the reply, and every dataset column (`extra`), each a
    list over the batch (a row without a key gets None there). Rollout bookkeeping
    (prompt_id, request_id, finish_reason, ...) is passed too; no sample here carries
    it and no reward reads it. The call is instance(completions, **kwargs); a None
    reward becomes NaN (L66)."""
    from transformers.trainer_callback import TrainerState

    rows = []
    for _, s in batch:
        row = {"messages": (prompt_turns(s) or [{"role": "user", "content": s["prompt"]}]) + completion_turns(s)}
        row.update(columns(s))
        rows.append(row)
    batched = {}
    for i, row in enumerate(rows):  # rows_to_batched
        for k, v in row.items():
            batched.setdefault(k, [None] * i).append(v)
        for k in set(batched) - set(row):
            batched[k].append(None)
    completions = [row["messages"][-1]["content"] for row in rows]
    out = instance(completions, trainer_state=TrainerState(), **batched)
    return [None if r is None else float(r) for r in out]


@dataclasses.dataclass
class SlimeSample:
    """slime.utils.types.Sample's fields used by rewards (slime/utils/types.py
    L93-150), with its defaults; slime itself needs torch, so its class is replayed."""

    group_index: object = None
    index: object = None
    prompt: object = ""
    tokens: list = dataclasses.field(default_factory=list)
    response: str = ""
    response_length: int = 0
    label: object = None
    reward: object = None
    loss_mask: object = None
    metadata: dict = dataclasses.field(default_factory=dict)

    class Status(enum.Enum):
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    status: Status = Status.PENDING


def slime_sample(i, sample, args, template):
    """slime's Dataset (slime/utils/data.py L232-276): prompt = the data's prompt, or
    with --apply-chat-template tokenizer.apply_chat_template(messages, tokenize=False,
    add_generation_prompt=True) (L234-255; a string prompt becomes one user turn first,
    _build_messages L142-150); label = data[--label-key] (L272); metadata =
    data.get("metadata") or {} (L237). The rollout then fills response (the generated
    text), response_length (its token count: the sample's column) and status COMPLETED."""
    turns = prompt_turns(sample)
    if getattr(args, "apply_chat_template", False):
        if turns is None:
            sample = dict(sample, prompt=[{"role": "user", "content": sample["prompt"]}])
        prompt = template.prompt(sample)
    else:
        prompt = sample["prompt"] if turns is None or not is_chat(sample) else turns
    return SlimeSample(group_index=sample.get("group_index"), index=i, prompt=prompt,
                       response=completion_text(sample), response_length=sample.get("response_length") or 0,
                       label=sample.get("label"), metadata=sample.get("metadata") or {},
                       status=SlimeSample.Status.COMPLETED)


def slime_value(args, reward):
    """Sample.get_reward_value (types.py L246-247): the reward, or reward[args.reward_key]."""
    key = getattr(args, "reward_key", None)
    return float(reward if not key else reward[key])


def slime_rows(how, fn, batch, args, template):
    """slime rm_hub (slime/rollout/rm_hub/__init__.py): a custom reward is awaited as
    `await fn(args, sample)` (async_rm, L61-63; called per sample in
    slime/rollout/sglang_rollout.py L287); with --group-rm `await fn(args, samples)`
    once per group (batched_async_rm L104-107, called per group in
    slime/rollout/sglang_rollout.py L330-332); --rm-type f1 is
    `f1_score(sample.response, sample.label)[0]` (L83-84)."""
    samples_ = [slime_sample(i, s, args, template) for i, s in batch]
    if how == "slime-group":
        return [slime_value(args, r) for r in asyncio.run(fn(args, samples_))]
    if how == "slime-rm-f1":
        return [float(fn(s.response, s.label)[0]) for s in samples_]
    return [slime_value(args, asyncio.run(fn(args, s))) for s in samples_]


def skyrl_score(fn, sample):
    """skyrl-gym (skyrl_gym/envs/gsm8k/env.py L14-25): the env is built with the row's
    extras (every column but prompt and env_class, skyrl/train/dataset/dataset.py
    L86-94), ground_truth = extras["reward_spec"]["ground_truth"]; step(action) returns
    compute_score(action, ground_truth) positionally, action the turn's generated text
    (skyrl_gym_generator.py L413, L447), run in a thread pool
    (skyrl_gym_generator.py L172-177, L226-231); the reward is used as is (L450)."""
    ground_truth = sample["reward_spec"]["ground_truth"]
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return float(pool.submit(fn, completion_text(sample), ground_truth).result())


# ---------------------------------------------------------------- the long tail

def open_instruct_rows(cls, batch, args):
    """open-instruct (open_instruct/ground_truth_utils.py @ e6c3044a):
    build_all_verifiers (L1188-1210) builds each verifier once,
    `subclass(subclass.get_config_class().from_args(args, streaming_config))`, its
    config's fields taken by name from the trainer's args (VerifierConfig.from_args,
    L57-74); apply_verifiable_reward (L1247-1300) then awaits, for each response,
    `reward_func.async_call(tokenized_prediction=..., prediction=..., label=gt,
    query=query, rollout_state=rollout_state)` all together (asyncio.gather) and reads
    `result.score if hasattr(result, "score") else result` (the verification_reward
    multiplier and the verifier's weight come after: the workspace's [training], not
    the call). tokenized_prediction is the response's token ids (result.responses,
    vllm_utils.py compute_rewards), prediction its decoded text, label the ground
    truth (a string label stays one), query the dataset's raw prompt, "role: content"
    lines joined by newlines (dataset_transformation.py L1648, RAW_PROMPT_KEY);
    rollout_state is the step's ({} outside tool environments: no verifier here reads
    it)."""
    instance = cls(cls.get_config_class().from_args(args))

    def query(sample):
        return "\n".join("%s: %s" % (m["role"], m["content"]) for m in prompt_turns(sample))

    async def score_all():
        tasks = [
            instance.async_call(
                tokenized_prediction=s.get("completion_ids"),
                prediction=completion_text(s),
                label=s["ground_truth"],
                query=query(s),
                rollout_state={},
            )
            for _, s in batch
        ]
        return await asyncio.gather(*tasks)

    results = asyncio.run(score_all())
    return [float(r.score if hasattr(r, "score") else r) for r in results]


def nemo_response(sample):
    """NeMo-RL's environments (MathEnvironment.step, VLMEnvironment.step): the
    assistant turns' contents of the message log, joined."""
    return "".join(str(m["content"]) for m in completion_turns(sample) if m["role"] == "assistant")


def nemo_math_score(verify_func, sample):
    """NeMo-RL HFVerifyWorker.verify (nemo_rl/environments/math_environment.py @
    7ea279ab): `ground_truth_parsable = "\\boxed{" + ground_truth + "}"`,
    `ret_score, extracted_answer = self.verify_func([ground_truth_parsable],
    [response])`, `score = float(ret_score)`, all in a try whose
    `except (Exception, TimeoutException)` scores 0.0. (score, whether it raised)."""
    try:
        ret_score, _ = verify_func(["\\boxed{" + sample["ground_truth"] + "}"], [nemo_response(sample)])
        return float(ret_score), False
    except Exception:
        return 0.0, True


def nemo_vlm_score(verify_func, sample):
    """NeMo-RL VLMVerifyWorker.verify (nemo_rl/environments/vlm_environment.py @
    7ea279ab): `ret_score, _ = self.verify_func(ground_truth, response)` in a try
    whose except scores 0.0, then `float(ret_score)`."""
    try:
        ret_score, _ = verify_func(sample["ground_truth"], nemo_response(sample))
        return float(ret_score), False
    except Exception:
        return 0.0, True


def nemo_math_worker_rows(cls, batch, impl):
    """NeMo-RL MathEnvironment.step (math_environment.py @ 7ea279ab): the verify
    worker is built once (`worker_cls.options(...).remote()`, no arguments) and each
    chunk of the batch goes to `worker.verify.remote(chunk, ground_truth_chunk,
    return_extracted_answer, math_verify_impl=cfg["math_verify_impl"])`, the
    results flattened in order (one chunk here: a worker's scores are per sample)."""
    worker = cls()
    responses = [nemo_response(s) for _, s in batch]
    truths = [s["ground_truth"] for _, s in batch]
    return [float(v) for v in worker.verify(responses, truths, False, math_verify_impl=impl)]


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
        if how == "easyr1":
            fn, reward_type = load_easyr1(root, entry)
        else:
            fn = load(root, entry["function"])
        template = template_for(root, config, entry)
        rows = []  # (sample, score, metrics)
        warned = set()  # samples whose call raised and the trainer scored anyway
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
            elif how == "areal":
                rows = [(i, float(areal_score(fn, s, template)), None) for i, s in data]
            elif how == "areal-countdown":
                rows = [(i, areal_countdown_score(fn, s, template), None) for i, s in data]
            elif how == "skyrl":
                rows = [(i, skyrl_score(fn, s), None) for i, s in data]
            elif how in ("easyr1", "swift", "slime", "slime-group", "slime-rm-f1"):
                args = trainer_args(config, entry)
                if how == "swift":
                    # swift/rlhf_trainers/grpo_trainer.py L2206-2209: built once, Class(args=args)
                    fn = fn(args=args)
                per_sample = how in ("slime", "slime-rm-f1") or (how == "easyr1" and reward_type != "batch")
                size = 1 if per_sample else entry["batch_size"]
                for start in range(0, len(data), size):
                    batch = data[start : start + size]
                    if how == "easyr1":
                        rows += [(i, v, m) for (i, _), (v, m) in zip(batch, easyr1_rows(fn, reward_type, batch))]
                    elif how == "swift":
                        rows += [(i, v, None) for (i, _), v in zip(batch, swift_rows(fn, batch))]
                    else:
                        rows += [(i, v, None) for (i, _), v in zip(batch, slime_rows(how, fn, batch, args, template))]
            elif how == "open-instruct":
                # the verifier config's fields are among the trainer's args
                args = argparse.Namespace(**vars(trainer_args(config, entry))["verifier_config"])
                rows = [(i, v, None) for (i, _), v in zip(data, open_instruct_rows(fn, data, args))]
            elif how in ("nemo-math", "nemo-vlm"):
                score = nemo_math_score if how == "nemo-math" else nemo_vlm_score
                for i, s in data:
                    value, raised = score(fn, s)
                    rows.append((i, value, None))
                    if raised:
                        warned.add(i)
            elif how == "nemo-math-worker":
                size = entry["batch_size"]
                impl = entry.get("kwargs", {}).get("math_verify_impl", "hf_math_verify")
                for start in range(0, len(data), size):
                    batch = data[start : start + size]
                    rows += [(i, v, None) for (i, _), v in zip(batch, nemo_math_worker_rows(fn, batch, impl))]
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
            if i in warned:
                line["warned"] = True
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
