"""How files are read into an index (``RAGMCP_*``, :mod:`mcp_server.documents.limits`) and how watch
mode waits for a folder to settle (``RAGMCP_WATCH_*``).

The reading settings decide what an index holds from the same files: which files are read, how far
and with what help (OCR). The index records them (:meth:`mcp_server.settings.Settings.index_settings`)
and every later ingestion of it uses the recorded values until ``ragmcp ingest --rebuild`` records
new ones, so a desktop host's server and the CLI on one data dir index alike.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_server.settings.group import SettingsGroup, group_config


class ReadingSettings(SettingsGroup):
    """What one file may cost, on disk and in what it becomes when read (50 MB admits slide decks and PDFs
    full of pictures), and whether OCR reads scanned pages. An index records all of them."""

    model_config = group_config("RAGMCP_")

    max_file_mb: float = Field(
        default=50.0, gt=0, description="Files larger than this many megabytes are skipped (and reported)."
    )
    max_document_chunks: int = Field(
        default=100_000, ge=1,
        description="A file that would make more chunks than this (about 25M tokens: a 50 MB log, a 20,000-page "
        "manual) is skipped (and reported).",
    )  # fmt: skip
    max_unzipped_mb: float = Field(
        default=512.0, gt=0,
        description="A zip-based document (.docx, .pptx, .xlsx, .odt, .epub...) whose members would inflate past this "
        "many megabytes is skipped as a likely zip bomb.",
    )  # fmt: skip
    max_sheet_cells: int = Field(
        default=5_000_000, ge=1, description="A workbook with more cells than this is skipped (and reported)."
    )
    reader_memory_mb: int = Field(
        default=3_072, ge=1_024,
        description="The address space a process reading PDFs, pictures and Office files may use (OCR needs about "
        "2 GB of it); a file that needs more is skipped.",
    )  # fmt: skip
    read_timeout_s: float = Field(
        default=600.0, gt=0,
        description="The longest one file may take to read (OCR included) before it is skipped: one file holds the "
        "publication of every corpus for at most this long.",
    )
    page_timeout_s: float = Field(
        default=120.0, gt=0, description="The longest one page of a PDF or picture may take to read (OCR included)."
    )
    ocr: Literal["auto", "off"] = Field(
        default="auto", description="auto: scanned PDF pages and pictures are read by OCR; off: they are skipped."
    )
    ocr_max_pages: int = Field(
        default=150, ge=1,
        description="The most pages of one document that OCR reads or tries (a blank page counts); later ones are left "
        "out. About 3 s a page: 150 pages fit in RAGMCP_READ_TIMEOUT_S's 600 s.",
    )


class WatchSettings(SettingsGroup):
    """``ragmcp serve --watch`` and ``ragmcp watch`` (:mod:`mcp_server.indexing.watch`)."""

    model_config = group_config("RAGMCP_WATCH_")

    debounce_s: float = Field(
        default=1.0, gt=0, le=60,
        description="Watch mode: how long a folder must be quiet after a change before it is re-indexed.",
    )
