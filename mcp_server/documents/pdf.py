"""PDF files read with PDFium (``pypdfium2``): text in reading order, sections, pages, scans by OCR.

- **Text**: each page's text as PDFium orders it, one line per text line; a blank line
  where the gap to the previous line is wider than a line (a paragraph break); a word
  hyphenated across a line break is joined (``docu-`` / ``ment`` -> ``document``).
- **Running headers and footers** - a line in the top or bottom tenth of a page that
  recurs, digits aside, on at least half of the pages (three pages or more) - and lines
  there that are only a page number (``12``, ``Page 3 of 9``, ``- 4 -``) are left out.
- **Sections** come from the outline (bookmarks): each entry heads its page, at the line
  that carries its title when there is one. Without an outline, lines set larger than the
  body text (by :data:`HEADING_SIZE_RATIO`, the body being the size most characters have)
  and short enough to be a title are headings, the largest size level 1.
- **Pages**: every page starts a page mark (chunks never span two pages). A page with
  almost no text layer (under :data:`MIN_TEXT_CHARS` letters) is rendered and read by OCR
  (:mod:`mcp_server.documents.ocr`) when OCR is on, up to ``RAGMCP_OCR_MAX_PAGES`` pages tried (a page OCR finds
  nothing on counts too: a PDF of blank pages stops there); the document records which pages.
- **Lines and boxes** (:mod:`mcp_server.documents.geometry`): a line's number is its row of text on
  the page, counted from the top as a reader counts them: the blank lines put between paragraphs do
  not count, running headers and footers left out of the text do (they are on the page), lines side
  by side share a row; the two halves of a word hyphenated across a line break are on their own lines,
  and so are words PDFium runs into one line from different rows (a table cell set between two rows,
  lines set overlapping), a smaller word raised or lowered (a superscript) staying on its line.
  Each line keeps its top and bottom (its fonts' ascent and descent) and each word's left and right
  edge (the characters' advances), in points from the crop box's top-left corner.
  An OCR'd page's lines are placed from the detected text boxes, scaled to points.
- The title comes from the document information's ``Title``, else the first heading.

Encrypted files are refused with what to do. PDFium's own messages never reach the output.
"""

from __future__ import annotations

import ctypes
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from mcp_server.documents.chunking import Heading
from mcp_server.documents.geometry import PageGeometry, Segment, page_geometry
from mcp_server.documents.limits import FileInput
from mcp_server.documents.loaded import LoadedDocument, Structure, make_document
from mcp_server.documents.locations import LineMark, PageMark
from mcp_server.documents.ocr import OcrLine, PageReader, ocr_page_image
from mcp_server.errors import IngestError

HEADING_SIZE_RATIO = 1.15
MIN_TEXT_CHARS = 20
_HEADING_MAX_WORDS = 14
_PAGE_NUMBER_RE = re.compile(r"(?i)(?:page\s+)?[-–—]?\s*\d{1,5}\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,5})?")
_HYPHENATED_RE = re.compile(r"([a-zà-ÿ])-\n([a-zà-ÿ])")
_LINE_RE = re.compile(r"[^\s\ufffe][^\r\n\ufffe]*\ufffe?")  # a line with text: to a line break or PDFium's hyphen
_WORD_RE = re.compile(r"\S+")
_LETTER_RE = re.compile(r"[^\W\d_]")
_DIGITS_RE = re.compile(r"\d+")
_RENDER_DPI = 150
_MARGIN_SHARE = 0.1
_PDFIUM_HYPHEN = "\ufffe"  # how PDFium marks a hyphen it found at a line end (the word goes on after it)
_STANDARD_FONTS = ((b"Courier", 629, -157), (b"Helvetica", 718, -207), (b"Arial", 718, -207), (b"Times", 683, -217))
"""The standard fonts PDFium substitutes when a file does not embed them (and their usual aliases:
CourierNew, TimesNewRoman): name prefix, ascent and descent in thousandths of the size (their AFMs)."""
_UNKNOWN_ASCENT, _UNKNOWN_DESCENT = 0.95, -0.35
"""A font's ascent and descent (share of its size) where its descriptor gives 0, which no font has (TeX's
math symbols declare a descent of 0, their braces going well below the baseline): poppler's defaults."""
_SAME_HEIGHT = 0.1  # words whose heights differ by at most this share of the taller are set in one size
_TURNED = 0.01  # radians: text set at more of an angle is turned (its loose box measures it, not its font)
_PLACEHOLDER_TITLES = frozenset({"untitled", "untitled document", "title", "document"})

