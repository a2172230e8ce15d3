"""A picture of a page with its cited span highlighted: where the highlight lands, and the size caps."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mcp_server.documents.limits import FileInput, ReadingLimits
from mcp_server.documents.page_drawing import PageDrawing, draw_page
from mcp_server.documents.reader_process import DocumentReader
from mcp_server.errors import IngestError

PAGE = (400.0, 300.0)  # points
FONT, SIZE = "Helvetica", 14
LINE = "The annual leave allowance is twenty five days"
ORIGIN = (40.0, 100.0)  # the line's start and baseline, in points from the page's bottom-left corner


def word_box(line: str, word: str, origin: tuple[float, float] = ORIGIN, page: tuple[float, float] = PAGE):
    """The true box of ``word`` in ``line`` set at ``origin``, in points from the top-left (reportlab's metrics)."""
    from reportlab.pdfbase.pdfmetrics import getAscent, getDescent, stringWidth

    x0 = origin[0] + stringWidth(line[: line.index(word)], FONT, SIZE)
    x1 = x0 + stringWidth(word, FONT, SIZE)
    top = page[1] - (origin[1] + getAscent(FONT, SIZE))
    bottom = page[1] - (origin[1] + getDescent(FONT, SIZE))
    return (x0, top, x1, bottom)


def write_line_pdf(
    path: Path, page: tuple[float, float] = PAGE, origin: tuple[float, float] = ORIGIN,
    lines: tuple[str, ...] = (LINE, "The second page tells of the office hours on Fridays"),
) -> Path:
    """A PDF (reportlab) with one line of text a page, each set at ``origin``."""
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=page)
    for line in lines:
        pdf.setFont(FONT, SIZE)
        pdf.drawString(origin[0], origin[1], line)
        pdf.showPage()
    pdf.save()
    return path


