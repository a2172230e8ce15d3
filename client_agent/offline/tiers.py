"""Tiered facts resolved against the question's own number: "seven years" → the 5-year tier.

Policies state amounts in tiers — "After 1 year of service: 10 days … After 3 years: 15 days
… After 5 years: 20 days"; "Within 7 days: full refund … From day 7 to day 30: pro rata …
After 30 days: no refund". A question that gives its own amount ("I started seven years
ago", "I paid five days ago") is answered by the one tier whose condition that amount meets,
not by the sentence that shares the most words with it.

:func:`resolve` finds the amount in the question (digits or number words up to twenty, with
a unit of time), reads the conditions of the evidence sentences — lower bounds (*after*,
*from*, *over*, *more than*, *at least*), upper bounds (*within*, *up to*, *less than*,
*under*) and ranges (*from day 7 to day 30*) — and, when one document states at least two
tiers in that unit, returns the tier that applies: of those whose condition holds, the one
with the highest lower bound, then the lowest upper bound. Bounds are inclusive. Only
sentences shaped like a tier count — the condition opens the sentence or a table cell
("After 3 years of service: 15 days", "Time since the payment: Within 7 days, …") — so a
story that mentions "after two years" is not read as a rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from client_agent.evidence import Evidence, Ledger
from client_agent.offline.extractive import clean
from client_agent.text import content_terms, sentences

_SMALL = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
          "seventeen eighteen nineteen twenty").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_AMOUNT = rf"(\d+(?:\.\d+)?|{'|'.join(_SMALL)})"
_UNIT = r"(year|month|week|day|hour)s?\b"
_QUESTION_AMOUNT = re.compile(rf"\b{_AMOUNT}\s+{_UNIT}", re.IGNORECASE)
_RANGE = re.compile(rf"\bfrom\s+(?:{_UNIT}\s+)?{_AMOUNT}\s+(?:{_UNIT}\s+)?to\s+(?:{_UNIT}\s+)?{_AMOUNT}(?:\s+{_UNIT})?",
                    re.IGNORECASE)
_LOWER = re.compile(rf"\b(?:after|from|over|more than|at least|beyond)\s+{_AMOUNT}\s+{_UNIT}", re.IGNORECASE)
_UPPER = re.compile(rf"\b(?:within|up to|less than|under|fewer than)\s+{_AMOUNT}\s+{_UNIT}", re.IGNORECASE)
MIN_TIERS = 2
MIN_SHARED_TERMS = 2
"""Terms (besides the unit) an evidence item must share with the question for its tiers to be considered."""


@dataclass(frozen=True)
class Tier:
    """One tier as a source states it: a sentence and the condition it applies under."""

    sentence: str
    evidence: Evidence
    unit: str
    low: float | None
    high: float | None

    def holds(self, amount: float) -> bool:
        return (self.low is None or amount >= self.low) and (self.high is None or amount <= self.high)


@dataclass(frozen=True)
class Resolution:
    """The tier that applies to the question's amount."""

    amount: float
    unit: str
    tier: Tier

    def lines(self) -> list[str]:
        """The answer: which amount was resolved (no digits, so it needs no citation), then the cited tier."""
        plural = "" if self.amount == 1 else "s"
        return [f"For {spelled(self.amount)} {self.unit}{plural}, this tier applies:",
                f"{self.tier.sentence} [{self.tier.evidence.citation_id}]"]


def resolve(question: str, ledger: Ledger) -> Resolution | None:
    """The tier of the evidence that applies to the amount ``question`` gives, or None (see the module docstring)."""
    asked = question_amount(question)
    if asked is None:
        return None
    amount, unit = asked
    topic = set(content_terms(question)) - set(content_terms(unit))
    by_document: dict[str, list[Tier]] = {}
    for item in ledger:
        if len(set(content_terms(f"{item.header}\n{item.text}")) & topic) < MIN_SHARED_TERMS:
            continue
        for tier in tiers_of(item):
            if tier.unit == unit:
                by_document.setdefault(tier.evidence.doc_key, []).append(tier)
    for tiers in sorted(by_document.values(), key=lambda ts: min(t.evidence.rank for t in ts)):
        if len({(t.low, t.high) for t in tiers}) < MIN_TIERS:
            continue
        holding = [t for t in tiers if t.holds(amount)]
        if holding:
            best = max(holding, key=lambda t: (t.low if t.low is not None else float("-inf"),
                                               -(t.high if t.high is not None else float("inf"))))
            return Resolution(amount, unit, best)
    return None


def question_amount(question: str) -> tuple[float, str] | None:
    """The first amount of time the question gives ("seven years", "5 days"), as a number and a unit."""
    match = _QUESTION_AMOUNT.search(question)
    return (_value(match.group(1)), match.group(2).lower()) if match else None


def tiers_of(item: Evidence) -> list[Tier]:
    """The sentences of ``item`` that state a condition on an amount of time, with their bounds."""
    found = []
    for raw in sentences(item.text, headings=False):
        sentence = clean(raw)
        if (match := _RANGE.search(sentence)) and _opens(sentence, match.start()):
            unit = next((u for u in (match.group(1), match.group(3), match.group(4), match.group(6)) if u), None)
            if unit:
                found.append(Tier(sentence, item, unit.lower(), _value(match.group(2)), _value(match.group(5))))
        elif (match := _LOWER.search(sentence)) and _opens(sentence, match.start()):
            found.append(Tier(sentence, item, match.group(2).lower(), _value(match.group(1)), None))
        elif (match := _UPPER.search(sentence)) and _opens(sentence, match.start()):
            found.append(Tier(sentence, item, match.group(2).lower(), None, _value(match.group(1))))
    return found


def _opens(sentence: str, start: int) -> bool:
    """Whether a condition at ``start`` opens the sentence or a table cell (right after "Header:")."""
    return start == 0 or sentence[:start].rstrip().endswith(":")


def _value(text: str) -> float:
    return float(_SMALL.index(text.lower())) if text.lower() in _SMALL else float(text)


def spelled(amount: float) -> str:
    """An amount in words up to ninety-nine ("seven", "forty-two"); larger or fractional amounts as "that many"."""
    if amount != int(amount) or not 0 <= amount < 100:
        return "that many"
    number = int(amount)
    if number <= 20:
        return _SMALL[number]
    tens, ones = divmod(number, 10)
    return _TENS[tens - 2] + (f"-{_SMALL[ones]}" if ones else "")