FontExtent = Callable[[int], tuple[float, float] | None]
"""How far a character of a page reaches down and up, from its index (:func:`_font_extents`)."""


@dataclass
class _Line:
    text: str
    size: float  # font size of its first character, in points
    gap_before: float  # vertical space above it, in points (0 for a page's first line)
    glue: str | None = None  # what sets it apart from the line before in the text where no line break does:
    # "" after PDFium's hyphen (a word goes on), " " after a part of a line set at another height
    margin: bool = False  # in the top or bottom tenth of the page, where running headers and footers sit
    number: int = 0  # the page's row of text it is on, from the top (from 1; 0: a paragraph break OCR put in)
    top: float = 0.0  # points from the page's top
    bottom: float = 0.0
    segments: tuple[Segment, ...] = ()  # its words, left to right


class _Word(NamedTuple):
    """A word PDFium read: its text and where it is (points from the crop box's top-left corner)."""

    text: str
    left: float
    right: float
    top: float
    bottom: float  # not below top: a character without a font has no height


@dataclass
class _Page:
    number: int
    lines: list[_Line]
    size: tuple[float, float]  # width and height in points
    ocr: bool = False


def load_pdf(file: FileInput, read_page: PageReader | None = None) -> LoadedDocument:
    """The PDF's text with its pages, sections and title (see the module docstring).

    ``read_page`` (when given) is told of every page as it is read, for progress and time caps.

    :raises IngestError: the file is encrypted or not a PDF PDFium can read.
    """
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(file.data)
    except pdfium.PdfiumError as error:
        if "password" in str(error).lower():
            raise IngestError(f"{file.path} is an encrypted PDF; save a decrypted copy to index it.") from error
        cause = str(error).rstrip(".")
        raise IngestError(f"{file.path} is not a readable PDF ({cause}); check it or convert it to text.") from error
    try:
        count = len(document)
        pages: list[_Page] = []
        ocr_tried = 0  # pages rendered for OCR, whether OCR found text on them or not
        for index in range(count):
            if read_page is not None:
                read_page(index + 1, count)
            page, tried = _read_page(document, index, file, ocr_tried < file.limits.ocr_max_pages)
            pages.append(page)
            ocr_tried += tried
        outline = _outline(document)
        title = (document.get_metadata_value("Title") or "").strip()
        title = "" if title.casefold() in _PLACEHOLDER_TITLES else title
    finally:
        document.close()
    _drop_running_lines(pages)
    return _assemble(file, pages, outline, title)


def _read_page(document: Any, index: int, file: FileInput, ocr: bool) -> tuple[_Page, bool]:
    """One page's text lines, by OCR when it has almost no text layer and ``ocr`` allows; and whether
    OCR was tried on it (every such page counts against ``RAGMCP_OCR_MAX_PAGES``, blank or not)."""
    page = document[index]
    try:
        size = (float(page.get_width()), float(page.get_height()))
        lines = _text_lines(page)
        if sum(len(_LETTER_RE.findall(line.text)) for line in lines) >= MIN_TEXT_CHARS or not (ocr and file.limits.ocr):
            return _Page(index + 1, lines, size), False
        image = page.render(scale=_RENDER_DPI / 72).to_pil()
        ocr_lines = ocr_page_image(image, file)
        if not ocr_lines:
            return _Page(index + 1, lines, size), True
        return _Page(index + 1, [_ocr_line(line, 72 / _RENDER_DPI) for line in ocr_lines], size, ocr=True), True
    finally:
        page.close()