def highlighted(png: bytes) -> np.ndarray:
    """A mask of the pixels the highlight coloured: yellow fill over white or over ink, or orange outline."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    red, green, blue = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    return (red > 60) & (blue < red - 50) & (green < red + 10)


def file_of(path: Path) -> FileInput:
    return FileInput(path.read_bytes(), path)


def test_the_highlight_covers_the_quoted_words_and_nothing_else(tmp_path: Path) -> None:
    words = [word_box(LINE, "twenty"), word_box(LINE, "five")]
    drawing = PageDrawing(page=1, boxes=tuple(words), max_side=1600, max_bytes=2_000_000)
    png = draw_page(file_of(write_line_pdf(tmp_path / "leave.pdf")), drawing)
    mask = highlighted(png)
    scale = mask.shape[1] / PAGE[0]
    assert mask.shape[1] == 1600 and mask.shape[0] == 1200  # the long side at the cap, the aspect kept

    margin = 2 + 2 + 1  # padding, outline width, rounding
    inside = np.zeros_like(mask)
    for x0, y0, x1, y1 in words:
        inside[int(y0 * scale) - margin : int(y1 * scale) + margin, int(x0 * scale) - margin : int(x1 * scale) + margin] = True
        covered = mask[int(y0 * scale) : int(y1 * scale), int(x0 * scale) : int(x1 * scale)].mean()
        assert covered > 0.9, f"only {covered:.0%} of a quoted word's box is highlighted"
    assert mask.sum() > 0 and not (mask & ~inside).any(), "highlight outside the quoted words' boxes"
    unquoted = word_box(LINE, "annual")
    assert not mask[int(unquoted[1] * scale) : int(unquoted[3] * scale), int(unquoted[0] * scale) : int(unquoted[2] * scale)].any()


def test_a_page_without_boxes_is_drawn_plain_and_a_missing_page_is_refused(tmp_path: Path) -> None:
    file = file_of(write_line_pdf(tmp_path / "leave.pdf"))
    png = draw_page(file, PageDrawing(page=2, boxes=(), max_side=800, max_bytes=2_000_000))
    assert not highlighted(png).any() and Image.open(io.BytesIO(png)).size == (800, 600)
    with pytest.raises(IngestError, match="has no page 3; it has pages 1 to 2"):
        draw_page(file, PageDrawing(page=3, boxes=(), max_side=800, max_bytes=2_000_000))


def test_a_picture_is_shown_as_itself_with_the_highlight(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    photo = rng.integers(0, 255, size=(300, 500, 3), dtype=np.uint8)  # noise: a highlight must still show
    path = tmp_path / "receipt.png"
    Image.fromarray(photo).save(path)
    box = (100.0, 50.0, 300.0, 90.0)  # pixels
    png = draw_page(file_of(path), PageDrawing(page=1, boxes=(box,), max_side=1600, max_bytes=2_000_000))
    drawn = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    assert drawn.shape == photo.shape  # not enlarged
    outside = np.ones(photo.shape[:2], dtype=bool)
    outside[50 - 6 : 90 + 6, 100 - 6 : 300 + 6] = False
    assert (drawn[outside] == photo[outside]).all()  # the picture itself everywhere else
    inner = drawn[60:80, 110:290] - photo[60:80, 110:290]
    assert (inner[..., 2] < 0).mean() > 0.9  # tinted yellow: less blue
    assert (drawn[50 - 2, 100:300] == (230, 81, 0)).all()  # the orange outline along the top


def test_a_huge_page_is_scaled_under_the_pixel_cap_with_its_boxes(tmp_path: Path) -> None:
    page = (14_000.0, 5_000.0)  # near PDF's largest page
    origin = (700.0, 2_500.0)
    path = write_line_pdf(tmp_path / "poster.pdf", page=page, origin=origin)
    words = (word_box(LINE, "leave", origin, page),)
    png = draw_page(file_of(path), PageDrawing(page=1, boxes=words, max_side=1000, max_bytes=2_000_000))
    mask = highlighted(png)
    assert max(mask.shape) == 1000
    scale = 1000 / page[0]
    ys, xs = np.nonzero(mask)
    x0, y0, x1, y1 = (v * scale for v in words[0])
    assert xs.min() >= x0 - 5 and xs.max() <= x1 + 5 and ys.min() >= y0 - 5 and ys.max() <= y1 + 5


def test_the_png_is_drawn_smaller_until_it_fits_the_byte_cap(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    path = tmp_path / "noise.png"
    Image.fromarray(rng.integers(0, 255, size=(900, 1200, 3), dtype=np.uint8)).save(path)  # incompressible: ~3 MB
    png = draw_page(file_of(path), PageDrawing(page=1, boxes=(), max_side=1600, max_bytes=300_000))
    assert len(png) <= 300_000
    width, height = Image.open(io.BytesIO(png)).size
    assert width < 1200 and abs(width / height - 1200 / 900) < 0.01
    with pytest.raises(IngestError, match="RAGMCP_PAGE_IMAGE_MAX_BYTES"):
        draw_page(file_of(path), PageDrawing(page=1, boxes=(), max_side=1600, max_bytes=100))


def test_markdown_has_no_page_to_draw(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n")
    with pytest.raises(IngestError, match="no pages to draw"):
        draw_page(file_of(path), PageDrawing(page=1, boxes=(), max_side=800, max_bytes=2_000_000))


@pytest.mark.slow
def test_drawing_runs_in_the_reading_process_within_its_caps(tmp_path: Path) -> None:
    path = write_line_pdf(tmp_path / "leave.pdf")
    drawing = PageDrawing(page=1, boxes=(word_box(LINE, "leave"),), max_side=1600, max_bytes=2_000_000)
    with DocumentReader() as reader:
        png = reader.draw(FileInput(path.read_bytes(), path, ReadingLimits(memory_mb=1024)), drawing)
        assert png == draw_page(file_of(path), drawing)
        bomb = tmp_path / "bomb.pdf"
        bomb.write_bytes(b"%PDF-1.4 not really")
        with pytest.raises(IngestError, match="not a readable PDF"):
            reader.draw(FileInput(bomb.read_bytes(), bomb, ReadingLimits(memory_mb=1024)), drawing)
        slow = FileInput(path.read_bytes(), path, ReadingLimits(memory_mb=1024, page_seconds=0.01))
        with pytest.raises(IngestError, match="on one page; raise RAGMCP_PAGE_TIMEOUT_S"):  # stopped, not waited for
            reader.draw(slow, PageDrawing(page=1, boxes=(), max_side=6_000, max_bytes=50_000_000))
        assert reader.draw(FileInput(path.read_bytes(), path, ReadingLimits(memory_mb=1024)), drawing) == png
