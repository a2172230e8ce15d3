"""Loaders of Office Open XML files: Word (``.docx``), PowerPoint (``.pptx``) and Excel (``.xlsx``).

- **Word** (python-docx): paragraphs and tables in document order. Paragraphs styled
  ``Title`` or ``Heading 1``-``Heading 9`` become ``#`` heading lines (``Title`` as level 1,
  ``Heading n`` one level below it when the document has a title), list paragraphs ``- ``
  items, table rows record lines that carry their header cells (``Item: Lost key | Fee (NOK): 300``). The title comes from the document
  properties, else the first level-1 heading; ``category``, ``keywords`` (as tags) and the
  modification date come from the properties too (in all three formats; a date that is only
  python-docx's or python-pptx's template's gives way to the file's modification time, see
  :mod:`mcp_server.documents.template_dates`). Word files have no fixed pages.
- **PowerPoint** (python-pptx): one section per slide, headed by its title (``Slide n``
  without one), with the text of every shape (grouped ones and tables included) and the
  speaker notes; ``page`` is the slide number, and a span's box on the slide is the box of the
  shape that shows it (not of a grouped shape's, nor of the notes).
- **Excel** (openpyxl, read-only, cached formula values): one section per sheet, headed by
  the sheet's name, each row one record line (:mod:`mcp_server.documents.tables`);
  ``page`` is the sheet name and lines are row numbers. Hidden sheets are included. A formula
  saved without its value (a workbook written by a program, never opened in Excel) reads as
  itself, ``=SUM(B2:B9), not computed``: the sheets' XML is searched for such formulas first,
  and only a workbook that has one is read a second time, in step, for its formulas.

The three libraries are imported when a file of their kind is loaded, so a corpus without
Office files does not pay for them.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from itertools import zip_longest
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp_server.documents.geometry import PageGeometry, Segment, page_geometry
from mcp_server.documents.limits import FileInput
from mcp_server.documents.loaded import LoadedDocument, Structure, make_document
from mcp_server.documents.locations import PageMark
from mcp_server.documents.tables import TableText
from mcp_server.documents.template_dates import dated_fields
from mcp_server.documents.zipped import checked_zip
from mcp_server.errors import IngestError

_HEADING_STYLE_RE = re.compile(r"Heading ([1-9])")
_WIDE_WIDTH, _WIDE_HEIGHT = 12_192_000, 6_858_000  # a slide's size in EMU when the file leaves it out (16:9)


@contextmanager
def _parsing(path: Path, kind: str) -> Iterator[None]:
    """Turn whatever a parser raises on a damaged or foreign file into one clear IngestError."""
    try:
        yield
    except IngestError:
        raise
    except MemoryError:
        raise
    except Exception as error:  # noqa: BLE001 - parsers raise many types (zipfile, lxml, KeyError...) on bad files
        raise IngestError(
            f"{path} is not a readable {kind} file ({type(error).__name__}: {error}); if it is an older format "
            "or password-protected, open it and save it again without a password in the current format."
        ) from error


def load_docx(file: FileInput) -> LoadedDocument:
    kind = "Word (.docx)"
    with _parsing(file.path, kind):
        import docx

        document = docx.Document(checked_zip(file, kind))
        blocks = list(_docx_blocks(document))
        return make_document(file.path, "\n\n".join(blocks), Structure(fields=_properties(document.core_properties, file)))


def _docx_blocks(document: Any) -> Iterator[str]:
    from docx.table import Table

    items = list(document.iter_inner_content())
    has_title = any(not isinstance(item, Table) and _style(item) == "Title" for item in items)
    for item in items:
        if isinstance(item, Table):
            rows = _table_rows([_distinct(cell.text for cell in row.cells) for row in item.rows])
            if rows:
                yield rows
            continue
        text = " ".join(item.text.split())
        if not text:
            continue
        style = _style(item)
        heading = _HEADING_STYLE_RE.fullmatch(style)
        if style == "Title":
            yield f"# {text}"
        elif heading:
            yield f"{'#' * min(6, int(heading.group(1)) + has_title)} {text}"
        elif style.startswith("List"):
            yield f"- {text}"
        else:
            yield text


def _table_rows(rows: list[list[str]]) -> str:
    """A Word or PowerPoint table as record lines, each row carrying its header cells
    (:class:`~mcp_server.documents.tables.TableText`): ``Item: Lost key | Fee (NOK): 300``."""
    table = TableText()
    table.rows(enumerate(rows, start=1))
    filled = [row for row in rows if any(row)]
    return table.text() or (" | ".join(filled[0]) if filled else "")


def _style(paragraph: Any) -> str:
    style = paragraph.style
    return str(style.name) if style is not None and style.name else ""


def _distinct(cells: Iterator[str]) -> list[str]:
    """Cell texts with a merged cell (repeated in each grid cell it spans) given once."""
    texts: list[str] = []
    for text in (" ".join(cell.split()) for cell in cells):
        if text and (not texts or texts[-1] != text):
            texts.append(text)
    return texts


def load_pptx(file: FileInput) -> LoadedDocument:
    kind = "PowerPoint (.pptx)"
    with _parsing(file.path, kind):
        import pptx

        presentation = pptx.Presentation(checked_zip(file, kind))
        parts: list[str] = []
        pages: list[PageMark] = []
        geometry: list[PageGeometry] = []
        size = (_points(presentation.slide_width or _WIDE_WIDTH), _points(presentation.slide_height or _WIDE_HEIGHT))
        length = 0
        for number, slide in enumerate(presentation.slides, start=1):
            blocks = list(_slide_blocks(slide, number))
            block = "\n\n".join(text for text, _box in blocks)
            if parts:
                length += 2
            pages.append(PageMark(length, number))
            geometry.append(page_geometry(number, size, block, length, _shape_lines(blocks), whole=True))
            parts.append(block)
            length += len(block)
        structure = Structure(
            pages=pages, page_kind="slide", fields=_properties(presentation.core_properties, file), geometry=geometry
        )
        return make_document(file.path, "\n\n".join(parts), structure)


_Box = tuple[float, float, float, float]  # left, top, right, bottom in points


def _slide_blocks(slide: Any, number: int) -> Iterator[tuple[str, _Box | None]]:
    """The slide's text blocks, each with the box of the shape that shows it (None: not on the slide, or
    in a group, whose members are placed in the group's own coordinates)."""
    title_shape = slide.shapes.title
    has_title = title_shape is not None and title_shape.has_text_frame
    title = " ".join(title_shape.text_frame.text.split()) if has_title else ""
    yield f"# {title or f'Slide {number}'}", _shape_box(title_shape) if title else None
    for shape, grouped in _shapes(slide.shapes):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        if getattr(shape, "has_text_frame", False):
            lines = [("  " * p.level) + " ".join(p.text.split()) for p in shape.text_frame.paragraphs]
            text = "\n".join(line for line in lines if line.strip())
            if text:
                yield text, None if grouped else _shape_box(shape)
        elif getattr(shape, "has_table", False):
            rows = _table_rows([_distinct(cell.text for cell in row.cells) for row in shape.table.rows])
            if rows:
                yield rows, None if grouped else _shape_box(shape)
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        text = " ".join(notes.text.split()) if notes is not None else ""
        if text:
            yield f"Speaker notes: {text}", None


