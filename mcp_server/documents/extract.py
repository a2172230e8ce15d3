"""One document file's bytes to its chunks, each located in the source (page, lines), within the limits.

This is everything ingestion does to one file before the stores: load it (the loader by
suffix), refuse it when it has no words to index, cut it into chunks (tables by whole
records, paged documents never across a page), refuse it when it would make more than the
per-document chunk cap, and locate every chunk. Any refusal is an
:class:`~mcp_server.errors.IngestError` whose message names the file, the reason and what
to do; ingestion skips the file and goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from mcp_server.documents.chunking import ChunkingOptions, split_into_chunks
from mcp_server.documents.geometry import EncodedPage, encode_page
from mcp_server.documents.limits import FileInput
from mcp_server.documents.loaded import LoadedDocument
from mcp_server.documents.loaders import load_document
from mcp_server.documents.locations import Location, Locator
from mcp_server.documents.ocr import PageReader
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
    """The document (without its geometry), its located chunks, and its pages' geometry encoded as stored:
    a tenth of the size of the objects, for what crosses the reading process's pipe."""

    document: LoadedDocument
    chunks: list[LocatedChunk]
    pages: list[EncodedPage] = field(default_factory=list)


def extract(file: FileInput, options: ChunkingOptions, read_page: PageReader | None = None) -> Extracted:
    """Load, check, chunk and locate one file (``read_page``: told of each page of a paged document).

    :raises IngestError: the file cannot be decoded or parsed, is binary, has no words to
        index, would become more than its limits allow, or would make more than
        ``file.limits.max_chunks`` chunks.
    """
    document = load_document(file, read_page)
    check_has_words(document.text, file.path)
    max_chunks = file.limits.max_chunks
    # A cheap bound first: a text this long makes more chunks than the cap whatever the cuts.
    if _fewest_tokens(document.text) > max_chunks * options.max_tokens:
        raise _too_many(file, f"more than {max_chunks}")
    if document.layout == "table":
        chunks = split_records(document.text, options, document.headings)
    else:
        chunks = split_into_chunks(document.text, options, document.headings, [mark.start for mark in document.pages])
    check_chunk_cap(file, len(chunks))
    locator = Locator(document.text, document.pages, document.lines)
    located = [LocatedChunk(c.index, c.char_start, c.char_end, c.section, locator.locate(c.char_start, c.char_end))
               for c in chunks]  # fmt: skip
    return Extracted(replace(document, geometry=()), located, [encode_page(page) for page in document.geometry])


def _fewest_tokens(text: str) -> int:
    """A lower bound of ``estimate_tokens(text)`` without reading the text in Python: every character
    but spaces, tabs and newlines counts at least a sixth of a token."""
    return (len(text) - text.count(" ") - text.count("\n") - text.count("\t")) // 6


def check_chunk_cap(file: FileInput, chunks: int) -> None:
    """:raises IngestError: ``chunks`` is over the file's per-document cap."""
    if chunks > file.limits.max_chunks:
        raise _too_many(file, str(chunks))


def _too_many(file: FileInput, count: str) -> IngestError:
    return IngestError(
        f"{file.path} would make {count} chunks, over the cap of {file.limits.max_chunks} per document; split the "
        "file or raise RAGMCP_MAX_DOCUMENT_CHUNKS"
    )
