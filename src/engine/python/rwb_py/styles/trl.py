"""TRL's style: `f(prompts=, completions=, **columns) -> list[float | None]`, one call
per batch of consecutive samples; None for a sample is "no score".

Beside the columns, GRPOTrainer._calculate_rewards passes every reward function
`trainer_state` (the trainer's `TrainerState`, TRL >= 0.20), `log_extra(column,
values)` and `log_metric(name, value)` (TRL >= 1.0): trl/trainer/grpo_trainer.py
L1612-1627 at huggingface/trl f2cd5771, see tests/corpus/TRAINERS.md. rwb passes a
TrainerState with the step it knows and records what the function logs: each
`log_extra` column, which TRL writes into its completions table beside the sample,
and each `log_metric` value, which TRL averages into its logged metrics, become
metrics of the batch's rows (README, "What TRL functions log").
"""

import json
import math
import numbers

from ..results import NO_SCORE
from .calling import Batched, _filter_kwargs
from .samples import STEP, batch_columns, parts


NAME = "trl"


def detect(seen):
    """It declares `completions`, and `prompts` or no `messages`; or, as TRL's factory
    callables (soft overlong punishment, token repetition penalty), `completion_ids`
    and none of the other styles' names."""
    names, var_kw = seen.names, seen.var_kw
    others = {"messages", "solution_str", "response", "queries", "completion", "rollouts_messages"}
    if "completion_ids" in names and "completions" not in names and not names & others:
        return "%s completion_ids%s (a TRL reward callable over token ids)" % (
            seen.what,
            ", **kwargs" if var_kw else "",
        )
    if "completions" in names and ("prompts" in names or "messages" not in names):
        parts = [p for p in ("prompts", "completions") if p in names] + (["**kwargs"] if var_kw else [])
        declared = " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else parts[0]
        if "messages" not in names:
            declared += ", no messages"
        return "%s %s (TRL's reward function signature)" % (seen.what, declared)
    return None


class Caller(Batched):
    style = NAME
    none_is_no_score = True

    def __init__(self, fn, extra_kwargs, spec):
        Batched.__init__(self, fn, extra_kwargs, spec)
        # what the batch being scored logged (one batch at a time per worker)
        self.log = Log(0)

    def arguments(self, samples):
        # in the sample's own form, as TRL passes its dataset's: strings for the
        # standard format, message lists for conversational and chat samples
        each = [parts(s) for s in samples]
        kwargs = dict(self.extra)
        kwargs.update(batch_columns(samples, each))
        kwargs["prompts"] = [p.prompt for p in each]
        kwargs["completions"] = [p.completion for p in each]
        self.log = Log(len(samples))
        kwargs["trainer_state"] = trainer_state(samples, self.extra.get("trainer_state"))
        kwargs["log_extra"] = self.log.extra
        kwargs["log_metric"] = self.log.metric
        return _filter_kwargs(kwargs, self.accepted)

    def results(self, value, count):
        out = Batched.results(self, value, count)
        log, self.log = self.log, Log(0)
        return log.onto(out)


class TrainerState:
    """transformers' TrainerState (transformers/trainer_callback.py, a dataclass; its
    fields and defaults as of transformers 5.24), holding what rwb knows of the step a
    sample was generated at. Compared by its fields, so a copy equals it."""

    FIELDS = (
        ("epoch", 0),
        ("global_step", 0),
        ("max_steps", 0),
        ("logging_steps", 500),
        ("eval_steps", 500),
        ("save_steps", 500),
        ("train_batch_size", None),
        ("num_train_epochs", 0),
        ("num_input_tokens_seen", 0),
        ("total_flos", 0),
        ("log_history", None),
        ("best_metric", None),
        ("best_global_step", None),
        ("best_model_checkpoint", None),
        ("is_local_process_zero", True),
        ("is_world_process_zero", True),
        ("is_hyper_param_search", False),
        ("trial_name", None),
        ("trial_params", None),
        ("stateful_callbacks", None),
    )

    def __init__(self, **values):
        for name, default in self.FIELDS:
            setattr(self, name, values.pop(name, default))
        for name, value in values.items():
            setattr(self, name, value)
        if self.log_history is None:
            self.log_history = []
        if self.stateful_callbacks is None:
            self.stateful_callbacks = {}

    def __eq__(self, other):
        return type(other) is TrainerState and vars(self) == vars(other)

    def __repr__(self):
        return "TrainerState(%s)" % ", ".join("%s=%r" % item for item in vars(self).items())


