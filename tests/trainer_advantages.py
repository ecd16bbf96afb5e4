"""Advantages as TRL and veRL compute them, recomputed with torch for tests/training.rs.

Written for rwb's tests (no trainer code is copied here): each function repeats the
tensor operations of the trainer's own code, read from
  - huggingface/trl v1.8.0 (95809b942eb5d11d0b06d749510d88be99230b73), the same at
    main f2cd57710ae345ea6428ae95363267fcf38a3dc8: trl/trainer/grpo_trainer.py
    (`_calculate_rewards`, `_generate_and_score_completions`), trl/trainer/utils.py
    (`nanstd`), trl/trainer/rloo_trainer.py;
  - volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7:
    verl/trainer/ppo/core_algos.py (`compute_grpo_outcome_advantage`,
    `compute_rloo_outcome_advantage`).

TRL works on `rewards.view(-1, num_generations)`: groups of one size, next to each
other. rwb's groups come from the data, so each group is taken as TRL takes one row of
that view (its own `num_generations`), and TRL's whole-batch steps run over one batch
(a `step`, or the whole run).

Reads a JSON list on stdin, each item
  {"dtype": "float64" | "float32", "trainer": "trl" | "verl",
   "algorithm": "grpo" | "dr-grpo" | "rloo", "scale_rewards": "group" | "batch" | "none",
   "multi_objective_aggregation": "sum_then_normalize" | "normalize_then_sum",
   "norm_adv_by_std_in_grpo": true, "weights": [w, ...],
   "scores": [[score or null per evaluator], ...], "groups": [label per sample],
   "batches": [label per sample]}
and prints a list of {"rewards": [...], "advantages": [...]} (null where there is
none), one per item.
"""

import json
import sys
from collections import defaultdict

import torch


def nanstd(tensor, dim=None, keepdim=False):
    """TRL's nanstd: the unbiased std ignoring NaN (its Bessel correction is an integer
    division, so it is computed in torch's default float32)."""
    if dim is None:
        mean = torch.nanmean(tensor)
        variance = torch.nanmean((tensor - mean) ** 2)
        count = torch.sum(~torch.isnan(tensor))
    else:
        mean = torch.nanmean(tensor, dim=dim, keepdim=True)
        variance = torch.nanmean((tensor - mean) ** 2, dim=dim, keepdim=True)
        count = torch.sum(~torch.isnan(tensor), dim=dim, keepdim=True)
    correction = count / (count - 1)
    correction = torch.where(count > 1, correction, torch.full_like(correction, float("nan")))
    variance = variance * correction
    std = torch.sqrt(variance)
    if keepdim or dim is None:
        return std
    return std.squeeze(dim)


def trl(rewards_per_func, weights, groups, scale_rewards, aggregation, algorithm):
    """One batch of TRL: rewards_per_func is (B, F) with NaN for None; groups is a list
    of index tensors. Returns (logged rewards, advantages)."""
    if algorithm == "dr-grpo":
        scale_rewards = "none"
    unscorable_mask = torch.isnan(rewards_per_func).all(dim=1)
    logged = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
    logged[unscorable_mask] = torch.nan
    if algorithm == "rloo":
        rewards = logged.clone()
        advantages = torch.empty_like(rewards)
        for idx in groups:
            n = len(idx)
            grouped_rewards = rewards[idx].view(-1, n)
            scorable_counts = (~torch.isnan(grouped_rewards)).sum(dim=1, keepdim=True)
            grouped_sum = torch.nansum(grouped_rewards, dim=1, keepdim=True)
            if n > 1:
                baselines = (grouped_sum - grouped_rewards) / (scorable_counts - 1)
                advantages[idx] = rewards[idx] - baselines.view(-1)
            else:
                advantages[idx] = torch.zeros_like(rewards[idx])
        return logged, torch.nan_to_num(advantages, nan=0.0)
    if aggregation == "sum_then_normalize":
        rewards = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
        rewards[unscorable_mask] = torch.nan
        if scale_rewards == "batch":
            if rewards.numel() > 1:
                batch_std = nanstd(rewards).expand_as(rewards)
            else:
                batch_std = torch.zeros_like(rewards)
        advantages = torch.empty_like(rewards)
        for idx in groups:
            n = len(idx)
            group = rewards[idx]
            mean_grouped_rewards = torch.nanmean(group.view(-1, n), dim=1)
            mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(n, dim=0)
            if scale_rewards in ["group", "none"]:
                if n > 1:
                    std_rewards = nanstd(group.view(-1, n), dim=1)
                    std_rewards = std_rewards.repeat_interleave(n, dim=0)
                else:
                    std_rewards = torch.zeros_like(group)
            else:
                std_rewards = batch_std[idx]
            adv = group - mean_grouped_rewards
            if scale_rewards != "none":
                adv = adv / (std_rewards + 1e-4)
            advantages[idx] = adv
    else:
        k = rewards_per_func.shape[1]
        reward_k = torch.empty_like(rewards_per_func)
        for idx in groups:
            n = len(idx)
            grouped = rewards_per_func[idx].view(-1, n, k)
            mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
            std_k = nanstd(grouped, dim=1, keepdim=True) if n > 1 else torch.zeros_like(mean_k)
            reward_k[idx] = ((grouped - mean_k) / (std_k + 1e-4)).view(-1, k)
        rewards = (reward_k * weights.unsqueeze(0)).nansum(dim=1)
        rewards[unscorable_mask] = torch.nan
        std_rewards = nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
        advantages = (rewards - torch.nanmean(rewards)) / (std_rewards + 1e-4)
    return logged, torch.nan_to_num(advantages, nan=0.0)


