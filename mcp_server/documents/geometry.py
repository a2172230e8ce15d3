"""Where a document's text lies on its pages: the boxes of any span, and the lines as the page shows them.

Loaders of sources with a visible page (PDF pages, their OCR, pictures, slides) record a
:class:`PageGeometry` per page: the page's size and, for each line of text the page shows, where
the line is in the document text, its number among the page's text lines (from 1: the blank
lines put between paragraphs in the text do not count), its top and bottom, and its
*segments* - a word of a PDF's text layer, a text box OCR detected, a slide's text shape -
each with its left and right edge, how many characters of the text it holds (the segments
of a line are one space apart in the text) and, when it is set smaller than the line's largest,
its own top and bottom within the line's.

:func:`span_boxes` gives a span's boxes: one :class:`~mcp_server.models.Box` per line it
touches (lines side by side, which share a number, one box), from the left edge of its first character to the right edge of its last (a
character's edges are its segment's, shared out evenly among the segment's characters), from
the highest top of the segments it touches to their lowest bottom. Coordinates are points from the page's top-left corner, y
growing downward (pixels of the picture for image files), rounded to 0.1 and kept on the page.

A page's geometry is stored encoded (:func:`encode_page`): JSON of tenths of points, zlib-compressed,
about 1.2 kB a page of prose (the text itself takes about 2 kB).
"""

from __future__ import annotations

import json
import zlib
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace

from mcp_server.models import Box


@dataclass(frozen=True)
class Segment:
    """``length`` characters of a line's text, from ``x0`` to ``x1`` across the page, and from ``below_top``
    under the line's top to ``above_bottom`` over its bottom (a word set smaller than the line's largest)."""

    length: int
    x0: float
    x1: float
    below_top: float = 0.0
    above_bottom: float = 0.0


@dataclass(frozen=True)
class LineGeometry:
    """A line the page shows: its text starts at offset ``start`` of the document text."""

    start: int
    number: int
    top: float
    bottom: float
    segments: tuple[Segment, ...]

    @property
    def end(self) -> int:
        """One past the line's last character in the document text."""
        return self.start + sum(s.length for s in self.segments) + len(self.segments) - 1


@dataclass(frozen=True)
class PageGeometry:
    """One page's size and its lines, in text order."""

    page: int | str
    width: float
    height: float
    lines: tuple[LineGeometry, ...]
    whole: bool = False
    """True: a span's box takes the segments it touches whole (a slide's text shape, not its characters)."""


@dataclass(frozen=True)
class PageBoxes:
    """The boxes of a span on one page, with the page's size (the boxes' coordinate space), rounded to 0.1."""

    page: int | str
    width: float
    height: float
    boxes: tuple[Box, ...]


def fitted_line(
    number: int, start: int, length: int, top: float, bottom: float, segments: Sequence[Segment]
) -> LineGeometry:
    """A line of ``length`` characters of text at ``start``, its segments' lengths made to add up to it.

    The last segment takes up any difference: a word hyphenated at the line's end loses its
    hyphen when it is joined with the next line's start (``docu-`` / ``ment``).
    """
    kept = [s for s in segments if s.length > 0]
    if not kept:
        return LineGeometry(start, number, top, bottom, ())
    counted = sum(s.length for s in kept) + len(kept) - 1
    last = kept[-1]
    kept[-1] = replace(last, length=max(1, last.length + length - counted))
    return LineGeometry(start, number, top, bottom, tuple(kept))


def page_geometry(
    page: int | str, size: tuple[float, float], text: str, page_start: int,
    lines: Sequence[tuple[int, int, float, float, Sequence[Segment]]], *, whole: bool = False,
) -> PageGeometry:  # fmt: skip
    """The geometry of a page whose ``text`` starts at ``page_start`` of the document text, from its lines:
    ``(start in text, number, top, bottom, segments)`` in text order, each line running to the next newline,
    or to the next one's start (a word hyphenated across lines is joined: no newline between them; parts of a
    line set at different heights are a space apart)."""
    ends = [start for start, *_ in lines[1:]] + [len(text)]
    return PageGeometry(
        page, size[0], size[1],
        tuple(
            fitted_line(number, page_start + start, _line_end(text, start, end) - start, top, bottom, segments)
            for (start, number, top, bottom, segments), end in zip(lines, ends, strict=True)
        ),
        whole,
    )  # fmt: skip


def _line_end(text: str, start: int, end: int) -> int:
    newline = text.find("\n", start, end)
    return newline if newline >= 0 else start + len(text[start:end].rstrip(" "))


def span_boxes(pages: Sequence[PageGeometry], start: int, end: int) -> list[PageBoxes]:
    """The boxes of the text span ``[start, end)``, per page in text order; pages it has no line on are left out."""
    found = []
    for page in pages:
        boxes: list[Box] = []
        row = 0  # the number of the line the last box is on
        for line in _lines_in(page, start, end):
            box = _line_box(page, line, start, end)
            if box is not None and boxes and line.number == row:  # lines side by side: one row the page shows
                boxes[-1] = Box(
                    page=box.page, x0=min(box.x0, boxes[-1].x0), y0=min(box.y0, boxes[-1].y0),
                    x1=max(box.x1, boxes[-1].x1), y1=max(box.y1, boxes[-1].y1),
                )  # fmt: skip
            elif box is not None and (not boxes or box != boxes[-1]):  # the lines of a slide's shape share its box
                boxes.append(box)
                row = line.number
        if boxes:
            found.append(PageBoxes(page.page, round(page.width, 1), round(page.height, 1), tuple(boxes)))
    return found


