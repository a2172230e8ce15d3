"""Where a span of a document's text lies in the source file: its page, slide or sheet, and its lines.

Loaders record *marks* while they build a document's text: a :class:`PageMark` where each
page, slide or sheet begins, and a :class:`LineMark` where text taken from a known line of
the source file begins (text after a line mark advances one source line per newline, up to
the next mark). A :class:`Locator` turns a chunk's character span into a :class:`Location`.
"""

from __future__ import annotations

import re
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


class Locator:
    """Locates spans of one document's text; built once per document, so locating many chunks stays cheap."""

    def __init__(self, text: str, pages: Sequence[PageMark], lines: Sequence[LineMark]) -> None:
        self._pages, self._page_starts = pages, [mark.start for mark in pages]
        self._lines, self._line_starts = lines, [mark.start for mark in lines]
        self._newlines = [match.start() for match in re.finditer("\n", text)] if lines else []

    def locate(self, start: int, end: int) -> Location:
        """The location of the span ``[start, end)`` (non-empty) of the text."""
        last = max(start, end - 1)
        first_page, last_page = self._page_at(start), self._page_at(last)
        return Location(
            page=first_page,
            page_end=last_page if last_page != first_page else None,
            line_start=self._line_at(start),
            line_end=self._line_at(last),
        )

    def _page_at(self, offset: int) -> int | str | None:
        index = bisect_right(self._page_starts, offset) - 1
        return self._pages[index].page if index >= 0 else None

    def _line_at(self, offset: int) -> int | None:
        index = bisect_right(self._line_starts, offset) - 1
        if index < 0:
            return None
        mark = self._lines[index]
        return mark.line + bisect_right(self._newlines, offset - 1) - bisect_right(self._newlines, mark.start - 1)
