"""What one file may *become* while it is read: the limits every reader keeps, and one file's input.

A corpus folder may hold hostile files: a small zip that inflates to gigabytes, YAML whose
aliases expand without end, a spreadsheet that claims a million rows, JSON nested deeper
than Python recurses. The size on disk says little about any of that, so each limit here
bounds what a file turns into, and each refusal names the setting that raises it:

=========================  ==================================  ================================
limit                      what it bounds                      setting
=========================  ==================================  ================================
``max_file_bytes``         bytes read from the file            ``RAGMCP_MAX_FILE_MB``
``max_unzipped_bytes``     a zip-based file's members, inflated ``RAGMCP_MAX_UNZIPPED_MB``
``max_zip_ratio``          one member's inflated/deflated size  (fixed: :data:`MAX_ZIP_RATIO`)
``max_sheet_cells``        the cells read from a workbook      ``RAGMCP_MAX_SHEET_CELLS``
``max_chunks``             the chunks of one document          ``RAGMCP_MAX_DOCUMENT_CHUNKS``
``memory_mb``              a reader process's address space    ``RAGMCP_READER_MEMORY_MB``
``file_seconds``           the time to read one file           ``RAGMCP_READ_TIMEOUT_S``
``page_seconds``           the time to read one page (OCR)     ``RAGMCP_PAGE_TIMEOUT_S``
``ocr``                    whether pictures are read by OCR    ``RAGMCP_OCR`` (``auto``/``off``)
``ocr_max_pages``          the pages of one document OCR tries ``RAGMCP_OCR_MAX_PAGES``
=========================  ==================================  ================================

Front matter may not use YAML aliases and keeps each value to :data:`MAX_METADATA_CHARS`;
structured text is read to a depth of :data:`MAX_NESTING` at most.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MAX_ZIP_RATIO = 200
"""An Office or OpenDocument member inflating more than this (and past 1 MB) is a zip bomb: real XML
deflates 5-30 times, pictures hardly at all."""
ZIP_RATIO_FLOOR_BYTES = 1_048_576
MAX_METADATA_CHARS = 4_096
"""The longest a metadata value (front matter, document properties) is kept; longer ones are cut."""
MAX_FRONT_MATTER_BYTES = 65_536
MAX_NESTING = 100
"""The deepest a YAML or JSON structure is read (Python's own recursion stops near 1,000)."""


@dataclass(frozen=True)
class ReadingLimits:
    """The limits one file is read within (see the module's table for their settings)."""

    max_file_bytes: int = 50 * 1_048_576
    max_unzipped_bytes: int = 512 * 1_048_576
    max_sheet_cells: int = 5_000_000
    max_chunks: int = 100_000
    memory_mb: int = 3_072
    file_seconds: float = 600.0
    page_seconds: float = 120.0
    ocr: bool = True
    ocr_max_pages: int = 150

    def tag(self) -> str:
        """What of these limits decides whether a file is refused: a refusal under other limits is re-tried."""
        return (
            f"file={self.max_file_bytes}|unzipped={self.max_unzipped_bytes}|cells={self.max_sheet_cells}"
            f"|chunks={self.max_chunks}|memory={self.memory_mb}|seconds={self.file_seconds:g}"
            f"|page={self.page_seconds:g}|ocr={self.ocr}|ocr_pages={self.ocr_max_pages}"
        )


@dataclass(frozen=True)
class FileInput:
    """One file's bytes, read once through :func:`mcp_server.documents.safe_open.read_inside`.

    ``path`` names the file in messages and gives its suffix; readers never open it again, so
    nothing they parse can come from anywhere but ``data``. ``mtime_ns`` is the file's modification
    time as the corpus scan saw it (nanoseconds since the epoch; 0: unknown), which dates a document
    whose own date is only a template's (:mod:`mcp_server.documents.template_dates`).
    """

    data: bytes
    path: Path
    limits: ReadingLimits = ReadingLimits()
    mtime_ns: int = 0
