"""What rwb's sandbox did for the evaluation in progress (SPEC §18, "what a run
shows"): rwb.sandbox counts each run here and the worker takes the counts with the
sample's result, so that a row carries its runs, their verdicts and their times.

CURRENT stays an empty dict while nothing ran: the worker's hot path tests only its
truth.
"""

CURRENT = {}
MAX_SECONDS = 10000  # the times kept for one evaluation (a concurrent worker's may pile up)


def ran(answer):
    """One `run_code` answered (a SandboxFusion response)."""
    t = CURRENT
    t["runs"] = t.get("runs", 0) + 1
    result = answer.get("run_result") or answer.get("compile_result") or {}
    status = answer.get("status")
    if status == "SandboxError":
        t["sandbox_errors"] = t.get("sandbox_errors", 0) + 1
    if result.get("status") == "TimeLimitExceeded":
        t["timeouts"] = t.get("timeouts", 0) + 1
    elif "rwb: memory limit" in (result.get("stderr") or ""):
        t["memory_kills"] = t.get("memory_kills", 0) + 1
    seconds = t.setdefault("seconds", [])
    if len(seconds) < MAX_SECONDS:
        try:
            seconds.append(round(float(result.get("execution_time") or 0.0), 6))
        except (TypeError, ValueError):
            seconds.append(0.0)


def judged(cases):
    """The verdicts `rwb.sandbox.run` gave its cases."""
    verdicts = CURRENT.setdefault("verdicts", {})
    for case in cases:
        verdict = case.get("verdict", "sandbox_error")
        verdicts[verdict] = verdicts.get(verdict, 0) + 1


def take():
    """The counts so far (None when nothing ran), and a fresh start."""
    if not CURRENT:
        return None
    out = dict(CURRENT)
    CURRENT.clear()
    return out
