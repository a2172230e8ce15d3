"""A quote located in a stored document: its chunk's citation, page, lines and offsets.

The text matching is :func:`mcp_server.grounding.quotes.find_quote`; this module chooses the
text searched and places the match in the document's chunk map. A document of at most
:data:`QUOTE_SCOPE_CHARS` characters is searched whole; in a longer one, the quote is looked
for in that many characters around the chunk a citation id names (from the start when none
is named), which bounds what one call may cost whatever the document.

A match inside one chunk cites that chunk (the first of overlapping chunks holding it whole,
or the preferred one); a match that runs past its chunk cites the chunk where it starts (the
one reaching furthest into it) and names the chunk where it ends (``end_citation``), with
the pages of both. Lines are the lines the page shows where the document recorded them (PDF
pages, OCR'd pages and pictures: the N-th line of text on the page, running headers and footers
included, blank space not: :mod:`mcp_server.documents.geometry`), else source-file lines where
the chunks record them (text formats, CSV; rows of a sheet), else lines on the page (slides,
and PDFs indexed before: counted in the page's extracted text), else lines of the document text.
The match, and its chunks' citations, carry their boxes on the page where the document has them.
"""

from __future__ import annotations

from dataclasses import replace

from mcp_server.errors import InvalidQueryError, NotFoundError
from mcp_server.grounding.quotes import MAX_QUOTE_CHARS, MIN_RATIO, QuoteMatch, find_quote, normalise
from mcp_server.models import QuoteLines, QuoteLocation, describe_location
from mcp_server.retrieval.boxes import flat_boxes, span_lines
from mcp_server.retrieval.citation_records import chunk_citation, placed_citation
from mcp_server.stores.docstore import DocumentStore, StoredChunk, StoredDocument

QUOTE_SCOPE_CHARS = 50_000
"""Most characters of a document searched for one quote (about 25 pages)."""


def check_quote(quote: str) -> str:
    """``quote`` stripped, or the refusal of an empty or over-long one (as typed, or once normalised: a
    ligature or a symbol such as ﷺ stands for several letters)."""
    quote = quote.strip()
    if not quote:
        raise InvalidQueryError("the quote is empty; pass the words to locate, or omit quote to read the document")
    length = len(quote) if len(quote) > MAX_QUOTE_CHARS else len(normalise(quote))  # normalised only when short
    if length > MAX_QUOTE_CHARS:
        raise InvalidQueryError(
            f"the quote is {length} characters long; locate at most {MAX_QUOTE_CHARS} at a time: quote one "
            "sentence or a short passage that identifies the place"
        )
    return quote


def locate_quote(
    quote: str, document: StoredDocument, spans: list[StoredChunk], prefer: int | None, docstore: DocumentStore
) -> tuple[QuoteLocation, int, int]:
    """Where ``quote`` is in ``document`` (chunk ``prefer`` first when it is there several times), and
    the indexes of its first and last chunk; raises NotFoundError saying what to try when it is not there.
    ``docstore`` holds the document's pages' geometry: the boxes of the match and of its chunks."""
    preferred = (spans[prefer].char_start, spans[prefer].char_end) if prefer is not None else None
    low, high = _scope(len(document.text), preferred)
    match = None
    if spans:
        within = (preferred[0] - low, preferred[1] - low) if preferred is not None else None
        match = find_quote(quote, document.text[low:high], within)
        match = replace(match, start=low + match.start, end=low + match.end) if match is not None else None
    if match is None or match.ratio < MIN_RATIO:
        raise NotFoundError(_not_found(document, spans, match, (low, high), prefer))
    first, last = _chunks_of(spans, match, prefer)
    head, tail = spans[first], spans[last]
    shown = span_lines(docstore, document.corpus, document.doc_id, match.start, match.end)
    line_start, line_end, lines = _lines(document.text, spans, head, tail, match, shown)
    page_end = tail.page if tail.page != head.page else head.page_end
    location = QuoteLocation(
        quote=quote, text=document.text[match.start : match.end], exact=match.exact, ratio=match.ratio,
        char_start=match.start, char_end=match.end, citation=placed_citation(docstore, document, head),
        end_citation=placed_citation(docstore, document, tail) if last != first else None,
        page=head.page, page_end=page_end, page_kind=document.page_kind if head.page is not None else None,
        line_start=line_start, line_end=line_end, lines=lines,
        boxes=flat_boxes(docstore, document.corpus, document.doc_id, match.start, match.end),
    )  # fmt: skip
    return location, first, last


