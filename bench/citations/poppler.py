"""The reference: poppler's ``pdftotext -bbox-layout`` words, their boxes, and the visible line each is on.

``pdftotext -bbox-layout`` writes XHTML: per ``<page>`` (its width and height in points),
``<flow>``s of ``<block>``s of ``<line>``s of ``<word>``s, each with ``xMin yMin xMax yMax`` in
PDF points from the page's top-left corner, y down - the convention of the product's boxes.

**The visible line.** A reader who counts lines down a page counts rows of text, whatever
block or column poppler put them in. So the page's ``<line>`` elements are sorted by their
vertical middle and grouped into *rows*: a line joins the row above it when its middle lies
within that row's top-to-bottom extent (a word set a little higher, a subscript, the two halves
of a line poppler split at a wide gap stay one row). Rows are numbered from 1 top to bottom;
every row with text counts, the running header and footer included (they are on the page).
A word's visible line is its ``<line>``'s row.

Rows are not always clear: the cells of a table row set at staggered heights (a two-line header
cell beside a one-line one) overlap without lining up, and one reader groups them otherwise
than another. A page where two rows overlap by more than :data:`OVERLAP_SHARE` of the lower one's
height (a tall bullet glyph's box overlaps a little) is marked ``staggered``, so the line count can
be judged on the other pages alone.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

_XHTML = "{http://www.w3.org/1999/xhtml}"
OVERLAP_SHARE = 0.25
_CONTROL_RE = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # glyphs of old TeX fonts, which XML may not hold
UNREADABLE = "\ufffd"
"""What a control character in poppler's text becomes (a quote holding one is not sampled)."""

Rect = tuple[float, float, float, float]
"""``(x0, y0, x1, y1)``: points from the page's top-left corner, y down."""


@dataclass(frozen=True)
class Word:
    """A word as poppler reads it: its text, box, the ``<line>`` it is in (counted over the page,
    in poppler's reading order, from 0) and that line's visible row (from 1)."""

    text: str
    box: Rect
    line: int
    row: int


@dataclass(frozen=True)
class Page:
    number: int
    width: float
    height: float
    words: tuple[Word, ...]
    rows: int
    staggered: bool


def read_pdf(pdf: Path) -> list[Page]:
    """Every page's words and rows, from ``pdftotext -bbox-layout`` (poppler-utils)."""
    xhtml = subprocess.run(
        ["pdftotext", "-bbox-layout", "-enc", "UTF-8", str(pdf), "-"], check=True, capture_output=True
    ).stdout
    return parse(xhtml)


def parse(xhtml: bytes) -> list[Page]:
    """The pages of ``pdftotext -bbox-layout`` output (see the module docstring)."""
    root = ElementTree.fromstring(_CONTROL_RE.sub(UNREADABLE.encode(), xhtml))
    pages = []
    for number, page in enumerate(root.iter(f"{_XHTML}page"), start=1):
        lines = [(_rect(line), line.findall(f"{_XHTML}word")) for line in page.iter(f"{_XHTML}line")]
        rows = visible_rows([rect for rect, _ in lines])
        words = tuple(
            Word(word.text or "", _rect(word), index, rows[index])
            for index, (_, line_words) in enumerate(lines)
            for word in line_words
            if (word.text or "").strip()
        )
        size = float(page.get("width", 0)), float(page.get("height", 0))
        pages.append(Page(number, *size, words, max(rows, default=0), _staggered([r for r, _ in lines], rows)))
    return pages


def visible_rows(lines: list[Rect]) -> list[int]:
    """Each line's row (from 1, top to bottom): lines whose middles fall within a row's extent share it."""
    rows = [0] * len(lines)
    row, bottom = 0, float("-inf")
    for index in sorted(range(len(lines)), key=lambda i: ((lines[i][1] + lines[i][3]) / 2, lines[i][0])):
        top, low = lines[index][1], lines[index][3]
        if (top + low) / 2 > bottom:
            row, bottom = row + 1, low
        else:
            bottom = max(bottom, low)
        rows[index] = row
    return rows


def _staggered(lines: list[Rect], rows: list[int]) -> bool:
    """Whether a row overlaps the row above it by more than :data:`OVERLAP_SHARE` of its height."""
    extents: dict[int, tuple[float, float]] = {}
    for (_, top, _, bottom), row in zip(lines, rows):
        upper, lower = extents.get(row, (top, bottom))
        extents[row] = min(upper, top), max(lower, bottom)
    ordered = [extents[row] for row in sorted(extents)]
    return any(above[1] - below[0] > OVERLAP_SHARE * (below[1] - below[0]) for above, below in zip(ordered, ordered[1:]))


def _rect(element: ElementTree.Element) -> Rect:
    return tuple(float(element.get(k, 0)) for k in ("xMin", "yMin", "xMax", "yMax"))  # type: ignore[return-value]
