"""Boxes on the page: where a span of a PDF's, a picture's or a slide's text is, one box per line.

PDFs are drawn with reportlab's ``drawString`` at known baselines, so each line's true box is
known from the font's metrics: from the pen's start to its advance (``stringWidth``), from the
font's ascent to its descent. The boxes read back follow the glyphs' ink up and down, so every
line drawn here holds a letter that reaches the ascent (``l``, ``d``) and one that reaches the
descent (``p``, ``y``), as most lines of prose do.
"""

from __future__ import annotations

from pathlib import Path

import pptx
from PIL import ImageDraw, ImageFont
from reportlab.lib.pagesizes import A4
from reportlab.pdfbase.pdfmetrics import getFont, stringWidth
from reportlab.pdfgen import canvas

from mcp_server.documents.chunking import ChunkingOptions
from mcp_server.documents.geometry import PageBoxes, decode_page, span_boxes
from mcp_server.models import Box
from tests.document_fixtures import CJK_FONT, extract_path, scan, write_pptx, write_scanned_pdf

OPTIONS = ChunkingOptions(target_tokens=120, max_tokens=160, overlap_tokens=20)
FONT, SIZE, LEFT, HEIGHT = "Helvetica", 12, 72.0, 792.0
LINES = [
    "Replace the pump filter every spring, and keep the old one dry.",
    "Deputy managers approve travel only after the budget review.",
    "Supply the yearly report to the depot by the end of April.",
]
"""Each line has an ascender (l, d, b, t) and a descender (p, y)."""


def _write_pdf(path: Path, pages: list[list[tuple[float, str]]]) -> Path:
    """A PDF of pages of ``(baseline, text)`` lines drawn in 12 pt Helvetica at x = 72 (y upward, PDF-style)."""
    pdf = canvas.Canvas(str(path), pagesize=(612, HEIGHT))
    for lines in pages:
        pdf.setFont(FONT, SIZE)
        for baseline, text in lines:
            pdf.drawString(LEFT, baseline, text)
        pdf.showPage()
    pdf.save()
    return path


def _true_box(page: int, baseline: float, line: str, start: int, end: int) -> Box:
    """The box of ``line[start:end]`` drawn at ``baseline``, from the font's metrics (top-left origin)."""
    face = getFont(FONT).face
    x0 = LEFT + stringWidth(line[:start], FONT, SIZE)
    return Box(
        page=page, x0=x0, x1=x0 + stringWidth(line[start:end], FONT, SIZE),
        y0=HEIGHT - baseline - face.ascent * SIZE / 1000, y1=HEIGHT - baseline - face.descent * SIZE / 1000,
    )  # fmt: skip


def _iou(a: Box, b: Box) -> float:
    width = max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0))
    height = max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0))
    overlap = width * height
    return overlap / ((a.x1 - a.x0) * (a.y1 - a.y0) + (b.x1 - b.x0) * (b.y1 - b.y0) - overlap)


def _boxes_of(path: Path, quote: str) -> list[PageBoxes]:
    """The boxes of ``quote`` in the file's text, from its pages' geometry as the index stores it."""
    extracted = extract_path(path, OPTIONS, 100)
    document = extracted.document
    start = document.text.index(quote)
    pages = [decode_page(data, page_start) for page_start, _end, data in extracted.pages]
    return span_boxes(pages, start, start + len(quote))


def test_a_quote_starting_mid_line_gets_the_box_of_its_words(tmp_path: Path) -> None:
    path = _write_pdf(tmp_path / "pump.pdf", [[(700, LINES[0]), (686, LINES[1])]])
    quote = "every spring, and keep"

    (page,) = _boxes_of(path, quote)

    (box,) = page.boxes
    start = LINES[0].index(quote)
    assert _iou(box, _true_box(1, 700, LINES[0], start, start + len(quote))) >= 0.9
    assert (page.page, page.width, page.height) == (1, 612.0, HEIGHT)


def test_a_quote_over_two_lines_gets_a_box_per_line(tmp_path: Path) -> None:
    path = _write_pdf(tmp_path / "travel.pdf", [[(700, LINES[0]), (686, LINES[1]), (672, LINES[2])]])
    quote = "only after the budget review.\nSupply the yearly"

    (page,) = _boxes_of(path, quote)

    first, second = page.boxes
    start = LINES[1].index("only")
    assert _iou(first, _true_box(1, 686, LINES[1], start, len(LINES[1]))) >= 0.9
    assert _iou(second, _true_box(1, 672, LINES[2], 0, len("Supply the yearly"))) >= 0.9


def test_a_quote_across_a_page_break_gets_boxes_on_both_pages(tmp_path: Path) -> None:
    path = _write_pdf(tmp_path / "report.pdf", [[(700, LINES[0]), (100, LINES[1])], [(700, LINES[2])]])
    quote = "budget review.\n\nSupply the"

    first, second = _boxes_of(path, quote)

    assert (first.page, second.page) == (1, 2)
    start = LINES[1].index("budget")
    assert _iou(first.boxes[0], _true_box(1, 100, LINES[1], start, len(LINES[1]))) >= 0.9
    assert _iou(second.boxes[0], _true_box(2, 700, LINES[2], 0, len("Supply the"))) >= 0.9