def _shapes(shapes: Any, grouped: bool = False) -> Iterator[tuple[Any, bool]]:
    """Every shape, the members of groups included, in reading order, and whether it is in a group."""
    for shape in shapes:
        if hasattr(shape, "shapes"):  # a group shape
            yield from _shapes(shape.shapes, True)
        else:
            yield shape, grouped


def _shape_box(shape: Any) -> _Box | None:
    """The shape's box on the slide, in points (None when it inherits its place from a layout it lacks)."""
    if shape is None or None in (shape.left, shape.top, shape.width, shape.height):
        return None
    left, top = _points(shape.left), _points(shape.top)
    return left, top, left + _points(shape.width), top + _points(shape.height)


def _points(emu: int) -> float:
    return emu / 12_700


def _shape_lines(blocks: list[tuple[str, _Box | None]]) -> list[tuple[int, int, float, float, tuple[Segment, ...]]]:
    """Each line of the slide's text (its blocks joined by blank lines) that a shape shows: where it starts,
    its number among the slide text's lines, and the shape's box."""
    placed: list[tuple[int, int, float, float, tuple[Segment, ...]]] = []
    start = number = 0
    for text, box in blocks:
        for line in text.split("\n"):
            number += 1
            if box is not None:
                placed.append((start, number, box[1], box[3], (Segment(len(line), box[0], box[2]),)))
            start += len(line) + 1
        start += 1
        number += 1
    return placed


