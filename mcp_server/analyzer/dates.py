"""Month and weekday names: the one month list, and the calendar words a date is written with."""

from __future__ import annotations

import re

MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTH_PATTERN = "|".join(MONTHS)
"""The month names as alternatives of a regular expression (lower case: compile it with ``re.IGNORECASE``)."""
WEEKDAY_PATTERN = "|".join(WEEKDAYS)
"""The weekday names as alternatives of a regular expression (lower case, as :data:`MONTH_PATTERN`)."""

CALENDAR = {m: m for m in MONTHS} | {m[:3]: m for m in MONTHS} | {"sept": "september"} | {d: d for d in WEEKDAYS}
"""Month and weekday names (and the months' abbreviations), lower case → the full name."""
AMBIGUOUS_CALENDAR = frozenset({"may", "mar", "jan", "sat", "sun", "wed"})
"""Calendar words that are ordinary words in lower case ("may", "sun")."""

_ISO_DATE = re.compile(r"\d{4}-(\d{1,2})(?:-\d{1,2})?")


def calendar_name(word: str) -> str | None:
    """The month or weekday ``word`` names ("Sept" → "september"), or None; an ambiguous word ("may", "sun")
    names one only when capitalised."""
    lower = word.lower()
    name = CALENDAR.get(lower)
    return name if name and (word[:1].isupper() or lower not in AMBIGUOUS_CALENDAR) else None


def iso_month(token: str) -> str | None:
    """The month of an ISO date (``2024-05`` or ``2024-05-01`` → "may"), or None."""
    if (match := _ISO_DATE.fullmatch(token)) and 1 <= (number := int(match.group(1))) <= 12:
        return MONTHS[number - 1]
    return None
