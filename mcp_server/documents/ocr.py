"""Text from pictures: scanned PDF pages and image files, read offline by RapidOCR.

RapidOCR (``rapidocr``) runs PP-OCR detection and recognition models, Chinese and English,
that ship inside its wheel, on onnxruntime: nothing is downloaded. It comes with the ``ocr`` extra
(``agentic-rag-mcp[ocr]``); without it, a file that needs OCR is skipped saying so. The engine is made
once per reading process, on the first picture, without its text-direction classifier: on
upright scans it turned about one line in five upside down (character error rate 12.5% with
it, 0% without, ``bench/documents/ocr.py``). Recognised boxes are put back into lines
(boxes whose middles lie within half a line's height of each other, left to right) and
paragraphs (a blank line where the gap above a line is taller than a line). Each line keeps
where it is on the picture, and where its words are (RapidOCR's word boxes) when a text box's
words are its text one space apart (:mod:`mcp_server.documents.geometry`).

- **Image files** (:data:`IMAGE_SUFFIXES`; every frame of a multi-page TIFF is a page),
  turned upright by their EXIF orientation; a picture with any frame over :data:`MAX_PIXELS`
  is refused, each frame's size checked before its pixels are decoded.
- **PDF pages** with almost no text layer (:mod:`mcp_server.documents.pdf`).

A document read this way records it: ``ocr_pages`` lists the pages whose text came from
OCR. At most ``ocr_max_pages`` pages of one document are read (``RAGMCP_OCR_MAX_PAGES``);
``RAGMCP_OCR=off`` turns OCR off (image files are then skipped, saying so).
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mcp_server.documents.limits import FileInput
from mcp_server.documents.loaded import LoadedDocument, Structure, make_document
from mcp_server.documents.geometry import PageGeometry, Segment, page_geometry
from mcp_server.documents.locations import LineMark, PageMark
from mcp_server.errors import IngestError

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp"})
MAX_PIXELS = 60_000_000
"""The most pixels a picture may have (a 600 dpi A3 scan has about 70M; phone photos 12-50M)."""
MIN_SCORE = 0.5
BLANK_CONTRAST = 32
"""A page whose lightest and darkest pixels differ by less than this (of 255) is blank: not read by OCR."""

PageReader = Callable[[int, int], None]
"""Told ``(page, pages)`` as each page of a document is read: progress, and a per-page time cap."""


@dataclass(frozen=True)
class OcrLine:
    """A line OCR read: its text, its number among the picture's lines (from 1), its top and bottom, and
    the text boxes detected on it, left to right (pixels); a blank line (number 0) is a paragraph break."""

    text: str
    number: int = 0
    top: float = 0.0
    bottom: float = 0.0
    segments: tuple[Segment, ...] = ()


def ocr_page_image(image: Any, file: FileInput) -> list[OcrLine]:
    """The text lines (blank lines between paragraphs) OCR reads in a PIL ``image``."""
    import numpy as np

    darkest, lightest = image.convert("L").getextrema()
    if lightest - darkest < BLANK_CONTRAST:  # a blank page: nothing to read, so no OCR (nor its extra) needed
        return []
    result = _engine()(np.asarray(image.convert("RGB")), return_word_box=True)
    if result.boxes is None or result.txts is None:
        return []
    words = result.word_results if len(result.word_results) == len(result.txts) else [()] * len(result.txts)
    found = [
        _Found(min(p[1] for p in box), max(p[1] for p in box), min(p[0] for p in box), text.strip(),
               _segments(text.strip(), min(p[0] for p in box), max(p[0] for p in box), boxed))
        for box, text, score, boxed in zip(result.boxes, result.txts, result.scores, words, strict=True)
        if score >= MIN_SCORE and text.strip()
    ]  # fmt: skip
    return _lines(found)


@dataclass(frozen=True)
class _Found:
    """A text box OCR recognised: its top, bottom and left edge (pixels), its text and where its words are."""

    top: float
    bottom: float
    left: float
    text: str
    segments: tuple[Segment, ...]


def _segments(text: str, left: float, right: float, words: Any) -> tuple[Segment, ...]:
    """A text box's words with their own edges (RapidOCR's word boxes, ``(word, score, corners)``) when they
    are its text one space apart; else the whole box as one segment (as Chinese, written without spaces)."""
    if words and all(word[2] is not None for word in words) and " ".join(word[0] for word in words) == text:
        return tuple(Segment(len(w[0]), float(min(p[0] for p in w[2])), float(max(p[0] for p in w[2]))) for w in words)
    return (Segment(len(text), float(left), float(right)),)


def _lines(boxes: list[_Found]) -> list[OcrLine]:
    """Text boxes as reading-order lines, a blank line between paragraphs."""
    rows: list[list[_Found]] = []
    for box in sorted(boxes, key=lambda b: (b.top, b.bottom, b.left)):
        middle = (box.top + box.bottom) / 2
        if rows:
            last = rows[-1]
            top, bottom = min(b.top for b in last), max(b.bottom for b in last)
            if abs(middle - (top + bottom) / 2) <= (bottom - top) / 2:
                last.append(box)
                continue
        rows.append([box])
    lines: list[OcrLine] = []
    previous_bottom: float | None = None
    for number, row in enumerate(rows, 1):
        top, bottom = min(b.top for b in row), max(b.bottom for b in row)
        if previous_bottom is not None and top - previous_bottom > bottom - top:
            lines.append(OcrLine(""))
        row.sort(key=lambda b: b.left)
        segments = tuple(segment for b in row for segment in b.segments)
        lines.append(OcrLine(" ".join(b.text for b in row), number, float(top), float(bottom), segments))
        previous_bottom = bottom
    return lines


@lru_cache(maxsize=1)
def _engine() -> Any:
    try:
        from rapidocr import RapidOCR
    except ImportError as error:  # rapidocr (and OpenCV) come with the ocr extra only
        raise IngestError(
            f"reading scans and pictures needs OCR, which is not installed ({error}): install "
            "agentic-rag-mcp[ocr] to read scans (then ragmcp ingest --rebuild reads this file again), or set "
            "RAGMCP_OCR=off to index PDFs by their text layer only."
        ) from error
    for name in ("RapidOCR", "rapidocr"):
        logging.getLogger(name).setLevel(logging.ERROR)
    threads = min(4, os.cpu_count() or 1)  # bounds the reading process's CPU and thread stacks on big machines
    return RapidOCR(
        params={
            "Global.log_level": "error", "Global.use_cls": False,
            "EngineConfig.onnxruntime.intra_op_num_threads": threads,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        }
    )  # fmt: skip


def load_image(file: FileInput, read_page: PageReader | None = None) -> LoadedDocument:
    """An image file's text by OCR, one page per frame.

    :raises IngestError: OCR is off, the file is not a picture PIL can open, is over
        :data:`MAX_PIXELS`, or holds no text OCR can read.
    """
    if not file.limits.ocr:
        raise IngestError(f"{file.path} is a picture and OCR is off; set RAGMCP_OCR=auto to read pictures.")
    from PIL import Image, ImageOps, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = None  # checked below, before any pixel is decoded
    try:
        picture = Image.open(io.BytesIO(file.data))
        frames = min(getattr(picture, "n_frames", 1), file.limits.ocr_max_pages)
        parts: list[str] = []
        marks: list[PageMark] = []
        geometry: list[PageGeometry] = []
        length = 0
        for frame in range(frames):
            if read_page is not None:
                read_page(frame + 1, frames)
            picture.seek(frame)  # reads the frame's header only: its size is checked before any pixel is decoded
            if picture.width * picture.height > MAX_PIXELS:
                raise IngestError(
                    f"{file.path} holds a picture of {picture.width}x{picture.height} pixels (frame {frame + 1}), "
                    f"over the limit of {MAX_PIXELS // 1_000_000}M; scale it down to index it."
                )
            lines = ocr_page_image(ImageOps.exif_transpose(picture), file)
            text = "\n".join(line.text for line in lines)
            if text:
                length += 2 if parts else 0
                marks.append(PageMark(length, frame + 1))
                size = (float(picture.width), float(picture.height))
                geometry.append(page_geometry(frame + 1, size, text, length, _placed(lines)))
                parts.append(text)
                length += len(text)
    except (UnidentifiedImageError, OSError, ValueError, EOFError, Image.DecompressionBombError) as error:
        raise IngestError(f"{file.path} is not a readable picture ({error}); check the file.") from error
    fields = {"ocr_pages": ",".join(str(m.page) for m in marks)}
    line_marks = [LineMark(line.start, line.number) for page in geometry for line in page.lines]
    structure = Structure(
        pages=marks, page_kind="page", lines=line_marks, fields=fields, titled_by_heading=False, geometry=geometry
    )
    return make_document(file.path, "\n\n".join(parts), structure)


def _placed(lines: list[OcrLine]) -> list[tuple[int, int, float, float, tuple[Segment, ...]]]:
    """Where each text line starts in the lines joined by newlines, with its number and place on the page."""
    placed, start = [], 0
    for line in lines:
        if line.number:
            placed.append((start, line.number, line.top, line.bottom, line.segments))
        start += len(line.text) + 1
    return placed
