"""A grader written in the shape of HuggingFace math-verify's `math_metric`, as
NVIDIA-NeMo/RL's math environment builds and calls it
(nemo_rl/environments/math_environment.py at 7ea279abfbeb698b092856d0dab61e7cf39bc909,
HFVerifyWorker): `verify_func = math_metric(gold_extraction_target=(latex,),
pred_extraction_target=(expr, latex))` made once, then
`score, extracted = verify_func([gold], [prediction])` per sample. The gold is read
from LaTeX only, so it must come as `\\boxed{...}` (NeMo-RL wraps the ground truth
so); the prediction from its last `\\boxed{}` or else its last number. Like the real
parser it raises on input it cannot parse (an unclosed `\\boxed{`, a zero
denominator); NeMo-RL catches that and scores 0. The code is ours.
"""

import re
from fractions import Fraction

_NUMBER = r"-?\d+(?:\.\d+)?"


def _boxed(text):
    """The content of the last \\boxed{...}, braces balanced; None without one.
    An unclosed one raises, as the real LaTeX parser does."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, at = 1, start + len("\\boxed{")
    for n in range(at, len(text)):
        if text[n] == "{":
            depth += 1
        elif text[n] == "}":
            depth -= 1
            if depth == 0:
                return text[at:n]
    raise ValueError("unbalanced braces in %r" % text[start:])


def _value(expr):
    """A number, a fraction (\\frac{a}{b} or a/b) or a percentage as a Fraction."""
    expr = expr.replace("\\!", "").replace(",", "").replace("$", "").strip()
    frac = re.fullmatch(r"\\[dt]?frac\{(%s)\}\{(%s)\}" % (_NUMBER, _NUMBER), expr)
    if frac:
        return Fraction(frac.group(1)) / Fraction(frac.group(2))
    ratio = re.fullmatch(r"(%s)\s*/\s*(%s)" % (_NUMBER, _NUMBER), expr)
    if ratio:
        return Fraction(ratio.group(1)) / Fraction(ratio.group(2))
    percent = re.fullmatch(r"(%s)\s*\\?%%" % _NUMBER, expr)
    if percent:
        return Fraction(percent.group(1)) / 100
    if re.fullmatch(_NUMBER, expr):
        return Fraction(expr)
    return None


def _extract(text, targets):
    found = []
    if "latex" in targets:
        inside = _boxed(text)
        if inside is not None:
            value = _value(inside)
            if value is not None:
                found.append(value)
    if not found and "expr" in targets:
        numbers = re.findall(_NUMBER, text.replace(",", ""))
        if numbers:
            found.append(Fraction(numbers[-1]))
    return found


def math_metric(gold_extraction_target=("latex",), pred_extraction_target=("expr", "latex")):
    """The grading function: (golds, predictions) -> (score, (golds, predictions)
    as extracted); 1.0 when any extracted prediction equals any extracted gold."""

    def get_metrics(golds, predictions):
        gold_values = [v for g in golds for v in _extract(g, gold_extraction_target)]
        pred_values = [v for p in predictions for v in _extract(p, pred_extraction_target)]
        score = 1.0 if any(p == g for p in pred_values for g in gold_values) else 0.0
        return score, ([str(v) for v in gold_values], [str(v) for v in pred_values])

    return get_metrics


# made once, as HFVerifyWorker.__init__ and nemo_rl/environments/rewards.py make theirs
verify_func = math_metric(gold_extraction_target=("latex",), pred_extraction_target=("expr", "latex"))


class HFVerifyWorker:
    """The math environment's verify worker itself (HFVerifyWorker.verify): one call
    per chunk of the batch, the ground truth wrapped in \\boxed{} before grading, an
    exception scored 0.0 inside the loop."""

    def __init__(self):
        self.verify_func = math_metric(gold_extraction_target=("latex",), pred_extraction_target=("expr", "latex"))

    def verify(self, pred_responses, ground_truths, return_extracted_answer=False, **kwargs):
        results = []
        for response, ground_truth in zip(pred_responses, ground_truths):
            try:
                impl = kwargs.get("math_verify_impl", "hf_math_verify")
                if impl != "hf_math_verify":
                    raise ValueError("Unknown math_verify_impl: %s" % impl)
                score, _ = self.verify_func(["\\boxed{" + ground_truth + "}"], [response])
                score = float(score)
            except Exception:
                score = 0.0
            results.append(score)
        return results
