"""verifiers 1.x tasks (SPEC §3): a `vf.Task` subclass scored on a sample's trace as
verifiers' own replay scores one (`verifiers/v1/cli/replay.py`, `Task.score`).

The installed package's own classes do the work, so the scores are verifiers' to the
bit: the sample's trace is validated as replay reads one (`Trace[WireTaskData,
state, WireAgentConfig]`), or built from a chat / prompt-completion sample. A row of
traces.jsonl carries its trace as written in its `trace` column (rwb's reader,
src/sources/verifiers.rs), so it is that trace that is scored (every generated turn,
`root_reply`, the whole message graph), never the chat made of its final branch: only
rows that are not traces are built. The trace's recorded rewards and metrics are
cleared; the task is built from its data with `trainer_args` validated into
`Task.config_type()`; `await task.score(trace)` runs with no runtime. The row's score
is `trace.reward` (Σ score × weight), each reward and metric one of its components.
"""

import inspect
import json
import math

from ..results import InvalidResult, _describe
from .calling import Pointwise
from .samples import TEMPLATED, parts


NAME = "verifiers-task"

# Agent seat names of a single-agent trace: `SingleAgentEnv`'s one seat carries no
# name of its own (AgentInfo's default), vf-debug's is "debug". A multi-agent env
# names each trace after its seat (`solver`, `user`, `judge`, ...).
_SINGLE_AGENT_NAMES = ("agent", "debug")


def is_task_class(fn):
    """Whether `fn` is a subclass of verifiers' `Task` (1.x)."""
    if not inspect.isclass(fn):
        return False
    return any(
        base.__name__ == "Task" and (base.__module__ or "").startswith("verifiers")
        for base in inspect.getmro(fn)[1:]
    )


def detect(seen):
    """It is a verifiers 1.x Task subclass: scored, never called as a function."""
    if is_task_class(seen.fn):
        return "is a verifiers Task subclass (%s): its rewards and metrics score the sample's trace" % seen.fn.__name__
    return None


class VerifiersMissing(ImportError):
    """verifiers 1.x (`verifiers.v1`) cannot be imported by the worker's interpreter."""


class TaskConfigInvalid(ValueError):
    """The evaluator's trainer_args do not validate as the Task's config type."""


class BadTaskData(ValueError):
    """A sample's task data do not validate as the Task's data type."""


class NotScored(Exception):
    """A trace vf-replay does not re-score (its rollout failed: `ok` is false)."""


class MultiAgentRow(Exception):
    """A trace of a multi-agent episode, which vf-replay refuses."""


class BadTrace(ValueError):
    """A sample's `trace` column is no verifiers trace."""


class _V1:
    """What the caller uses of the installed `verifiers.v1`."""

    def __init__(self):
        import sys

        try:
            from verifiers.v1.configs.agent import AgentConfig, WireAgentConfig
            from verifiers.v1.state import state_cls
            from verifiers.v1.task import Task, TaskData, WireTaskData
            from verifiers.v1.trace import AgentInfo, Trace, TraceTask
        except ImportError as exc:
            raise VerifiersMissing(
                "a verifiers Task is scored with verifiers 1.x's own code, which this interpreter "
                "(%s) cannot import (%s: %s): install verifiers>=0.4 into the Python given by "
                "--python (`%s -m pip install 'verifiers>=0.4'`)" % (sys.executable, type(exc).__name__, exc, sys.executable)
            ) from None
        try:
            from verifiers.v1.types import content_to_parts
        except ImportError:  # pragma: no cover - older 1.x builds
            content_to_parts = None
        self.Task = Task
        self.TaskData = TaskData
        self.WireTaskData = WireTaskData
        self.Trace = Trace
        self.TraceTask = TraceTask
        self.AgentInfo = AgentInfo
        self.AgentConfig = AgentConfig
        self.WireAgentConfig = WireAgentConfig
        self.state_cls = state_cls
        self.content_to_parts = content_to_parts


