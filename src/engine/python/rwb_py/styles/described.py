"""A call described as data (SPEC §3, `call = { ... }`; the 2026 trainer presets in
presets.py are the same description, named).

A description says which value goes in each position (`args`) and keyword
(`keywords`), whether every column is passed as a keyword too (`columns`), one
sample or one batch a call (`per`), and where the score is in what the function
returns (`score`, a path of keys, attributes and indexes). Each value comes from a
*source*: one of SOURCES below, a column of the sample (a dotted name reaches in), a
key of the trainer's args (`trainer_args.verifier_config`), a template formatting
sources into text (`"\\boxed{{{ground_truth}}}"`), or a dict or list of sources.

The long tail's calls (SPEC §3) add three steps, each taken once per worker: the
function is a class built from trainer_args (`build`), the entry point is one of its
methods (`method`, awaited when it is an `async def`), and an exception the trainer
itself would catch scores `on_error` (the row keeps the exception as a warning).

The description is read once, when the worker loads its evaluator: a sample costs
one lookup per argument.
"""

import inspect
import math
import numbers
import traceback

from ..asyncs import _is_async
from ..results import NO_SCORE, InvalidResult, _as_result, _describe, _number
from .calling import Batched, Pointwise
from .samples import STEP, TEMPLATED, as_messages, as_text, conversation, parts, templated_prompt


# The keyword under which a call's positional arguments travel to the wrapper that
# makes the call (no parameter has this name: it starts with a NUL character).
POSITIONAL = "\x00args"

# Keys rwb adds to a sample that are never a column.
_INTERNAL = (TEMPLATED, STEP)


class CallSourceMissing(Exception):
    """A source names a column the sample does not have."""


class Namespace:
    """The trainer's `args`: `trainer_args` from rwb.toml as attributes (what
    argparse gives ms-swift and slime). A missing attribute says where to set it."""

    def __init__(self, values, evaluator):
        self.__dict__.update(values)
        self._rwb_evaluator = evaluator

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            "the trainer's args have no %r: set trainer_args = { %s = ... } in rwb.toml "
            "(at the top, or in [evaluators.%s])" % (name, name, self.__dict__.get("_rwb_evaluator", "NAME"))
        )

    def __repr__(self):
        shown = ", ".join("%s=%r" % kv for kv in vars(self).items() if not kv[0].startswith("_rwb"))
        return "Namespace(%s)" % shown

    def __eq__(self, other):
        return isinstance(other, Namespace) and vars(self) == vars(other)

    def __deepcopy__(self, memo):
        return self


def _toml_line(dotted):
    """`a.b` as the rwb.toml text that sets it: `a = { b = ... }`."""
    line = "..."
    for part in reversed(dotted.split(".")):
        line = "%s = %s" % (part, line if line == "..." else "{ %s }" % line)
    return line


def missing_trainer_arg(dotted, evaluator):
    """What to say when `trainer_args.<dotted>` is not set."""
    return "trainer_args has no %s: write trainer_args = { %s } in rwb.toml (at the top, or in [evaluators.%s])" % (
        dotted,
        _toml_line(dotted),
        evaluator,
    )


