"""The retrieval core: vector, keyword and hybrid search, metadata filters and documents.

Plain Python over one opened index generation; the CLI and the MCP server are thin
surfaces over :class:`Retriever`. Every hit is joined to the document store for its
citation record, so all retrievers return the same shape. A retriever holds a lease on its
generation until closed, so ingestion running meanwhile does not delete it.

Opening a generation's embedded vectors means copying its ``chroma/`` directory (2 GB at a
million chunks, seconds): a retriever opened with ``vectors_in_background`` answers at once
and copies them on a thread; until the copy is done, a vector or hybrid search waits for it,
while keyword search, documents and counts need no vectors.

A retriever serves the configured corpora only (:mod:`mcp_server.indexing.configured`):
another corpus the generation holds is left out exactly like one out of scope.

With ``RAGMCP_RERANK_URL`` set, hybrid search sends its best fused candidates to the user's
rerank server (:mod:`mcp_server.retrieval.rerank`) and returns them in the server's order with
its scores; when the server fails, one log line and the fused order.

A caller may be limited to a *scope*, the set of corpora it may read (a team server's
token grant). Out of scope, a corpus behaves exactly as if it did not exist: it is not
listed, searched or readable, and naming it gets the same answer as an unknown name.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict, Unpack

from mcp_server.citation_ids import DocumentRef, chunk_id, escape, parse_doc_part, parse_or_none, parse_store_key
from mcp_server.embedding.loading import Embedder, load_embedder
from mcp_server.errors import BackendUnavailableError, IndexMissingError, InvalidQueryError, NotFoundError
from mcp_server.indexing.configured import configured_names
from mcp_server.indexing.generations import STORE_LAYOUT, GenerationLease, IndexLayout, Manifest
from mcp_server.models import (
    ChunkSpan,
    Citation,
    MAX_LISTED_SKIPS,
    CorpusInfo,
    DocumentView,
    Hit,
    SearchFilters,
    SkippedFileInfo,
)
from mcp_server.retrieval.boxes import PageBoxes, document_boxes
from mcp_server.retrieval.citation_records import placed_citation, whole_document_citation
from mcp_server.retrieval.fusion import (
    convex_fusion,
    keyword_weight_for,
    reciprocal_rank_fusion,
)
from mcp_server.retrieval.quote_location import check_quote, locate_quote
from mcp_server.retrieval.rerank import PAUSE_AFTER_FAILURE_S, RerankError, reranker_for
from mcp_server.settings import Settings
from mcp_server.stores.docstore import (
    DocumentStore,
    StoredChunk,
    StoredCorpus,
    StoredDocument,
)
from mcp_server.stores.keyword import WhooshIndex
from mcp_server.stores.vector import ChromaStore, open_generation_vectors

SearchMode = Literal["vector", "keyword", "hybrid"]
logger = logging.getLogger(__name__)


class SearchOptions(TypedDict, total=False):
    """The keyword arguments of :meth:`Retriever.ranking`, for :meth:`Retriever.search`."""

    mode: SearchMode
    corpus: str | None
    top_k: int
    filters: SearchFilters | None
    scope: Collection[str] | None


@dataclass(frozen=True)
class Ranking:
    """The hits of one search, and the rerank model that ordered and scored them (None: not reranked)."""

    hits: list[Hit]
    reranked_by: str | None = None


class Retriever:
    """Search and read one index generation. Safe to share between threads."""

    def __init__(
        self, generation: Path, manifest: Manifest, embedder: Embedder, settings: Settings,
        lease: GenerationLease | None = None, *, vectors_in_background: bool = False,
    ) -> None:  # fmt: skip
        """Open ``generation`` (its vectors on a thread if ``vectors_in_background``, see the module
        docstring); ``lease`` (if any) is released by :meth:`close`."""
        manifest.check_model(embedder.name)
        if manifest.layout != STORE_LAYOUT:
            raise IndexMissingError(
                f"index generation {generation.name} was built by an older version of ragmcp; "
                "update it (from the embedding cache): ragmcp ingest"
            )
        self.generation = generation
        self.manifest = manifest
        self.settings = settings
        self._embedder = embedder
        self._lease = lease
        self._reranker = reranker_for(settings)
        self._docstore = DocumentStore(generation / "docstore.sqlite", read_only=True)
        self._keywords = WhooshIndex(
            generation / "whoosh", bm25_b=settings.bm25_b, bm25_k1=settings.bm25_k1, idf=settings.bm25_idf,
            common_term_share=settings.bm25_common_term_share,
            common_term_min_chunks=settings.bm25_common_term_min_chunks,
            posting_cache_bytes=settings.keyword_cache_mb * 2**20,
        )  # fmt: skip
        stored = {c.name: c for c in self._docstore.corpora()}
        served = configured_names(settings)
        self._corpora = {name: c for name, c in stored.items() if name in served}
        self.unserved = sorted(set(stored) - served)
        """Corpora in the generation that are not configured: never searched, listed or read."""
        # A published generation never changes, so its counts are read once (a count of a 1M-chunk
        # table takes about 85 ms, too much for every search's listing of what is indexed).
        self._counts = self._docstore.counts()
        self._unindexed = self._docstore.unindexed()
        self._vectors_opened: Future[ChromaStore] = Future()
        if vectors_in_background:
            threading.Thread(target=self._open_vectors, name="open-vectors", daemon=True).start()
            return
        self._open_vectors()
        if self._vectors_opened.exception() is not None:
            self.close()
            self._vectors_opened.result()  # raises it

    def _open_vectors(self) -> None:
        """Open the vector store into ``_vectors_opened``: the store, or what opening it raised."""
        try:
            self._vectors_opened.set_result(self._checked_vectors())
        except BaseException as e:
            self._vectors_opened.set_exception(e)

    def _checked_vectors(self) -> ChromaStore:
        """The generation's vector store, checked to hold every corpus that has chunks."""
        vectors = open_generation_vectors(
            self.generation, self.manifest.vector_collection, self.settings.chroma_url, self._embedder
        )
        with_vectors = set(vectors.corpora())
        missing = sorted(name for name, (_, chunks) in self._counts.items() if chunks and name not in with_vectors)
        if missing:
            vectors.close()
            raise BackendUnavailableError(
                f"index generation {self.generation.name} has no vectors for corpora {', '.join(missing)}; "
                "rebuild the index: ragmcp ingest --rebuild"
            )
        return vectors

    @property
    def _vectors(self) -> ChromaStore:
        """The vector store, once opened (see the module docstring); raises what opening it raised."""
        return self._vectors_opened.result()

    @classmethod
    def open(
        cls, settings: Settings, embedder: Embedder | None = None, *, vectors_in_background: bool = False
    ) -> Retriever:
        """Open (and lease) the current generation; raises IndexMissingError, EmbeddingModelMismatchError
        or BackendUnavailableError (with ``vectors_in_background``, a vector store's error comes with
        the first vector search instead)."""
        generation, manifest, lease = IndexLayout(settings.index_dir).lease_current()
        try:
            configured_names(settings)  # a missing configured folder: its clear error before the model loads
            embedder = embedder or load_embedder(
                settings.embedding_model, settings.embedding_config, settings.embedding_server
            )
            return cls(generation, manifest, embedder, settings, lease, vectors_in_background=vectors_in_background)
        except BaseException:
            lease.release()
            raise

    def close(self) -> None:
        """Close the stores (waiting for the vectors to finish opening) and release the lease."""
        self._docstore.close()
        self._keywords.close()
        if self._vectors_opened.exception() is None:
            self._vectors_opened.result().close()
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    # -- corpora ---------------------------------------------------------------------------

    def corpora(self, scope: Collection[str] | None = None) -> list[CorpusInfo]:
        """The corpora within ``scope`` (None: all) with their document and chunk counts."""
        counts = self._counts
        return [
            CorpusInfo(
                name=c.name, description=c.description, language=c.language,
                documents=counts.get(c.name, (0, 0))[0], chunks=counts.get(c.name, (0, 0))[1],
                skipped_count=len(self._unindexed.get(c.name, [])),
                skipped=[
                    SkippedFileInfo(source=source, reason=reason)
                    for source, reason in self._unindexed.get(c.name, [])[:MAX_LISTED_SKIPS]
                ],
            )
            for c in self._readable(scope).values()
        ]

    def _readable(self, scope: Collection[str] | None) -> dict[str, StoredCorpus]:
        """The corpora a caller limited to ``scope`` may read (None: every corpus)."""
        if scope is None:
            return self._corpora
        return {name: c for name, c in self._corpora.items() if name in scope}

    @staticmethod
    def _check_corpus(corpus: str | None, readable: dict[str, StoredCorpus], scope: Collection[str] | None) -> None:
        if corpus is None or corpus in readable:
            return
        if scope is None:
            available = ", ".join(sorted(readable)) or "none (run: ragmcp ingest)"
            raise NotFoundError(f"unknown corpus {corpus!r}; available: {available}")
        # Unknown or not granted: the same answer, so a client cannot probe for other teams' corpora.
        raise NotFoundError(f"unknown corpus {corpus!r}; this client may read: {', '.join(sorted(readable)) or 'none'}")

    # -- search ----------------------------------------------------------------------------

    def search(self, query: str, **options: Unpack[SearchOptions]) -> list[Hit]:
        """The hits of :meth:`ranking`."""
        return self.ranking(query, **options).hits

    def ranking(
        self,
        query: str,
        *,
        mode: SearchMode = "hybrid",
        corpus: str | None = None,
        top_k: int = 5,
        filters: SearchFilters | None = None,
        scope: Collection[str] | None = None,
    ) -> Ranking:
        """The ``top_k`` best chunks for ``query`` by the chosen retriever, each with its citation, and
        the rerank model that ordered them (hybrid search with a rerank server only).

        Searches ``corpus``, or with none every corpus within ``scope`` (None: all).
        """
        query = self._check_query(query, top_k)
        readable = self._readable(scope)
        self._check_corpus(corpus, readable, scope)
        if not readable:
            raise NotFoundError(
                "no configured corpus is in the index yet; build it with: ragmcp ingest"
                if scope is None else "this client may read no corpus"
            )  # fmt: skip
        everything = scope is None and not self.unserved
        corpora = [corpus] if corpus is not None else None if everything else sorted(readable)
        doc_keys = (
            None if filters is None or filters.is_empty() else self._docstore.matching_documents(corpora, filters)
        )
        if mode == "vector":
            ranked = self._vector_ranking(query, top_k, corpora, doc_keys)
        elif mode == "keyword":
            ranked = self._keyword_ranking(query, top_k, corpora, doc_keys, required=True)
        elif mode == "hybrid":
            ranked = self._hybrid_ranking(query, top_k, corpora, doc_keys)
            tenant = frozenset(scope) if scope is not None else None
            if self._reranker is not None and not self._reranker.paused(tenant):
                return self._reranked(query, ranked, top_k, tenant)
        else:
            raise InvalidQueryError(f"unknown search mode {mode!r}; use hybrid, vector or keyword")
        return Ranking(self._hits(ranked[:top_k], mode))

    def _reranked(self, query: str, fused: list[tuple[str, float]], top_k: int, tenant: frozenset[str] | None) -> Ranking:
        """The best ``rerank_candidates`` (at least ``top_k``) of the ``fused`` ranking, ordered and scored
        by the rerank server; on its failure one log line and the fused order (and, for ``tenant``'s
        searches, none reranked for a pause)."""
        assert self._reranker is not None
        candidates = self._hits(fused[: max(top_k, self.settings.rerank_candidates)], "hybrid")
        if not candidates:
            return Ranking([])
        try:
            scores = self._reranker.scores(query, [hit.text for hit in candidates], tenant)
        except RerankError as e:
            reason = " ".join(str(e).split())
            logger.warning(
                "rerank server %s failed: %s; hybrid search returned the fused order and will not rerank for %g s",
                self._reranker.where, reason, PAUSE_AFTER_FAILURE_S,
            )  # fmt: skip
            return Ranking(candidates[:top_k])
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[:top_k]
        hits = [candidates[i].model_copy(update={"rank": rank, "score": scores[i]}) for rank, i in enumerate(order, 1)]
        return Ranking(hits, reranked_by=self._reranker.server.model)

    def _check_query(self, query: str, top_k: int) -> str:
        query = query.strip()
        if not query:
            raise InvalidQueryError("the query is empty; pass the words or question to search for")
        if len(query) > self.settings.max_query_chars:
            raise InvalidQueryError(
                f"the query is {len(query)} characters long; the limit is {self.settings.max_query_chars}. "
                "Search for the key terms or one question at a time"
            )
        if not 1 <= top_k <= self.settings.max_top_k:
            raise InvalidQueryError(f"top_k must be between 1 and {self.settings.max_top_k}, got {top_k}")
        return query

    def _vector_ranking(
        self, query: str, k: int, corpora: list[str] | None, doc_keys: set[str] | None
    ) -> list[tuple[str, float]]:
        embedding = self._embedder.embed_query(query)
        self.manifest.check_model(self._embedder.name, len(embedding))
        return self._vectors.query(embedding, k, corpora=corpora, doc_keys=doc_keys)

    def _keyword_ranking(
        self,
        query: str,
        k: int,
        corpora: list[str] | None,
        doc_keys: set[str] | None,
        *,
        required: bool,
        normalize: bool = False,
        require_phrases: bool = True,
    ) -> list[tuple[str, float]]:
        try:
            return self._keywords.search(
                query, k, corpora=corpora, doc_keys=doc_keys, normalize=normalize, require_phrases=require_phrases
            )
        except ValueError as e:
            if required:
                raise InvalidQueryError(
                    f"{str(e).rstrip('.')}; keyword search needs specific words, names or codes — "
                    "use vector or hybrid search for a general question"
                ) from e
            return []

    def _hybrid_ranking(
        self, query: str, k: int, corpora: list[str] | None, doc_keys: set[str] | None
    ) -> list[tuple[str, float]]:
        """Fuse both retrievers' top ``max(k, candidate_depth)`` (see mcp_server.retrieval.fusion)."""
        settings = self.settings
        vector, keyword = self.fusion_candidates(query, max(k, settings.candidate_depth), corpora, doc_keys)
        if settings.hybrid_fusion == "convex":
            weight = keyword_weight_for(query, settings.convex_keyword_weight, settings.convex_keyword_weight_cjk)
            return convex_fusion(vector, keyword, weight)
        return reciprocal_rank_fusion(
            [[i for i, _ in vector], [i for i, _ in keyword]],
            [settings.rrf_vector_weight, settings.rrf_keyword_weight],
            settings.rrf_k,
        )

    def fusion_candidates(
        self, query: str, depth: int, corpora: list[str] | None = None, doc_keys: set[str] | None = None
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """What hybrid search fuses: the ``depth`` best chunks by vector (citation id, cosine similarity)
        and by keyword (citation id, BM25 / the query's IDF mass); the keyword list is empty for a
        query with no searchable words.

        The keyword side reads quoted words as ordinary words: in a natural-language question a
        quote is usually a title ('the film "Kiss and Tell"'), and requiring it verbatim would
        drop the other documents the question needs. keyword_search is where quotes require a phrase.

        The two sides run at once: embedding the query and the nearest-neighbour search run
        outside Python's lock, beside the keyword search (pure Python), so on a big index
        hybrid search takes about as long as its keyword side alone.
        """
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="vector-side") as pool:
            vector = pool.submit(self._vector_ranking, query, depth, corpora, doc_keys)
            keyword = self._keyword_ranking(
                query, depth, corpora, doc_keys, required=False, normalize=True, require_phrases=False
            )
            return vector.result(), keyword

    def _hits(self, ranked: Sequence[tuple[str, float]], retriever: SearchMode) -> list[Hit]:
        """Join ranked citation ids to the document store, loading each document and chunk map once."""
        documents: dict[tuple[str, str], tuple[StoredDocument, list[StoredChunk]]] = {}
        hits = []
        for rank, (cid, score) in enumerate(ranked, start=1):
            corpus, doc_id, chunk = parse_store_key(cid)
            key = (corpus, doc_id)
            if key not in documents:
                document = self._docstore.document(corpus, doc_id)
                if document is None:  # pragma: no cover - the stores of one generation agree
                    continue
                documents[key] = (document, self._docstore.chunks(corpus, doc_id))
            document, spans = documents[key]
            citation = placed_citation(self._docstore, document, spans[chunk])
            text = document.text[citation.char_start : citation.char_end]
            hits.append(Hit(rank=rank, score=score, retriever=retriever, text=text, citation=citation))
        return hits

    # -- documents -------------------------------------------------------------------------

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
        readable = self._readable(scope)
        self._check_corpus(corpus, readable, scope)
        ref_corpus, doc_id, ref_chunk = self._resolve_reference(ref.strip(), corpus, readable)
        document = self._docstore.document(ref_corpus, doc_id)
        if document is None:
            raise NotFoundError(self._unknown_document_message(ref, [ref_corpus], doc_id))
        spans = self._docstore.chunks(ref_corpus, doc_id)
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
            located, first, last = locate_quote(quote, document, spans, chunk, self._docstore)
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
            citation=placed_citation(self._docstore, document, selected[0]) if selected else whole_document_citation(document),
            quote=located,
        )

    def cited_chunk(self, cid: str, scope: Collection[str] | None = None) -> tuple[Citation, str] | None:
        """The citation record and text of the chunk ``cid`` names, or None when there is no such
        chunk within ``scope``: an id of a corpus outside the grant is answered exactly like an id
        that does not exist."""
        ref = parse_or_none(cid)
        if not isinstance(ref, DocumentRef) or ref.chunk is None or ref.corpus not in self._readable(scope):
            return None
        document = self._docstore.document(ref.corpus, ref.doc_id)
        spans = self._docstore.chunks(ref.corpus, ref.doc_id) if document is not None else []
        if document is None or not 0 <= ref.chunk < len(spans):
            return None
        span = spans[ref.chunk]
        return placed_citation(self._docstore, document, span), document.text[span.char_start : span.char_end]

    def page_boxes(
        self, corpus: str, doc_id: str, start: int, end: int, scope: Collection[str] | None = None
    ) -> list[PageBoxes]:
        """Where the span ``[start, end)`` of document ``corpus:doc_id``'s text is on its pages: one box per
        line and each page's size (:func:`mcp_server.retrieval.boxes.document_boxes`); ``[]`` for a
        corpus outside ``scope`` or a source without pages."""
        if corpus not in self._readable(scope):
            return []
        return document_boxes(self._docstore, corpus, doc_id, start, end)

    def document_page(
        self, scope: Collection[str] | None, after: tuple[str, str] | None, limit: int
    ) -> list[tuple[str, str, str]]:
        """(corpus, doc_id, title) of the next ``limit`` documents within ``scope`` after ``after``, in order."""
        return self._docstore.document_page(sorted(self._readable(scope)), after, limit)

    def indexed_file(self, corpus: str, doc_id: str) -> tuple[Path, str, str] | None:
        """The folder of a served corpus, a document's path inside it and the fingerprint of the bytes it was
        indexed from; None when there is no such document."""
        served = self._corpora.get(corpus)
        document = self._docstore.document(corpus, doc_id) if served is not None else None
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
            owners = [c for c in candidates if self._docstore.document(c, doc_id) is not None]
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
        similar = self._docstore.doc_ids_with_prefix(corpora, prefix)
        hint = f" Similar ids: {', '.join(str(DocumentRef(c, d)) for c, d in similar)}." if similar else ""
        return f"no document {ref!r}. Use ids from search hits (citation.doc_id or citation.id).{hint}"
