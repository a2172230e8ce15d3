"""HotpotQA answer scoring: exact match and token F1 after the official normalisation.

Normalisation (as in the HotpotQA and SQuAD evaluation scripts): lower-case, drop
punctuation, drop the articles a/an/the, collapse whitespace. A yes/no/noanswer gold answer
only matches the same word exactly (F1 0 otherwise). Against several gold answers, the
best score counts.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_SPECIAL = {"yes", "no", "noanswer"}


def normalize(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, answers: list[str]) -> bool:
    return any(normalize(prediction) == normalize(answer) for answer in answers)


def f1_score(prediction: str, answers: list[str]) -> float:
    return max((_f1(prediction, answer) for answer in answers), default=0.0)


def _f1(prediction: str, answer: str) -> float:
    predicted, gold = normalize(prediction), normalize(answer)
    if (predicted in _SPECIAL or gold in _SPECIAL) and predicted != gold:
        return 0.0
    common = Counter(predicted.split()) & Counter(gold.split())
    overlap = sum(common.values())
    if not overlap:
        return 0.0
    precision, recall = overlap / len(predicted.split()), overlap / len(gold.split())
    return 2 * precision * recall / (precision + recall)
