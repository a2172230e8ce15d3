"""The ``resource_link`` content blocks (MCP 2025-06-18) a tool result carries after its text.

A host can show or fetch what a result cites without a model copying URIs: a search names each
hit's document (``doc://``, once per document) and, for a hit on a page of a PDF or a picture,
a picture of that page with the hit's chunk highlighted (``page://…?chunk=N``, ``image/png``);
``get_document`` names its document and the picture of a quote it found (``page://…?quote=…``)
or of each chunk of the window it returned; ``check_answer`` names, for each supported sentence, the
documents of its evidence and the picture of each piece of evidence that lies on a page. Everything linked is what the result already
returned, so a link never names what the caller may not read. The URIs are built in
:mod:`mcp_server.surface.links`.
"""

from __future__ import annotations

from mcp_server.grounding.quotes import MAX_QUOTE_CHARS
from mcp_server.models import Citation
from mcp_server.surface.answer_check import AnswerCheck
from mcp_server.surface.links import PAGE_MIME_TYPE, document_uri, page_uri
from mcp_server.surface.sdk import ResourceLink
from mcp_server.surface.tools import DocumentResult, SearchResult


def search_links(result: SearchResult) -> list[ResourceLink]:
    """Each hit's document (once) and, when the hit is on a page, the picture of its page."""
    links: list[ResourceLink] = []
    documents: set[tuple[str, str]] = set()
    for hit in result.hits:
        citation = hit.citation
        if (citation.corpus, citation.doc_id) not in documents:
            documents.add((citation.corpus, citation.doc_id))
            links.append(_document_link(citation.corpus, citation.doc_id, citation.title))
        if _on_a_page(citation):
            links.append(_chunk_page_link(citation))
    return links


def document_links(result: DocumentResult, chunked: bool) -> list[ResourceLink]:
    """The document, and the picture of the page of its quote, or of each chunk of the window of it a request
    naming a chunk (``chunked``) returned."""
    links = [_document_link(result.corpus, result.doc_id, result.title)]
    quote = result.quote
    if quote is not None:
        if _on_a_page(quote.citation):
            uri = page_uri(result.corpus, result.doc_id, chunk=quote.citation.chunk, quote=quote.quote)
            links.append(_page_link(uri, f"{quote.citation.id} (quote)", f"{result.title}, p. {quote.page}: the quote"))
        return links
    if chunked and result.page_kind == "page":
        links.extend(
            _page_link(page_uri(result.corpus, result.doc_id, chunk=span.chunk), span.citation_id, f"{result.title}, p. {span.page}")
            for span in result.chunks
            if isinstance(span.page, int)
        )
    return links


def check_links(result: AnswerCheck) -> list[ResourceLink]:
    """The documents of the supported sentences' evidence (once each) and the picture of each piece on a page."""
    links: dict[str, ResourceLink] = {}
    for sentence in result.sentences:
        for evidence in sentence.evidence:
            citation = evidence.citation
            document = _document_link(citation.corpus, citation.doc_id, citation.title)
            links.setdefault(str(document.uri), document)
            if _on_a_page(citation):
                quote = evidence.quote if len(evidence.quote) <= MAX_QUOTE_CHARS else None
                uri = page_uri(citation.corpus, citation.doc_id, chunk=citation.chunk, quote=quote)
                links.setdefault(uri, _page_link(uri, f"{citation.id} (evidence)", f"{citation.title}, p. {citation.page}"))
    return list(links.values())


def _on_a_page(citation: Citation) -> bool:
    return citation.page_kind == "page" and isinstance(citation.page, int)


def _document_link(corpus: str, doc_id: str, title: str) -> ResourceLink:
    return ResourceLink(
        uri=document_uri(corpus, doc_id), name=f"{corpus}:{doc_id}", title=title, mime_type="text/plain",
        description="The document's text with its citation ids.",
    )  # fmt: skip


def _chunk_page_link(citation: Citation) -> ResourceLink:
    uri = page_uri(citation.corpus, citation.doc_id, chunk=citation.chunk)
    return _page_link(uri, citation.id, f"{citation.title}, p. {citation.page}")


def _page_link(uri: str, name: str, title: str) -> ResourceLink:
    return ResourceLink(
        uri=uri, name=name, title=title, mime_type=PAGE_MIME_TYPE,
        description="A picture of the page with the cited text highlighted.",
    )  # fmt: skip
