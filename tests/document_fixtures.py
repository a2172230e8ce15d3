"""Office documents, PDFs and scans for the tests, written with the real libraries (python-docx,
python-pptx, openpyxl, reportlab, Pillow, scripts/text_pdf.py) so no binary fixture is committed."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import docx
import openpyxl
import paperang_p2_fonts_cjk
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


CJK_FONT = Path(paperang_p2_fonts_cjk.__file__).parent / "fonts" / "wqy-microhei.ttc"
"""A font with Chinese glyphs (WenQuanYi Micro Hei, from a test dependency) for the generated scans."""


def write_sectioned_pdf(path: Path, pages: Sequence[Sequence[tuple[str, str]]], *, outline: bool) -> Path:
    """A PDF (reportlab) whose pages hold ``(heading, paragraph)`` pairs: headings set in 18 pt bold,
    paragraphs in 10 pt; with ``outline``, each heading is also a bookmark pointing at its page."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=A4)
    for number, sections in enumerate(pages, start=1):
        y = 780.0
        for index, (heading, paragraph) in enumerate(sections):
            if outline:
                key = f"p{number}s{index}"
                pdf.bookmarkPage(key)
                pdf.addOutlineEntry(heading, key, level=0)
            pdf.setFont("Helvetica-Bold", 18)
            pdf.drawString(72, y, heading)
            y -= 30
            pdf.setFont("Helvetica", 10)
            for line in textwrap.wrap(paragraph, 95):
                pdf.drawString(72, y, line)
                y -= 13
            y -= 20
        pdf.showPage()
    pdf.save()
    return path


def scan(lines: Sequence[str], size: int = 30) -> Any:
    """A picture of ``lines`` of text, black on white, as a 150 dpi scan of a page would show them."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(CJK_FONT), size)
    picture = Image.new("RGB", (1240, 120 + 70 * len(lines)), "white")
    draw = ImageDraw.Draw(picture)
    for number, line in enumerate(lines):
        draw.text((60, 60 + 70 * number), line, fill="black", font=font)
    return picture


def write_scanned_pdf(path: Path, pages: Sequence[str | Any]) -> Path:
    """A PDF whose pages are text (a ``str``, drawn as text) or pictures only (a PIL image, no text layer)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=A4)
    for page in pages:
        if isinstance(page, str):
            pdf.setFont("Helvetica", 11)
            for number, line in enumerate(page.split("\n")):
                pdf.drawString(72, 770 - 14 * number, line)
        else:
            width = 595 - 72
            pdf.drawImage(ImageReader(page), 36, 800 - width * page.height / page.width, width=width,
                          height=width * page.height / page.width)  # fmt: skip
        pdf.showPage()
    pdf.save()
    return path
