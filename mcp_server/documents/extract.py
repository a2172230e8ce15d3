"""One document file to its chunks, each located in the source (page, lines), within the limits.

This is everything ingestion does to one file before the stores: load it (the loader by
suffix), refuse it when it has no words to index, cut it into chunks (tables by whole
records), refuse it when it would make more than the per-document chunk cap, and locate
every chunk. Any refusal is an :class:`~mcp_server.errors.IngestError` whose message names
the file, the reason and what to do; ingestion skips the file and goes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mcp_server.documents.chunking import (
    ChunkingOptions,
    split_into_chunks,
)
from mcp_server.documents.loaded import LoadedDocument
from mcp_server.documents.loaders import load_document
from mcp_server.documents.locations import Location, Locator
from mcp_server.documents.records import split_records
from mcp_server.documents.sniff import check_has_words
from mcp_server.errors import IngestError


@dataclass(frozen=True)
class LocatedChunk:
    """A chunk's number, span of the document text and heading path, and where it is in the source."""

    index: int
    char_start: int
    char_end: int
    section: str
    location: Location


@dataclass(frozen=True)
class Extracted:
    document: LoadedDocument
    chunks: list[LocatedChunk]


def extract(path: Path, options: ChunkingOptions, max_chunks: int) -> Extracted:
    """Load, check, chunk and locate one file.

    :raises IngestError: the file cannot be read, decoded or parsed, is binary, has no words
        to index, or would make more than ``max_chunks`` chunks.
    """
    document = load_document(path)
    check_has_words(document.text, path)
    # A cheap bound first: a text this long makes more chunks than the cap whatever the cuts.
    if _fewest_tokens(document.text) > max_chunks * options.max_tokens:
        raise _too_many(path, f"more than {max_chunks}", max_chunks)
    if document.layout == "table":
        chunks = split_records(document.text, options, document.headings)
    else:
        chunks = split_into_chunks(document.text, options, document.headings, [mark.start for mark in document.pages])
    if len(chunks) > max_chunks:
        raise _too_many(path, str(len(chunks)), max_chunks)
    locator = Locator(document.text, document.pages, document.lines)
    located = [LocatedChunk(c.index, c.char_start, c.char_end, c.section, locator.locate(c.char_start, c.char_end))
               for c in chunks]  # fmt: skip
    return Extracted(document, located)


def _fewest_tokens(text: str) -> int:
    """A lower bound of ``estimate_tokens(text)`` without reading the text in Python: every character
    but spaces, tabs and newlines counts at least a sixth of a token."""
    return (len(text) - text.count(" ") - text.count("\n") - text.count("\t")) // 6


def _too_many(path: Path, count: str, cap: int) -> IngestError:
    return IngestError(
        f"{path} would make {count} chunks, over the cap of {cap} per document; split the file "
        "or raise RAGMCP_MAX_DOCUMENT_CHUNKS"
    )
