"""The 2026 frameworks (SPEC §3): how their signatures are recognised, and the
special cases their presets (presets.py) name: ms-swift's class construction and
slime's `Sample` and `reward_key`.
"""

import enum
import inspect

from ..results import InvalidResult, _describe
from .described import BatchCaller, Context, Description, SampleCaller, batch_value, value_of
from .presets import PRESETS
from .samples import TEMPLATED, templated_prompt


# ---------------------------------------------------------------- detection rules


def areal(seen):
    """It declares `prompt_ids` and `completion_ids` (AReaL's reward signature)."""
    if {"prompt_ids", "completion_ids"} <= seen.names and not inspect.isclass(seen.fn):
        return "%s prompt_ids and completion_ids (AReaL's reward function, called positionally)" % seen.what
    return None


def _easyr1_parameter(fn):
    """`reward_inputs` or `reward_input` when that is `fn`'s first parameter, else
    None. EasyR1's AutoRewardManager passes only the inputs and the config's
    `reward_function_kwargs`: the other parameters have defaults (its own
    `compute_score(reward_inputs, format_weight=0.1)`) or come from the evaluator's
    `kwargs` (DAPO's `max_response_length`, …)."""
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        ]
    except (TypeError, ValueError):
        return None
    if not params or params[0].name not in ("reward_inputs", "reward_input"):
        return None
    if params[0].kind is params[0].KEYWORD_ONLY:
        return None
    return params[0].name


def _easyr1(seen, style):
    """It declares `reward_inputs` or `reward_input` first, the rest with defaults
    (EasyR1's reward function), and EasyR1 would call it as `style`."""
    if inspect.isclass(seen.fn) or _easyr1_parameter(seen.fn) is None:
        return None
    if easyr1_style(seen.fn) != style:
        return None
    how = "batch" if style == "easyr1" else "sequential"
    declared = getattr(inspect.getmodule(seen.fn), "REWARD_TYPE", None)
    why = 'its module\'s REWARD_TYPE = "%s"' % declared if declared else "its parameter's name"
    name = _easyr1_parameter(seen.fn)
    return "%s %s first (EasyR1's reward function; %s by %s)" % (seen.what, name, how, why)


def easyr1_batch(seen):
    return _easyr1(seen, "easyr1")


def easyr1_sequential(seen):
    return _easyr1(seen, "easyr1-sequential")


def easyr1_style(fn):
    """How EasyR1 calls `fn`: as its module's REWARD_TYPE says (AutoRewardManager,
    verl/workers/reward/function.py at hiyouga/EasyR1 b44b311b: "batch" by default);
    without one, as its parameter's name suggests."""
    module = inspect.getmodule(fn)
    kind = getattr(module, "REWARD_TYPE", None)
    if kind is None:
        kind = "sequential" if _easyr1_parameter(fn) == "reward_input" else "batch"
    return "easyr1-sequential" if kind == "sequential" else "easyr1"


def _is_task_class(fn):
    from .task import is_task_class

    return is_task_class(fn)


def swift(seen):
    """It is a class (an ms-swift ORM): constructed, never called as a function."""
    if inspect.isclass(seen.fn) and not _is_task_class(seen.fn):
        bases = [b.__name__ for b in inspect.getmro(seen.fn)[1:] if b is not object]
        which = " (a subclass of %s)" % ", ".join(bases) if bases else ""
        return "is a class%s: constructed with the trainer's args and called per batch, as ms-swift does an ORM" % which
    return None


def _leading(fn, count):
    try:
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return []
    return params[:count]


def slime_single(seen):
    """It declares `(args, sample)`: slime's custom reward, awaited per sample."""
    if not inspect.isclass(seen.fn) and _leading(seen.fn, 2) == ["args", "sample"]:
        return "%s (args, sample) (slime's custom reward, awaited per sample)" % seen.what
    return None


def slime_group(seen):
    """It declares `(args, samples)`: slime's group reward, one call per group."""
    if not inspect.isclass(seen.fn) and _leading(seen.fn, 2) == ["args", "samples"]:
        return "%s (args, samples) (slime's group reward, one call per group)" % seen.what
    return None


def slime_style(fn):
    return "slime-group" if _leading(fn, 2) == ["args", "samples"] else "slime"


