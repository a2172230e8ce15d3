"""Chunks that fit the embedding model: a chunk whose embedded text is longer than the model reads is cut again.

Chunks are sized by :func:`~mcp_server.documents.chunking.estimate_tokens`, an estimate; the
model counts with its own tokenizer and stops reading at its window (all-MiniLM-L6-v2: 256
tokens), so the tail of a chunk the estimate undercounts never reaches vector search.
:func:`fit_to_window` counts every chunk's embedded text (:func:`embedding_text`) with the
model's tokenizer and cuts each one over the window by the same chunker, inside the chunk's own
span and under its section label, until every piece fits. Chunks that fit are kept as they are,
so a document whose chunks all fit is indexed exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from mcp_server.documents.chunking import ChunkingOptions, estimate_tokens, split_into_chunks
from mcp_server.documents.extract import Extracted, LocatedChunk
from mcp_server.documents.locations import Locator

TokenCounter = Callable[[Sequence[str]], list[int]]
"""The model's token count of each text, special tokens included (what it reads, before truncation)."""


@dataclass(frozen=True)
class TokenWindow:
    """How many tokens the embedding model reads, and how it counts them."""

    count: TokenCounter
    max_tokens: int


def embedding_text(title: str, text: str) -> str:
    """What is embedded for a chunk: the document title, then the chunk text."""
    return f"{title}\n{text}"


def fit_to_window(extracted: Extracted, options: ChunkingOptions, window: TokenWindow) -> Extracted:
    """``extracted`` with every chunk whose embedded text is over ``window`` cut into pieces that fit.

    Pieces are numbered in document order with the kept chunks and located anew; their sizes
    keep the proportions of ``options`` (target, maximum, overlap), scaled to the window.
    """
    document = extracted.document
    # A title taking half the window would leave every piece too little room: such a title is
    # cut by the model, and the chunks are fitted as if it were not there.
    title = document.title if window.count([embedding_text(document.title, "")])[0] <= window.max_tokens // 2 else ""
    counts = window.count([embedding_text(title, document.text[c.char_start : c.char_end]) for c in extracted.chunks])
    if all(n <= window.max_tokens for n in counts):
        return extracted
    spans: list[tuple[int, int, str]] = []
    for chunk, count in zip(extracted.chunks, counts):
        if count <= window.max_tokens:
            spans.append((chunk.char_start, chunk.char_end, chunk.section))
        else:
            pieces = _fitting_pieces(document.text, title, chunk.char_start, chunk.char_end, count, options, window)
            spans.extend((start, end, chunk.section) for start, end in pieces)
    locator = Locator(document.text, document.pages, document.lines)
    chunks = [LocatedChunk(i, start, end, section, locator.locate(start, end)) for i, (start, end, section) in enumerate(spans)]
    return replace(extracted, chunks=chunks)


def _fitting_pieces(
    text: str, title: str, start: int, end: int, count: int, options: ChunkingOptions, window: TokenWindow
) -> list[tuple[int, int]]:
    """Spans covering ``text[start:end]`` (``count`` model tokens embedded) that each fit the window."""
    span = text[start:end]
    estimated = estimate_tokens(span)
    if estimated <= 1:  # one character: nothing shorter to cut it into
        return [(start, end)]
    # Aim at the window: the estimate's share of the span that the window holds, with a margin.
    limit = min(estimated - 1, max(2, estimated * window.max_tokens * 9 // (10 * count)))
    target = max(2, limit * options.target_tokens // options.max_tokens)
    overlap = max(1, min(target - 1, limit * options.overlap_tokens // options.max_tokens))
    smaller = ChunkingOptions(target_tokens=min(target, limit), max_tokens=limit, overlap_tokens=overlap)
    pieces = [(start + c.char_start, start + c.char_end) for c in split_into_chunks(span, smaller, headings=[])]
    counts = window.count([embedding_text(title, text[s:e]) for s, e in pieces])
    fitting: list[tuple[int, int]] = []
    for (piece_start, piece_end), piece_count in zip(pieces, counts):
        if piece_count <= window.max_tokens:
            fitting.append((piece_start, piece_end))
        else:
            fitting.extend(_fitting_pieces(text, title, piece_start, piece_end, piece_count, options, window))
    return fitting
