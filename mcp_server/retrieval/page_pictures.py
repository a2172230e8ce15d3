"""A picture of a cited page: the page of the file as indexed, its cited span highlighted.

:func:`page_picture` finds the span as ``get_document`` does (a citation id's chunk, or a quote:
:mod:`mcp_server.retrieval.quote_location`), within the caller's scope, so a document of a corpus
the caller may not read is answered exactly as one that does not exist. It then reads the file
the document was indexed from, once, from inside its corpus folder
(:func:`~mcp_server.documents.safe_open.read_inside`), and refuses it when its bytes are no
longer the ones indexed (their fingerprint differs, :func:`~mcp_server.indexing.ingest.file_fingerprint`)
or it is gone: boxes recorded for other bytes would highlight the wrong place. The page is drawn
in the reading process (:meth:`~mcp_server.documents.reader_process.DocumentReader.draw`), within
its memory cap and the shorter of ``RAGMCP_PAGE_TIMEOUT_S`` and ``RAGMCP_CALL_TIMEOUT_S``, at most
``RAGMCP_PAGE_IMAGE_MAX_SIDE`` pixels and ``RAGMCP_PAGE_IMAGE_MAX_BYTES`` bytes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mcp_server.documents.corpus import load_corpus_config
from mcp_server.documents.limits import FileInput, ReadingLimits
from mcp_server.documents.page_drawing import PageDrawing, Rect, is_drawable
from mcp_server.documents.reader_process import DocumentReader
from mcp_server.documents.safe_open import read_inside
from mcp_server.errors import IngestError, InvalidQueryError, NotFoundError, SourceChangedError
from mcp_server.indexing.ingest import file_fingerprint
from mcp_server.models import DocumentView
from mcp_server.retrieval.retriever import Retriever


@dataclass(frozen=True)
class PagePicture:
    """The PNG of page ``page`` of a document, and what it shows."""

    corpus: str
    doc_id: str
    page: int
    png: bytes


def page_picture(
    retriever: Retriever, ref: str, *, corpus: str | None = None, chunk: int | None = None, quote: str | None = None,
    page: int | None = None, scope: Collection[str] | None = None,
) -> PagePicture:  # fmt: skip
    """The picture of a page of the document ``ref`` (a doc_id or citation id) names, with the span of its chunk
    (from ``chunk`` or the citation id) or of ``quote`` highlighted; ``page`` (from 1) picks another page of the
    span, or a page of a document shown without a span.

    :raises RetrievalError: no such document or chunk within ``scope``, the quote is not in it, it has no
        pages to draw, the page is out of range, its file changed or vanished since indexing, or drawing failed.
    """
    view = retriever.documents.get_document(ref, corpus=corpus, chunk=chunk, window=0, scope=scope, quote=quote)
    name = f"{view.corpus}:{view.doc_id}"
    if view.page_kind != "page" or not is_drawable(PurePosixPath(view.source).suffix):
        raise InvalidQueryError(
            f"{name} ({view.source}) has no pages to show: only PDFs and pictures do. Read its text instead "
            "(get_document, or ragmcp doc)."
        )
    start, end, span_page = _span(view, ref, chunk)
    shown = page if page is not None else span_page
    if shown < 1:
        raise InvalidQueryError(f"page must be 1 or more, got {shown}")
    settings = retriever.settings
    data, path = _indexed_bytes(retriever, view)
    limits = ReadingLimits(
        memory_mb=settings.reading.reader_memory_mb,
        file_seconds=min(settings.reading.read_timeout_s, settings.calls.call_timeout_s),
        page_seconds=min(settings.reading.page_timeout_s, settings.calls.call_timeout_s),
    )
    boxes = _boxes(retriever, view, (start, end), shown, scope)
    drawing = PageDrawing(shown, boxes, settings.calls.page_image_max_side, settings.calls.page_image_max_bytes)
    try:
        with DocumentReader() as reader:
            png = reader.draw(FileInput(data, path, limits), drawing)
    except IngestError as error:
        timing = " (a page is drawn within the shorter of RAGMCP_PAGE_TIMEOUT_S and RAGMCP_CALL_TIMEOUT_S)"
        late = "took longer than" in str(error)
        raise InvalidQueryError(f"page {shown} of {name} could not be drawn: {error}{timing if late else ''}") from error
    return PagePicture(view.corpus, view.doc_id, shown, png)


def _span(view: DocumentView, ref: str, chunk: int | None) -> tuple[int, int, int]:
    """The span to highlight (empty: none) and the page it starts on: the quote's, the chunk's, or none on page 1."""
    if view.quote is not None:
        return view.quote.char_start, view.quote.char_end, _number(view.quote.page)
    if names_chunk(ref, chunk) and view.chunks:
        cited = view.chunks[0]  # window=0: the named chunk alone
        return cited.char_start, cited.char_end, _number(cited.page)
    return 0, 0, 1


def names_chunk(ref: str, chunk: int | None) -> bool:
    """Whether a request for document ``ref`` names one of its chunks: by ``chunk``, or a citation id's ``#N``."""
    return chunk is not None or ref.strip().rpartition("#")[2].isdigit()


def _number(page: int | str | None) -> int:
    return page if isinstance(page, int) else 1


def _boxes(
    retriever: Retriever, view: DocumentView, span: tuple[int, int], page: int, scope: Collection[str] | None
) -> tuple[Rect, ...]:
    """The boxes of ``span`` on ``page`` (none for an empty span, or one with no text there); refused when the
    index recorded no position for any of it (built before positions were kept)."""
    start, end = span
    if start >= end:
        return ()
    pages = retriever.documents.page_boxes(view.corpus, view.doc_id, start, end, scope)
    if not pages:
        raise InvalidQueryError(
            f"the index holds no positions for the text of {view.corpus}:{view.doc_id}, so nothing can be highlighted "
            "on its pages; rebuild it (ragmcp ingest --rebuild), or ask for the page alone (page=P)."
        )
    return tuple((box.x0, box.y0, box.x1, box.y1) for found in pages if found.page == page for box in found.boxes)


def _indexed_bytes(retriever: Retriever, view: DocumentView) -> tuple[bytes, Path]:
    """The bytes of the file ``view`` was indexed from, and its path in the corpus (messages never show the
    server's folders); refused when they are not the bytes indexed."""
    name = f"{view.corpus}:{view.doc_id}"
    indexed = retriever.documents.indexed_file(view.corpus, view.doc_id)
    if indexed is None:  # the index changed between the two reads
        raise NotFoundError(f"no document {name!r}; search again for current citation ids")
    root, source, fingerprint = indexed
    path = root / source
    again = "re-index it (ragmcp ingest, or let a watching server catch up) and ask again"
    try:
        data = read_inside(path, root.resolve(), int(retriever.settings.reading.max_file_mb * 1_048_576))
        config = load_corpus_config(root)
    except IngestError as error:
        raise SourceChangedError(f"{name} cannot be shown: its file {source} is gone or unreadable; {again}.") from error
    if file_fingerprint(data, config) != fingerprint:
        raise SourceChangedError(
            f"{name} cannot be shown: its file {source} has changed since it was indexed, so its page would be "
            f"highlighted in the wrong place; {again}."
        )
    return data, Path(source)
