"""Verifiers written in the shape of allenai/open-instruct's ground-truth rewards
(open_instruct/ground_truth_utils.py at e6c3044aa6201c8bfa4573c1b03142af599e730d):
a config dataclass the trainer fills from its args (`VerifierConfig.from_args`), a
`VerificationResult` dataclass whose `.score` the trainer reads, and verifier
classes built once with their config and called per response through `async_call`
(whose default runs the synchronous `__call__` in the loop's executor). The code is
ours; the shapes, names and calls are theirs.
"""

import asyncio
import dataclasses
import re
import string
from abc import ABC, abstractmethod
from collections import Counter


@dataclasses.dataclass
class VerifierConfig:
    """The verifiers' config (ground_truth_utils.py, VerifierConfig): the fields it
    declares, taken by name from the trainer's argument objects."""

    @classmethod
    def from_args(cls, *sources):
        wanted = [f.name for f in dataclasses.fields(cls)]
        values = {}
        for source in sources:
            if source is None:
                continue
            for name in wanted:
                if hasattr(source, name):
                    values[name] = getattr(source, name)
        return cls(**values)


@dataclasses.dataclass
class VerificationResult:
    score: float
    cost: float = 0.0
    reasoning: str | None = None


class VerifierFunction(ABC):
    """A verifier: named, weighted, holding its config; `__call__` scores one
    response, `async_call` is what the trainer awaits."""

    def __init__(self, name, weight=1.0, verifier_config=None):
        self.name = name
        self.weight = weight
        self.verifier_config = verifier_config

    @classmethod
    def get_config_class(cls):
        return VerifierConfig

    @abstractmethod
    def __call__(self, tokenized_prediction, prediction, label, query=None, rollout_state=None):
        """One response's VerificationResult."""

    async def async_call(self, tokenized_prediction, prediction, label, query=None, rollout_state=None):
        # as open-instruct's default: the synchronous call, in the loop's executor
        loop = asyncio.get_event_loop()
        return await loop.run_in_executor(
            None, lambda: self.__call__(tokenized_prediction, prediction, label, query, rollout_state)
        )


def drop_thinking(prediction):
    """The answer part of a reply: what follows </think>, without answer tags."""
    text = prediction.replace("<|assistant|>", "").strip().split("</think>")[-1]
    return text.replace("<answer>", "").replace("</answer>", "").strip()


class GSM8KVerifier(VerifierFunction):
    """The last number of the reply (thousands commas dropped, a sign kept), equal to
    the label as text, case aside."""

    def __init__(self, verifier_config=None):
        super().__init__("gsm8k", verifier_config=verifier_config, weight=1.0)

    def __call__(self, tokenized_prediction, prediction, label, query=None, rollout_state=None):
        text = re.sub(r"(\d),(\d)", r"\1\2", prediction)
        found = re.findall(r"[-+]?(?:\d*\.\d+|\d+)", text)
        last = found[-1] if found else text
        return VerificationResult(score=float(str(last).lower() == str(label).lower()))


def normalized(text):
    """Lower case, no punctuation, no articles, single spaces (SQuAD's normalisation)."""
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def token_f1(prediction, truth):
    said, wanted = normalized(prediction).split(), normalized(truth).split()
    same = sum((Counter(said) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(said), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


class F1Verifier(VerifierFunction):
    """Token F1 of the answer part against the label (the best of several labels)."""

    def __init__(self, verifier_config=None):
        super().__init__("string_f1", verifier_config=verifier_config, weight=1.0)

    def __call__(self, tokenized_prediction, prediction, label, query=None, rollout_state=None):
        answer = drop_thinking(prediction)
        labels = label if isinstance(label, list) else [label]
        return VerificationResult(score=max(token_f1(answer, str(one)) for one in labels))


@dataclasses.dataclass
class MaxLengthVerifierConfig(VerifierConfig):
    max_length_verifier_max_length: int = 32768


class UpToMaxLenVerifier(VerifierFunction):
    """Full marks up to the label's length in tokens, then less by the overshoot over
    the config's max length: the config is read at each call."""

    def __init__(self, verifier_config=None):
        super().__init__("up_to_max_length", verifier_config=verifier_config, weight=1.0)

    @classmethod
    def get_config_class(cls):
        return MaxLengthVerifierConfig

    def __call__(self, tokenized_prediction, prediction, label, query=None, rollout_state=None):
        over = len(tokenized_prediction) - float(label)
        if over < 0:
            return VerificationResult(score=1.0)
        return VerificationResult(score=1 - over / self.verifier_config.max_length_verifier_max_length)
