"""Boxes on the page: where a span of a PDF's, a picture's or a slide's text is, one box per line.

PDFs are drawn with reportlab's ``drawString`` at known baselines, so each line's true box is
known from the font's metrics: from the pen's start to its advance (``stringWidth``), from the
font's ascent to its descent, as poppler's ``pdftotext -bbox-layout`` boxes words too.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pptx
import pytest
import reportlab
from PIL import ImageDraw, ImageFont
from reportlab.lib.pagesizes import A4
from reportlab.pdfbase.pdfmetrics import getFont, registerFont, stringWidth
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen import canvas

from mcp_server.documents.chunking import ChunkingOptions
from mcp_server.documents.geometry import PageBoxes, Segment, decode_page, page_geometry, span_boxes
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


def _write_pdf(path: Path, pages: list[list[tuple[float, str]]], font: str = FONT) -> Path:
    """A PDF of pages of ``(baseline, text)`` lines drawn in 12 pt ``font`` at x = 72 (y upward, PDF-style)."""
    pdf = canvas.Canvas(str(path), pagesize=(612, HEIGHT))
    for lines in pages:
        pdf.setFont(font, SIZE)
        for baseline, text in lines:
            pdf.drawString(LEFT, baseline, text)
        pdf.showPage()
    pdf.save()
    return path


def _true_box(
    page: int, baseline: float, line: str, start: int, end: int, font: str = FONT, left: float = LEFT
) -> Box:
    """The box of ``line[start:end]`` drawn from ``left`` at ``baseline``, from the font's metrics (top-left origin)."""
    face = getFont(font).face
    x0 = left + stringWidth(line[:start], font, SIZE)
    return Box(
        page=page, x0=x0, x1=x0 + stringWidth(line[start:end], font, SIZE),
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


def test_a_quote_over_a_hyphenated_line_break_gets_a_box_per_line(tmp_path: Path) -> None:
    """PDFium marks the hyphen and runs the two lines together in its text; the text joins the word."""
    lines = ["Deputy managers place the pump filters sym-", "metrically, and keep the old ones dry by the depot."]
    path = _write_pdf(tmp_path / "filters.pdf", [[(700, lines[0]), (686, lines[1])]])

    (page,) = _boxes_of(path, "filters symmetrically, and keep")

    first, second = page.boxes
    assert _iou(first, _true_box(1, 700, lines[0], lines[0].index("filters"), len(lines[0]))) >= 0.9
    assert _iou(second, _true_box(1, 686, lines[1], 0, len("metrically, and keep"))) >= 0.9


@pytest.mark.parametrize("font", [FONT, "Vera"], ids=["standard font, not embedded", "embedded font"])
def test_a_line_is_boxed_from_its_font_ascent_to_its_descent(tmp_path: Path, font: str) -> None:
    """Not its glyphs' ink: a line of low letters is as tall as any other (as poppler and readers box it).
    PDFium sets a standard font the file does not embed in a taller substitute: its own metrics count."""
    registerFont(TTFont("Vera", Path(reportlab.__file__).parent / "fonts" / "Vera.ttf"))
    line = "our ocean waves were seen over seven seas"
    path = _write_pdf(tmp_path / "waves.pdf", [[(700, line)]], font)

    (page,) = _boxes_of(path, "ocean waves were seen")

    (box,) = page.boxes
    assert _iou(box, _true_box(1, 700, line, 4, 4 + len("ocean waves were seen"), font)) >= 0.9, box


def test_words_set_smaller_than_the_rest_of_their_line_get_their_own_height(tmp_path: Path) -> None:
    """A heading's run-in word set large does not stretch the box of the body words beside it."""
    body = "keep the old filters dry"
    left = LEFT + stringWidth("Pumps ", FONT, 24)
    pdf = canvas.Canvas(str(tmp_path / "pumps.pdf"), pagesize=(612, HEIGHT))
    pdf.setFont(FONT, 24)
    pdf.drawString(LEFT, 700, "Pumps")
    pdf.setFont(FONT, SIZE)
    pdf.drawString(left, 700, body)
    pdf.save()

    (page,) = _boxes_of(tmp_path / "pumps.pdf", "the old filters")

    (box,) = page.boxes
    assert _iou(box, _true_box(1, 700, body, 5, 5 + len("the old filters"), left=left)) >= 0.9, box


def test_a_word_set_upright_is_boxed_along_its_length(tmp_path: Path) -> None:
    """Text turned a quarter (a chart's axis label) runs up the page: its box is as tall as the word is long,
    as wide as the font's ascent and descent (to the left of the baseline and to its right)."""
    registerFont(TTFont("Vera", Path(reportlab.__file__).parent / "fonts" / "Vera.ttf"))
    word = "Cannelloni"
    pdf = canvas.Canvas(str(tmp_path / "axis.pdf"), pagesize=(612, HEIGHT))
    pdf.setFont("Vera", SIZE)
    pdf.drawString(LEFT, 700, LINES[0])
    pdf.translate(300, 400)
    pdf.rotate(90)
    pdf.drawString(0, 0, word)
    pdf.save()
    face, length = getFont("Vera").face, stringWidth(word, "Vera", SIZE)
    truth = Box(
        page=1, x0=300 - face.ascent * SIZE / 1000, x1=300 - face.descent * SIZE / 1000,
        y0=HEIGHT - 400 - length, y1=HEIGHT - 400,
    )  # fmt: skip

    (page,) = _boxes_of(tmp_path / "axis.pdf", word)

    (box,) = page.boxes
    assert _iou(box, truth) >= 0.9, (box, truth)


def test_a_font_declaring_no_descent_is_boxed_below_its_baseline(tmp_path: Path) -> None:
    """Some fonts' descriptors say 0 (TeX's math symbols, whose braces go well below the baseline)."""
    registerFont(TTFont("Vera", Path(reportlab.__file__).parent / "fonts" / "Vera.ttf"))
    path = _write_pdf(tmp_path / "braces.pdf", [[(700, "our {ocean} waves")]], "Vera")
    data = path.read_bytes()
    assert data.count(b"/Descent -240") == 1
    path.write_bytes(data.replace(b"/Descent -240", b"/Descent 0   "))  # as long: the file's offsets hold

    (page,) = _boxes_of(path, "{ocean}")

    (box,) = page.boxes
    assert box.y1 - (HEIGHT - 700) >= 0.2 * SIZE, box


def test_lines_side_by_side_on_one_row_get_one_box() -> None:
    """Two lines the page shows as one (sharing its number: cells of a table row), one box for the span."""
    text = "Owner password\nUser password"
    lines = [(0, 1, 100.0, 112.0, [Segment(5, 72.0, 100.0), Segment(8, 104.0, 150.0)]),
             (15, 1, 101.0, 113.0, [Segment(4, 300.0, 325.0), Segment(8, 329.0, 375.0)])]  # fmt: skip
    page = page_geometry(1, (612.0, HEIGHT), text, 0, lines)

    (boxes,) = span_boxes([page], text.index("password"), len(text))

    assert boxes.boxes == (Box(page=1, x0=104.0, y0=100.0, x1=375.0, y1=113.0),)


def test_geometry_stored_before_segments_had_heights_still_reads() -> None:
    """Three integers a segment (no top and bottom of its own): an index not yet read again since."""
    stored = [1, 6120, 7920, [[0, 1, 1000, 120, 5, 720, 300, 3, 40, 200]], False]

    page = decode_page(zlib.compress(json.dumps(stored).encode()), 0)

    assert span_boxes([page], 0, 9) == [
        PageBoxes(1, 612.0, 792.0, (Box(page=1, x0=72.0, y0=100.0, x1=126.0, y1=112.0),))
    ]


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


def _numbers_of(path: Path, *starts: str) -> list[int]:
    """The page line number of the line each of ``starts`` begins at, as the document records them."""
    document = extract_path(path, OPTIONS, 100).document
    marks = {mark.start: mark.line for mark in document.lines}
    return [marks[document.text.index(start)] for start in starts]


def test_a_cell_set_between_two_rows_is_counted_where_it_lies(tmp_path: Path) -> None:
    """PDFium runs a table cell set between two rows into the row below ("kept dry? Result"): a reader counts
    three rows, the cell the second, then the row it was run into."""
    pdf = canvas.Canvas(str(tmp_path / "table.pdf"), pagesize=(612, HEIGHT))
    pdf.setFont(FONT, SIZE)
    for x, baseline, text in [(LEFT, 700, "Owner password"), (LEFT, 686, "kept dry?"), (250, 693, "Result"),
                              (LEFT, 660, LINES[1])]:  # fmt: skip
        pdf.drawString(x, baseline, text)
    pdf.save()

    assert _numbers_of(tmp_path / "table.pdf", "Owner", "Result", "kept", "Deputy") == [1, 2, 3, 4]


def test_a_word_raised_in_a_smaller_size_stays_on_its_line(tmp_path: Path) -> None:
    pdf = canvas.Canvas(str(tmp_path / "rise.pdf"), pagesize=(612, HEIGHT))
    pdf.setFont(FONT, SIZE)
    pdf.drawString(LEFT, 700, "The rise method")
    pdf.drawString(LEFT + 150, 700, "text on the line")
    pdf.setFont(FONT, 8)
    pdf.drawString(LEFT + 100, 707, "raises")  # 3.3 points of its 7.4 beside the line
    pdf.setFont(FONT, SIZE)
    pdf.drawString(LEFT, 686, LINES[1])
    pdf.save()

    assert _numbers_of(tmp_path / "rise.pdf", "The rise", "Deputy") == [1, 2]


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
