"""The calling styles (SPEC §3): how the user's function is called with samples, and
how what it returns is read.

Each style is one module holding its NAME, the rules that recognise its signature
(each answers why, or None) and its Caller: a Pointwise or Batched subclass whose
`arguments` turns parsed samples into the call's keywords. STYLES ties them together
in the order the rules are tried, so a new style is one module and one line there.
"""

import collections
import inspect

from . import batch, described, frameworks, openrlhf, reward_kit, simple, task, trl, tunix, verifiers, verl
from .calling import _accepts


# One row per detection rule: the style it picks and that style's Caller. The first
# rule that answers wins; a style may have several rules (reward-kit's are split
# around simple's), and a function no rule claims is called reward-kit style.
Style = collections.namedtuple("Style", ("name", "detect", "caller"))


def _preset(name):
    """The Caller of a 2026 framework's preset (presets.PRESETS[name])."""
    return lambda fn, extra, spec: frameworks.make(fn, name, extra, spec)


STYLES = (
    Style(task.NAME, task.detect, task.Caller),
    Style(batch.NAME, batch.by_decorator, batch.Caller),
    Style("swift", frameworks.swift, _preset("swift")),
    Style(tunix.NAME, tunix.by_trainer, tunix.Caller),
    Style("areal", frameworks.areal, _preset("areal")),
    Style("easyr1", frameworks.easyr1_batch, _preset("easyr1")),
    Style("easyr1-sequential", frameworks.easyr1_sequential, _preset("easyr1-sequential")),
    Style("slime", frameworks.slime_single, _preset("slime")),
    Style("slime-group", frameworks.slime_group, _preset("slime-group")),
    Style(trl.NAME, trl.detect, trl.Caller),
    Style(openrlhf.NAME, openrlhf.detect, openrlhf.Caller),
    Style(verl.NAME, verl.detect, verl.Caller),
    Style(verifiers.NAME, verifiers.detect, verifiers.Caller),
    Style(batch.NAME, batch.by_parameters, batch.Caller),
    Style(reward_kit.NAME, reward_kit.by_messages, reward_kit.Caller),
    Style(simple.NAME, simple.detect, simple.Caller),
    Style(reward_kit.NAME, reward_kit.by_decorator, reward_kit.Caller),
)

# style name -> its Caller: what `style = "..."` in rwb.toml picks
CALLERS = {style.name: style.caller for style in STYLES}
CALLERS["skyrl"] = _preset("skyrl")
CALLERS["call"] = described.SampleCaller
CALLERS["call-batch"] = described.BatchCaller


class Signature:
    """What the rules read of a function: `fn` itself, the names of its declared
    parameters and whether it takes **kwargs (read on first use), and `what`, how a
    reason names what declares them."""

    def __init__(self, fn, trainer=None):
        self.fn = fn
        # the trainer rwb.toml names, for the rules that depend on it (Tunix)
        self.trainer = trainer
        self.what = "declares"
        if inspect.isclass(fn):
            self.what = "is a class whose constructor declares"
        elif not inspect.isroutine(fn) and callable(fn):
            self.what = "is a callable %s object whose __call__ declares" % type(fn).__name__
        self._accepted = None

    def _read(self):
        if self._accepted is None:
            self._accepted = _accepts(self.fn)
        return self._accepted

    @property
    def names(self):
        return self._read()[0]

    @property
    def var_kw(self):
        return self._read()[1]


def detect_style(fn, trainer=None):
    return choose_style(fn, trainer)[0]


def choose_style(fn, trainer=None):
    """(style, why) for a function or callable object, from its signature (SPEC §3).

    A callable object (TRL's reward classes) is read through its `__call__`. Real TRL
    functions declare `completions` and `**kwargs` but seldom `prompts`, so
    `completions` without `messages` is enough for trl."""
    seen = Signature(fn, trainer)
    if task.detect(seen) is None:
        chosen = frameworks.by_trainer(seen)
        if chosen is not None:
            return chosen
    for style in STYLES:
        reason = style.detect(seen)
        if reason is not None:
            return style.name, reason
    return reward_kit.NAME, reward_kit.by_default(seen)


def make_caller(fn, style, extra_kwargs, spec=None):
    """The Caller of `fn` in `style` (a name in STYLES); `spec` is the evaluator's
    spec, for a style's options (veRL's solution_str)."""
    return CALLERS[style](fn, extra_kwargs, spec or {})
