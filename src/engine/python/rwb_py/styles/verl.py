"""veRL's style: `compute_score(data_source, solution_str, ground_truth, extra_info)`,
one call per sample; a dict return's keys other than `score` are its metrics.
"""

from ..results import _as_result, _number
from .calling import Pointwise, Swallowed, _filter_kwargs
from .samples import as_text, parts, templated_prompt


NAME = "verl"


def detect(seen):
    """It declares `solution_str` (or DeepScaleR's `llm_solution`)."""
    if "solution_str" in seen.names:
        return "%s solution_str (veRL's compute_score signature)" % seen.what
    if "llm_solution" in seen.names:
        return "%s llm_solution (DeepScaleR's veRL compute_score signature)" % seen.what
    return None


class Caller(Pointwise):
    style = NAME
    direct = False

    def __init__(self, fn, extra_kwargs, spec):
        Pointwise.__init__(self, fn, extra_kwargs, spec)
        # veRL: "response", or "prompt+response" as older veRL (TinyZero) decodes it
        self.with_prompt = (spec.get("solution_str") or "response") == "prompt+response"
        self.template = spec.get("chat_template") or "chatml"
        # DeepScaleR's fork names the argument llm_solution
        self.solution_key = "llm_solution" if "llm_solution" in self.accepted[0] else "solution_str"
        if spec.get("trainer") == "verl":
            self.extra = dict(self.extra, **sandbox_fusion_arguments(self.accepted[0], self.extra))


    def arguments(self, sample):
        ground_truth = sample.get("ground_truth")
        reward_model = sample.get("reward_model")
        if ground_truth is None and isinstance(reward_model, dict):
            ground_truth = reward_model.get("ground_truth")
        solution = as_text(parts(sample).completion)
        if self.with_prompt:
            solution = templated_prompt(sample, self.template) + solution
        kwargs = dict(self.extra)
        kwargs.update(
            data_source=sample.get("data_source"),
            ground_truth=ground_truth,
            extra_info=sample.get("extra_info"),
        )
        kwargs[self.solution_key] = solution
        return _filter_kwargs(kwargs, self.accepted)

    def result(self, value):
        if type(value) is Swallowed:
            return value.result()
        if isinstance(value, dict):
            metrics = {k: _verl_metric(k, v) for k, v in value.items() if k != "score"}
            value = {"score": value.get("score"), "metrics": metrics}
        return _as_result(value, self.strict)
def sandbox_fusion_arguments(declared, given):
    """What veRL's trainer adds to `default_compute_score` when its config has
    `reward_model.sandbox_fusion.url` (verl/trainer/ppo/reward.py): rwb's sandbox
    (SPEC §18) as the URL, a semaphore sized to its slots and its memory limit, for
    the parameters the function declares and the evaluator's kwargs do not set."""
    import os
    import threading

    url = os.environ.get("SANDBOX_FUSION_ENDPOINT")
    if not url:
        return {}
    values = {
        "sandbox_fusion_url": url.rstrip("/") + "/run_code",
        "concurrent_semaphore": threading.Semaphore(int(os.environ.get("RWB_SANDBOX_SLOTS") or 2)),
        "memory_limit_mb": int(os.environ.get("RWB_SANDBOX_MEMORY_MB") or 1024),
    }
    return {k: v for k, v in values.items() if k in declared and k not in given}


def _verl_metric(name, value):
    if isinstance(value, (int, float)):
        return {"score": _number(value, "metric %r" % name), "reason": None}
    return {"score": 0.0, "is_score_valid": False, "reason": repr(value)}
