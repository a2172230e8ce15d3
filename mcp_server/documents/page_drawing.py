"""A picture of one page, the cited span highlighted: a PDF page drawn by PDFium, or a picture's own pixels.

:func:`draw_page` runs in the reading process (:mod:`mcp_server.documents.reader_process`), like
every parser of a user's file: what it is sent is a :class:`PageDrawing`, what it returns PNG bytes.

- **PDF**: the page is rendered by PDFium (``pypdfium2``) at the scale that makes its long side
  ``max_side`` pixels (never above :data:`MAX_SCALE`, 288 dpi, for a tiny page), form fields and
  annotations included; boxes are in PDF points from the page's top-left corner, y down.
- **Pictures** (:data:`~mcp_server.documents.ocr.IMAGE_SUFFIXES`; a frame of a TIFF is a page): the
  frame turned upright by its EXIF orientation as OCR read it, scaled down to ``max_side``; boxes are
  in its pixels. A frame over :data:`~mcp_server.documents.ocr.MAX_PIXELS` is refused unread.

Each box is drawn as a translucent yellow fill (the words stay legible through it) with an orange
outline, so it reads on a white page and on a photo alike. A PDF page's PNG has 256 colours (its
text and the highlight need no more: a third of the bytes, half the encoding time of full colour), a
picture's keeps its full colour. The PNG is at most ``max_bytes``: a larger one is drawn again,
smaller, until it fits.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

from mcp_server.documents.limits import FileInput
from mcp_server.documents.ocr import IMAGE_SUFFIXES, MAX_PIXELS, PageReader
from mcp_server.errors import IngestError

HIGHLIGHT_FILL = (255, 200, 0, 96)
"""RGBA of a box's fill: yellow at 38% opacity."""
HIGHLIGHT_OUTLINE = (230, 81, 0, 255)
"""RGBA of a box's outline: opaque orange."""
MAX_SCALE = 4.0
"""The most a PDF page is enlarged: 4 pixels a point, 288 dpi."""
MIN_SIDE = 64
"""The smallest long side a picture is shrunk to in order to fit its byte limit."""
_PADDING = 2  # pixels a box is widened by on each side, so the outline does not cross the letters


Rect = tuple[float, float, float, float]
"""``(x0, y0, x1, y1)`` on the page: PDF points from its top-left corner (y down), or a picture's pixels."""


@dataclass(frozen=True)
class PageDrawing:
    """What to draw: page ``page`` (from 1) with ``boxes`` highlighted, within ``max_side`` pixels and ``max_bytes``."""

    page: int
    boxes: tuple[Rect, ...]
    max_side: int
    max_bytes: int


def is_drawable(suffix: str) -> bool:
    """Whether a file with this suffix has pages that can be drawn: PDFs and pictures."""
    return suffix.lower() == ".pdf" or suffix.lower() in IMAGE_SUFFIXES


def draw_page(file: FileInput, drawing: PageDrawing, read_page: PageReader | None = None) -> bytes:
    """The PNG of ``drawing``'s page of ``file`` with its boxes highlighted (see the module docstring).

    :raises IngestError: the file is not a PDF or picture that can be read, or has no such page.
    """
    suffix = file.path.suffix.lower()
    if not is_drawable(suffix):
        raise IngestError(f"{file.path} has no pages to draw: only PDFs and pictures do.")
    side = drawing.max_side
    while True:
        if read_page is not None:
            read_page(drawing.page, drawing.page)  # the reading process's per-page time cap starts here
        pdf = suffix == ".pdf"
        image, scale = _pdf_page(file, drawing.page, side) if pdf else _picture(file, drawing.page, side)
        png = _encoded(_highlighted(image, [tuple(v * scale for v in box) for box in drawing.boxes]), palette=pdf)
        if len(png) <= drawing.max_bytes:
            return png
        if side <= MIN_SIDE:
            raise IngestError(
                f"page {drawing.page} of {file.path} does not fit in {drawing.max_bytes} bytes even "
                f"{max(image.size)} pixels wide; raise RAGMCP_PAGE_IMAGE_MAX_BYTES."
            )
        side = max(MIN_SIDE, min(max(image.size) - 1, int(max(image.size) * math.sqrt(drawing.max_bytes / len(png)) * 0.9)))


def _pdf_page(file: FileInput, number: int, max_side: int) -> tuple[Any, float]:
    """Page ``number`` rendered with its long side at most ``max_side`` pixels, and its pixels per point."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(file.data)
    except pdfium.PdfiumError as error:
        raise IngestError(f"{file.path} is not a readable PDF ({str(error).rstrip('.')}).") from error
    try:
        if not 1 <= number <= len(document):
            raise IngestError(f"{file.path} has no page {number}; it has pages 1 to {len(document)}.")
        page = document[number - 1]
        try:
            width, height = page.get_size()
            scale = min(MAX_SCALE, max_side / max(width, height, 1.0))
            bitmap = page.render(scale=scale, may_draw_forms=True, draw_annots=True)
            return bitmap.to_pil().convert("RGB"), scale
        finally:
            page.close()
    finally:
        document.close()


def _picture(file: FileInput, number: int, max_side: int) -> tuple[Any, float]:
    """Frame ``number`` of a picture, upright, scaled down to ``max_side``, and its pixels per original pixel."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = None  # checked below, before any pixel is decoded
    try:
        picture = Image.open(io.BytesIO(file.data))
        frames = getattr(picture, "n_frames", 1)
        if not 1 <= number <= frames:
            raise IngestError(f"{file.path} has no page {number}; it has pages 1 to {frames}.")
        picture.seek(number - 1)
        if picture.width * picture.height > MAX_PIXELS:
            raise IngestError(f"{file.path} holds a picture of {picture.width}x{picture.height} pixels, over {MAX_PIXELS:,}.")
        upright = ImageOps.exif_transpose(picture).convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError, EOFError, Image.DecompressionBombError) as error:
        raise IngestError(f"{file.path} is not a readable picture ({error}).") from error
    scale = min(1.0, max_side / max(upright.width, upright.height, 1))
    if scale < 1.0:
        size = (max(1, round(upright.width * scale)), max(1, round(upright.height * scale)))
        upright = upright.resize(size, Image.Resampling.LANCZOS)
    return upright, scale


def _highlighted(image: Any, boxes: list[tuple[float, ...]]) -> Any:
    """``image`` with each box (in its pixels) filled translucent yellow and outlined in orange."""
    if not boxes:
        return image
    from PIL import Image, ImageDraw

    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    width = max(2, round(max(image.size) / 800))
    for x0, y0, x1, y1 in boxes:
        shape = (x0 - _PADDING, y0 - _PADDING, max(x0, x1) + _PADDING, max(y0, y1) + _PADDING)
        draw.rectangle(shape, fill=HIGHLIGHT_FILL, outline=HIGHLIGHT_OUTLINE, width=width)
    return Image.alpha_composite(image.convert("RGBA"), overlay).convert("RGB")


def _encoded(image: Any, palette: bool) -> bytes:
    """``image`` as PNG; with ``palette``, in 256 colours (a rendered page: a third the bytes, half the time)."""
    from PIL import Image

    buffer = io.BytesIO()
    shown = image.quantize(colors=256, method=Image.Quantize.FASTOCTREE) if palette else image
    shown.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()
