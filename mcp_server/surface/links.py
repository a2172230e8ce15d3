"""The resource URIs the server publishes for a document and for a picture of one of its pages.

- ``doc://{corpus}/{+doc_id}``: the document's text with its citation ids (``text/plain``).
- ``page://{corpus}/{+doc_id}{?chunk,quote,page}``: a PNG (``image/png``, a blob) of one page
  of a PDF, or of a picture the index read by OCR, with the cited span highlighted:

  - ``?chunk=N``: chunk ``N``'s span, on the page where the chunk starts
    (``page://handbook/hr/leave%20policy?chunk=2`` shows citation ``handbook:hr/leave%20policy#2``);
  - ``?quote=...``: the passage ``get_document``'s ``quote`` finds (the chunk, when given too, is
    where it is looked for first), on the page where it starts;
  - ``?page=P``: that page (from 1) instead, with the part of the span on it highlighted; alone, the
    page without a highlight.

The doc_id is percent-encoded except for its ``/`` (a space is ``%20``, ``#`` ``%23``, ``?`` ``%3F``,
``%`` ``%25``), every query value wholly (:func:`urllib.parse.quote` with ``safe=""``); the SDK's
template matching decodes them. Build URIs with :func:`document_uri` and :func:`page_uri`, never
by hand. A tool result names them in ``resource_link`` content blocks (MCP 2025-06-18).
"""

from __future__ import annotations

from urllib.parse import quote as percent_encoded

DOCUMENT_URI = "doc://{corpus}/{+doc_id}"
PAGE_URI = "page://{corpus}/{+doc_id}{?chunk,quote,page}"
PAGE_MIME_TYPE = "image/png"


def document_uri(corpus: str, doc_id: str) -> str:
    """The ``doc://`` URI of a document."""
    return f"doc://{_path(corpus, doc_id)}"


def page_uri(
    corpus: str, doc_id: str, *, chunk: int | None = None, quote: str | None = None, page: int | None = None
) -> str:
    """The ``page://`` URI of a picture of one of a document's pages, highlighting ``chunk`` or ``quote``."""
    query = [
        f"{name}={percent_encoded(str(value), safe='')}"
        for name, value in (("chunk", chunk), ("quote", quote), ("page", page))
        if value is not None
    ]
    return f"page://{_path(corpus, doc_id)}" + ("?" + "&".join(query) if query else "")


def _path(corpus: str, doc_id: str) -> str:
    """``<corpus>/<doc_id>`` of a URI: the corpus wholly percent-encoded, the doc_id all but its ``/``."""
    return f"{percent_encoded(corpus, safe='')}/{percent_encoded(doc_id, safe='/')}"
