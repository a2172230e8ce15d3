"""An Office file's date, and where it came from: the document properties, or the file's modification time
when the properties' date is only a library template's.

python-docx and python-pptx start every new file from a template saved in 2013 and never
update its ``modified`` property, so a report generated today says it was last modified on
2013-12-23 (python-docx) or 2013-01-27 (python-pptx), and a ``date_from`` filter of this year
drops it. The rule, kept narrow on purpose:

- a ``modified`` property equal, to the second, to one of :data:`TEMPLATE_TIMESTAMPS` is the
  template's, not the author's: the document is dated by the file's modification time
  (unknown -> no date);
- any other ``modified`` property is kept, however old. An old date is no sign of a wrong one:
  copying a file (a download, a checkout, ``cp``) gives it a new modification time, so the
  file's time is less trustworthy than a date Word or LibreOffice wrote.

The record says which it was in its ``date_source`` metadata entry (``get_document``'s
``metadata``): ``document properties``, or ``file modified time (...)`` naming the template.
"""

from __future__ import annotations

import datetime

TEMPLATE_TIMESTAMPS: dict[datetime.datetime, str] = {
    datetime.datetime(2013, 12, 23, 23, 15, tzinfo=datetime.UTC): "python-docx's template date",
    datetime.datetime(2013, 1, 27, 9, 15, 58, tzinfo=datetime.UTC): "python-pptx's template date",
}
"""``modified`` properties written by a library's template, never by an author (UTC, to the second)."""
FROM_PROPERTIES = "document properties"


def dated_fields(modified: datetime.datetime | None, mtime_ns: int) -> dict[str, object]:
    """The ``date`` and ``date_source`` metadata fields for a ``modified`` property (None: none set),
    given the file's modification time (nanoseconds since the epoch; 0: unknown)."""
    if modified is None:
        return {}
    template = TEMPLATE_TIMESTAMPS.get(_as_utc(modified).replace(microsecond=0))
    if template is None:
        return {"date": modified, "date_source": FROM_PROPERTIES}
    why = f"the properties carry {template}, {modified.date().isoformat()}"
    if not mtime_ns:
        return {"date_source": f"none ({why}; the file's modification time is unknown)"}
    return {"date": datetime.datetime.fromtimestamp(mtime_ns / 1e9).date(), "date_source": f"file modified time ({why})"}


def _as_utc(moment: datetime.datetime) -> datetime.datetime:
    """``moment`` in UTC; a naive one (python-pptx, openpyxl) is read as UTC, as Office writes it."""
    return moment.replace(tzinfo=datetime.UTC) if moment.tzinfo is None else moment.astimezone(datetime.UTC)