def by_trainer(seen):
    """`trainer = "areal" | "easyr1" | "swift" | "slime" | "skyrl"` in rwb.toml: the
    function is called as that trainer calls its reward functions (style name, why)."""
    trainer = seen.trainer
    if trainer not in ("areal", "easyr1", "swift", "slime", "skyrl") or _is_task_class(seen.fn):
        return None
    how = ""
    if trainer == "easyr1":
        style = easyr1_style(seen.fn)
        declared = getattr(inspect.getmodule(seen.fn), "REWARD_TYPE", None)
        how = ", %s by %s" % (
            "batch" if style == "easyr1" else "sequential",
            'its module\'s REWARD_TYPE = "%s"' % declared if declared else "its parameter's name",
        )
    elif trainer == "slime":
        style = slime_style(seen.fn)
    else:
        style = trainer
    return style, 'trainer = "%s" in rwb.toml%s (%s)' % (trainer, how, PRESETS[style].follows)


# ---------------------------------------------------------------- callers


def make(fn, style, extra, spec):
    """The Caller of `fn` for a preset style (a key of PRESETS with a call)."""
    preset = PRESETS[style]
    description = Description(preset.call, name=style)
    hint = _HINTS.get(style, "").format(name=spec.get("name") or "NAME") or None
    if preset.special == "construct":
        fn = construct(fn, spec)
    ctx = Context(spec, {"slime_sample": slime_sample} if preset.special == "slime" else None)
    kind = BatchCaller if description.batched else SampleCaller
    caller = kind(fn, extra, spec, description, ctx, hint)
    caller.style = style
    if preset.special == "slime":
        caller.reading = SlimeReading(caller.reading, ctx)
        if description.batched:
            caller.arguments = _slime_group_arguments(caller)
    return caller


_HINTS = {
    "easyr1": "EasyR1 reads each dict's 'overall' as the score: return it, or describe the call with call = {{ ..., score = \"KEY\" }} in [evaluators.{name}]",
    "easyr1-sequential": "EasyR1 reads the dict's 'overall' as the score: return it, or describe the call with call = {{ ..., score = \"KEY\" }} in [evaluators.{name}]",
}


def construct(cls, spec):
    """An ms-swift ORM class built as ms-swift builds it, once per worker:
    `cls(args=args)` with the trainer's args as a namespace (swift/rlhf_trainers/
    grpo_trainer.py L2209 at modelscope/ms-swift 3602360a); a class that cannot be
    built from them is an error that names the class and the table to fill."""
    if not inspect.isclass(cls):
        return cls
    ctx = Context(spec)
    try:
        instance = cls(args=ctx.namespace)
    except TypeError as exc:
        raise TypeError(
            "cannot construct %s(args=args) as ms-swift does, with trainer_args as args (%s): "
            "set the arguments it reads in trainer_args = { ... } in rwb.toml" % (cls.__name__, exc)
        ) from exc
    if not callable(instance):
        raise TypeError("%s(args) is not callable: an ms-swift ORM defines __call__(self, completions, **kwargs)" % cls.__name__)
    return instance


# ---------------------------------------------------------------- slime

# slime.utils.types.Sample's fields and defaults (THUDM/slime 624b824a, L94-151), for
# an interpreter without slime; a callable default makes a new value each time
_SAMPLE_FIELDS = (
    ("group_index", None),
    ("index", None),
    ("rollout_id", None),
    ("prompt", ""),
    ("tokens", list),
    ("multimodal_inputs", None),
    ("multimodal_train_inputs", None),
    ("multimodal_train_input_id", None),
    ("apply_chat_template_kwargs", dict),
    ("response", ""),
    ("response_length", 0),
    ("label", None),
    ("reward", None),
    ("loss_mask", None),
    ("weight_versions", list),
    ("rollout_log_probs", None),
    ("rollout_top_p_token_ids", None),
    ("rollout_top_p_token_offsets", None),
    ("rollout_routed_experts", None),
    ("remove_sample", False),
    ("teacher_log_probs", None),
    ("status", None),
    ("metadata", dict),
    ("generate_function_path", None),
    ("custom_rm_path", None),
    ("train_metadata", None),
    ("session_id", None),
    ("non_generation_time", 0.0),
)

_SAMPLE_TYPE = None


def _sample_type():
    """slime's own Sample when the interpreter has slime (rewards check
    isinstance(sample, Sample)), else a stand-in with its fields."""
    global _SAMPLE_TYPE
    if _SAMPLE_TYPE is None:
        try:
            from slime.utils.types import Sample  # noqa: F401

            _SAMPLE_TYPE = Sample
        except Exception:
            _SAMPLE_TYPE = _StandInSample
    return _SAMPLE_TYPE


class _Status(enum.Enum):
    PENDING = "pending"
    COMPLETED = "completed"
    TRUNCATED = "truncated"
    ABORTED = "aborted"
    FAILED = "failed"


