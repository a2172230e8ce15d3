"""What the MCP tools do, as plain Python: search, read documents and query SQL, with bounded results.

:class:`RetrievalTools` holds the one :class:`~mcp_server.retrieval.retriever.Retriever` and the one
:class:`~mcp_server.sql.guard.ReadOnlyDatabase` of a process and returns the result models
published as the tools' output schemas. It knows nothing about MCP (``server.py`` is the
surface) and is safe to call from many threads. Failures are the library's
:class:`~mcp_server.errors.RetrievalError`, whose messages say what to do instead.

Every result is bounded so that one call cannot flood a context window: a hit's text is
cut at :data:`HIT_CHARS` characters, and the text of one document and the cells of one SQL
result are at most ``settings.calls.max_result_chars`` characters. A search returns all its hits:
the MCP surface leaves out the last ones that do not fit in ``settings.calls.max_result_chars``
characters as text and as JSON (:func:`~mcp_server.surface.rendering.fit_search`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from pydantic import Field

from mcp_server.errors import NotFoundError
from mcp_server.models import CorpusInfo, DocumentView, Hit, PublishedModel, SearchFilters, SqlResult
from mcp_server.models import Retriever as RetrieverName
from mcp_server.retrieval.page_pictures import PagePicture, page_picture
from mcp_server.retrieval.retriever import Retriever
from mcp_server.surface.answer_check import AnswerCheck, check_cited_answer
from mcp_server.settings import Settings
from mcp_server.sql.demo import open_database
from mcp_server.sql.guard import Params, ReadOnlyDatabase

HIT_CHARS = 4_000
"""Longest hit text returned; a longer chunk is clipped with a marker naming the rest."""


class SearchResult(PublishedModel):
    """The hits of one search, best first, each with its citation."""

    query: str
    corpus: str | None = Field(description="Null when all corpora were searched.")
    retriever: RetrieverName
    hits: list[Hit]
    omitted: int = Field(description="Hits left out to keep the result within its size limit.")
    below_min_score: int = Field(default=0, description="Hits left out for scoring below min_score.")
    reranked_by: str | None = Field(
        default=None, description="The rerank model that ordered and scored the hits; null when none did."
    )


class DocumentResult(DocumentView):
    """A document, or a window of its chunks, cut to whole chunks when it exceeds the size limit."""

    truncated: bool = Field(description="True when text stops before the end of what was asked for.")
    next_chunk: int | None = Field(description="When truncated: the chunk to read on from.")


NO_DATABASE = (
    "No SQL database is configured on this server; answer from the document search tools. (Its operator "
    "can set RAGMCP_DATABASE to a SQLite file or a folder of database sources.)"
)


class ToolBackend(Protocol):
    """What the MCP surface publishes: the corpora a scope may read, and the tools' behaviour."""

    @property
    def database(self) -> ReadOnlyDatabase | None: ...

    def corpora(self, scope: Collection[str] | None = None) -> list[CorpusInfo]: ...

    def search(
        self, query: str, *, mode: RetrieverName, corpus: str | None, top_k: int, filters: SearchFilters | None,
        scope: Collection[str] | None = None, min_score: float | None = None,
    ) -> SearchResult: ...  # fmt: skip

    def get_document(
        self, ref: str, *, corpus: str | None, chunk: int | None, window: int, scope: Collection[str] | None = None,
        quote: str | None = None,
    ) -> DocumentResult: ...

    def page_picture(
        self, ref: str, *, corpus: str | None, chunk: int | None, quote: str | None, page: int | None,
        scope: Collection[str] | None = None,
    ) -> PagePicture: ...

    def sql_query(self, sql: str, params: Params, max_rows: int | None) -> SqlResult: ...

    def check_answer(self, answer: str, question: str | None, scope: Collection[str] | None = None) -> AnswerCheck: ...

    def document_page(
        self, scope: Collection[str] | None, after: tuple[str, str] | None, limit: int
    ) -> list[tuple[str, str, str]]:
        """(corpus, doc_id, title) of the next ``limit`` documents within ``scope`` after ``after``, in order."""
        ...