def _ocr_line(line: OcrLine, scale: float) -> _Line:
    """A line OCR read on the page rendered at :data:`_RENDER_DPI`, its pixels as points (times ``scale``)."""
    segments = tuple(Segment(s.length, s.x0 * scale, s.x1 * scale) for s in line.segments)
    top, bottom = line.top * scale, line.bottom * scale
    return _Line(line.text, 0.0, 0.0, number=line.number, top=top, bottom=bottom, segments=segments)


def _text_lines(page: Any) -> list[_Line]:
    """The page's text lines, each with the font size of its first character, the space above it and where it is."""
    import pypdfium2.raw as raw

    height = float(page.get_height())
    left, _bottom, _right, crop_top = page.get_cropbox()
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        lines: list[_Line] = []
        previous_bottom: float | None = None
        wide = 0  # characters before the current line outside the BMP (two PDFium characters each)
        scanned = 0
        glue: str | None = None
        font_extent = _font_extents(textpage)
        for match in _LINE_RE.finditer(text):
            wide += _wide_count(text, scanned, match.start())
            scanned = match.start()
            char = match.start() + wide  # PDFium's character index: one per UTF-16 code unit
            size = float(raw.FPDFText_GetFontSize(textpage.raw, char))
            _left, bottom, _right, top = textpage.get_charbox(char)
            gap = 0.0 if previous_bottom is None else max(0.0, previous_bottom - top)
            previous_bottom = bottom
            margin = top > height * (1 - _MARGIN_SHARE) or bottom < height * _MARGIN_SHARE
            words = match.group().replace(_PDFIUM_HYPHEN, "").replace("\xad", "")  # a word broken at the line end
            line = _Line(" ".join(words.split()), size, gap, margin=margin, glue=glue)
            glue = "" if match.group().endswith(_PDFIUM_HYPHEN) else None
            lines += _place(line, textpage, font_extent, match.group(), char, (left, crop_top))
        _number_rows(lines)
        return lines
    finally:
        textpage.close()


def _number_rows(lines: list[_Line]) -> None:
    """Number the lines as a reader counts them down the page: by row from the top, lines side by side
    sharing one (whatever order the content stream drew them in); a line without ink takes the number of
    the line before it."""
    placed = sorted((line for line in lines if line.segments), key=lambda line: line.top)
    number, row_bottom = 0, float("-inf")
    for line in placed:
        if (line.top + line.bottom) / 2 > row_bottom:
            number += 1
            row_bottom = line.bottom
        line.number = number
    previous = 1
    for line in lines:
        line.number = line.number or previous
        previous = line.number