class Caller(Pointwise):
    style = NAME
    direct = False

    def __init__(self, fn, extra_kwargs, spec):
        Pointwise.__init__(self, fn, extra_kwargs, spec)
        v1 = self.v1 = _V1()
        if not (inspect.isclass(fn) and issubclass(fn, v1.Task)):
            raise TypeError(
                "%s derives from a Task class that is not verifiers.v1's (%s): it cannot be scored with "
                "the installed verifiers 1.x" % (getattr(fn, "__name__", fn), _task_base(fn))
            )
        self.task_cls = fn
        self.data_cls = fn.data_type()
        config_cls = fn.config_type()
        trainer_args = dict(spec.get("trainer_args") or {})
        try:
            self.config = config_cls.model_validate(trainer_args)
        except Exception as exc:
            raise TaskConfigInvalid(
                "trainer_args of evaluator %r are %s's config (%s) and do not validate as one: %s"
                % (spec.get("name") or "NAME", fn.__name__, config_cls.__name__, exc)
            ) from None
        self.state_cls = v1.state_cls(fn)
        # the form in which vf-replay reads a saved trace (cli/replay.py)
        self.wire_trace = v1.Trace[v1.WireTaskData, self.state_cls, v1.WireAgentConfig]
        self.fn = self.score

    # -- a sample -> the trace and task data to score -------------------------------

    def arguments(self, sample):
        notes = []
        trace_value = sample.get("trace") if isinstance(sample, dict) else None
        if isinstance(sample, dict) and isinstance(sample.get("traces"), list):
            traces = sample["traces"]
            if len(traces) > 1:
                raise MultiAgentRow(
                    "this row is an episode of %d traces (a multi-agent episode): vf-replay refuses multi-agent "
                    "runs, whose env scores across traces; not scored" % len(traces)
                )
            if trace_value is None and traces:
                trace_value = traces[0]
        if trace_value is not None:
            trace, row = self._saved_trace(sample, trace_value, notes)
        else:
            trace, row = self._sample_trace(sample, notes)
        return {"trace": trace, "row": row, "notes": tuple(notes)}

    def _saved_trace(self, sample, value, notes):
        """A trace as traces.jsonl writes it, read as vf-replay reads it; its task data
        rebuilt into the Task's data type (else, as replay does, the wire row scored by
        the base Task)."""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise BadTrace("the sample's trace column is a string that is not JSON (%s)" % exc) from None
        if not isinstance(value, dict):
            raise BadTrace("the sample's trace column is %s, not a trace (a JSON object)" % _describe(value))
        if "task" not in value:
            task = sample.get("task")
            if isinstance(task, dict) and isinstance(task.get("data"), dict):
                value = dict(value, task=task)
            elif isinstance(sample.get("task_data"), dict):
                value = dict(value, task={"type": self.task_cls.__name__, "data": sample["task_data"]})
        try:
            trace = self.wire_trace.model_validate(value)
        except Exception as exc:
            raise BadTrace("the sample's trace does not validate as a verifiers trace: %s" % exc) from None
        seat = trace.agent.name
        if seat not in _SINGLE_AGENT_NAMES:
            raise MultiAgentRow(
                "this trace is the %r seat of a multi-agent episode: vf-replay refuses multi-agent runs, whose "
                "env scores across traces; not scored" % seat
            )
        if trace.has_error:
            raise NotScored(_not_scored(trace))
        if trace.task.type != self.task_cls.__name__:
            notes.append("the trace was produced by %s, re-scored as %s" % (trace.task.type, self.task_cls.__name__))
        try:
            row = self.data_cls.model_validate(trace.task.data.model_dump())
        except Exception as exc:
            notes.append(
                "its task data do not rebuild as %s (%s): scored by the base Task on the saved data, as "
                "vf-replay does (judges and base-task signals only)" % (self.data_cls.__name__, _first_line(exc))
            )
            row = trace.task.data
        return trace, row

    def _sample_trace(self, sample, notes):
        """A chat or prompt-completion sample as a trace: its turns a chain of nodes,
        the generated assistant turns sampled; the task data the sample's columns."""
        v1 = self.v1
        conv = parts(sample)
        if conv.chat:
            messages = sample["messages"]
            cut = len(messages)
            # the completion: the trailing assistant (and tool) turns after the last
            # user turn; its assistant turns are what the model generated
            while cut > 0 and isinstance(messages[cut - 1], dict) and messages[cut - 1].get("role") in ("assistant", "tool"):
                cut -= 1
            prompt, completion = list(messages[:cut]), list(messages[cut:])
        else:
            prompt = _as_messages(conv.prompt, "user")
            completion = _as_messages(conv.completion, "assistant")
        columns = {k: v for k, v in sample.items() if k not in conv.keys and k != TEMPLATED}
        fields = dict(columns)
        supplied = _prompt_fields(conv.prompt if not conv.chat else prompt, columns)
        fields.update(supplied)
        row = self._task_data(fields, columns, notes)
        nodes = []
        for n, message in enumerate(prompt + completion):
            vf_message = self._message(message)
            nodes.append(
                {
                    "parent": n - 1 if n else None,
                    "message": vf_message,
                    "sampled": n >= len(prompt) and vf_message["role"] == "assistant",
                }
            )
        task = self.task_cls(row, self.config)
        try:
            trace = v1.Trace(
                task=v1.TraceTask(type=self.task_cls.__name__, data=row, key=task.key, hash=task.hash),
                state=self.state_cls(),
                agent=v1.AgentInfo(config=v1.AgentConfig()),
                nodes=nodes,
                is_completed=True,
                ok=True,
            )
        except Exception as exc:
            raise BadTrace("the sample's messages do not make a verifiers trace: %s" % exc) from None
        return trace, row

    def _task_data(self, fields, columns, notes):
        """The sample's columns as the Task's data type. A column that only collides
        with one of TaskData's own optional fields (an int `id`, a prompt in a form
        TaskData does not take) is left out, with a word; anything else fails the row."""
        try:
            return self.data_cls.model_validate(fields)
        except Exception as exc:
            errors = _validation_errors(exc)
            base = self.v1.TaskData.model_fields
            own = self.data_cls.model_fields
            bad = {e["loc"][0] for e in errors if e.get("loc")}
            droppable = bad and all(
                name in base and name in own and not own[name].is_required() and name in fields for name in bad
            )
            if droppable:
                trimmed = {k: v for k, v in fields.items() if k not in bad}
                try:
                    row = self.data_cls.model_validate(trimmed)
                except Exception:
                    row = None
                if row is not None:
                    for name in sorted(bad):
                        what = "column" if name in columns else "prompt from the conversation"
                        notes.append(
                            "%s %r (%s) does not fit %s.%s: left out of the task data"
                            % (what, name, _describe(fields[name]), self.data_cls.__name__, name)
                        )
                    return row
            raise BadTaskData(
                "the sample's columns (%s) do not validate as %s, the task data of %s: %s"
                % (", ".join(sorted(columns)) or "none", self.data_cls.__name__, self.task_cls.__name__, exc)
            ) from None

    def _message(self, message):
        """A sample's message (OpenAI chat form) as verifiers' Message takes it."""
        if not isinstance(message, dict):
            raise BadTrace("a message of the sample is %s, not a {role, content} object" % _describe(message))
        role = message.get("role")
        content = message.get("content")
        if role == "assistant":
            out = {"role": "assistant", "content": None if content is None else _text(content)}
            reasoning = message.get("reasoning_content")
            if reasoning is None:
                reasoning = message.get("reasoning")
            if isinstance(reasoning, str):
                out["reasoning_content"] = reasoning
            calls = message.get("tool_calls")
            if calls:
                out["tool_calls"] = [_tool_call(c) for c in calls]
            return out
        content = self._content(content)
        if role == "tool":
            out = {"role": "tool", "tool_call_id": str(message.get("tool_call_id") or ""), "content": content}
            if isinstance(message.get("name"), str):
                out["name"] = message["name"]
            return out
        if role in ("system", "developer"):
            return {"role": "system", "content": content}
        if role == "user":
            return {"role": "user", "content": content}
        raise BadTrace("a message of the sample has role %r (verifiers knows system, user, assistant, tool)" % (role,))

    def _content(self, content):
        if isinstance(content, list) and self.v1.content_to_parts is not None:
            return self.v1.content_to_parts(content)
        if content is None:
            return ""
        return content if isinstance(content, (str, list)) else str(content)

    # -- the call: vf-replay's rescore ----------------------------------------------

    async def score(self, trace, row, notes):
        """`rescore` of verifiers' replay on a copy of the trace: clear, build the
        task, `await task.score(trace)` with no runtime. An exception (verifiers'
        TaskError) fails the row."""
        v1 = self.v1
        trace = trace.model_copy(deep=True)
        trace.info.pop("judge_calls", None)
        trace.rewards, trace.metrics, trace.extra_usage = {}, {}, []
        task = (self.task_cls if isinstance(row, self.data_cls) else v1.Task)(row, config=self.config)
        skipped = _needs_runtime(task)
        await task.score(trace)
        return Scored(trace, skipped, notes)

    def result(self, value):
        if not isinstance(value, Scored):
            raise InvalidResult("a verifiers Task is scored by rwb; it returned %s" % _describe(value))
        return value.result()