class ConfigTable(dict):
    """A table of trainer_args (`trainer_args.verifier_config`) as a trainer hands its
    config on: read by key (NeMo-RL's configs are dicts) and by attribute
    (open-instruct's VerifierConfig is a dataclass). A missing entry says which
    rwb.toml line sets it; `hasattr` is False for it, as for a dataclass field."""

    def __init__(self, values=(), path="", evaluator="NAME"):
        dict.__init__(self)
        self.__dict__["_rwb_where"] = (path, evaluator)
        for key, value in dict(values).items():
            dict.__setitem__(self, key, _config_value(value, "%s.%s" % (path, key), evaluator))

    def _rwb_missing(self, name):
        path, evaluator = self.__dict__.get("_rwb_where", ("", "NAME"))
        return missing_trainer_arg("%s.%s" % (path, name) if path else str(name), evaluator)

    def __getattr__(self, name):
        if name.startswith("__") or name.startswith("_rwb"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(self._rwb_missing(name)) from None

    def __setattr__(self, name, value):
        self[name] = value

    def __missing__(self, key):
        raise KeyError(self._rwb_missing(key))


def _config_value(value, path, evaluator):
    if isinstance(value, dict):
        return ConfigTable(value, path, evaluator)
    if isinstance(value, list):
        return [_config_value(v, "%s.%d" % (path, n), evaluator) for n, v in enumerate(value)]
    return value


class Context:
    """What sources read besides the sample: the evaluator's name, its chat template,
    its trainer args, and the extra values a preset adds (slime's Sample type)."""

    def __init__(self, spec, extra_sources=None):
        self.evaluator = spec.get("name") or "NAME"
        self.template = spec.get("chat_template") or "chatml"
        self.trainer_args = dict(spec.get("trainer_args") or {})
        self.namespace = Namespace(self.trainer_args, self.evaluator)
        self.sources = dict(SOURCES)
        if extra_sources:
            self.sources.update(extra_sources)
        # `trainer_args.KEY` values, made once: every call gets the same object, as
        # the trainer hands every call its one config
        self.configs = {}

    def trainer_arg(self, source):
        """The value of `trainer_args.a.b`: a table as a ConfigTable."""
        if source in self.configs:
            return self.configs[source]
        dotted = source[len(_TRAINER_ARGS) :]
        value = self.trainer_args
        walked = []
        for part in dotted.split("."):
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                raise CallSourceMissing(
                    "call source %r: %s" % (source, missing_trainer_arg(".".join(walked + [part]), self.evaluator))
                )
            walked.append(part)
        value = _config_value(value, dotted, self.evaluator)
        self.configs[source] = value
        return value


_TRAINER_ARGS = "trainer_args."


def _column(sample, conv, name):
    """A column of the sample, a dotted name reaching into dicts and lists."""
    head, _, rest = name.partition(".")
    if head in _INTERNAL or (head in conv.keys and head not in ("prompt", "messages")) or head not in sample:
        columns = sorted(k for k in sample if k not in conv.keys and k not in _INTERNAL)
        raise CallSourceMissing(
            "call source %r is neither one of rwb's sources (%s) nor a column of this sample (its columns: %s)"
            % (name, ", ".join(sorted(SOURCES)), ", ".join(columns) or "none")
        )
    value = sample[head]
    walked = head
    for part in rest.split(".") if rest else ():
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            raise CallSourceMissing("call source %r: %s has no %r (it is %s)" % (name, walked, part, _describe(value)))
        walked += "." + part
    return value


def _first_column(sample, names):
    """The first of `names` (dotted) the sample has, else None."""
    for name in names:
        head, _, rest = name.partition(".")
        value = sample.get(head)
        for part in rest.split(".") if rest else ():
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            return value
    return None


# Where the sample's ground truth is, in the order rwb looks (the first present
# wins): rwb's own name (what [samples.NAME] ground_truth = "COL" maps), veRL's and
# SkyRL's nested ones, then the columns other trainers read by default.
GROUND_TRUTH = ("ground_truth", "reward_model.ground_truth", "reward_spec.ground_truth", "answer", "label", "solution")


def _row(sample, conv):
    """The sample's row as the data had it, without its completion: every column,
    and the prompt (a chat sample's `messages` are its prompt turns)."""
    row = {k: v for k, v in sample.items() if k not in conv.keys and k not in _INTERNAL}
    if conv.chat:
        row["messages"] = list(conv.prompt)
    else:
        row["prompt"] = conv.prompt
    return row


def _areal_row(sample, conv):
    """The data row as AReaL hands it on as keywords: every column, and `messages`
    the prompt turns (AReaL's rows hold the prompt as messages; no `prompt` key,
    which would collide with the reward's first parameter). The token-id columns
    stand for what AReaL's engine returned (`resp.input_tokens`, `output_tokens`),
    passed by position: they are no data field."""
    row = {k: v for k, v in sample.items() if k not in conv.keys and k not in _INTERNAL and k not in _ID_COLUMNS}
    row["messages"] = as_messages(conv.prompt, "user")
    return row


_ID_COLUMNS = ("prompt_ids", "completion_ids", "input_tokens", "output_tokens")


def _columns(sample, conv):
    return {k: v for k, v in sample.items() if k not in conv.keys and k not in _INTERNAL}


def _easyr1_ground_truth(sample):
    """EasyR1's ground truth: its dataset's `answer_key` column (`answer` unless
    trainer_args says; verl/utils/dataset.py pops it into `ground_truth`), else the
    sample's ground truth as rwb finds it."""
    return sample.get("answer", _first_column(sample, GROUND_TRUTH))


def _trainer_state(sample):
    """The trainer's TrainerState (transformers'), at the step the sample's source
    logged: what ms-swift hands every reward function as `trainer_state`."""
    from .trl import trainer_state

    return trainer_state([sample], None)


# name -> (sample, parts, context) -> value; and whether a batch gets one value for
# all its samples rather than a list (the trainer's args are the same for all).
SOURCES = {
    "response": lambda s, c, x: as_text(c.completion),
    "completion": lambda s, c, x: c.completion,
    "prompt": lambda s, c, x: templated_prompt(s, x.template),
    "prompt_messages": lambda s, c, x: as_messages(c.prompt, "user"),
    "messages": lambda s, c, x: conversation(s),
    "ground_truth": lambda s, c, x: _first_column(s, GROUND_TRUTH),
    "row": lambda s, c, x: _row(s, c),
    "areal_row": lambda s, c, x: _areal_row(s, c),
    "trainer_args": lambda s, c, x: x.namespace,
    "prompt_ids": lambda s, c, x: _first_column(s, ("prompt_ids", "input_tokens")),
    "completion_ids": lambda s, c, x: _first_column(s, ("completion_ids", "output_tokens")),
    "response_length": lambda s, c, x: s.get("response_length"),
    "trainer_state": lambda s, c, x: _trainer_state(s),
    "easyr1_ground_truth": lambda s, c, x: (
        s.get(x.trainer_args["answer_key"], _first_column(s, GROUND_TRUTH))
        if isinstance(x.trainer_args.get("answer_key"), str)
        else _easyr1_ground_truth(s)
    ),
}
SHARED = frozenset(("trainer_args", "trainer_state"))


class Template:
    """A source that formats other sources into text: `"\\boxed{{{ground_truth}}}"`
    is `\\boxed{` + the ground truth + `}` (NeMo-RL's math environment wraps the
    ground truth so). `{NAME}` is a source's value as str() gives it; `{{` and `}}`
    are braces. Parsed once, when the description is read."""

    __slots__ = ("text", "parts", "names")

    def __init__(self, text):
        self.text = text
        # literal strings, and 1-tuples holding a source name
        self.parts = []
        literal = []
        n = 0
        while n < len(text):
            c = text[n]
            if c in "{}" and text[n + 1 : n + 2] == c:
                literal.append(c)
                n += 2
                continue
            if c == "}":
                raise ValueError(self._bad("has a } that closes nothing"))
            if c == "{":
                end = n + 1
                while end < len(text) and text[end] not in "{}":
                    end += 1
                if end == len(text):
                    raise ValueError(self._bad("has a { that is not closed"))
                if text[end] == "{":
                    raise ValueError(self._bad("has a { inside {%s" % text[n + 1 : end]))
                name = text[n + 1 : end]
                if not name or any(ch.isspace() or ch in ":!" for ch in name):
                    raise ValueError(self._bad("names {%s}, which is no source name" % name))
                if literal:
                    self.parts.append("".join(literal))
                    literal = []
                self.parts.append((name,))
                n = end + 1
                continue
            literal.append(c)
            n += 1
        if literal:
            self.parts.append("".join(literal))
        self.names = [p[0] for p in self.parts if isinstance(p, tuple)]

    def _bad(self, why):
        return "the template %r %s; write {NAME} for a source's value and {{ or }} for a brace" % (self.text, why)

    def render(self, read, evaluator="NAME"):
        """The text, each name's value given by read(name). A name no source gives
        is a CallSourceMissing naming the evaluator, the template and the sources."""
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            try:
                value = read(part[0])
            except CallSourceMissing as exc:
                raise CallSourceMissing(
                    "%s: the template \"%s\" in call of [evaluators.%s] in rwb.toml: %s" % (evaluator, self.text, evaluator, exc)
                ) from None
            out.append(format(value))
        return "".join(out)

    def __str__(self):
        return '"%s"' % self.text

    def __eq__(self, other):
        return isinstance(other, Template) and other.text == self.text

    def __hash__(self):
        return hash(self.text)


def compiled(source):
    """A source as a description keeps it: a string with a brace is a Template, a
    dict or list of sources keeps its shape; anything else is as written."""
    if isinstance(source, str) and ("{" in source or "}" in source):
        return Template(source)
    if isinstance(source, dict):
        return {k: compiled(v) for k, v in source.items()}
    if isinstance(source, list):
        return [compiled(v) for v in source]
    return source


def value_of(source, sample, conv, ctx):
    """The value `source` gives for one sample."""
    if isinstance(source, dict):
        return {k: value_of(v, sample, conv, ctx) for k, v in source.items()}
    if isinstance(source, list):
        return [value_of(v, sample, conv, ctx) for v in source]
    if source is None:
        return None
    if isinstance(source, Template):
        return source.render(lambda name: value_of(name, sample, conv, ctx), ctx.evaluator)
    get = ctx.sources.get(source)
    if get is not None:
        return get(sample, conv, ctx)
    if source.startswith(_TRAINER_ARGS):
        return ctx.trainer_arg(source)
    return _column(sample, conv, source)


def _shared(source):
    """Whether `source` is the same for every sample (the trainer's args)."""
    if isinstance(source, Template):
        return bool(source.names) and all(_shared(name) for name in source.names)
    return isinstance(source, str) and (source in SHARED or source.startswith(_TRAINER_ARGS))


def batch_value(source, samples, each, ctx):
    """The value `source` gives for a batch: a list over it (one value for a shared
    source such as the trainer's args)."""
    if _shared(source):
        return value_of(source, samples[0] if samples else {}, each[0] if each else None, ctx)
    return [value_of(source, s, p, ctx) for s, p in zip(samples, each)]


def build_value(source, ctx):
    """A source of `call.build`, read once per worker: trainer_args, one of its keys,
    or a template, dict or list of them (there is no sample yet)."""
    if isinstance(source, dict):
        return {k: build_value(v, ctx) for k, v in source.items()}
    if isinstance(source, list):
        return [build_value(v, ctx) for v in source]
    if isinstance(source, Template):
        return source.render(lambda name: build_value(name, ctx), ctx.evaluator)
    if source == "trainer_args":
        return ctx.namespace
    if isinstance(source, str) and source.startswith(_TRAINER_ARGS):
        return ctx.trainer_arg(source)
    raise CallSourceMissing(
        "call.build reads %r, a value of each sample, but the class is built once per worker, before any "
        "sample: build it from trainer_args or one of its keys (\"trainer_args.NAME\")" % (source,)
    )


class Description:
    """A call description, read once: positional sources, keyword sources, whether
    the columns (or another source's dict) are spread as keywords, the score path;
    for the long tail, the class to build and with what, the method to call and the
    score an exception gets."""

    __slots__ = (
        "name", "args", "keywords", "batched", "columns", "spread", "score", "score_text", "where",
        "build", "method", "on_error", "callee", "awaited",
    )

    def __init__(self, table, name="call", where=None):
        self.name = name
        self.args = [compiled(s) for s in table.get("args") or ()]
        self.keywords = {k: compiled(v) for k, v in (table.get("keywords") or {}).items()}
        self.batched = table.get("per") in ("batch", "group")
        self.columns = bool(table.get("columns"))
        # a source whose dict is passed as keywords (AReaL's **data)
        self.spread = table.get("spread")
        self.score = list(table.get("score") or ())
        self.score_text = table.get("score_text") or _path_text(self.score)
        # how an error says where to change the description
        self.where = where
        # call.build: (positional sources, keyword sources), or None
        build = table.get("build")
        self.build = None
        if build is not None:
            self.build = (
                [compiled(s) for s in build.get("args") or ()],
                {k: compiled(v) for k, v in (build.get("keywords") or {}).items()},
            )
        self.method = table.get("method") or None
        on_error = table.get("on_error")
        self.on_error = None if on_error is None or isinstance(on_error, bool) else float(on_error)
        # what the worker found when it resolved the entry point (entry_point): the
        # class's or function's name, and whether the call is awaited
        self.callee = None
        self.awaited = False

    def text(self):
        """The description as `rwb check` shows it: the call's shape."""
        parts_ = [_source_text(s) for s in self.args]
        parts_ += ["%s=%s" % (k, _source_text(v)) for k, v in self.keywords.items()]
        if self.spread:
            parts_.append("**%s" % self.spread)
        if self.columns:
            parts_.append("**columns")
        per = "one call per batch, each value a list over it" if self.batched else "one sample a call"
        score = "the score at %s" % self.score_text if self.score else "the return is the score"
        fn = "fn"
        steps = []
        if self.build is not None:
            cls = self.callee or "Class"
            args, keywords = self.build
            made = [_source_text(s) for s in args] + ["%s=%s" % (k, _source_text(v)) for k, v in keywords.items()]
            steps.append("built = %s(%s), once per worker" % (cls, ", ".join(made)))
            fn = "built"
        elif self.method and self.callee:
            fn = self.callee
        if self.method:
            fn += "." + self.method
        call = "%s(%s)" % (fn, ", ".join(parts_))
        if self.awaited and (self.build is not None or self.method):
            call += ", awaited"
        tail = [per, score]
        if self.on_error is not None:
            tail.append("an exception scores %s (on_error), the row keeping it as a warning" % _number_text(self.on_error))
        return "; ".join(steps + [call] + tail)


def _number_text(x):
    return repr(float(x))


def _source_text(source):
    if isinstance(source, dict):
        return "{%s}" % ", ".join("%s: %s" % (k, _source_text(v)) for k, v in source.items())
    if isinstance(source, list):
        return "[%s]" % ", ".join(_source_text(v) for v in source)
    return "None" if source is None else str(source)


def _path_text(path):
    out = ""
    for step in path:
        if isinstance(step, int):
            out += "[%d]" % step
        else:
            out += ("." if out else "") + str(step)
    return out


class CallBuildError(Exception):
    """A description's entry point cannot be made: the class cannot be built from
    what call.build gives it, or it has no such method."""


def _methods(obj):
    """The public methods of `obj` (an instance, or a class), `__call__` first when an
    instance's class defines one: for a message that says what there is to call."""
    names = []
    for name in dir(obj):
        if name.startswith("_"):
            continue
        try:
            member = getattr(obj, name)
        except Exception:
            continue
        if callable(member) and not inspect.isclass(member):
            names.append(name)
    if not inspect.isclass(obj) and any("__call__" in vars(k) for k in type(obj).__mro__[:-1]):
        names.insert(0, "__call__")
    return ", ".join(names) or "none"


def entry_point(fn, d, ctx):
    """What a description calls, resolved once per worker: `fn` itself; the instance
    `call.build` makes of the class `fn` (built from trainer_args); or `call.method`
    of either. A class that cannot be built, or a method it lacks, is a
    CallBuildError naming the evaluator, the class and what to write in rwb.toml."""
    where = "[evaluators.%s] of rwb.toml" % ctx.evaluator
    name = getattr(fn, "__name__", None) or type(fn).__name__
    d.callee = name
    target = fn
    if d.build is not None:
        if not inspect.isclass(fn):
            raise CallBuildError(
                "%s: call.build builds a class, but %s is %s: name a class in `function`, or take build out of "
                "call in %s" % (ctx.evaluator, name, _describe(fn), where)
            )
        sources, keyword_sources = d.build
        shown = ", ".join(
            [_source_text(s) for s in sources] + ["%s=%s" % (k, _source_text(v)) for k, v in keyword_sources.items()]
        )
        try:
            args = [build_value(s, ctx) for s in sources]
            kwargs = {k: build_value(v, ctx) for k, v in keyword_sources.items()}
        except CallSourceMissing as exc:
            raise CallBuildError("%s: cannot build %s(%s): %s" % (ctx.evaluator, name, shown, exc)) from None
        try:
            target = fn(*args, **kwargs)
        except Exception as exc:
            raise CallBuildError(
                "%s: cannot build %s(%s) as call.build in %s says: %s: %s"
                % (ctx.evaluator, name, shown, where, type(exc).__name__, _first_line(exc))
            ) from exc
    if d.method:
        try:
            method = getattr(target, d.method)
        except AttributeError:
            method = None
        if method is None or not callable(method):
            what = "the built %s" % name if d.build is not None else name
            raise CallBuildError(
                "%s: %s has no method %r (call.method in %s); its methods: %s"
                % (ctx.evaluator, what, d.method, where, _methods(target))
            )
        target = method
    elif d.build is not None and not callable(target):
        raise CallBuildError(
            "%s: the built %s cannot be called: name its entry point with call = { ..., method = \"NAME\" } in %s; "
            "its methods: %s" % (ctx.evaluator, name, where, _methods(target))
        )
    d.awaited = _is_async(target)
    return target


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


class Raised:
    """A call that raised, under `on_error`: the trainer's own `except: return
    SCORE`. The row keeps SCORE and shows the exception as its warning (the result's
    error, which rwb counts and the run's summary says), as a verifiers Rubric's
    swallowed exception is shown."""

    __slots__ = ("kind", "text", "score")

    def __init__(self, exc, score):
        # the exception's words, not the exception: its traceback would keep the
        # frames of the call (and the worker's, through them) alive
        self.kind = type(exc).__name__
        self.text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        self.score = score

    def result(self):
        return {
            "score": self.score,
            "is_score_valid": True,
            "reason": "the call raised %s; scored %s as the trainer scores an exception (call.on_error)"
            % (self.kind, _number_text(self.score)),
            "metrics": {},
            "step_outputs": None,
            "error": self.text,
        }


def guarded(fn, score):
    """`fn` with the trainer's `except Exception: return score` around it: what it
    raises comes back as Raised. rwb's timeout (a BaseException) still ends the call."""
    if _is_async(fn):

        async def call_async(**kwargs):
            try:
                return await fn(**kwargs)
            except Exception as exc:
                return Raised(exc, score)

        return call_async

    def call(**kwargs):
        try:
            return fn(**kwargs)
        except Exception as exc:
            return Raised(exc, score)

    return call


def described_callable(fn, d, ctx):
    """The function a described Caller calls with its keywords: the entry point,
    its positions filled from POSITIONAL, the trainer's except around it."""
    out = positional_call(entry_point(fn, d, ctx))
    if d.on_error is not None:
        out = guarded(out, d.on_error)
    return out


def positional_call(fn):
    """`fn` called with the arguments under POSITIONAL in their positions and the
    rest by keyword; an `async def` stays one (the worker awaits it)."""
    if _is_async(fn):

        async def call_async(**kwargs):
            args = kwargs.pop(POSITIONAL, ())
            return await fn(*args, **kwargs)

        return call_async

    def call(**kwargs):
        args = kwargs.pop(POSITIONAL, ())
        return fn(*args, **kwargs)

    return call


class Reading:
    """How a return becomes a result: the score at the description's path (a bool is
    1.0/0.0, None is no score), and a dict's other numeric keys as metrics. A return
    the path does not fit is an InvalidResult naming the evaluator, the path, what
    came back and the rwb.toml line to write."""

    def __init__(self, description, ctx, hint=None):
        self.d = description
        self.ctx = ctx
        # what the error says to do (a preset says its trainer's rule)
        self.hint = hint

    def fix(self, suggestion):
        if self.hint:
            return self.hint
        return "write call = { ..., score = %s } in [evaluators.%s] of rwb.toml" % (suggestion, self.ctx.evaluator)

    def read(self, value, batch_item=False):
        value = _plain(value)
        path = self.d.score
        if not path:
            return self._whole(value)
        metrics = {}
        if isinstance(value, dict):
            metrics = _metrics_beside(value, path[0])
        walked = value
        for n, step in enumerate(path):
            walked = _plain(walked)
            at = _path_text(path[: n + 1])
            if isinstance(step, int):
                if not isinstance(walked, (list, tuple)):
                    raise InvalidResult(
                        "%s: the score is at %s, but %s is %s, not a list: %s"
                        % (self.ctx.evaluator, self.d.score_text, _path_text(path[:n]) or "the return", _describe(walked), self.fix('"KEY"'))
                    )
                if not -len(walked) <= step < len(walked):
                    raise InvalidResult(
                        "%s: the score is at %s, but %s holds %d value(s): %s"
                        % (self.ctx.evaluator, self.d.score_text, _path_text(path[:n]) or "the return", len(walked), self.fix('"[0]"'))
                    )
                walked = walked[step]
            else:
                if isinstance(walked, dict):
                    if step not in walked:
                        keys = ", ".join(map(str, walked)) or "none"
                        first = next((k for k, v in walked.items() if _is_number(v)), None)
                        raise InvalidResult(
                            "%s: the score is at %s, but the function returned a dict without %r (keys: %s): %s"
                            % (self.ctx.evaluator, at, step, keys, self.fix('"%s"' % first if first else '"KEY"'))
                        )
                    walked = walked[step]
                elif hasattr(walked, step) and not isinstance(walked, (str, bytes, numbers.Number)):
                    walked = getattr(walked, step)
                else:
                    raise InvalidResult(self._no_attribute(walked, path, n))
        score = _plain(walked)
        if batch_item and isinstance(score, float) and math.isnan(score):
            score = None  # NaN in a batch is the trainer's "no score"
        if score is None:
            return None if batch_item else dict(NO_SCORE)
        if isinstance(score, bool):
            score = float(score)
        if not _is_number(score):
            raise InvalidResult(
                "%s: the score at %s is %s, not a number" % (self.ctx.evaluator, self.d.score_text, _describe(score))
            )
        return {"score": _number(score, "score"), "is_score_valid": True, "reason": None, "metrics": metrics, "step_outputs": None, "error": None}

    def _no_attribute(self, walked, path, n):
        """What to say when the object at path[:n] has no attribute path[n]: what it
        is, the attributes it has, and the path to write."""
        before = _path_text(path[:n])
        what = "%s is" % before if n else "the function returned"
        names = _attributes(walked)
        has = " (its attributes: %s)" % ", ".join(names) if names else ""
        number = next((k for k in names if _is_number(_plain(getattr(walked, k, None)))), None)
        if isinstance(walked, (list, tuple)):
            suggestion = '"%s[0]"' % before
        elif number is not None:
            suggestion = '"%s.%s"' % (before, number)
        elif n == 0:
            suggestion = "nothing (the return is the score)"
        else:
            suggestion = '"KEY"'
        return "%s: the score is at %s, but %s %s, which has no %r%s: %s" % (
            self.ctx.evaluator,
            self.d.score_text,
            what,
            _describe(walked),
            path[n],
            has,
            self.fix(suggestion),
        )

    def _whole(self, value):
        """No path: a number or bool is the score, None no score; a dict with `score`
        is read with its other numeric keys as metrics; anything else is the usual
        result reading."""
        if value is None:
            return dict(NO_SCORE)
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, dict) and "score" in value and not isinstance(value.get("metrics"), dict):
            metrics = _metrics_beside(value, "score")
            score = _plain(value["score"])
            if isinstance(score, bool):
                score = float(score)
            if _is_number(score):
                return {"score": _number(score, "score"), "is_score_valid": True, "reason": _reason(value), "metrics": metrics, "step_outputs": None, "error": None}
        if isinstance(value, dict) and "score" not in value:
            first = next((k for k, v in value.items() if _is_number(_plain(v))), None)
            raise InvalidResult(
                "%s returned a dict without 'score' (keys: %s): %s"
                % (self.ctx.evaluator, ", ".join(map(str, value)) or "none", self.fix('"%s"' % first if first else '"KEY"'))
            )
        if isinstance(value, (list, tuple)):
            raise InvalidResult(
                "%s returned %s where one score was expected: %s" % (self.ctx.evaluator, _describe(value), self.fix('"[0]"'))
            )
        return _as_result(value, False)