def _place(
    line: _Line, textpage: Any, font_extent: FontExtent, raw_text: str, char: int, origin: tuple[float, float]
) -> list[_Line]:
    """``line`` placed from PDFium's boxes (``raw_text`` as PDFium gave it, from character ``char``), and
    split where PDFium ran together words set at different heights (the cells of a table row set
    staggered, lines set overlapping): a line each, the words of each row, set apart by a space.

    Across, a word runs from its first character's pen position to its last one's advance (their loose
    boxes), and from its fonts' ascent to their descent (``font_extent``); a line spans its words'.
    ``origin`` is the crop box's left and top edge, in PDF coordinates (y upward).
    """
    narrow = raw_text.isascii() or max(raw_text) <= "\uffff"

    def unit(offset: int) -> int:  # PDFium's index of raw_text[offset]: one per UTF-16 code unit
        return char + offset + (0 if narrow else _wide_count(raw_text, 0, offset))

    rows: list[list[_Word]] = [[]]
    height: tuple[float, float] | None = None  # the top and bottom of the row's last word with a height
    for match in _WORD_RE.finditer(raw_text):
        text = match.group().replace(_PDFIUM_HYPHEN, "").replace("\xad", "")
        if text:
            first = _loose_box(textpage, unit(match.start()))
            last = _loose_box(textpage, unit(match.end() - 1))
            extent = font_extent(unit(match.start()))  # a word is set in its first character's font
            bottom, top = extent if extent is not None else (min(first[1], last[1]), max(first[3], last[3]))
            word = _Word(
                text, min(first[0], last[0]) - origin[0], max(first[2], last[2]) - origin[0],
                origin[1] - top, origin[1] - bottom,
            )  # fmt: skip
            if word.bottom > word.top:
                if height is not None and height != (word.top, word.bottom) and _apart(height, (word.top, word.bottom)):
                    rows.append([])
                height = word.top, word.bottom
            rows[-1].append(word)
    if height is None:  # no word with a height (a character without a font has none)
        return [line]
    if len(rows) > 1:
        line.text = " ".join(word.text for word in rows[0])
    placed = [line] + [
        _Line(" ".join(word.text for word in row), line.size, 0.0, margin=line.margin, glue=" ") for row in rows[1:]
    ]  # fmt: skip
    for piece, row in zip(placed, rows, strict=True):
        tall = [word for word in row if word.bottom > word.top]
        piece.top, piece.bottom = min(word.top for word in tall), max(word.bottom for word in tall)
        piece.segments = tuple(
            Segment(len(word.text), word.left, word.right, word.top - piece.top, piece.bottom - word.bottom)
            if word.bottom > word.top else Segment(len(word.text), word.left, word.right)
            for word in row
        )  # fmt: skip
    return placed


def _apart(one: tuple[float, float], other: tuple[float, float]) -> bool:
    """Whether two words' spans down the page, (top, bottom), are on different rows: as tall (set in one
    size) and overlapping by less than half (a superscript or subscript beside is smaller)."""
    heights = one[1] - one[0], other[1] - other[0]
    overlap = min(one[1], other[1]) - max(one[0], other[0])
    return abs(heights[0] - heights[1]) <= _SAME_HEIGHT * max(heights) and overlap < 0.5 * min(heights)


def _loose_box(textpage: Any, char: int) -> tuple[float, float, float, float]:
    """Character ``char``'s box from its pen position to its advance, the font's ascent to descent:
    (left, bottom, right, top)."""
    box: tuple[float, float, float, float] = textpage.get_charbox(char, loose=True)
    return box


def _font_extents(textpage: Any) -> FontExtent:
    """A function giving how far a character of the page reaches down and up, (bottom, top) in PDF
    coordinates, from its index: its font's descent to its ascent at its baseline, as the font's
    descriptor gives them; None for a character without a font or turned (its loose box is the measure:
    PDFium turns it with the text).

    A standard font the file does not embed (:data:`_STANDARD_FONTS`) takes its own metrics (its AFM's
    ``Ascender`` and ``Descender``, as poppler does), not those of the taller substitute PDFium sets it in.
    """
    import pypdfium2.raw as raw

    metrics: dict[int, tuple[float, float]] = {}  # per text object: its font's descent and ascent, in points
    x, y = ctypes.c_double(), ctypes.c_double()

    def extent(char: int) -> tuple[float, float] | None:
        text_object = raw.FPDFText_GetTextObject(textpage.raw, char)
        key = ctypes.cast(text_object, ctypes.c_void_p).value or 0
        if key not in metrics:
            angle = raw.FPDFText_GetCharAngle(textpage.raw, char)  # radians, from 0 to 2 pi
            size = raw.FPDFText_GetFontSize(textpage.raw, char)
            metrics[key] = (0.0, 0.0) if _TURNED < angle < 2 * math.pi - _TURNED else _font_metrics(text_object, size)
        down, up = metrics[key]
        if up <= down:
            return None
        raw.FPDFText_GetCharOrigin(textpage.raw, char, x, y)  # each its own: vertical writing runs down the page
        return y.value + down, y.value + up

    return extent