class RetrievalTools:
    """The behaviour of the six tools over one opened index and the database (None: no SQL)."""

    def __init__(self, retriever: Retriever, database: ReadOnlyDatabase | None, settings: Settings) -> None:
        self.retriever = retriever
        self.database = database
        self.settings = settings

    @classmethod
    def open(cls, settings: Settings) -> RetrievalTools:
        """Open the current index and the configured database (raises IndexMissingError if no index)."""
        return cls(Retriever.open(settings), open_database(settings), settings)

    def close(self) -> None:
        self.retriever.close()
        if self.database is not None:  # stops its idle SQL workers; a later query starts new ones
            self.database.close()

    def corpora(self, scope: Collection[str] | None = None) -> list[CorpusInfo]:
        return self.retriever.corpora(scope)

    def search(
        self,
        query: str,
        *,
        mode: RetrieverName,
        corpus: str | None,
        top_k: int,
        filters: SearchFilters | None,
        scope: Collection[str] | None = None,
        min_score: float | None = None,
    ) -> SearchResult:
        """Search ``corpus``, or every corpus within ``scope`` (the caller's grant; None: all); of the
        ``top_k`` hits, those scoring below ``min_score`` are left out and counted."""
        ranking = self.retriever.searcher.ranking(query, mode=mode, corpus=corpus, top_k=top_k, filters=filters, scope=scope)
        found = ranking.hits
        hits = found if min_score is None else [hit for hit in found if hit.score >= min_score]
        return SearchResult(
            query=query.strip(), corpus=corpus, retriever=mode, hits=[_clipped(hit) for hit in hits], omitted=0,
            below_min_score=len(found) - len(hits), reranked_by=ranking.reranked_by,
        )  # fmt: skip

    def get_document(
        self, ref: str, *, corpus: str | None, chunk: int | None, window: int, scope: Collection[str] | None = None,
        quote: str | None = None,
    ) -> DocumentResult:
        view = self.retriever.documents.get_document(ref, corpus=corpus, chunk=chunk, window=window, scope=scope, quote=quote)
        return _bounded_document(view, self.settings.calls.max_result_chars)

    def page_picture(
        self, ref: str, *, corpus: str | None, chunk: int | None, quote: str | None, page: int | None,
        scope: Collection[str] | None = None,
    ) -> PagePicture:
        return page_picture(self.retriever, ref, corpus=corpus, chunk=chunk, quote=quote, page=page, scope=scope)

    def sql_query(self, sql: str, params: Params, max_rows: int | None) -> SqlResult:
        return query_database(self.database, sql, params, max_rows)

    def check_answer(self, answer: str, question: str | None, scope: Collection[str] | None = None) -> AnswerCheck:
        """The citation check of ``answer`` against the chunks it cites that ``scope`` may read."""
        return check_cited_answer(answer, question, lambda cid: self.retriever.documents.cited_chunk(cid, scope))

    def document_page(
        self, scope: Collection[str] | None, after: tuple[str, str] | None, limit: int
    ) -> list[tuple[str, str, str]]:
        return self.retriever.documents.document_page(scope, after, limit)


def query_database(database: ReadOnlyDatabase | None, sql: str, params: Params, max_rows: int | None) -> SqlResult:
    """``database.query``, or the refusal that no database is configured."""
    if database is None:
        raise NotFoundError(NO_DATABASE)
    return database.query(sql, params, max_rows=max_rows)


def _clipped(hit: Hit) -> Hit:
    """``hit`` with its text cut to :data:`HIT_CHARS`, marked with how to read the rest."""
    if len(hit.text) <= HIT_CHARS:
        return hit
    rest = len(hit.text) - HIT_CHARS
    marker = f"…[{rest} more characters: get_document('{hit.citation.id}')]"
    return hit.model_copy(update={"text": hit.text[:HIT_CHARS] + marker})


def _bounded_document(view: DocumentView, max_chars: int) -> DocumentResult:
    """``view`` as a result, cut after the last whole chunk that fits in ``max_chars``."""
    if len(view.text) <= max_chars:
        return DocumentResult(**dict(view), truncated=False, next_chunk=None)
    fitting = [c for c in view.chunks if c.char_end - view.text_offset <= max_chars] or view.chunks[:1]
    end = min(fitting[-1].char_end - view.text_offset, max_chars) if fitting else max_chars
    later = view.chunks[len(fitting) :]
    return DocumentResult(
        **{**dict(view), "text": view.text[:end], "chunks": fitting},
        truncated=True,
        next_chunk=later[0].chunk if later else None,
    )
