"""Where a span of a document's text lies in the source file: its page, slide or sheet, and its lines.

Loaders record *marks* while they build a document's text: a :class:`PageMark` where each
page, slide or sheet begins, and a :class:`LineMark` where text taken from a known line of
the source file begins (text after a line mark advances one source line per newline, up to
the next mark). :func:`locate` turns a chunk's character span into a :class:`Location`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PageMark:
    """Text from offset ``start`` (to the next mark) is on ``page``: a page or slide number, or a sheet name."""

    start: int
    page: int | str


@dataclass(frozen=True)
class LineMark:
    """Text from offset ``start`` is line ``line`` (from 1) of the source file, or row of a sheet."""

    start: int
    line: int


@dataclass(frozen=True)
class Location:
    """A span's page (where it starts) and last page when that differs, and its first and last line."""

    page: int | str | None = None
    page_end: int | str | None = None
    line_start: int | None = None
    line_end: int | None = None


def locate(text: str, start: int, end: int, pages: Sequence[PageMark], lines: Sequence[LineMark]) -> Location:
    """The location of ``text[start:end]`` (a non-empty span) from the document's marks."""
    last = max(start, end - 1)
    first_page, last_page = _page_at(pages, start), _page_at(pages, last)
    return Location(
        page=first_page,
        page_end=last_page if last_page != first_page else None,
        line_start=_line_at(text, lines, start),
        line_end=_line_at(text, lines, last),
    )


def _page_at(pages: Sequence[PageMark], offset: int) -> int | str | None:
    index = bisect_right([mark.start for mark in pages], offset) - 1
    return pages[index].page if index >= 0 else None


def _line_at(text: str, lines: Sequence[LineMark], offset: int) -> int | None:
    index = bisect_right([mark.start for mark in lines], offset) - 1
    if index < 0:
        return None
    mark = lines[index]
    return mark.line + text.count("\n", mark.start, offset)