def _font_metrics(text_object: Any, size: float) -> tuple[float, float]:
    """The descent and ascent of the text object's font at ``size``, in points ((0, 0): none known)."""
    import pypdfium2.raw as raw

    font = raw.FPDFTextObj_GetFont(text_object) if text_object else None
    if not font:
        return 0.0, 0.0
    if not raw.FPDFFont_GetIsEmbedded(font):
        name = ctypes.create_string_buffer(128)
        raw.FPDFFont_GetBaseFontName(font, name, len(name))
        standard = next(((up, down) for prefix, up, down in _STANDARD_FONTS if name.value.startswith(prefix)), None)
        if standard is not None:
            return standard[1] * size / 1000, standard[0] * size / 1000
    descent, ascent = ctypes.c_float(), ctypes.c_float()
    raw.FPDFFont_GetDescent(font, size, descent)
    raw.FPDFFont_GetAscent(font, size, ascent)
    return descent.value or _UNKNOWN_DESCENT * size, ascent.value or _UNKNOWN_ASCENT * size


def _wide_count(text: str, start: int, end: int) -> int:
    return sum(1 for ch in text[start:end] if ord(ch) > 0xFFFF)


def _outline(document: Any) -> list[tuple[int, int, str]]:
    """``(page number, level, title)`` of each outline entry that points at a page, in order."""
    entries = []
    try:
        for item in document.get_toc(max_depth=6):
            title = " ".join((item.get_title() or "").split())
            page_index = item.get_dest().get_index() if item.get_dest() is not None else None
            if title and page_index is not None:
                entries.append((page_index + 1, min(6, item.level + 1), title))
    except Exception:  # noqa: BLE001 - a damaged outline leaves the document without one, not unreadable
        return []
    return entries


def _drop_running_lines(pages: Sequence[_Page]) -> None:
    """Remove running headers/footers and page-number lines (in the page's top or bottom tenth) from the
    pages' text layers: lines there that recur, digits aside, on half the pages (of three or more)."""
    text_pages = [page for page in pages if not page.ocr]
    recurring: set[str] = set()
    if len(text_pages) >= 3:
        counts: Counter[str] = Counter()
        for page in text_pages:
            counts.update({_shape(line.text) for line in page.lines if line.margin})
        recurring = {shape for shape, count in counts.items() if count * 2 >= len(text_pages)}
    for page in text_pages:
        page.lines = [
            line for line in page.lines
            if not line.margin or not (_shape(line.text) in recurring or _PAGE_NUMBER_RE.fullmatch(line.text))
        ]  # fmt: skip


def _shape(line: str) -> str:
    return _DIGITS_RE.sub("#", line.casefold())


def _assemble(file: FileInput, pages: Sequence[_Page], outline: list[tuple[int, int, str]], title: str) -> LoadedDocument:
    parts: list[str] = []
    marks: list[PageMark] = []
    headings: list[Heading] = []
    geometry: list[PageGeometry] = []
    find_headings = _outline_headings(outline) if outline else _sized_headings(pages)
    length = 0
    for page in pages:
        text, line_starts = _page_text(page)
        if not text:
            continue
        length += 2 if parts else 0
        marks.append(PageMark(length, page.number))
        headings.extend(Heading(length + start, level, name) for start, level, name in find_headings(page, text, line_starts))
        placed = [
            (start, line.number, line.top, line.bottom, line.segments)
            for line, start in zip(page.lines, line_starts, strict=True) if line.number
        ]  # fmt: skip
        geometry.append(page_geometry(page.number, page.size, text, length, placed))
        parts.append(text)
        length += len(text)
    ocr_pages = [str(page.number) for page in pages if page.ocr]
    fields: dict[str, object] = {"title": title} if title else {}
    if ocr_pages:
        fields["ocr_pages"] = ",".join(ocr_pages)
    lines = [LineMark(line.start, line.number) for page_lines in geometry for line in page_lines.lines]
    structure = Structure(
        headings=headings, pages=marks, page_kind="page", lines=lines, fields=fields, geometry=geometry
    )
    return make_document(file.path, "\n\n".join(parts), structure)


