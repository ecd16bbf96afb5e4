"""veRL's style: `compute_score(data_source, solution_str, ground_truth, extra_info)`,
one call per sample; a dict return's keys other than `score` are its metrics.
"""

from ..results import _as_result, _number
from .calling import Pointwise, Swallowed, _filter_kwargs
from .samples import _last, _prompt_text


NAME = "verl"


def detect(seen):
    """It declares `solution_str`."""
    if "solution_str" in seen.names:
        return "%s solution_str (veRL's compute_score signature)" % seen.what
    return None


class Caller(Pointwise):
    style = NAME
    direct = False

    def __init__(self, fn, extra_kwargs, spec):
        Pointwise.__init__(self, fn, extra_kwargs, spec)
        # veRL: "response", or "prompt+response" as older veRL (TinyZero) decodes it
        self.with_prompt = (spec.get("solution_str") or "response") == "prompt+response"

    def arguments(self, sample):
        messages = sample["messages"]
        ground_truth = sample.get("ground_truth")
        reward_model = sample.get("reward_model")
        if ground_truth is None and isinstance(reward_model, dict):
            ground_truth = reward_model.get("ground_truth")
        solution = _last(messages, "assistant")
        if self.with_prompt:
            solution = _prompt_text(sample) + solution
        kwargs = dict(self.extra)
        kwargs.update(
            data_source=sample.get("data_source"),
            solution_str=solution,
            ground_truth=ground_truth,
            extra_info=sample.get("extra_info"),
        )
        return _filter_kwargs(kwargs, self.accepted)

    def result(self, value):
        if type(value) is Swallowed:
            return value.result()
        if isinstance(value, dict):
            metrics = {k: _verl_metric(k, v) for k, v in value.items() if k != "score"}
            value = {"score": value.get("score"), "metrics": metrics}
        return _as_result(value, self.strict)
def _verl_metric(name, value):
    if isinstance(value, (int, float)):
        return {"score": _number(value, "metric %r" % name), "reason": None}
    return {"score": 0.0, "is_score_valid": False, "reason": repr(value)}