class Scored:
    """What scoring one trace recorded: its rewards and metrics, what was skipped."""

    __slots__ = ("rewards", "metrics", "reward", "skipped", "notes")

    def __init__(self, trace, skipped, notes):
        self.rewards = [(k, None if r is None else (r.score, r.weight)) for k, r in trace.rewards.items()]
        self.metrics = list(trace.metrics.items())
        self.reward = trace.reward
        self.skipped = skipped
        self.notes = notes

    def __eq__(self, other):
        return isinstance(other, Scored) and self._key() == other._key()

    def __repr__(self):
        return "Scored(reward=%r, rewards=%r, metrics=%r)" % (self.reward, self.rewards, self.metrics)

    def _key(self):
        return (repr(self.rewards), repr(self.metrics), repr(self.reward), self.skipped, self.notes)

    def result(self):
        score = _finite(self.reward, "the trace's reward (Σ score × weight)", self.rewards)
        metrics = {}
        weights = []
        for name, recorded in self.rewards:
            if recorded is None:
                metrics[name] = {"score": None, "is_score_valid": False, "reason": "reward not recorded"}
                continue
            value, weight = recorded
            _finite(value, "reward %r" % name, None)
            metrics[name] = {"score": float(value), "is_score_valid": True, "reason": "reward, weight %g" % weight}
            weights.append((name, weight))
        for name, value in self.metrics:
            key = name if name not in metrics else "%s (metric)" % name
            if value is None:
                metrics[key] = {"score": None, "is_score_valid": False, "reason": "metric not recorded"}
                continue
            _finite(value, "metric %r" % name, None)
            metrics[key] = {"score": float(value), "is_score_valid": True, "reason": "metric (not summed)"}
        words = list(self.notes)
        skipped_metrics, skipped_rewards = self.skipped
        if skipped_rewards and not self.rewards:
            words.append(
                "every reward needs a runtime (skipped offline: %s): reward 0.0, as verifiers reports it"
                % ", ".join(skipped_rewards)
            )
        elif skipped_rewards:
            words.append("skipped offline, no runtime: %s" % ", ".join(skipped_rewards))
        if skipped_metrics:
            words.append("metrics skipped offline, no runtime: %s" % ", ".join(skipped_metrics))
        if weights:
            words.append("reward = Σ score × weight over %s" % ", ".join("%s (×%g)" % w for w in weights))
        return {
            "score": score,
            "is_score_valid": True,
            "reason": "; ".join(words) or None,
            "metrics": metrics,
            "step_outputs": None,
            "error": None,
        }


