"""Searching one opened generation: vector, keyword and hybrid search, metadata filters and reranking.

Every hit is joined to the document store for its citation record, so all three modes return
the same shape.

With ``RAGMCP_RERANK_URL`` set, hybrid search sends its best fused candidates to the user's
rerank server (:mod:`mcp_server.retrieval.rerank`) and returns them in the server's order with
its scores; when the server fails, one log line and the fused order.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, TypedDict, Unpack

from mcp_server.citation_ids import parse_store_key
from mcp_server.errors import InvalidQueryError, NotFoundError
from mcp_server.models import Hit, SearchFilters
from mcp_server.retrieval.citation_records import placed_citation
from mcp_server.retrieval.fusion import convex_fusion, keyword_weight_for, reciprocal_rank_fusion
from mcp_server.retrieval.generation import OpenGeneration
from mcp_server.retrieval.rerank import PAUSE_AFTER_FAILURE_S, RerankError, reranker_for
from mcp_server.stores.docstore import StoredChunk, StoredDocument

SearchMode = Literal["vector", "keyword", "hybrid"]
logger = logging.getLogger(__name__)


class SearchOptions(TypedDict, total=False):
    """The keyword arguments of :meth:`Searcher.ranking`, for :meth:`Searcher.search`."""

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


class Searcher:
    """Search one opened generation, within each caller's scope. Safe to share between threads."""

    def __init__(self, opened: OpenGeneration) -> None:
        self._opened = opened
        self._settings = opened.settings
        self._reranker = reranker_for(opened.settings)

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
        readable = self._opened.readable(scope)
        self._opened.check_corpus(corpus, readable, scope)
        if not readable:
            raise NotFoundError(
                "no configured corpus is in the index yet; build it with: ragmcp ingest"
                if scope is None else "this client may read no corpus"
            )  # fmt: skip
        everything = scope is None and not self._opened.unserved
        corpora = [corpus] if corpus is not None else None if everything else sorted(readable)
        doc_keys = (
            None if filters is None or filters.is_empty() else self._opened.docstore.matching_documents(corpora, filters)
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
        candidates = self._hits(fused[: max(top_k, self._settings.rerank.candidates)], "hybrid")
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
        if len(query) > self._settings.calls.max_query_chars:
            raise InvalidQueryError(
                f"the query is {len(query)} characters long; the limit is {self._settings.calls.max_query_chars}. "
                "Search for the key terms or one question at a time"
            )
        if not 1 <= top_k <= self._settings.calls.max_top_k:
            raise InvalidQueryError(f"top_k must be between 1 and {self._settings.calls.max_top_k}, got {top_k}")
        return query

    def _vector_ranking(
        self, query: str, k: int, corpora: list[str] | None, doc_keys: set[str] | None
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest chunks in ``corpora`` (None: all): the query embedded by each model the corpora
        are embedded with, each model's similarities on the common scale (:mod:`mcp_server.embedding.choice`)."""
        vectors = self._opened.vectors
        searched = vectors.corpora() if corpora is None else sorted(set(corpora) & set(vectors.corpora()))
        found: list[tuple[str, float]] = []
        for embedder, names in self._opened.models.groups(searched):
            embedding = embedder.embed_query(query)
            self._opened.manifest.check_dimension(embedder.name, len(embedding))
            slope, offset = embedder.scale
            hits = vectors.query(embedding, k, corpora=names, doc_keys=doc_keys)
            found.extend((cid, slope * similarity + offset) for cid, similarity in hits)
        return sorted(found, key=lambda hit: (-hit[1], hit[0]))[:k]

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
            return self._opened.keywords.search(
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
        fusion = self._settings.retrieval
        vector, keyword = self.fusion_candidates(query, max(k, fusion.candidate_depth), corpora, doc_keys)
        if fusion.hybrid_fusion == "convex":
            weight = keyword_weight_for(query, fusion.convex_keyword_weight, fusion.convex_keyword_weight_cjk)
            models = self._opened.models
            reads_cjk = {c for c in self._opened.served if models.knows(c) and models.of(c).reads_cjk}

            def weight_of(cid: str) -> float:
                """The ordinary weight for a hit whose corpus's model reads CJK; else the query's."""
                return fusion.convex_keyword_weight if parse_store_key(cid)[0] in reads_cjk else weight

            return convex_fusion(vector, keyword, weight_of)
        return reciprocal_rank_fusion(
            [[i for i, _ in vector], [i for i, _ in keyword]],
            [fusion.rrf_vector_weight, fusion.rrf_keyword_weight],
            fusion.rrf_k,
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
                document = self._opened.docstore.document(corpus, doc_id)
                if document is None:  # pragma: no cover - the stores of one generation agree
                    continue
                documents[key] = (document, self._opened.docstore.chunks(corpus, doc_id))
            document, spans = documents[key]
            citation = placed_citation(self._opened.docstore, document, spans[chunk])
            text = document.text[citation.char_start : citation.char_end]
            hits.append(Hit(rank=rank, score=score, retriever=retriever, text=text, citation=citation))
        return hits
