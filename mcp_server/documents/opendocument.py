"""OpenDocument files (LibreOffice's own formats): text ``.odt``, spreadsheets ``.ods``, presentations ``.odp``.

Each is a zip archive (checked by :func:`~mcp_server.documents.zipped.checked_zip` before
anything inflates) whose ``content.xml`` holds the document and ``meta.xml`` its title,
keywords (tags) and date. The XML is read with the standard library's expat parser, which
resolves no external entity and refuses exponential entity expansion ("billion laughs").

- **Text**: ``text:h`` headings become ``#`` lines at their outline level, paragraphs and
  list items (``- ``) blocks, tables record lines whose cells carry their header cells.
- **Spreadsheets**: one section (and page) per sheet, each row one record line, as for
  ``.xlsx``. Repeated rows and cells (``number-rows-repeated``: a hostile file may claim a
  million) are expanded only when they hold a value, within ``RAGMCP_MAX_SHEET_CELLS``.
- **Presentations**: one page per slide, headed by its title frame (``Slide n`` without one),
  with the text of its frames and its speaker notes.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from xml.etree import ElementTree

from mcp_server.documents.limits import FileInput
from mcp_server.documents.loaded import LoadedDocument, Structure, make_document
from mcp_server.documents.locations import PageMark
from mcp_server.documents.tables import TableText
from mcp_server.documents.xml_metadata import metadata_fields
from mcp_server.documents.zipped import checked_zip
from mcp_server.errors import IngestError

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
    "meta": "urn:oasis:names:tc:opendocument:xmlns:meta:1.0",
}


def _tag(prefixed: str) -> str:
    prefix, name = prefixed.split(":")
    return f"{{{_NS[prefix]}}}{name}"


_H, _P, _LIST, _TABLE, _ROW, _CELL = map(_tag, ("text:h", "text:p", "text:list", "table:table", "table:table-row",
                                                 "table:table-cell"))  # fmt: skip
_SPACE, _TAB, _BREAK = map(_tag, ("text:s", "text:tab", "text:line-break"))


def load_odt(file: FileInput) -> LoadedDocument:
    content, fields = _read(file, "OpenDocument text (.odt)")
    body = content.find("office:body/office:text", _NS)
    blocks = list(_text_blocks(body)) if body is not None else []
    return make_document(file.path, "\n\n".join(blocks), Structure(fields=fields))


def load_ods(file: FileInput) -> LoadedDocument:
    content, fields = _read(file, "OpenDocument spreadsheet (.ods)")
    table = TableText()
    budget = [file.limits.max_sheet_cells]
    for sheet in content.iterfind("office:body/office:spreadsheet/table:table", _NS):
        table.rows(_sheet_rows(sheet, budget, file), sheet=sheet.get(_tag("table:name")) or "Sheet")
    return table.document(file.path, "sheet", fields)


def load_odp(file: FileInput) -> LoadedDocument:
    content, fields = _read(file, "OpenDocument presentation (.odp)")
    parts: list[str] = []
    pages: list[PageMark] = []
    length = 0
    for number, slide in enumerate(content.iterfind("office:body/office:presentation/draw:page", _NS), start=1):
        block = "\n\n".join(_slide_blocks(slide, number))
        length += 2 if parts else 0
        pages.append(PageMark(length, number))
        parts.append(block)
        length += len(block)
    return make_document(file.path, "\n\n".join(parts), Structure(pages=pages, page_kind="slide", fields=fields))


def _read(file: FileInput, kind: str) -> tuple[ElementTree.Element, dict[str, object]]:
    """``content.xml`` parsed, and the metadata fields from ``meta.xml``."""
    try:
        with zipfile.ZipFile(checked_zip(file, kind)) as archive:
            content = ElementTree.fromstring(archive.read("content.xml"))
            names = set(archive.namelist())
            meta = ElementTree.fromstring(archive.read("meta.xml")) if "meta.xml" in names else None
    except (KeyError, ElementTree.ParseError, zipfile.BadZipFile, ValueError) as error:
        raise IngestError(f"{file.path} is not a readable {kind} file ({error}); open it and save it again.") from error
    paths = {"title": "office:meta/dc:title", "date": "office:meta/dc:date", "tags": "office:meta/meta:keyword"}
    return content, metadata_fields(meta, paths, _NS) if meta is not None else {}


def _inline(element: ElementTree.Element) -> str:
    """The text of a paragraph or heading: spans, links and fields included, ``text:s`` as spaces."""
    pieces: list[str] = [element.text or ""]
    for child in element:
        if child.tag == _SPACE:
            pieces.append(" " * min(int(child.get(_tag("text:c"), "1") or 1), 100))
        elif child.tag in (_TAB, _BREAK):
            pieces.append(" ")
        else:
            pieces.append(_inline(child))
        pieces.append(child.tail or "")
    return "".join(pieces)


def _text_blocks(parent: ElementTree.Element) -> Iterator[str]:
    for element in parent:
        if element.tag == _H:
            level = int(element.get(_tag("text:outline-level"), "1") or 1)
            text = " ".join(_inline(element).split())
            if text:
                yield f"{'#' * max(1, min(6, level))} {text}"
        elif element.tag == _P:
            text = " ".join(_inline(element).split())
            if text:
                yield text
        elif element.tag == _LIST:
            items = [" ".join(_inline(p).split()) for p in element.iter(_P)]
            yield from (f"- {item}" for item in items if item)
        elif element.tag == _TABLE:
            table = TableText()
            rows = [[" ".join(" ".join(_inline(p).split()) for p in cell.iter(_P)) for cell in row.iter(_CELL)]
                    for row in element.iter(_ROW)]  # fmt: skip
            table.rows(enumerate(rows, start=1))
            text = table.text()
            if text:
                yield text
        else:  # sections, frames and other containers hold blocks of their own
            yield from _text_blocks(element)


def _sheet_rows(
    sheet: ElementTree.Element, budget: list[int], file: FileInput
) -> Iterator[tuple[int, list[str]]]:
    """A sheet's rows ``(row number, cells)``; repeats of empty rows and cells are counted, never expanded."""
    number = 0
    for row in sheet.iter(_ROW):
        repeat = int(row.get(_tag("table:number-rows-repeated"), "1") or 1)
        cells: list[str] = []
        for cell in row.iter(_CELL):
            value = cell.get(_tag("office:value")) or " ".join(" ".join(_inline(p).split()) for p in cell.iter(_P))
            times = int(cell.get(_tag("table:number-columns-repeated"), "1") or 1)
            cells.extend([value] * (min(times, 1_000) if value else 1))
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            number += repeat
            continue
        for _ in range(repeat):
            number += 1
            budget[0] -= len(cells)
            if budget[0] < 0:
                raise IngestError(
                    f"{file.path} has more than {file.limits.max_sheet_cells:,} cells; raise RAGMCP_MAX_SHEET_CELLS "
                    "or split the spreadsheet."
                )
            yield number, cells


def _slide_blocks(slide: ElementTree.Element, number: int) -> Iterator[str]:
    title = ""
    texts: list[str] = []
    notes: list[str] = []
    notes_tag = _tag("presentation:notes")
    frames = (frame for child in slide if child.tag != notes_tag for frame in child.iter(_tag("draw:frame")))
    for frame in frames:
        lines = [" ".join(_inline(p).split()) for p in frame.iter(_P)]
        text = "\n".join(line for line in lines if line)
        if not text:
            continue
        if frame.get(_tag("presentation:class")) == "title" and not title:
            title = " ".join(text.split())
        else:
            texts.append(text)
    for frame in slide.iterfind("presentation:notes//draw:frame", _NS):
        notes.extend(" ".join(_inline(p).split()) for p in frame.iter(_P))
    yield f"# {title or f'Slide {number}'}"
    yield from texts
    spoken = " ".join(n for n in notes if n)
    if spoken:
        yield f"Speaker notes: {spoken}"
