"""`RewardFunction` as reward-kit 0.4.1 has it, with the standard library only.

A reward function run here (`mode="local"`: a function, or `func_path`) or elsewhere
(`mode="remote"`: an `endpoint` URL, or `name`, a Fireworks reward), called as
`rf(messages, ground_truth=None, **kwargs)` and giving an `EvaluateResult`.
`get_trl_adapter()` turns it into a TRL batch reward function.

What 0.4.1 does, and so does this: `ground_truth=None` becomes the messages before
the last one; a remote call POSTs `{"messages", "ground_truth", **kwargs}` (the kwargs
flat, not nested) with `Authorization: Bearer $FIREWORKS_API_KEY` (an empty header
without the variable) and reads `score`, `reason` and `metrics` from the reply, a
metric's `success` becoming its `is_score_valid`; errors are logged, then raised.
`func_path` takes `module:func` or `module.func`, and, an rwb addition,
`file.py::func`.
"""

import importlib
import importlib.util
import json
import logging
import os
import warnings

from .models import EvaluateResult, MetricResult

logger = logging.getLogger(__name__)

FIREWORKS_REWARD_URL = "https://api.fireworks.ai/v1/reward/%s"
FIREWORKS_MODEL_URL = "https://api.fireworks.ai/v1/models/%s/reward"