def _finite(value, what, rewards):
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        extra = ""
        if rewards:
            extra = " (rewards: %s)" % ", ".join(
                "%s=%r" % (k, None if r is None else r[0]) for k, r in rewards
            )
        raise InvalidResult("%s is %r, not a finite number%s" % (what, value, extra))
    return value


def _needs_runtime(task):
    """The metrics, rewards and judges `Task.score` drops when it has no runtime (its
    own test: a `runtime` parameter without a default)."""

    def requires_runtime(fn):
        try:
            param = inspect.signature(fn).parameters.get("runtime")
        except (TypeError, ValueError):
            return False
        return param is not None and param.default is inspect.Parameter.empty

    metrics = [fn.__name__ for fn in task.hooks("metric") if requires_runtime(fn)]
    rewards = [fn.__name__ for fn in task.hooks("reward") if requires_runtime(fn)]
    if getattr(task.config, "judges", None):
        try:
            judges = task.plugged_judges()
        except Exception:
            judges = []
        rewards += [j.reward_name for j in judges if requires_runtime(j.score)]
    return tuple(metrics), tuple(rewards)


def _not_scored(trace):
    """Why a failed rollout's trace is not scored, with what it logged."""
    why = "ok: false"
    if trace.stop_condition:
        why += ", stop_condition %s" % trace.stop_condition
    if trace.errors:
        last = trace.errors[-1]
        why += ", %s: %s" % (last.type, _first_line(last.message))
    logged = ", ".join(
        "%s=%s" % (k, "null" if r is None else "%g×%g" % (r.score, r.weight)) for k, r in trace.rewards.items()
    )
    text = "the rollout failed (%s): vf-replay skips it, so rwb does not score it" % why
    if trace.rewards:
        text += "; logged reward %g (%s)" % (trace.reward, logged)
    if trace.metrics:
        text += "; logged metrics %s" % ", ".join("%s=%s" % kv for kv in trace.metrics.items())
    return text