def trainer_state(samples, configured):
    """The TrainerState of a call over `samples`: `configured` (the evaluator's
    `kwargs.trainer_state` table in rwb.toml) over the defaults, and `global_step`
    and `epoch` from the step and epoch the samples' source logged (the first sample
    that has them; TRL calls once per step, so a batch is one step's)."""
    values = dict(configured) if isinstance(configured, dict) else {}
    for sample in samples:
        known = sample.get(STEP)
        if isinstance(known, dict):
            if isinstance(known.get("step"), int):
                values["global_step"] = known["step"]
            if isinstance(known.get("epoch"), int):
                values["epoch"] = float(known["epoch"])
            break
    return TrainerState(**values)


class Log:
    """What one call logged through `log_extra` and `log_metric`, read onto the
    batch's results by `onto`."""

    def __init__(self, count):
        self.count = count
        self.columns = {}
        self.metrics = {}
        self.extra = Logger(self._extra)
        self.metric = Logger(self._metric)

    def _extra(self, column, values):
        """TRL's `log_extra(column: str, values: list)`: one value per sample of the
        batch, a column of the completions table. The last call for a column wins,
        as the last values are what TRL's table keeps."""
        self.columns[str(column)] = list(values)

    def _metric(self, name, value):
        """TRL's `log_metric(name: str, value: float)`: one number for the batch;
        several calls are averaged, as TRL averages a logging step's values."""
        self.metrics.setdefault(str(name), []).append(value)

    def onto(self, results):
        """`results` (one per sample; None for no score) with the logged values as
        metrics: each extra column's value for that sample, and each metric's mean."""
        if not self.columns and not self.metrics:
            return results
        shared = {name: _batch_metric(values) for name, values in self.metrics.items()}
        out = []
        for i, result in enumerate(results):
            result = dict(NO_SCORE if result is None else result)
            metrics = dict(result["metrics"])
            for name, metric in shared.items():
                metrics.setdefault(name, metric)
            for name, values in self.columns.items():
                if i < len(values):
                    metrics.setdefault(name, _logged(values[i]))
            result["metrics"] = metrics
            out.append(result)
        return out


class Logger:
    """A logging callable handed to the user's function. It is the same object in a
    copy of the arguments (rwb's contract checks compare the arguments before and
    after the call: logging is no change to the input)."""

    __slots__ = ("_call",)

    def __init__(self, call):
        self._call = call

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


def _number(value):
    """A finite float of a number, numpy scalar or one-element tensor; else None."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, (list, tuple, dict, str)):
        try:
            value = item()
        except Exception:
            return None
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else None
    return None


def _logged(value):
    """One logged value as a metric: a finite number is its score; anything else
    (a string, None, NaN, a list) has no score and is written out as its reason."""
    score = _number(value)
    if score is not None:
        return {"score": score, "is_score_valid": True, "reason": None}
    if value is None:
        reason = None
    elif isinstance(value, str):
        reason = value
    else:
        try:
            reason = json.dumps(value, ensure_ascii=False, allow_nan=True, default=repr)
        except (TypeError, ValueError):
            reason = repr(value)
    return {"score": None, "is_score_valid": False, "reason": reason}


def _batch_metric(values):
    """A log_metric name's values in one call: their mean (TRL's `sum / len`)."""
    numbers_ = [_number(v) for v in values]
    if numbers_ and all(n is not None for n in numbers_):
        return {"score": sum(numbers_) / len(numbers_), "is_score_valid": True, "reason": None}
    return _logged(values[0] if len(values) == 1 else values)
