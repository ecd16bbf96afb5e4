"""Math answer check: is the assistant's final answer equal to ``ground_truth``?

The final answer is taken from the last assistant message, in order of
preference:

1. the last ``\\boxed{...}`` (or ``\\fbox{...}``),
2. the last "the answer is X" / "final answer: X" / "Answer: X" phrase,
3. failing both, the last number in the message.

Numbers may be integers, decimals, thousands-separated ("12,000"), fractions
("3/4", ``\\frac{3}{4}``), negative, or carry a unit, a currency sign or a
percent sign. Comparison is numeric: exact up to a small relative tolerance,
and a decimal answer written with two or more places is accepted when it is
the ground truth correctly rounded to that many places (0.1667 for 1/6).

Components:

* ``answer_correct``: 1.0 when the extracted answer matches, else 0.0.
* ``format``: 1.0 boxed, 0.8 marked by an answer phrase, 0.3 only a bare last
  number, 0.0 nothing to read.

Score = 0.8 * answer_correct + 0.2 * format.

``messages`` is deliberately left unannotated, so the items arrive as the raw
dicts from the samples file: read them with ``m["role"]`` / ``m.get(...)``,
not ``m.role``. Samples without ``ground_truth`` score 0 and are marked
``is_score_valid=False``: there is nothing to check them against.
"""

import math
import re
from typing import Any, Optional, Tuple

from reward_kit import EvaluateResult, MetricResult, reward_function

DEFAULT_REL_TOL = 1e-6

NUMBER_RE = re.compile(
    r"(?<![\w.])-?\d+(?:\.\d+)?(?:\s*/\s*-?\d+(?:\.\d+)?)?|(?<![\w.])-?\.\d+"
)
ANSWER_PHRASE_RE = re.compile(
    r"\b(?:final\s+)?answer\s*(?:is|:|=)\s*:?\s*([^\n]+)",
    re.IGNORECASE,
)


def _last_assistant_text(messages: Any) -> Optional[str]:
    if not isinstance(messages, (list, tuple)):
        return None
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "assistant":
            content = m.get("content")
            if isinstance(content, str) and content.strip():
                return content
    return None


def _ground_truth_text(ground_truth: Any) -> Optional[str]:
    if ground_truth is None or isinstance(ground_truth, bool):
        return None
    if isinstance(ground_truth, (int, float)):
        return repr(ground_truth)
    if isinstance(ground_truth, str):
        return ground_truth if ground_truth.strip() else None
    if isinstance(ground_truth, (list, tuple)) and ground_truth:
        # Some datasets store the reference as a list of messages.
        last = ground_truth[-1]
        content = last["content"] if isinstance(last, dict) and "content" in last else None
        return content if isinstance(content, str) and content.strip() else None
    return None


def _last_boxed(text: str) -> Optional[str]:
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        return None
    i = text.index("{", start) + 1
    depth = 1
    out = []
    while i < len(text):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return "".join(out)
        out.append(ch)
        i += 1
    return None  # unbalanced braces: treat as no box