def _scope(length: int, preferred: tuple[int, int] | None) -> tuple[int, int]:
    """The span of a document of ``length`` characters searched: all of it, or :data:`QUOTE_SCOPE_CHARS`
    characters centred on the ``preferred`` span (or from the start)."""
    if length <= QUOTE_SCOPE_CHARS:
        return 0, length
    centre = (preferred[0] + preferred[1]) // 2 if preferred is not None else 0
    low = min(max(0, centre - QUOTE_SCOPE_CHARS // 2), length - QUOTE_SCOPE_CHARS)
    return low, low + QUOTE_SCOPE_CHARS


def _not_found(
    document: StoredDocument, spans: list[StoredChunk], closest: QuoteMatch | None, scope: tuple[int, int],
    prefer: int | None,
) -> str:  # fmt: skip
    message = f"the quote was not found in document {document.corpus}:{document.doc_id}"
    if scope != (0, len(document.text)):
        around = f"around chunk #{prefer}" if prefer is not None else "from its start"
        message += (
            f" (of its {len(document.text):,} characters, the {QUOTE_SCOPE_CHARS:,} {around} were searched: pass "
            "the citation id of the chunk the quote comes from)"
        )
    if closest is not None:
        first, _ = _chunks_of(spans, closest, None)
        span = spans[first]
        where = describe_location(span.page, span.page_end, document.page_kind, span.line_start, span.line_end)
        citation = chunk_citation(document, span).id
        message += (
            f": the closest passage, in [{citation}]{f' ({where})' if where else ''}, is {closest.ratio:.2f} "
            f"similar to it and a match needs {MIN_RATIO:.2f}"
        )
    return (
        message + ". Quote fewer words, copied exactly (one sentence), read the document with get_document "
        "without quote, or find the passage with keyword_search or hybrid_search"
    )


def _chunks_of(spans: list[StoredChunk], match: QuoteMatch, prefer: int | None) -> tuple[int, int]:
    """The chunk holding the match whole, or the chunks where it starts and ends (see the module docstring)."""
    holding = [i for i, s in enumerate(spans) if s.char_start <= match.start and match.end <= s.char_end]
    if holding:
        chosen = prefer if prefer in holding else holding[0]
        return chosen, chosen
    starting = [i for i, s in enumerate(spans) if s.char_start <= match.start]
    first = max(starting, key=lambda i: spans[i].char_end, default=0)
    ending = [i for i, s in enumerate(spans) if s.char_end >= match.end and i > first]
    last = min(ending, key=lambda i: spans[i].char_start, default=len(spans) - 1)
    return first, max(first, last)


def _lines(
    text: str, spans: list[StoredChunk], head: StoredChunk, tail: StoredChunk, match: QuoteMatch,
    shown: tuple[int, int] | None,
) -> tuple[int, int, QuoteLines]:
    """The match's first and last line, and what they count (see the module docstring); ``shown``: the
    lines the page shows, where the document recorded them."""
    if shown is not None:
        return shown[0], shown[1], "page"
    last_char = max(match.start, match.end - 1)
    if head.line_start is not None and tail.line_start is not None:
        return (
            head.line_start + text.count("\n", head.char_start, match.start),
            tail.line_start + text.count("\n", tail.char_start, last_char),
            "file",
        )
    if head.page is not None:

        def page_start(page: int | str | None) -> int:
            return min(s.char_start for s in spans if s.page == page)

        return (
            1 + text.count("\n", page_start(head.page), match.start),
            1 + text.count("\n", page_start(tail.page), last_char),
            "page",
        )
    return 1 + text.count("\n", 0, match.start), 1 + text.count("\n", 0, last_char), "text"