def _page_text(page: _Page) -> tuple[str, list[int]]:
    """The page's text (paragraphs apart, hyphenation joined) and where each of its lines starts."""
    pieces: list[str] = []
    starts: list[int] = []
    length = 0
    body = _body_size([page])
    for line in page.lines:
        if pieces:
            separator = line.glue if line.glue is not None else "\n\n" if body and line.gap_before > body * 0.9 else "\n"
            pieces.append(separator)
            length += len(separator)
        starts.append(length)
        pieces.append(line.text)
        length += len(line.text)
    text = "".join(pieces)
    joined = _HYPHENATED_RE.sub(r"\1\2", text)
    if joined == text:
        return text, starts
    # Joining removes two characters per hyphenation: recompute where the lines start.
    return _rebuilt_starts(text, joined, starts)


def _rebuilt_starts(text: str, joined: str, starts: list[int]) -> tuple[str, list[int]]:
    removed = [match.start() + 1 for match in _HYPHENATED_RE.finditer(text)]  # the '-' of each join
    return joined, [start - 2 * sum(1 for r in removed if r < start) for start in starts]


def _outline_headings(
    outline: list[tuple[int, int, str]],
) -> Callable[[_Page, str, list[int]], list[tuple[int, int, str]]]:
    """Headings of a page from the outline: at the line holding the entry's title, else at the page's start."""
    by_page: dict[int, list[tuple[int, str]]] = {}
    for number, level, title in outline:
        by_page.setdefault(number, []).append((level, title))

    def find(page: _Page, text: str, line_starts: list[int]) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        lines = [text[start:end].strip() for start, end in zip(line_starts, [*line_starts[1:], len(text)], strict=True)]
        after = 0
        for level, title in by_page.get(page.number, []):
            key = _key(title)
            at = next((i for i in range(after, len(lines)) if _key(lines[i]) == key), None)
            start = line_starts[at] if at is not None else (line_starts[after] if after < len(line_starts) else 0)
            if found and start < found[-1][0]:
                start = found[-1][0]
            found.append((start, level, title))
            after = at if at is not None else after
        return found

    return find


def _key(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _sized_headings(pages: Sequence[_Page]) -> Callable[[_Page, str, list[int]], list[tuple[int, int, str]]]:
    """Headings of a page from font sizes: short lines set clearly larger than the body text."""
    body = _body_size(pages)
    sizes = sorted(
        {round(line.size, 1) for page in pages for line in page.lines if _is_heading_line(line, body)}, reverse=True
    )
    levels = {size: min(6, rank + 1) for rank, size in enumerate(sizes[:6])}

    def find(page: _Page, text: str, line_starts: list[int]) -> list[tuple[int, int, str]]:
        return [
            (start, levels[round(line.size, 1)], line.text)
            for line, start in zip(page.lines, line_starts, strict=True)
            if _is_heading_line(line, body) and round(line.size, 1) in levels
        ]

    return find


def _body_size(pages: Sequence[_Page]) -> float:
    """The font size most characters are set in (0 when no page has sizes, e.g. OCR pages)."""
    weights: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            if line.size > 0:
                weights[round(line.size, 1)] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def _is_heading_line(line: _Line, body: float) -> bool:
    words = line.text.split()
    return (
        body > 0
        and line.size >= body * HEADING_SIZE_RATIO
        and 0 < len(words) <= _HEADING_MAX_WORDS
        and _LETTER_RE.search(line.text) is not None
        and not line.text.endswith((".", ",", ";"))
    )
