"""Office documents and PDFs for the tests, written with the real libraries (python-docx,
python-pptx, openpyxl, scripts/text_pdf.py) so no binary fixture is committed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import docx
import openpyxl
import pptx

from mcp_server.documents.chunking import ChunkingOptions
from mcp_server.documents.extract import Extracted, extract
from mcp_server.documents.limits import FileInput, ReadingLimits
from scripts.text_pdf import write_text_pdf


def write_docx(path: Path, title: str, blocks: Sequence[tuple[str, str]]) -> Path:
    """A Word file: ``(style, text)`` blocks, style 'Title', 'Heading 1'..., 'List Bullet' or '' (body)."""
    document = docx.Document()
    document.core_properties.title = title
    for style, text in blocks:
        document.add_paragraph(text, style=style or None)
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))
    return path


def write_pptx(path: Path, slides: Sequence[tuple[str, str, str]]) -> Path:
    """A slide deck: ``(title, body, speaker notes)`` per slide, on the title-and-content layout."""
    presentation = pptx.Presentation()
    for title, body, notes in slides:
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    path.parent.mkdir(parents=True, exist_ok=True)
    presentation.save(str(path))
    return path


def write_xlsx(path: Path, sheets: dict[str, Sequence[Sequence[object]]]) -> Path:
    """A workbook with one sheet per entry, rows from row 1."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    path.parent.mkdir(parents=True, exist_ok=True)
    workbook.save(path)
    return path


def write_pdf(path: Path, title: str, pages: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_pdf(path, title, pages)
    return path


def extract_path(path: Path, options: ChunkingOptions, max_chunks: int, **limits: Any) -> Extracted:
    """``extract`` of the file at ``path`` with a chunk cap (and other limits) of the test's choosing."""
    return extract(FileInput(path.read_bytes(), path, ReadingLimits(max_chunks=max_chunks, **limits)), options)