def _clean(text: str) -> str:
    """Turn LaTeX-ish and prose numbers into plain ASCII arithmetic."""
    s = text.replace("\u2212", "-").replace("\u2013", "-")
    s = re.sub(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", s)
    s = re.sub(r"\\text\s*\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\(?:left|right|,|!|;|\s)", " ", s)
    s = s.replace("\\$", " ").replace("$", " ").replace("\\%", "%")
    s = re.sub(r"\((-?\d+(?:\.\d+)?)\)/\((-?\d+(?:\.\d+)?)\)", r"\1/\2", s)
    # 12,000 -> 12000 (only proper thousands groups, not "3, 4")
    while re.search(r"\d,\d{3}(?!\d)", s):
        s = re.sub(r"(\d),(\d{3})(?!\d)", r"\1\2", s)
    return s


def _parse_number(token: str) -> Optional[Tuple[float, int]]:
    """Return (value, decimal places written) for '3/4', '-0.25', '12'."""
    token = token.replace(" ", "")
    try:
        if "/" in token:
            num, den = token.split("/", 1)
            if float(den) == 0:
                return None
            return float(num) / float(den), 0
        places = len(token.split(".", 1)[1]) if "." in token else 0
        return float(token), places
    except ValueError:
        return None


def _first_number(text: str, last: bool = False) -> Optional[Tuple[float, int, bool, str]]:
    """Find a number in text: (value, decimal places, is_percent, as written)."""
    cleaned = _clean(text)
    matches = list(NUMBER_RE.finditer(cleaned))
    if not matches:
        return None
    match = matches[-1] if last else matches[0]
    parsed = _parse_number(match.group(0))
    if parsed is None:
        return None
    rest = cleaned[match.end():match.end() + 10].lstrip().lower()
    is_percent = rest.startswith("%") or rest.startswith("percent")
    return parsed[0], parsed[1], is_percent, match.group(0).strip()


def _extract(text: str) -> Tuple[Optional[str], float, str]:
    """Return (final answer as written or None, format score, where it came from)."""
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed.strip(), 1.0, "\\boxed{}"
    phrases = [m.group(1).strip().rstrip(".!;").strip() for m in ANSWER_PHRASE_RE.finditer(text)]
    if phrases:
        with_number = [p for p in phrases if _first_number(p) is not None]
        return (with_number or phrases)[-1], 0.8, "an 'answer is' phrase"
    found = _first_number(text, last=True)
    if found is not None:
        return found[3], 0.3, "the last number, as no final answer is marked"
    return None, 0.0, "nowhere"


def _matches(answer: Tuple[float, int, bool, str], truth: float, rel_tol: float) -> Tuple[bool, str]:
    value, places, is_percent, _ = answer
    candidates = [value]
    if is_percent:
        candidates.append(value / 100.0)
    for candidate in candidates:
        if not math.isfinite(candidate):
            continue
        if math.isclose(candidate, truth, rel_tol=rel_tol, abs_tol=1e-9):
            return True, "equal"
        if places >= 2 and abs(candidate - truth) <= 0.5 * 10 ** (-places) + 1e-12:
            return True, "equal when rounded to {} places".format(places)
    return False, "not equal"


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _normalise_words(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


@reward_function
def evaluate(messages, ground_truth=None, **kwargs) -> EvaluateResult:
    """Compare the final answer of the last assistant message with ground_truth."""
    try:
        rel_tol = float(kwargs.get("tolerance", DEFAULT_REL_TOL))
    except (TypeError, ValueError):
        rel_tol = DEFAULT_REL_TOL
    if not math.isfinite(rel_tol) or rel_tol < 0:
        rel_tol = DEFAULT_REL_TOL

    text = _last_assistant_text(messages)
    if text is None:
        return EvaluateResult(
            score=0.0,
            reason="No assistant message with text to grade",
            metrics={
                "answer_correct": MetricResult(score=0.0, reason="Nothing to grade"),
                "format": MetricResult(score=0.0, reason="Nothing to grade"),
            },
        )

    written, format_score, how = _extract(text)
    answer = _first_number(written) if written is not None else None
    if written is None:
        format_metric = MetricResult(score=0.0, reason="No marked final answer and no number in the reply")
    else:
        format_metric = MetricResult(
            score=format_score,
            reason="Final answer '{}' taken from {}".format(_short(written), how),
        )

    truth_text = _ground_truth_text(ground_truth)
    if truth_text is None:
        return EvaluateResult(
            score=0.0,
            is_score_valid=False,
            reason="No ground_truth in this sample, so correctness cannot be checked",
            metrics={
                "answer_correct": MetricResult(
                    score=0.0, is_score_valid=False, reason="ground_truth missing"),
                "format": format_metric,
            },
        )

    truth = _first_number(truth_text)
    expected = _short(truth_text.strip())
    if truth is None:
        # Not numeric (e.g. "blue"): fall back to a normalised text comparison.
        correct = written is not None and _normalise_words(written) == _normalise_words(truth_text)
        detail = "answer '{}' vs expected '{}' compared as text: {}".format(
            _short(written or ""), expected, "equal" if correct else "not equal")
    elif answer is None:
        correct = False
        detail = "no numeric answer found ({}); expected {}".format(
            "'{}'".format(_short(written)) if written else "nothing to read", expected)
    else:
        correct, how_equal = _matches(answer, truth[0], rel_tol)
        detail = "answer {} vs expected {}: {}".format(answer[3], expected, how_equal)

    correct_metric = MetricResult(score=1.0 if correct else 0.0, reason=detail)
    score = 0.8 * correct_metric.score + 0.2 * format_score
    verdict = "Correct" if correct else "Incorrect"
    return EvaluateResult(
        score=round(score, 4),
        reason="{}: {}; format {:.1f} ({})".format(
            verdict, detail, format_score,
            "answer taken from " + how if written is not None else "no final answer found"),
        metrics={"answer_correct": correct_metric, "format": format_metric},
    )
