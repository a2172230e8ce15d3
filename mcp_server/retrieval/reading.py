"""Reading one opened generation: documents by id, the chunk a citation names, where a span is on its pages.

Only the corpora within the caller's scope are readable (:mod:`mcp_server.retrieval.generation`);
a name outside it is answered exactly like one that does not exist.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from mcp_server.citation_ids import DocumentRef, chunk_id, escape, parse_doc_part, parse_or_none
from mcp_server.errors import InvalidQueryError, NotFoundError
from mcp_server.models import ChunkSpan, Citation, DocumentView
from mcp_server.retrieval.boxes import PageBoxes, document_boxes
from mcp_server.retrieval.citation_records import placed_citation, whole_document_citation
from mcp_server.retrieval.generation import OpenGeneration
from mcp_server.retrieval.quote_location import check_quote, locate_quote
from mcp_server.stores.docstore import StoredCorpus


class DocumentReader:
    """Read the documents of one opened generation, within each caller's scope. Safe to share between threads."""

    def __init__(self, opened: OpenGeneration) -> None:
        self._opened = opened

    def get_document(
        self,
        ref: str,
        *,
        corpus: str | None = None,
        chunk: int | None = None,
        window: int = 0,
        scope: Collection[str] | None = None,
        quote: str | None = None,
    ) -> DocumentView:
        """A document by ``doc_id``, ``corpus:doc_id`` or citation id, from the corpora within ``scope``.

        With a chunk (given, or taken from a citation id) only that chunk and ``window``
        chunks on each side are returned; otherwise the whole text. With a ``quote``, the whole
        document is searched for it (see :mod:`mcp_server.retrieval.quote_location`; an exact
        quote found several times is taken in the chunk, when one is given): the view says
        where it is and holds the chunks it lies in and ``window`` chunks on each side.
        """
        quote = check_quote(quote) if quote is not None else None
        readable = self._opened.readable(scope)
        self._opened.check_corpus(corpus, readable, scope)
        ref_corpus, doc_id, ref_chunk = self._resolve_reference(ref.strip(), corpus, readable)
        document = self._opened.docstore.document(ref_corpus, doc_id)
        if document is None:
            raise NotFoundError(self._unknown_document_message(ref, [ref_corpus], doc_id))
        spans = self._opened.docstore.chunks(ref_corpus, doc_id)
        chunk = chunk if chunk is not None else ref_chunk
        if window < 0:
            raise InvalidQueryError(f"window must be 0 or more, got {window}")
        selected = spans
        if chunk is not None:
            if not 0 <= chunk < len(spans):
                raise NotFoundError(
                    f"document {DocumentRef(ref_corpus, doc_id)} has no chunk #{chunk}; "
                    f"it has chunks 0 to {len(spans) - 1}"
                )
            selected = spans[max(0, chunk - window) : chunk + window + 1]
        located = None
        if quote is not None:
            located, first, last = locate_quote(quote, document, spans, chunk, self._opened.docstore)
            chunk, selected = first, spans[max(0, first - window) : last + window + 1]
        start = selected[0].char_start if chunk is not None and selected else 0
        end = selected[-1].char_end if chunk is not None and selected else len(document.text)
        return DocumentView(
            corpus=ref_corpus, doc_id=doc_id, title=document.title, source=document.source,
            category=document.category, tags=list(document.tags), updated=document.date, url=document.url,
            page_kind=document.page_kind, metadata=dict(document.extra), text=document.text[start:end], text_offset=start,
            char_count=len(document.text),
            chunks=[
                ChunkSpan(
                    chunk=s.chunk, citation_id=chunk_id(ref_corpus, doc_id, s.chunk), section=s.section,
                    char_start=s.char_start, char_end=s.char_end, page=s.page, page_end=s.page_end,
                    line_start=s.line_start, line_end=s.line_end,
                )
                for s in selected
            ],
            citation=placed_citation(self._opened.docstore, document, selected[0]) if selected else whole_document_citation(document),
            quote=located,
        )

    def cited_chunk(self, cid: str, scope: Collection[str] | None = None) -> tuple[Citation, str] | None:
        """The citation record and text of the chunk ``cid`` names, or None when there is no such
        chunk within ``scope``: an id of a corpus outside the grant is answered exactly like an id
        that does not exist."""
        ref = parse_or_none(cid)
        if not isinstance(ref, DocumentRef) or ref.chunk is None or ref.corpus not in self._opened.readable(scope):
            return None
        document = self._opened.docstore.document(ref.corpus, ref.doc_id)
        spans = self._opened.docstore.chunks(ref.corpus, ref.doc_id) if document is not None else []
        if document is None or not 0 <= ref.chunk < len(spans):
            return None
        span = spans[ref.chunk]
        return placed_citation(self._opened.docstore, document, span), document.text[span.char_start : span.char_end]

    def page_boxes(
        self, corpus: str, doc_id: str, start: int, end: int, scope: Collection[str] | None = None
    ) -> list[PageBoxes]:
        """Where the span ``[start, end)`` of document ``corpus:doc_id``'s text is on its pages: one box per
        line and each page's size (:func:`mcp_server.retrieval.boxes.document_boxes`); ``[]`` for a
        corpus outside ``scope`` or a source without pages."""
        if corpus not in self._opened.readable(scope):
            return []
        return document_boxes(self._opened.docstore, corpus, doc_id, start, end)

    def document_page(
        self, scope: Collection[str] | None, after: tuple[str, str] | None, limit: int
    ) -> list[tuple[str, str, str]]:
        """(corpus, doc_id, title) of the next ``limit`` documents within ``scope`` after ``after``, in order."""
        return self._opened.docstore.document_page(sorted(self._opened.readable(scope)), after, limit)

    def indexed_file(self, corpus: str, doc_id: str) -> tuple[Path, str, str] | None:
        """The folder of a served corpus, a document's path inside it and the fingerprint of the bytes it was
        indexed from; None when there is no such document."""
        served = self._opened.served.get(corpus)
        document = self._opened.docstore.document(corpus, doc_id) if served is not None else None
        if served is None or document is None:
            return None
        return Path(served.root), document.source, document.fingerprint

    def _resolve_reference(
        self, ref: str, corpus: str | None, readable: dict[str, StoredCorpus]
    ) -> tuple[str, str, int | None]:
        if not ref:
            raise InvalidQueryError("the document id is empty; pass a doc_id or a citation id from a search hit")
        named = parse_or_none(ref)
        if isinstance(named, DocumentRef) and named.corpus in readable:
            if corpus is not None and named.corpus != corpus:
                raise InvalidQueryError(f"{ref!r} belongs to corpus {named.corpus!r}, not {corpus!r}")
            return named.corpus, named.doc_id, named.chunk
        candidates = [corpus] if corpus is not None else list(readable)
        for doc_id, chunk in ((ref, None), parse_doc_part(ref)):  # the doc_id as stored, or as an id writes it
            owners = [c for c in candidates if self._opened.docstore.document(c, doc_id) is not None]
            if len(owners) > 1:
                raise InvalidQueryError(
                    f"document id {doc_id!r} exists in corpora {', '.join(owners)}; pass corpus or use "
                    f"'<corpus>:{escape(doc_id)}'"
                )
            if owners:
                return owners[0], doc_id, chunk
        if corpus is not None:
            return corpus, doc_id, chunk
        raise NotFoundError(self._unknown_document_message(ref, sorted(readable), doc_id))

    def _unknown_document_message(self, ref: str, corpora: list[str], doc_id: str) -> str:
        prefix = doc_id.rsplit("/", 1)[0] + "/" if "/" in doc_id else doc_id[:3]
        similar = self._opened.docstore.doc_ids_with_prefix(corpora, prefix)
        hint = f" Similar ids: {', '.join(str(DocumentRef(c, d)) for c, d in similar)}." if similar else ""
        return f"no document {ref!r}. Use ids from search hits (citation.doc_id or citation.id).{hint}"
