"""Contract checks (the "C" batch): the evaluator called twice the way its trainer
calls it, and per sample what breaks the contract (an input it mutated, a result
that cannot be read, a score outside [0, 1] where the style expects one, a second
identical call that returns something else).
"""

import json

from .audit import Recording, completion_text
from .results import InvalidResult, _as_result, _describe
from .timeouts import EvalTimeout


def run(worker, batch):
    import copy

    samples = []
    for ident, raw in batch:
        try:
            samples.append((ident, json.loads(raw)))
        except ValueError as exc:
            worker.send_result({"i": ident, "issues": ["not JSON: %s" % exc]})
    try:
        if worker.caller.batched:
            batch = [s for _, s in samples]
            preview = _preview(worker, batch, copy) if batch else None
            trusts = [{} for _ in batch]
            found = _check_batched(worker, batch, copy, trusts)
            for n, ((ident, _), issues, trust) in enumerate(zip(samples, found, trusts)):
                message = {"i": ident, "issues": issues, "trust": trust}
                if n == 0 and preview is not None:
                    message["call"] = preview
                worker.send_result(message)
        else:
            for n, (ident, sample) in enumerate(samples):
                preview = _preview(worker, sample, copy) if n == 0 else None
                trust = {}
                message = {"i": ident, "issues": _check_pointwise(worker, sample, copy, trust), "trust": trust}
                if preview is not None:
                    message["call"] = preview
                worker.send_result(message)
    finally:
        worker.evaluation.take_output()


def _preview(worker, sample, copy):
    """The call the caller makes for `sample` (a batch for a batched caller), argument
    by argument, for `rwb check`; None when its arguments cannot be made (the check
    itself then reports why)."""
    from .styles.described import call_preview

    try:
        return call_preview(worker.caller, copy.deepcopy(sample))
    except Exception:
        return None


def _watched_call(worker, sample, kwargs, trust):
    """_call_for_check, recording what the call reached (audit hooks: what of
    `sample`'s completion it ran, too) and the exceptions swallowed in the project's
    files, and the score it gave, in `trust` (SPEC §16)."""
    from .swallowed import Watch

    watch = Watch(worker.roots)
    raised = []
    with Recording([completion_text(sample)]) as reached:
        with watch:
            value, error = _call_for_check(worker, kwargs, raised)
    trust["reaches"] = reached
    trust["swallowed"] = watch.result(raised[0] if raised else None)
    score = None
    if error is None:
        try:
            score = worker.caller.result(value)["score"]
        except BaseException:
            score = None
    trust["score"] = score if isinstance(score, (int, float)) and score == score else None
    return value, error


def _call_for_check(worker, kwargs, raised=None):
    try:
        return worker.evaluation.call(worker.caller.fn, kwargs), None
    except EvalTimeout:
        return None, "did not return within %g s" % worker.evaluation.timeout
    except BaseException as exc:
        if raised is not None:
            raised.append(exc)
        return None, "raised %s: %s" % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")


def _check_value(caller, value):
    if getattr(caller, "reading", None) is not None:
        # a described call reads its return its own way (a score path, reward_key)
        try:
            caller.result(value)
        except InvalidResult as exc:
            return [str(exc)]
        return []
    if value is None:
        return ["returned None, not a score"]
    if isinstance(value, dict) and "score" not in value:
        return ["returned a dict without a 'score' key (keys: %s)" % ", ".join(map(str, value))]
    try:
        result = caller.result(value)
    except InvalidResult as exc:
        return [str(exc)]
    issues = []
    if caller.unit_score and not 0.0 <= result["score"] <= 1.0:
        issues.append("score %r is outside [0, 1]" % result["score"])
    for name, metric in result["metrics"].items():
        if caller.unit_metrics and not 0.0 <= metric["score"] <= 1.0:
            issues.append("component %r score %r is outside [0, 1]" % (name, metric["score"]))
    return issues


