"""Office files dated by their properties, unless the date there is only python-docx's or python-pptx's
template's: then by the file's modification time, and the record says which (``date_source``)."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import docx
import pptx
import pytest

from mcp_server.documents.limits import FileInput
from mcp_server.documents.loaders import load_document, load_path
from tests.document_fixtures import write_docx, write_pptx

TODAY = datetime.date.today()
AUTHORS_DATE = datetime.datetime(2019, 5, 17, 8, 30, tzinfo=datetime.UTC)


def _new_files(folder: Path) -> list[Path]:
    """A Word file and a slide deck written today, their properties left as the libraries make them."""
    return [
        write_docx(folder / "report.docx", "Quarterly report", [("", "The ferry timetable changes in June.")]),
        write_pptx(folder / "deck.pptx", [("Ferry timetable", "Changes in June", "")]),
    ]


def _opened(path: Path) -> Any:
    """The file opened with the library that wrote it (its ``core_properties`` to read or set)."""
    return docx.Document(str(path)) if path.suffix == ".docx" else pptx.Presentation(str(path))


def test_files_the_libraries_write_today_carry_2013_template_dates_and_are_dated_today(tmp_path: Path) -> None:
    for path in _new_files(tmp_path):
        assert _opened(path).core_properties.modified.year == 2013, path  # the templates' date, which the libraries never update
        document = load_path(path)
        assert document.date == datetime.date.fromtimestamp(path.stat().st_mtime) == TODAY, path
        assert document.extra["date_source"].startswith("file modified time (the properties carry python-"), path
        assert "2013-" in document.extra["date_source"], path


@pytest.mark.parametrize("file_time", ["the author's", "today's"])
@pytest.mark.parametrize("suffix", [".docx", ".pptx"])
def test_a_date_the_author_set_is_kept_however_old(tmp_path: Path, suffix: str, file_time: str) -> None:
    path = next(p for p in _new_files(tmp_path) if p.suffix == suffix)
    opened = _opened(path)
    opened.core_properties.modified = AUTHORS_DATE
    opened.save(str(path))
    if file_time == "the author's":
        os.utime(path, (AUTHORS_DATE.timestamp(), AUTHORS_DATE.timestamp()))

    document = load_path(path)

    assert document.date == AUTHORS_DATE.date()
    assert document.extra["date_source"] == "document properties"


def test_a_template_date_with_no_file_time_known_leaves_the_document_undated(tmp_path: Path) -> None:
    path = _new_files(tmp_path)[0]

    document = load_document(FileInput(path.read_bytes(), path))  # no mtime_ns: not read from a scanned folder

    assert document.date is None
    assert document.extra["date_source"].startswith("none (the properties carry python-docx's template date")