def _attributes(value):
    """The data attributes of an object, for a message: a dataclass's fields, else
    its instance attributes (none for a str, number or container)."""
    if isinstance(value, (str, bytes, numbers.Number, list, tuple, dict)) or value is None:
        return []
    fields = getattr(type(value), "__dataclass_fields__", None)
    if fields:
        return list(fields)
    try:
        return [k for k in vars(value) if not k.startswith("_")]
    except TypeError:
        return [k for k in getattr(type(value), "__slots__", ()) if not k.startswith("_")]


def _plain(value):
    """A tensor, array or numpy scalar as the Python value it holds."""
    if isinstance(value, (dict, list, tuple, str, bytes, bool, int, float)) or value is None:
        return value
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        try:
            return tolist()
        except Exception:
            return value
    return value


def _is_number(value):
    """A bool or a real number (numpy scalars included)."""
    return isinstance(value, numbers.Real)


def _reason(value):
    reason = value.get("reason")
    return reason if isinstance(reason, str) else None


def _metrics_beside(value, score_key):
    """A dict return's other numeric (or bool) keys, as metrics."""
    out = {}
    for key, item in value.items():
        if key == score_key or key in ("reason", "metrics"):
            continue
        item = _plain(item)
        if isinstance(item, bool):
            item = float(item)
        if isinstance(item, numbers.Real) and math.isfinite(float(item)):
            out[str(key)] = {"score": float(item), "is_score_valid": True, "reason": None}
    return out


