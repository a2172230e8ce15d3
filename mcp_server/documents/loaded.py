"""What a loader makes of one file: :class:`LoadedDocument`, and the helpers every loader shares.

A document's ``text`` is what chunk offsets refer to. Loaders that turn a structured file
into text (Word, PowerPoint, spreadsheets, HTML) write Markdown-like ``#`` heading lines,
which the chunker reads as sections; loaders of text formats whose headings are written
otherwise (reStructuredText, AsciiDoc, source code) hand the chunker their ``headings``.
``pages`` and ``lines`` locate any span in the source (:mod:`mcp_server.documents.locations`),
``geometry`` places it on its page (:mod:`mcp_server.documents.geometry`).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mcp_server.documents.chunking import Heading, find_headings
from mcp_server.documents.limits import MAX_METADATA_CHARS, FileInput
from mcp_server.documents.geometry import PageGeometry
from mcp_server.documents.locations import LineMark, PageMark
from mcp_server.documents.sniff import decode_text
from mcp_server.errors import IngestError
from mcp_server.models import PageKind

Layout = Literal["prose", "table"]
"""``table``: every non-heading line is one record (a row with its header); chunks never cut one."""

MAX_TAGS = 100
"""The most tags a document keeps (front matter, Office keywords); the rest are left out."""
_LEADING_BLANK_LINES_RE = re.compile(r"\A(?:[ \t]*\n)+")
_BLANK_LINES_RE = re.compile(r"(?:[ \t]*\n)+")  # matched at a position, where \A would never match


@dataclass(frozen=True)
class LoadedDocument:
    """A document's text (what chunk offsets refer to), its metadata and where its text came from."""

    text: str
    title: str
    category: str | None
    tags: tuple[str, ...]
    date: datetime.date | None
    url: str | None
    extra: dict[str, str]
    headings: tuple[Heading, ...] | None = None
    """The sections' headings; None: the Markdown ``#`` headings of ``text``."""
    pages: tuple[PageMark, ...] = ()
    page_kind: PageKind | None = None
    lines: tuple[LineMark, ...] = ()
    layout: Layout = "prose"
    geometry: tuple[PageGeometry, ...] = ()
    """Where the text is on its pages, for sources with a visible page (:mod:`mcp_server.documents.geometry`)."""


@dataclass(frozen=True)
class Structure:
    """What a loader knows of a text beyond its words: see the fields of :class:`LoadedDocument`."""

    headings: Sequence[Heading] | None = None
    pages: Sequence[PageMark] = ()
    page_kind: PageKind | None = None
    lines: Sequence[LineMark] = ()
    layout: Layout = "prose"
    fields: Mapping[str, object] = field(default_factory=dict)
    geometry: Sequence[PageGeometry] = ()
    titled_by_heading: bool = True
    """Without a title field, the first level-1 heading is the title (not so for code or data)."""


def read_text(file: FileInput) -> str:
    """The file as text with ``\\n`` newlines (see :func:`mcp_server.documents.sniff.decode_text`)."""
    return normalise_newlines(decode_text(file.data, file.path))


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def trim(text: str) -> str:
    """``text`` without leading blank lines and trailing whitespace (indentation is kept)."""
    return _LEADING_BLANK_LINES_RE.sub("", text).rstrip()


def trimmed_body(text: str, start: int = 0) -> tuple[str, int]:
    """``text[start:]`` trimmed as :func:`trim` does, and the source line (from 1) it starts on."""
    leading = _BLANK_LINES_RE.match(text, start)
    body_start = leading.end() if leading else start
    return text[body_start:].rstrip(), text.count("\n", 0, body_start) + 1


def make_document(path: Path, text: str, structure: Structure | None = None) -> LoadedDocument:
    """Assemble a document from its text, structure and raw metadata fields (keys are case-insensitive)."""
    structure = structure or Structure()
    fields = {key.strip().lower(): value for key, value in structure.fields.items()}
    url_key = "url" if "url" in fields else "source"
    used = {"title", "category", "tags", "date", url_key}
    headings = tuple(structure.headings) if structure.headings is not None else None
    return LoadedDocument(
        text=text,
        title=_text_value(fields.get("title"))
        or (_first_title_heading(text, headings) if structure.titled_by_heading else None)
        or _title_from_name(path),
        category=_text_value(fields.get("category")),
        tags=_tags(fields.get("tags")),
        date=_date(fields.get("date"), path),
        url=_text_value(fields.get(url_key)),
        extra={key: _stringify(value) for key, value in fields.items() if key not in used},
        headings=headings,
        pages=tuple(structure.pages),
        page_kind=structure.page_kind,
        lines=tuple(structure.lines),
        layout=structure.layout,
        geometry=tuple(structure.geometry),
    )


def _text_value(value: object) -> str | None:
    text = "" if value is None else _stringify(value).strip()
    return text or None


def _stringify(value: object) -> str:
    """A metadata value as text, cut at :data:`MAX_METADATA_CHARS` (lists joined with commas)."""
    if isinstance(value, list | tuple):
        text = ", ".join(_stringify(item) for item in value[:MAX_METADATA_CHARS])
    else:
        text = "" if value is None else str(value)
    return text if len(text) <= MAX_METADATA_CHARS else text[: MAX_METADATA_CHARS - 1] + "…"


def _tags(value: object) -> tuple[str, ...]:
    """Tags from a list or a comma-separated string: trimmed, blanks and repeats dropped."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list | tuple) else [value]
    tags = (_stringify(item).strip() for item in items[:MAX_TAGS])
    return tuple(dict.fromkeys(tag for tag in tags if tag))


def _date(value: object, path: Path) -> datetime.date | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str):
        try:
            return datetime.datetime.fromisoformat(value.strip()).date()
        except ValueError:
            pass
    raise IngestError(f"{path}: date {value!r} is not a valid date; write it as YYYY-MM-DD, e.g. 2024-03-31.")


def _first_title_heading(text: str, headings: tuple[Heading, ...] | None) -> str | None:
    candidates = find_headings(text) if headings is None else headings
    return next((heading.title for heading in candidates if heading.level == 1), None)


def _title_from_name(path: Path) -> str:
    """``leave-policy.md`` -> ``Leave policy``."""
    words = re.sub(r"[-_\s]+", " ", path.stem).strip() or path.name
    return words[:1].upper() + words[1:]
