"""Tables as text: one line per row, each row carrying its column names; and the CSV loader.

A row becomes ``Item: Laptops | Quarter: Q1 | Cost: 1200`` (empty cells left out), so any
chunk of rows reads on its own and a search for a column name finds its rows. The first
non-empty row is the header. Each row remembers its line in the CSV file (or its row
number in a sheet), which citations give as ``line_start``/``line_end``.
"""

from __future__ import annotations

import csv
import datetime
from collections.abc import Iterable, Iterator, Sequence
from itertools import zip_longest
from pathlib import Path
from typing import Protocol

from mcp_server.documents.chunking import Heading
from mcp_server.documents.loaded import (
    LoadedDocument,
    Structure,
    make_document,
    read_text,
)
from mcp_server.documents.limits import FileInput
from mcp_server.documents.locations import LineMark, PageMark
from mcp_server.errors import IngestError
from mcp_server.models import PageKind

_SNIFF_BYTES = 8192


class _CsvReader(Protocol):
    """What ``csv.reader`` returns: rows, and the number of source lines read so far."""

    line_num: int

    def __iter__(self) -> Iterator[list[str]]: ...


class TableText:
    """Builds a table document's text: sheets (headings, pages) of record lines (line marks)."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.headings: list[Heading] = []
        self.pages: list[PageMark] = []
        self.lines: list[LineMark] = []

    def rows(self, rows: Iterable[tuple[int, Sequence[object]]], sheet: str | None = None) -> None:
        """Add ``(line or row number, cells)`` rows; the first with any content is the header.

        With a ``sheet`` name, the rows are headed by a level-1 heading with that name, which
        is also their page; a sheet without content adds nothing.
        """
        header: list[str] | None = None
        for number, cells in rows:
            values = [cell_text(cell) for cell in cells]
            if not any(values):
                continue
            if header is None:
                header = [value or f"column {index}" for index, value in enumerate(values, start=1)]
                if sheet is not None:
                    self._start_sheet(sheet, number)
                continue
            pairs = zip_longest(header, values, fillvalue="")
            line = " | ".join(f"{name}: {value}" if name else value for name, value in pairs if value)
            self.lines.append(LineMark(self._length, number))
            self._append(line + "\n")

    def text(self) -> str:
        """The record lines added so far."""
        return "".join(self._parts).rstrip()

    def document(
        self, path: Path, page_kind: PageKind | None, fields: dict[str, object] | None = None
    ) -> LoadedDocument:
        structure = Structure(
            headings=self.headings, pages=self.pages, page_kind=page_kind if self.pages else None,
            lines=self.lines, layout="table", fields=fields or {}, titled_by_heading=False,
        )  # fmt: skip
        return make_document(path, self.text(), structure)

    def _start_sheet(self, name: str, header_row: int) -> None:
        """A blank line after an earlier sheet, then the heading, cited as the header row."""
        if self._parts:
            self._append("\n")
        self.lines.append(LineMark(self._length, header_row))
        self.headings.append(Heading(self._length, 1, name))
        self.pages.append(PageMark(self._length, name))
        self._append(f"# {name}\n")

    def _append(self, text: str) -> None:
        self._parts.append(text)
        self._length += len(text)


def cell_text(value: object) -> str:
    """A cell as one line of text: whole floats without '.0', midnight datetimes as dates."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return " ".join(str(value).split())


def load_csv(file: FileInput) -> LoadedDocument:
    """A CSV (or ``.tsv``) file: delimiter sniffed among , ; tab and |, rows cited by their lines."""
    path = file.path
    text = read_text(file)
    table = TableText()
    reader = csv.reader(text.splitlines(keepends=True), _dialect(path, text))
    try:
        table.rows(_numbered(reader))
    except csv.Error as error:
        raise IngestError(
            f"{path} is not a readable CSV file (line {reader.line_num}: {error}); check its quoting."
        ) from error
    return table.document(path, None)


def _numbered(reader: _CsvReader) -> Iterable[tuple[int, list[str]]]:
    """Each row with the line it starts on (``line_num`` counts the lines read so far)."""
    line = 1
    for row in reader:
        yield line, row
        line = reader.line_num + 1


def _dialect(path: Path, text: str) -> type[csv.Dialect] | csv.Dialect:
    if path.suffix.lower() == ".tsv":
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff(text[:_SNIFF_BYTES], delimiters=",;\t|")
    except csv.Error:
        return csv.excel
