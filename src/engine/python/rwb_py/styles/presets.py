"""How every trainer calls a reward function, in one table (SPEC §3).

Each 2026 framework is a call description (described.py: positional and keyword
sources, one sample or one batch a call, where the score is) plus, where its code
does something no description says, a named special case: ms-swift constructs a
class first, slime hands its own `Sample` and reads a dict through `reward_key`,
verifiers 1.x scores a Task on a trace. The trainers rwb followed before the table
existed (TRL, Tunix, veRL, OpenRLHF, verifiers' rubrics, reward-kit) keep their own
Caller modules; their rows here say which, so the table still answers "how does
trainer X call my function" for every trainer.

A row's sources are described.SOURCES names (or columns); `special` names the extra
step in SPECIALS. The code each row follows is cited beside it; the facts in full are
in tests/corpus/TRAINERS.md.
"""

import collections

Preset = collections.namedtuple("Preset", ("style", "call", "special", "follows"))

PRESETS = {
    # AReaL RLVRWorkflow.arun_episode -> AsyncRewardWrapper (rlvr.py L101-107 at
    # inclusionAI/AReaL 4aef98d8): positionally prompt_str (the templated prompt as
    # decoded, special tokens kept), completions_str, input_tokens, output_tokens,
    # then the whole data row as keywords (its `messages` are the prompt turns).
    "areal": Preset(
        "areal",
        {"args": ["prompt", "response", "prompt_ids", "completion_ids"], "spread": "areal_row"},
        None,
        "inclusionAI/AReaL areal/workflow/rlvr.py, areal/api/reward_api.py",
    ),
    # EasyR1 AutoRewardManager (verl/workers/reward/function.py at hiyouga/EasyR1
    # b44b311b): the module's REWARD_TYPE, "batch" by default: one list of dicts a
    # batch, each {response, response_length, ground_truth (the answer_key column)};
    # each returned dict's `overall` is the score, every key a logged metric.
    "easyr1": Preset(
        "easyr1",
        {
            "args": [{"response": "response", "response_length": "response_length", "ground_truth": "easyr1_ground_truth"}],
            "per": "batch",
            "score": ["overall"],
        },
        None,
        "hiyouga/EasyR1 verl/workers/reward/function.py, AutoRewardManager.compute_reward_batch",
    ),
    # EasyR1 SequentialFunctionRewardManager: one dict a call.
    "easyr1-sequential": Preset(
        "easyr1-sequential",
        {
            "args": [{"response": "response", "response_length": "response_length", "ground_truth": "easyr1_ground_truth"}],
            "score": ["overall"],
        },
        None,
        "hiyouga/EasyR1 verl/workers/reward/function.py, AutoRewardManager.compute_reward_sequential",
    ),
    # ms-swift: an ORM class built once with the trainer's args, the instance called
    # per batch as swift/rl_core/grpo_algorithm.py compute_rewards_per_func calls it
    # (modelscope/ms-swift 3602360a): `reward_func(completions, **reward_kwargs)`,
    # completions each sample's last message's content, reward_kwargs trainer_state
    # and rows_to_batched over GRPOSample.to_reward_row() (its `messages`, the whole
    # conversation, and every dataset column).
    "swift": Preset(
        "swift",
        {
            "args": ["response"],
            "keywords": {"trainer_state": "trainer_state", "messages": "messages"},
            "columns": True,
            "per": "batch",
        },
        "construct",
        "modelscope/ms-swift swift/rewards/orm.py, GRPOTrainer._compute_rewards_per_func",
    ),
    # slime async_rm: `await fn(args, sample)`, a number or a dict read through
    # args.reward_key.
    "slime": Preset(
        "slime",
        {"args": ["trainer_args", "slime_sample"]},
        "slime",
        "THUDM/slime slime/rollout/rm_hub/__init__.py (async_rm), slime/utils/types.py",
    ),
    # slime batched_async_rm with --group-rm: `await fn(args, samples)` once a group.
    "slime-group": Preset(
        "slime-group",
        {"args": ["trainer_args", "slime_sample"], "per": "batch"},
        "slime",
        "THUDM/slime slime/rollout/rm_hub/__init__.py (batched_async_rm)",
    ),
    # SkyRL gym: an environment's `compute_score(action, ground_truth)`, by position,
    # action the turn's completion text, the ground truth the row's
    # reward_spec.ground_truth (skyrl_gym/envs/gsm8k/env.py at NovaSky-AI/SkyRL a9564572).
    "skyrl": Preset(
        "skyrl",
        {"args": ["response", "ground_truth"]},
        None,
        "NovaSky-AI/SkyRL skyrl-gym skyrl_gym/envs/*/env.py",
    ),
    # The trainers with a Caller module of their own.
    "trl": Preset("trl", None, "module", "styles/trl.py"),
    "tunix": Preset("tunix", None, "module", "styles/tunix.py"),
    "verl": Preset("verl", None, "module", "styles/verl.py"),
    "openrlhf": Preset("openrlhf", None, "module", "styles/openrlhf.py"),
    "verifiers": Preset("verifiers", None, "module", "styles/verifiers.py, styles/task.py (1.x tasks)"),
    "reward-kit": Preset("reward-kit", None, "module", "styles/reward_kit.py"),
}


def preset_of_style(style):
    """The preset whose style is `style`, or None."""
    for preset in PRESETS.values():
        if preset.style == style and preset.call is not None:
            return preset
    return None