class SampleCaller(Pointwise):
    """One call a sample, as a description says."""

    style = "call"
    direct = False

    def __init__(self, fn, extra_kwargs, spec, description=None, ctx=None, hint=None):
        Pointwise.__init__(self, fn, extra_kwargs, spec)
        self.d = description or Description(spec.get("call") or {}, where="call")
        self.ctx = ctx or Context(spec)
        self.reading = Reading(self.d, self.ctx, hint)
        self.fn = described_callable(fn, self.d, self.ctx)

    def arguments(self, sample):
        conv = parts(sample)
        ctx, d = self.ctx, self.d
        kwargs = dict(self.extra)
        if d.columns:
            kwargs.update(_columns(sample, conv))
        if d.spread:
            kwargs.update(value_of(d.spread, sample, conv, ctx))
        for name, source in d.keywords.items():
            kwargs[name] = value_of(source, sample, conv, ctx)
        if d.args:
            kwargs[POSITIONAL] = [value_of(s, sample, conv, ctx) for s in d.args]
        return kwargs

    def result(self, value):
        if type(value) is Raised:
            return value.result()
        return self.reading.read(value)


class BatchCaller(Batched):
    """One call a batch, as a description says: each source a list over the batch."""

    style = "call-batch"
    none_is_no_score = True

    def __init__(self, fn, extra_kwargs, spec, description=None, ctx=None, hint=None):
        Batched.__init__(self, fn, extra_kwargs, spec)
        self.d = description or Description(spec.get("call") or {}, where="call")
        self.ctx = ctx or Context(spec)
        self.reading = Reading(self.d, self.ctx, hint)
        self.fn = described_callable(fn, self.d, self.ctx)

    def arguments(self, samples):
        each = [parts(s) for s in samples]
        ctx, d = self.ctx, self.d
        kwargs = dict(self.extra)
        if d.columns:
            keys = []
            for s, p in zip(samples, each):
                keys.extend(k for k in s if k not in p.keys and k not in _INTERNAL and k not in keys)
            kwargs.update({k: [s.get(k) if k not in p.keys else None for s, p in zip(samples, each)] for k in keys})
        for name, source in d.keywords.items():
            kwargs[name] = batch_value(source, samples, each, ctx)
        if d.args:
            kwargs[POSITIONAL] = [batch_value(s, samples, each, ctx) for s in d.args]
        return kwargs

    def results(self, value, count):
        if type(value) is Raised:
            # the trainer's except around the batch's call: every sample of it
            return [value.result() for _ in range(count)]
        value = _plain(value)
        if not isinstance(value, (list, tuple)):
            raise InvalidResult(
                "%s: a batched call must return one value per sample; it returned %s" % (self.ctx.evaluator, _describe(value))
            )
        if len(value) != count:
            raise InvalidResult(
                "%s returned %d values for a batch of %d samples" % (self.ctx.evaluator, len(value), count)
            )
        return [self.reading.read(item, batch_item=True) for item in value]