def test_pdf_line_numbers_count_the_lines_the_page_shows(tmp_path: Path) -> None:
    """Paragraphs apart (blank lines in the text) do not add lines: line 10 is the page's tenth line of text."""
    baselines = [700 - 14 * n - 20 * (n // 3) for n in range(12)]  # paragraphs of three lines, a gap between
    lines = [f"Line {n + 1}: {LINES[n % 3]}" for n in range(12)]
    path = _write_pdf(tmp_path / "gaps.pdf", [list(zip(baselines, lines, strict=True))])

    extracted = extract_path(path, OPTIONS, 100)

    text = extracted.document.text
    assert "\n\nLine 4:" in text  # the gaps are paragraph breaks in the text
    start = text.index("Line 10:")
    (chunk,) = [c for c in extracted.chunks if c.char_start <= start < c.char_end]
    marks = {mark.start: mark.line for mark in extracted.document.lines}
    assert marks[start] == 10
    assert chunk.location.line_end == 12 and chunk.location.line_start is not None


SCANNED = ["Invoice 4471 for the pump", "The deductible is 2500 NOK per claim."]


def _scanned_words() -> Box:
    """Where ``scan`` draws '2500 NOK' of SCANNED's second line (30 px, at y = 130), in pixels: its ink
    across, the font's ascent to descent up and down."""
    font = ImageFont.truetype(str(CJK_FONT), 30)
    x0 = 60 + font.getlength("The deductible is ")
    ascent, descent = font.getmetrics()
    return Box(page=1, x0=x0, y0=130, x1=x0 + font.getlength("2500 NOK"), y1=130 + ascent + descent)


def test_a_picture_read_by_ocr_gets_the_box_of_its_words(tmp_path: Path) -> None:
    picture = scan(SCANNED)
    path = tmp_path / "claim.png"
    picture.save(path)
    truth = _scanned_words()

    (page,) = _boxes_of(path, "2500 NOK")

    (box,) = page.boxes
    assert (page.width, page.height) == (picture.width, picture.height)
    assert _iou(box, truth) >= 0.8, (box, truth)
    font = ImageFont.truetype(str(CJK_FONT), 30)
    line_left, _, line_right, _ = ImageDraw.Draw(picture).textbbox((60, 130), SCANNED[1], font=font)
    assert line_left < box.x0 and box.x1 < line_right  # the words, not their whole line


def test_a_scanned_pdf_page_gets_boxes_in_points(tmp_path: Path) -> None:
    """``write_scanned_pdf`` draws the picture 523 points wide from x = 36, its top 800 points up an A4 page.

    The page is read at 150 dpi, smaller than the picture: RapidOCR places the words less exactly there
    (here about 4 points short at the left), so the box is held to overlap them mostly and centre on them.
    """
    picture = scan(SCANNED)
    path = write_scanned_pdf(tmp_path / "claim.pdf", [picture])
    scale, top = (595 - 72) / picture.width, A4[1] - 800
    words = _scanned_words()
    truth = Box(
        page=1, x0=36 + words.x0 * scale, y0=top + words.y0 * scale, x1=36 + words.x1 * scale, y1=top + words.y1 * scale
    )

    (page,) = _boxes_of(path, "2500 NOK")

    (box,) = page.boxes
    assert (page.width, page.height) == (round(A4[0], 1), round(A4[1], 1))
    assert _iou(box, truth) >= 0.6, (box, truth)
    assert truth.x0 < (box.x0 + box.x1) / 2 < truth.x1 and truth.y0 < (box.y0 + box.y1) / 2 < truth.y1


def test_slide_text_gets_the_box_of_its_shape(tmp_path: Path) -> None:
    path = write_pptx(tmp_path / "deck.pptx", [("Results", "Revenue grew 12% in Q3\nCosts fell", "")])
    body = pptx.Presentation(str(path)).slides[0].placeholders[1]
    emu = 12_700

    (page,) = _boxes_of(path, "grew 12% in Q3\nCosts")

    assert page.boxes == (
        Box(page=1, x0=round(body.left / emu, 1), y0=round(body.top / emu, 1),
            x1=round((body.left + body.width) / emu, 1), y1=round((body.top + body.height) / emu, 1)),
    )  # fmt: skip
    assert (page.width, page.height) == (720.0, 540.0)  # python-pptx's default 4:3 deck, in points


def test_text_set_past_the_page_edge_is_boxed_up_to_the_edge(tmp_path: Path) -> None:
    long_line = " ".join([LINES[0]] * 3)  # about 1,000 points of text on a 612-point page
    path = _write_pdf(tmp_path / "wide.pdf", [[(700, long_line)]])

    (page,) = _boxes_of(path, long_line)

    (box,) = page.boxes
    assert (box.x0, box.x1) == (LEFT, 612.0)