def _prompt_fields(prompt, columns):
    """TaskData's `prompt` and `system_prompt` from the sample's prompt, where no
    column has them: a leading system turn is the system prompt, one user turn of
    text the prompt as a string (the way a task's data opens a live rollout)."""
    out = {}
    if isinstance(prompt, str):
        if "prompt" not in columns:
            out["prompt"] = prompt
        return out
    if not isinstance(prompt, list):
        return out
    turns = list(prompt)
    if turns and isinstance(turns[0], dict) and turns[0].get("role") == "system" and isinstance(turns[0].get("content"), str):
        if "system_prompt" not in columns:
            out["system_prompt"] = turns[0]["content"]
        turns = turns[1:]
    if "prompt" not in columns and turns:
        if len(turns) == 1 and isinstance(turns[0], dict) and turns[0].get("role") == "user" and isinstance(turns[0].get("content"), str):
            out["prompt"] = turns[0]["content"]
        else:
            out["prompt"] = turns
    return out


def _as_messages(part, role):
    if isinstance(part, str):
        return [{"role": role, "content": part}]
    return list(part) if isinstance(part, list) else []


def _text(content):
    """An assistant turn's content as verifiers' AssistantMessage holds it (text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content)


def _tool_call(call):
    """An OpenAI tool call ({id, type, function: {name, arguments}}) as verifiers'
    ToolCall ({id, type, name, arguments})."""
    if not isinstance(call, dict):
        raise BadTrace("a tool call of the sample is %s, not an object" % _describe(call))
    fn = call.get("function") if isinstance(call.get("function"), dict) else call
    arguments = fn.get("arguments")
    if not isinstance(arguments, str):
        arguments = "{}" if arguments is None else json.dumps(arguments)
    kind = call.get("type")
    return {
        "id": str(call.get("id") or ""),
        "type": kind if kind in ("function", "custom") else "function",
        "name": str(fn.get("name") or ""),
        "arguments": arguments,
    }


def _validation_errors(exc):
    try:
        return exc.errors()
    except Exception:
        return []


def _first_line(value):
    text = str(value)
    return text.splitlines()[0] if text else text


def _task_base(cls):
    for base in inspect.getmro(cls)[1:]:
        if base.__name__ == "Task":
            return "%s.%s" % (base.__module__, base.__qualname__)
    return "none"