def verl(scores, index, algorithm, norm_adv_by_std_in_grpo):
    """veRL's outcome advantages of scorable samples: scores (bs,), index a list of group
    labels. The reward sits on the response's last token, as veRL's reward managers put it."""
    token_level_rewards = torch.zeros(scores.shape[0], 3, dtype=scores.dtype)
    token_level_rewards[:, -1] = scores
    response_mask = torch.ones_like(token_level_rewards)
    scores = token_level_rewards.sum(dim=-1)
    id2score = defaultdict(list)
    id2mean = {}
    id2std = {}
    bsz = scores.shape[0]
    for i in range(bsz):
        id2score[index[i]].append(scores[i])
    if algorithm == "rloo":
        for idx in id2score:
            if len(id2score[idx]) == 1:
                id2mean[idx] = torch.tensor(0.0)
            else:
                id2mean[idx] = torch.mean(torch.stack(id2score[idx]))
        for i in range(bsz):
            response_num = len(id2score[index[i]])
            if response_num > 1:
                scores[i] = scores[i] * response_num / (response_num - 1) - id2mean[index[i]] * response_num / (
                    response_num - 1
                )
    else:
        for idx in id2score:
            if len(id2score[idx]) == 1:
                id2mean[idx] = torch.tensor(0.0)
                id2std[idx] = torch.tensor(1.0)
            else:
                scores_tensor = torch.stack(id2score[idx])
                id2mean[idx] = torch.mean(scores_tensor)
                id2std[idx] = torch.std(scores_tensor)
        for i in range(bsz):
            if norm_adv_by_std_in_grpo:
                scores[i] = (scores[i] - id2mean[index[i]]) / (id2std[index[i]] + 1e-6)
            else:
                scores[i] = scores[i] - id2mean[index[i]]
    return (scores.unsqueeze(-1) * response_mask)[:, -1]


def main():
    specs = json.load(sys.stdin)
    json.dump([compute(spec) for spec in specs], sys.stdout)


def compute(spec):
    dtype = {"float64": torch.float64, "float32": torch.float32}[spec["dtype"]]
    n = len(spec["scores"])
    nan = float("nan")
    values = [[nan if x is None else x for x in row] for row in spec["scores"]]
    rewards = [None] * n
    advantages = [None] * n
    if spec["trainer"] == "trl":
        # TRL keeps its reward weights in float32 whatever the rewards' dtype
        weights = torch.tensor(spec["weights"], dtype=torch.float32)
        batches = defaultdict(list)
        for i, b in enumerate(spec["batches"]):
            batches[b].append(i)
        for members in batches.values():
            rows = torch.tensor([values[i] for i in members], dtype=dtype)
            local = defaultdict(list)
            for j, i in enumerate(members):
                local[spec["groups"][i]].append(j)
            groups = [torch.tensor(idx, dtype=torch.long) for idx in local.values()]
            logged, adv = trl(
                rows,
                weights,
                groups,
                spec["scale_rewards"],
                spec["multi_objective_aggregation"],
                spec["algorithm"],
            )
            for j, i in enumerate(members):
                r = logged[j].item()
                rewards[i] = None if r != r else r
                advantages[i] = adv[j].item()
    else:
        weights = spec["weights"]
        combined = [sum(w * x for w, x in zip(weights, row)) for row in values]
        scorable = [i for i in range(n) if combined[i] == combined[i]]
        scores = torch.tensor([combined[i] for i in scorable], dtype=dtype)
        index = [spec["groups"][i] for i in scorable]
        adv = verl(scores, index, spec["algorithm"], spec["norm_adv_by_std_in_grpo"])
        for j, i in enumerate(scorable):
            rewards[i] = combined[i]
            advantages[i] = adv[j].item()
    return {"rewards": rewards, "advantages": advantages}


if __name__ == "__main__":
    main()
