"""A TRL reward inside a package, importing a sibling module relatively (open-r1's
layout)."""

from .extract import last_boxed


def boxed_accuracy(completions, solution, **kwargs):
    return [1.0 if last_boxed(c[0]["content"]) == (s or "").strip() else 0.0 for c, s in zip(completions, solution)]