def _check_pointwise(worker, sample, copy, trust):
    kwargs = worker.caller.arguments(copy.deepcopy(sample))
    before = copy.deepcopy(kwargs)
    first, error = _watched_call(worker, sample, kwargs, trust)
    if error:
        return [error]
    issues = []
    changed = sorted(k for k in before if kwargs.get(k) != before[k])
    if changed:
        issues.append("mutated its input: %s" % ", ".join(changed))
    issues += _check_value(worker.caller, first)
    second, error = _call_for_check(worker, worker.caller.arguments(copy.deepcopy(sample)))
    if error:
        issues.append("a second identical call " + error)
    elif _comparable(worker.caller, first) != _comparable(worker.caller, second):
        issues.append("a second identical call returned a different result")
    return issues


def _watched_batch(worker, samples, copy, trusts):
    """The batch's first call (as _call_for_check), recording what it reached (on
    every sample of the batch: which one reached it cannot be told, but for what ran
    a sample's completion, which is that sample's), the exceptions
    swallowed in the project's files per sample (swallowed.per_sample: a sample
    called alone again when the batch swallowed something) and each sample's score,
    in `trusts` (SPEC §16). Returns the call's kwargs before and after the call, its
    value and error."""
    from .swallowed import per_sample

    first = {}

    def call(part):
        raised = []
        kwargs = worker.caller.arguments(copy.deepcopy(part))
        before = None if first else copy.deepcopy(kwargs)
        value, error = _call_for_check(worker, kwargs, raised)
        if not first:
            first.update(before=before, kwargs=kwargs, value=value, error=error)
        return raised[0] if raised else None

    recording = Recording([completion_text(s) for s in samples])
    with recording as reached:
        # the whole batch's call is the first `call`: only it is recorded
        swallowed = per_sample(worker.roots, _first_recorded(call, reached), samples)
    value, error = first["value"], first["error"]
    scores = [None] * len(samples)
    if error is None:
        try:
            results = worker.caller.results(value, len(samples))
            scores = [r["score"] if isinstance(r, dict) else None for r in results]
        except BaseException:
            pass
    for n, (trust, pairs, score) in enumerate(zip(trusts, swallowed, scores)):
        trust["reaches"] = [w for w in reached if n in (recording.samples_of(w) or (n,))]
        trust["swallowed"] = pairs
        trust["score"] = score if isinstance(score, (int, float)) and score == score else None
    return first["before"], first["kwargs"], value, error


def _first_recorded(call, reached):
    """`call`, with what calls after the first reach left out of `reached`."""
    calls = []

    def recorded(part):
        if calls:
            keep = list(reached)
            try:
                return call(part)
            finally:
                reached[:] = keep
        calls.append(part)
        return call(part)

    return recorded


def _check_batched(worker, samples, copy, trusts):
    n = len(samples)
    before, kwargs, first, error = _watched_batch(worker, samples, copy, trusts)
    if error:
        return [[error] for _ in samples]
    shared = []
    changed = sorted(k for k in before if kwargs.get(k) != before[k])
    if changed:
        shared.append("mutated its input: %s" % ", ".join(changed))
    if not isinstance(first, (list, tuple)):
        return [shared + ["returned %s, not a list of scores" % _describe(first)] for _ in samples]
    if len(first) != n:
        return [shared + ["returned %d scores for a batch of %d" % (len(first), n)] for _ in samples]
    second, error = _call_for_check(worker, worker.caller.arguments(copy.deepcopy(samples)))
    out = []
    for i, item in enumerate(first):
        issues = list(shared)
        if item is not None:
            try:
                reading = getattr(worker.caller, "reading", None)
                if reading is not None:
                    reading.read(item, True)
                else:
                    _as_result(item, False)
            except InvalidResult as exc:
                issues.append(str(exc))
        if error:
            issues.append("a second identical call " + error)
        elif isinstance(second, (list, tuple)) and len(second) == n and repr(second[i]) != repr(item):
            issues.append("a second identical call returned a different result (%r, then %r)" % (item, second[i]))
        out.append(issues)
    return out


def _comparable(caller, value):
    try:
        return json.dumps(caller.result(value), sort_keys=True, default=repr)
    except BaseException:
        return repr(value)