class HTTPError(IOError):
    """An endpoint answered with an error status (requests' raise_for_status)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class RewardFunction:
    """A reward function to call locally or at a remote endpoint (see the module)."""

    def __init__(self, func=None, func_path=None, mode="local", endpoint=None, name=None, model_id=None, **kwargs):
        self.mode = mode
        self.func = func
        self.func_path = func_path
        self.endpoint = endpoint
        self.name = name
        self.model_id = model_id
        self.kwargs = kwargs
        if mode == "local":
            if func is None and func_path is None:
                raise ValueError("Either 'func' or 'func_path' must be provided for local mode")
            if func_path and func is None:
                self.func = self._load_function_from_path(func_path)
        elif mode == "remote":
            if endpoint is None and name is None:
                raise ValueError("Either 'endpoint' or 'name' must be provided for remote mode")
            if name and endpoint is None:
                self.endpoint = FIREWORKS_REWARD_URL % name
        elif mode == "fireworks_hosted":
            if model_id is None:
                raise ValueError("'model_id' must be provided for fireworks_hosted mode")
            self.endpoint = FIREWORKS_MODEL_URL % model_id
        else:
            raise ValueError("Invalid mode: %s" % mode)

    def _load_function_from_path(self, func_path):
        """`module:func`, `module.func`, or `file.py::func` (rwb's addition)."""
        if "::" in func_path:
            return _load_from_file(func_path)
        if ":" in func_path:
            module_path, func_name = func_path.split(":", 1)
        else:
            parts = func_path.split(".")
            if len(parts) < 2:
                raise ValueError(
                    "Invalid func_path format: %s, expected 'module.path:function_name' or "
                    "'module.path.function_name'" % func_path
                )
            module_path, func_name = ".".join(parts[:-1]), parts[-1]
        try:
            return getattr(importlib.import_module(module_path), func_name)
        except (ImportError, AttributeError) as e:
            raise ImportError("Failed to load function from path %s: %s" % (func_path, e))

    def __call__(self, messages, ground_truth=None, **kwargs):
        if ground_truth is None:
            ground_truth = messages[:-1] if messages else []
        combined = dict(self.kwargs)
        combined.update(kwargs)
        if self.mode == "local":
            if self.func is None:
                raise ValueError("No function provided for local mode")
            try:
                return _local_result(self.func(messages=messages, ground_truth=ground_truth, **combined))
            except Exception as e:
                logger.error("Error calling local reward function: %s", e)
                raise
        if self.mode in ("remote", "fireworks_hosted"):
            if self.endpoint is None:
                raise ValueError("No endpoint provided for %s mode" % self.mode)
            payload = {"messages": messages, "ground_truth": ground_truth}
            payload.update(combined)
            try:
                return _remote_result(_post_json(self.endpoint, payload))
            except Exception as e:
                logger.error("Error calling remote endpoint: %s", e)
                raise
        raise ValueError("Invalid mode: %s" % self.mode)

    def get_trl_adapter(self):
        """A TRL reward function `adapter(prompts, completions=None, **kwargs)` that
        scores each prompt + completion with this reward function, the sample's
        `solution` as ground truth; a sample whose call raises scores 0.0."""

        def adapter(prompts, completions=None, **kwargs):
            size = len(prompts)
            if completions is None:
                completions = [""] * size
            if size != len(completions):
                logger.warning(
                    "Batch size mismatch between prompts (%d) and completions (%d). Using min length.",
                    size,
                    len(completions),
                )
                size = min(size, len(completions))
            solutions = kwargs.get("solution", [None] * size)
            if not isinstance(solutions, list) or len(solutions) != size:
                logger.warning(
                    "Expected 'solution' kwarg to be a list of size %d, but got %s. "
                    "Ground truth might not be passed correctly.",
                    size,
                    type(solutions),
                )
                solutions = [None] * size
            scores = []
            for i in range(size):
                messages = prompts[i] + [{"role": "assistant", "content": _completion_text(completions[i])}]
                try:
                    scores.append(self(messages=messages, ground_truth=_solution_text(solutions[i])).score)
                except Exception as e:
                    logger.error("Error processing sample %d in TRL adapter: %s", i, e)
                    scores.append(0.0)
            return scores

        return adapter


def _load_from_file(func_path):
    path, func_name = func_path.split("::", 1)
    module_name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or not os.path.isfile(path):
        raise ImportError("Failed to load function from path %s: no file %s" % (func_path, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        return getattr(module, func_name)
    except AttributeError as e:
        raise ImportError("Failed to load function from path %s: %s" % (func_path, e))


def _local_result(result):
    """What a local function returned, as 0.4.1 reads it: an EvaluateResult, a legacy
    (score, {name: score}) tuple, or a dict with a score."""
    if isinstance(result, EvaluateResult):
        return result
    if isinstance(result, tuple) and len(result) == 2:
        warnings.warn("Tuple return format is deprecated. Use EvaluateResult instead.", DeprecationWarning, stacklevel=3)
        score, components = result
        metrics = {k: MetricResult(score=v, reason="%s score" % k, is_score_valid=True) for k, v in components.items()}
        return EvaluateResult(score=score, metrics=metrics)
    if isinstance(result, dict) and "score" in result:
        warnings.warn("Dictionary return format is deprecated. Use EvaluateResult instead.", DeprecationWarning, stacklevel=3)
        return EvaluateResult(
            score=result["score"], reason=result.get("reason"), metrics=_metrics(result, "is_score_valid")
        )
    raise TypeError(
        "Invalid return type from reward function: %s. "
        "Expected EvaluateResult or (float, Dict[str, float]) tuple." % type(result)
    )


def _remote_result(result):
    if isinstance(result, dict) and "score" in result:
        return EvaluateResult(score=result["score"], reason=result.get("reason"), metrics=_metrics(result, "success"))
    raise ValueError("Invalid response from remote endpoint: %s" % (result,))


def _metrics(result, valid_key):
    """A result's `metrics` as MetricResults: a dict metric's score (0.0), reason
    ("<name> score") and validity read from `valid_key` (True), a number as a score."""
    metrics = {}
    if "metrics" not in result:
        return metrics
    for k, v in result["metrics"].items():
        if isinstance(v, dict):
            metrics[k] = MetricResult(
                score=v.get("score", 0.0), reason=v.get("reason", "%s score" % k), is_score_valid=v.get(valid_key, True)
            )
        else:
            metrics[k] = MetricResult(score=float(v), reason="%s score" % k, is_score_valid=True)
    return metrics


def _post_json(url, payload):
    """POST `payload` as JSON; the decoded JSON reply. An error status raises HTTPError
    worded as requests' raise_for_status words it. urllib is imported here: it costs
    every worker's start-up ~20 ms, and only a remote reward function posts."""
    import urllib.error
    import urllib.request

    key = os.environ.get("FIREWORKS_API_KEY")
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode("utf-8"),
        headers={"Content-Type": "application/json", "Authorization": "Bearer %s" % key if key else ""},
        method="POST",
    )
    failed = None
    try:
        with urllib.request.urlopen(request) as response:
            body = response.read()
    except urllib.error.HTTPError as e:
        side = "Client" if e.code < 500 else "Server"
        failed = HTTPError("%d %s Error: %s for url: %s" % (e.code, side, e.reason, url), e.code)
    if failed is not None:
        raise failed  # outside the except: no chained urllib error, as requests raises it
    return json.loads(body.decode("utf-8"))


def _completion_text(completion):
    """A TRL completion as the text of the assistant turn: the content of a list's
    first assistant message, a string as it is, anything else as str()."""
    if isinstance(completion, list):
        if not completion:
            return ""
        first = completion[0]
        if isinstance(first, dict) and "content" in first and first.get("role") == "assistant":
            return str(first.get("content", ""))
        return str(first)
    if isinstance(completion, str):
        return completion
    return str(completion)


def _solution_text(solution):
    """A sample's `solution` as ground truth: a list's first item, as a string."""
    if solution is None:
        return None
    if isinstance(solution, list):
        return str(solution[0]) if solution else None
    return str(solution)