def line_numbers(pages: Sequence[PageGeometry], start: int, end: int) -> tuple[int, int] | None:
    """The first line the span ``[start, end)`` touches on its first page and the last on its last page
    (the topmost and the lowest: a PDF may hold its lines out of reading order), or None."""
    numbers = [numbers for page in pages if (numbers := [line.number for line in _lines_in(page, start, end)])]
    return (min(numbers[0]), max(numbers[-1])) if numbers else None


def _lines_in(page: PageGeometry, start: int, end: int) -> list[LineGeometry]:
    starts = [line.start for line in page.lines]
    first = max(0, bisect_right(starts, start) - 1)
    return [line for line in page.lines[first:] if line.start < end and line.end > start and line.segments]


def _line_box(page: PageGeometry, line: LineGeometry, start: int, end: int) -> Box | None:
    """The box of the span's characters on ``line``; None when it only touches the space between segments."""
    low, high = max(start, line.start), min(end, line.end)
    edges: list[tuple[float, float, Segment]] = []  # left of the first character and right of the last, per segment
    offset = line.start
    for segment in line.segments:
        first, last = max(low, offset), min(high, offset + segment.length)
        if first < last and page.whole:
            edges.append((segment.x0, segment.x1, segment))
        elif first < last:
            width = (segment.x1 - segment.x0) / segment.length
            edges.append((segment.x0 + width * (first - offset), segment.x0 + width * (last - offset), segment))
        offset += segment.length + 1
    if not edges:
        return None
    left, right = min(edge[0] for edge in edges), max(edge[1] for edge in edges)  # right to left scripts too
    top = line.top + min(segment.below_top for *_, segment in edges)
    bottom = line.bottom - min(segment.above_bottom for *_, segment in edges)
    return Box(
        page=page.page, x0=_within(left, page.width), y0=_within(top, page.height),
        x1=_within(right, page.width), y1=_within(bottom, page.height),
    )  # fmt: skip


def _within(value: float, size: float) -> float:
    """``value`` rounded to 0.1 and kept on the page (text set past its edge is not shown)."""
    return round(min(max(value, 0.0), size), 1)


_SEGMENT_INTEGERS = 5
EncodedPage = tuple[int, int, bytes]
"""A page's geometry as stored: the span of the document text its lines cover, and :func:`encode_page`'s bytes."""


def encode_page(page: PageGeometry) -> EncodedPage:
    """``page`` as stored: the span of the text its lines cover, and the page (pass it to :func:`decode_page`).

    Each line is a list of integers, tenths of points told as steps from what comes before, which
    keeps them short and alike (a page of prose takes about 1.2 kB): ``[start (from the previous line's),
    number, top (from the previous line's), height, then per segment: length, left (from the previous
    segment's right, or the page's edge), width, below the line's top, above its bottom]``.
    """
    page_start = min((line.start for line in page.lines), default=0)
    page_end = max((line.end for line in page.lines), default=0)
    lines, start, top = [], page_start, 0
    for line in page.lines:
        row = [line.start - start, line.number, _tenths(line.top) - top, _tenths(line.bottom) - _tenths(line.top)]
        right = 0
        for segment in line.segments:
            left, width = _tenths(segment.x0) - right, _tenths(segment.x1) - _tenths(segment.x0)
            row += [segment.length, left, width, _tenths(segment.below_top), _tenths(segment.above_bottom)]
            right = _tenths(segment.x1)
        lines.append(row)
        start, top = line.start, _tenths(line.top)
    data = [page.page, _tenths(page.width), _tenths(page.height), lines, page.whole, _SEGMENT_INTEGERS]
    return page_start, page_end, zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 9)


def decode_page(data: bytes, page_start: int) -> PageGeometry:
    """The page :func:`encode_page` wrote, whose text starts at ``page_start`` (or one written before segments
    had a top and bottom of their own: three integers a segment)."""
    page, width, height, rows, whole, *stride = json.loads(zlib.decompress(data))
    step = stride[0] if stride else 3
    lines, start, top = [], page_start, 0
    for row in rows:
        start, top = start + row[0], top + row[2]
        segments, right = [], 0
        for i in range(4, len(row), step):
            left, right = right + row[i + 1], right + row[i + 1] + row[i + 2]
            inset = (row[i + 3] / 10, row[i + 4] / 10) if step == _SEGMENT_INTEGERS else (0.0, 0.0)
            segments.append(Segment(row[i], left / 10, right / 10, *inset))
        lines.append(LineGeometry(start, row[1], top / 10, (top + row[3]) / 10, tuple(segments)))
    return PageGeometry(page, width / 10, height / 10, tuple(lines), whole)


def _tenths(value: float) -> int:
    return round(value * 10)