class _StandInSample:
    """A stand-in for slime.utils.types.Sample: the same fields and defaults."""

    Status = _Status

    def __init__(self, **values):
        for name, default in _SAMPLE_FIELDS:
            if name in values:
                value = values.pop(name)
            else:
                value = default() if callable(default) else default
            setattr(self, name, value)
        if self.status is None:
            self.status = _Status.PENDING
        for name, value in values.items():
            setattr(self, name, value)

    def __repr__(self):
        shown = ", ".join("%s=%r" % (k, v) for k, v in vars(self).items() if v not in (None, [], {}, "", 0, 0.0, False))
        return "Sample(%s)" % shown

    def __eq__(self, other):
        return type(other) is type(self) and vars(self) == vars(other)


def _label(sample, ctx):
    """slime's label: the `--label-key` column (trainer_args.label_key), else the
    sample's ground truth as rwb maps it (`[samples.NAME] ground_truth = "COL"`),
    else a `label` column; slime's default (no --label-key) is None."""
    from .described import GROUND_TRUTH, _first_column

    key = ctx.trainer_args.get("label_key")
    keys = ((key,) if isinstance(key, str) and key else ()) + ("ground_truth", "label") + GROUND_TRUTH[1:]
    return _first_column(sample, keys)


def slime_sample(sample, conv, ctx):
    """One sample as slime's Sample after generation: the prompt as slime's Dataset
    kept it (templated text with trainer_args.apply_chat_template = true, else the
    data's prompt as it is), the response text, the label, the metadata, the status
    (truncated when the generation hit its length limit)."""
    Sample = _sample_type()
    prompt = conv.prompt
    if ctx.trainer_args.get("apply_chat_template"):
        if isinstance(prompt, str) and ctx.template in ("chatml", "raw") and TEMPLATED not in sample:
            # slime's Dataset wraps a text prompt as one user message, then templates it
            # (slime/utils/data.py L214-276 at THUDM/slime 624b824a)
            prompt = templated_prompt({"messages": [{"role": "user", "content": prompt}]}, ctx.template)
        else:
            prompt = value_of("prompt", sample, conv, ctx)
    metadata = sample.get("metadata")
    fields = {
        "prompt": prompt,
        "response": value_of("response", sample, conv, ctx),
        "label": _label(sample, ctx),
        "metadata": dict(metadata) if isinstance(metadata, dict) else {},
    }
    for name in ("index", "group_index", "response_length"):
        if isinstance(sample.get(name), int) and not isinstance(sample.get(name), bool):
            fields[name] = sample[name]
    made = Sample(**fields)
    status = getattr(Sample, "Status", None)
    if status is not None:
        truncated = sample.get("finish_reason") == "length" or sample.get("status") == "truncated"
        made.status = status.TRUNCATED if truncated else status.COMPLETED
    return made


def _slime_group_arguments(caller):
    """slime's group reward gets `(args, samples)`: one list of Samples."""
    ctx = caller.ctx

    def arguments(samples):
        from .samples import parts

        each = [parts(s) for s in samples]
        kwargs = dict(caller.extra)
        group = [slime_sample(s, p, ctx) for s, p in zip(samples, each)]
        kwargs["\x00args"] = [batch_value("trainer_args", samples, each, ctx), group]
        return kwargs

    return arguments


class SlimeReading:
    """slime's reading of a reward: a number is the reward; a dict is read through
    args.reward_key (`Sample.get_reward_value`), and without one it is an error, as
    the dict could not train."""

    def __init__(self, reading, ctx):
        self.reading = reading
        self.ctx = ctx

    def read(self, value, batch_item=False):
        if isinstance(value, dict):
            key = self.ctx.trainer_args.get("reward_key")
            if not key:
                raise InvalidResult(
                    "%s returned a dict (keys: %s) and slime reads a dict reward through --reward-key: "
                    "set trainer_args = { reward_key = \"KEY\" } in rwb.toml"
                    % (self.ctx.evaluator, ", ".join(map(str, value)) or "none")
                )
            if key not in value:
                raise InvalidResult(
                    "%s returned a dict without reward_key %r (keys: %s): return it, or set trainer_args = { reward_key = \"KEY\" } in rwb.toml"
                    % (self.ctx.evaluator, key, ", ".join(map(str, value)) or "none")
                )
            result = self.reading.read(value[key], batch_item)
            if result is not None:
                result["metrics"] = _numeric_metrics(value, key)
            return result
        if value is not None and not isinstance(value, (int, float)) and not hasattr(value, "tolist"):
            raise InvalidResult("%s returned %s; slime takes a number or a dict" % (self.ctx.evaluator, _describe(value)))
        return self.reading.read(value, batch_item)


def _numeric_metrics(value, key):
    from .described import _metrics_beside

    return _metrics_beside(value, key)