def load_xlsx(file: FileInput) -> LoadedDocument:
    kind = "Excel (.xlsx)"
    with _parsing(file.path, kind):
        import openpyxl

        uncomputed = _has_uncomputed_formula(file, kind)
        workbook = openpyxl.load_workbook(checked_zip(file, kind), read_only=True, data_only=True)
        formulas = openpyxl.load_workbook(checked_zip(file, kind), read_only=True) if uncomputed else None
        try:
            table = TableText()
            cells = _CellBudget(file)
            for index, sheet in enumerate(workbook.worksheets):
                if formulas is None:
                    rows = _rows(sheet, values_only=True)
                else:  # the same XML read twice, in step: cached values (and types), and formulas
                    written = _rows(formulas.worksheets[index], values_only=True)
                    rows = (_with_formulas(row, formula_row) for row, formula_row in zip(_rows(sheet, False), written))
                table.rows(((number, cells.take(row)) for number, row in enumerate(rows, 1)), sheet=sheet.title)
            return table.document(file.path, "sheet", _properties(workbook.properties, file))
        finally:
            workbook.close()
            if formulas is not None:
                formulas.close()


def _rows(sheet: Any, values_only: bool) -> Iterator[tuple[Any, ...]]:
    """A read-only sheet's rows: cell values (or formulas, from a workbook not loaded ``data_only``), or cells."""
    sheet.reset_dimensions()  # the declared size may claim a million empty rows; read what is there
    rows: Iterator[tuple[Any, ...]] = sheet.iter_rows(values_only=values_only)
    return rows


_WORKSHEET = re.compile(r"(^|/)worksheets/[^/]+\.xml$")
# A cell holding a formula and no value, or an empty one: <c r="B9"><f>SUM(B2:B8)</f><v></v></c>. A formula's
# text has no '<' (it is escaped), and Excel writes at most 8,192 characters of it.
_UNCOMPUTED = re.compile(
    rb"<(?:\w+:)?c\b(?P<attributes>[^<>]*)>\s*<(?:\w+:)?f\b[^<>]*(?:/>|>[^<]*</(?:\w+:)?f>)\s*"
    rb"(?:<(?:\w+:)?v\s*/>|<(?:\w+:)?v>\s*</(?:\w+:)?v>)?\s*</(?:\w+:)?c>"
)
_STRING_RESULT = re.compile(rb"\bt\s*=\s*[\"']str[\"']")  # an empty value is then the empty text the formula gave
_SCAN_BYTES = 1 << 20
_SCAN_OVERLAP = 1 << 16  # more than a cell with the longest formula, escaped


def _has_uncomputed_formula(file: FileInput, kind: str) -> bool:
    """Whether a sheet of the workbook holds a formula saved without its value, searched for in the sheets'
    XML a megabyte at a time (the archive passed :func:`checked_zip`: no member inflates past the limits)."""
    with zipfile.ZipFile(checked_zip(file, kind)) as archive:
        for member in archive.infolist():
            if not _WORKSHEET.search(member.filename):
                continue
            with archive.open(member) as xml:
                tail = b""
                while block := xml.read(_SCAN_BYTES):
                    window = tail + block
                    cells = _UNCOMPUTED.finditer(window)
                    if any(not _STRING_RESULT.search(cell["attributes"]) for cell in cells):
                        return True
                    tail = window[-_SCAN_OVERLAP:]
    return False


def _with_formulas(cells: tuple[Any, ...], written: tuple[object, ...]) -> tuple[object, ...]:
    """A row's values, a formula saved without its value given as itself: ``=SUM(B2:B9), not computed``."""
    return tuple(_value(cell, formula) for cell, formula in zip_longest(cells, written))


def _value(cell: Any, written: object) -> object:
    value = getattr(cell, "value", None)
    text = getattr(written, "text", written)  # an array formula keeps its formula in .text
    uncomputed = value is None and getattr(cell, "data_type", "n") != "str"  # "str": the formula gave empty text
    return f"{text}, not computed" if uncomputed and isinstance(text, str) and text.startswith("=") else value


class _CellBudget:
    """Counts the cells read from a workbook, refusing it past ``max_sheet_cells``."""

    def __init__(self, file: FileInput) -> None:
        self._file = file
        self._left = file.limits.max_sheet_cells

    def take(self, row: tuple[object, ...]) -> tuple[object, ...]:
        self._left -= len(row)
        if self._left < 0:
            cap = self._file.limits.max_sheet_cells
            raise IngestError(
                f"{self._file.path} has more than {cap:,} cells; raise RAGMCP_MAX_SHEET_CELLS or split the workbook."
            )
        return row


def _properties(properties: Any, file: FileInput) -> dict[str, object]:
    """Title, category, keywords (as tags) from Office document properties, and the date: the modification
    date there, unless it is a library template's (:func:`~mcp_server.documents.template_dates.dated_fields`)."""
    fields: dict[str, object] = {}
    for name, key in (("title", "title"), ("category", "category"), ("keywords", "tags")):
        value = getattr(properties, name, None)
        if isinstance(value, str) and value.strip():
            fields[key] = value.strip()
    return fields | dated_fields(getattr(properties, "modified", None), file.mtime_ns)
