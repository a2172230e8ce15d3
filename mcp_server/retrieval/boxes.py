"""Where a span of a stored document is on its pages: boxes per line, and the pages' sizes.

Call :func:`document_boxes` with the index's :class:`~mcp_server.stores.docstore.DocumentStore`
(a :class:`~mcp_server.retrieval.retriever.Retriever` holds it as ``docstore``), a document's
corpus and doc_id, and a span ``[start, end)`` of its text (a citation's or a located quote's
``char_start``/``char_end``)::

    for page in document_boxes(docstore, "handbook", "policies/leave", 1200, 1460):
        page.page, page.width, page.height   # 3, 612.0, 792.0: PDF points (pixels for a picture file)
        page.boxes                           # one Box per line, x0,y0 top-left, x1,y1 bottom-right

Pages come in text order, each with boxes only when the span has text on it. A document whose
source shows no pages (Markdown, Word, ...), or stored before geometry was kept, gives ``[]``.
"""

from __future__ import annotations

from mcp_server.documents.geometry import PageBoxes, PageGeometry, decode_page, line_numbers, span_boxes
from mcp_server.models import Box
from mcp_server.stores.docstore import DocumentStore

__all__ = ["PageBoxes", "document_boxes", "flat_boxes", "span_lines"]


def document_boxes(docstore: DocumentStore, corpus: str, doc_id: str, start: int, end: int) -> list[PageBoxes]:
    """The boxes of the span ``[start, end)`` of document ``corpus:doc_id``'s text, per page (see the module
    docstring)."""
    return span_boxes(_pages(docstore, corpus, doc_id, start, end), start, end)


def flat_boxes(docstore: DocumentStore, corpus: str, doc_id: str, start: int, end: int) -> list[Box] | None:
    """The span's boxes as a citation record holds them: all its pages' in one list, None when it has none."""
    boxes = [box for page in document_boxes(docstore, corpus, doc_id, start, end) for box in page.boxes]
    return boxes or None


def span_lines(docstore: DocumentStore, corpus: str, doc_id: str, start: int, end: int) -> tuple[int, int] | None:
    """The numbers of the first and last line (on their pages, as the pages show them) the span touches,
    or None when the document has no stored geometry there."""
    return line_numbers(_pages(docstore, corpus, doc_id, start, end), start, end)


def _pages(docstore: DocumentStore, corpus: str, doc_id: str, start: int, end: int) -> list[PageGeometry]:
    return [decode_page(page.data, page.char_start) for page in docstore.pages(corpus, doc_id, start, end)]
