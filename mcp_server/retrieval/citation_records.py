"""The citation record of a stored chunk: what every hit, document and located quote cites."""

from __future__ import annotations

from mcp_server.models import Box, Citation, citation_id
from mcp_server.retrieval.boxes import flat_boxes
from mcp_server.stores.docstore import DocumentStore, StoredChunk, StoredDocument


def placed_citation(docstore: DocumentStore, document: StoredDocument, span: StoredChunk) -> Citation:
    """The citation of chunk ``span`` of ``document`` with its boxes on the page, where the source has them."""
    boxes = flat_boxes(docstore, document.corpus, document.doc_id, span.char_start, span.char_end)
    return chunk_citation(document, span, boxes)


def chunk_citation(document: StoredDocument, span: StoredChunk, boxes: list[Box] | None = None) -> Citation:
    """The citation of chunk ``span`` of ``document`` (``boxes``: where it is on its page)."""
    return Citation(
        id=citation_id(document.corpus, document.doc_id, span.chunk), corpus=document.corpus,
        doc_id=document.doc_id, chunk=span.chunk, title=document.title, source=document.source,
        section=span.section, char_start=span.char_start, char_end=span.char_end,
        updated=document.date, url=document.url, page=span.page, page_end=span.page_end,
        page_kind=document.page_kind if span.page is not None else None,
        line_start=span.line_start, line_end=span.line_end, boxes=boxes,
    )  # fmt: skip


def whole_document_citation(document: StoredDocument) -> Citation:
    """The citation of a document with no chunks (an empty document)."""
    return Citation(
        id=citation_id(document.corpus, document.doc_id, 0), corpus=document.corpus, doc_id=document.doc_id,
        chunk=0, title=document.title, source=document.source, section="", char_start=0,
        char_end=len(document.text), updated=document.date, url=document.url,
    )