def describe_value(value, width=48):
    """An argument as `rwb check` shows it: its kind and the first characters."""
    kind = type(value).__name__
    if isinstance(value, (list, tuple)):
        kind = "%s[%d]" % (kind, len(value))
    elif isinstance(value, dict):
        kind = "dict{%s}" % ", ".join(map(str, list(value)[:6])) + ("…" if len(value) > 6 else "")
    if isinstance(value, str):
        text = value
    elif callable(value) and not isinstance(value, type) and type(value).__repr__ is object.__repr__:
        # a callback handed to the function (TRL's log_extra): its kind, not an address
        text = "a callable %s" % kind
    else:
        try:
            text = repr(value)
        except Exception:
            text = "<%s>" % kind
    text = text.replace("\n", "\\n")
    if len(text) > width:
        text = text[: width - 1] + "…"
    return kind, text


def call_preview(caller, sample_or_samples):
    """The call `caller` makes for one sample (or batch): a list of
    {"arg": position or keyword name, "kind", "value"} for `rwb check`."""
    kwargs = caller.arguments(sample_or_samples)
    out = []
    for n, value in enumerate(kwargs.get(POSITIONAL, ())):
        kind, text = describe_value(value)
        out.append({"arg": str(n), "kind": kind, "value": text})
    for name, value in kwargs.items():
        if name == POSITIONAL:
            continue
        kind, text = describe_value(value)
        out.append({"arg": name, "kind": kind, "value": text})
    return out

