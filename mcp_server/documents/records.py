"""Chunking of tables: whole records per chunk, never a row cut in two.

A table document (a CSV file, a spreadsheet's sheets) has one record per line, each
carrying its column names (``Item: Laptops | Cost: 1200``), under one heading per sheet.
Each sheet's lines are packed into chunks of about ``target_tokens``: a chunk takes the
next record while it stays within that (a chunk's first record always fits), and the
sheet's heading line opens its first chunk. Consecutive chunks do not overlap - records
stand alone. Only a single record longer than ``max_tokens`` is cut, by the prose chunker.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_server.documents.chunking import (
    Chunk,
    ChunkingOptions,
    Heading,
    estimate_tokens,
    lines_with_offsets,
    sections,
    split_into_chunks,
)


def split_records(text: str, options: ChunkingOptions, headings: Sequence[Heading] | None = None) -> list[Chunk]:
    """Chunks of ``text`` (one record per line, sections by ``headings``) that never cut a record."""
    spans: list[tuple[int, int, str]] = []
    for start, end, label in sections(text, headings):
        spans.extend(_pack(text, start, end, label, options))
    return [Chunk(index, start, end, label) for index, (start, end, label) in enumerate(spans)]


def _pack(text: str, start: int, end: int, label: str, options: ChunkingOptions) -> list[tuple[int, int, str]]:
    packed: list[tuple[int, int, str]] = []
    first = last = -1
    tokens = 0
    for offset, line in lines_with_offsets(text[start:end]):
        if not line.strip():
            continue
        line_start, line_end, line_tokens = start + offset, start + offset + len(line.rstrip()), estimate_tokens(line)
        if line_tokens > options.max_tokens:
            if first >= 0:
                packed.append((first, last, label))
                first, tokens = -1, 0
            packed.extend(_cut_record(text, line_start, line_end, label, options))
            continue
        if first >= 0 and tokens + line_tokens > options.target_tokens:
            packed.append((first, last, label))
            first, tokens = -1, 0
        if first < 0:
            first = line_start + len(line) - len(line.lstrip())
        last, tokens = line_end, tokens + line_tokens
    if first >= 0:
        packed.append((first, last, label))
    return packed


def _cut_record(text: str, start: int, end: int, label: str, options: ChunkingOptions) -> list[tuple[int, int, str]]:
    """A record too long for one chunk, cut by the prose chunker (its pieces keep the sheet's label)."""
    return [(start + c.char_start, start + c.char_end, label) for c in split_into_chunks(text[start:end], options, ())]
