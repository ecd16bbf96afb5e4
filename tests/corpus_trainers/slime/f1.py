"""Token F1 in the shape of slime's rm_hub/f1.py (`--rm-type f1` calls
f1_score(response, label)[0]), written for this corpus: returns (f1, precision, recall)."""

import re
import string
from collections import Counter


def _tokens(text):
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return text.split()


def f1_score(prediction, ground_truth):
    pred, gold = _tokens(prediction), _tokens(str(ground_truth))
    if not pred or not gold:
        return 0.0, 0.0, 0.0
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0, 0.0, 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall), precision, recall
