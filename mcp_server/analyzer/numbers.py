"""Numbers as written: with their scale (``2.8 million``, ``2.8M``, ``3万``), their unit (``8GB``), or in words.

A number may stand for more than one value: ``2.8 million`` is 2.8 and 2,800,000, so that it
matches a text that writes either. Thousands separators are taken out before reading
(:func:`drop_thousands_separators`: ``1,999`` → ``1999``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?")
NUMBER_WITH_UNIT = re.compile(r"(\d+(?:\.\d+)?)([^\W\d_]{1,3})")
"""A number with a unit or scale of up to three letters glued on: ``8GB``, ``500ms``, ``2.8M``."""
DATE_OR_TIME = re.compile(r"\d{4}[-/.]\d{1,2}(?:[-/.]\d{1,2})?|\d{1,2}:\d{2}(?::\d{2})?|\d+(?:\.\d+){2,}")
"""A date, a time or a version number written in digits: ``2024-05-01``, ``10:30``, ``1.2.3``."""
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_SCALE_AFTER = re.compile(r"\s*(thousand|million|billion|trillion|mn|bn)\b|(百万|万|亿|千)", re.IGNORECASE)
_SCALES = {
    "k": 1_000, "thousand": 1_000, "千": 1_000, "万": 10_000, "m": 1_000_000, "mn": 1_000_000,
    "million": 1_000_000, "百万": 1_000_000, "亿": 100_000_000, "b": 1_000_000_000, "bn": 1_000_000_000,
    "billion": 1_000_000_000, "trillion": 1_000_000_000_000,
}
NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "hundred": 100, "dozen": 12, "half": 0.5,
}
"""Numbers spelled as words, and their values."""


@dataclass(frozen=True)
class Number:
    """A number as written, and every value it may stand for (``2.8 million``: 2.8 and 2,800,000)."""

    text: str
    values: frozenset[Decimal]


def drop_thousands_separators(text: str) -> str:
    """``text`` with the commas between thousands taken out (``1,999`` → ``1999``; ``1,5`` stays)."""
    return _THOUSANDS.sub("", text)


def number(digits: str, scale_word: str | None) -> Number:
    """The number ``digits`` (``2.8``), scaled by ``scale_word`` when that is a scale ("million", "k", "万")."""
    value = Decimal(digits)
    scale = _SCALES.get(scale_word.lower()) if scale_word else None
    values = {value} if scale is None else {value, value * scale}
    return Number(digits + (scale_word or ""), frozenset(values))


def scale_after(text: str, end: int) -> str | None:
    """The scale word written right after ``text[:end]`` ("million", "bn", "万"), or None."""
    match = _SCALE_AFTER.match(text, end)
    return (match.group(1) or match.group(2)) if match else None


def spelled_number(word: str) -> Decimal | None:
    """The value of a number spelled as a word ("five" → 5), or None."""
    value = NUMBER_WORDS.get(word.lower())
    return None if value is None else Decimal(str(value))
