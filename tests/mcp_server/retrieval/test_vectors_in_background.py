"""A retriever whose vectors open on a thread (a stdio server's first generation): same answers, and
a vector store that cannot open fails the searches that need it, not the rest."""

from __future__ import annotations

import shutil

import pytest

from mcp_server.errors import BackendUnavailableError
from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings

QUERIES = ("how far ahead should I book a train", "ACME-E7731", "meal allowance on a business trip")


def hits(retriever: Retriever, query: str, mode: str) -> list[tuple[str, float]]:
    return [(h.citation.id, h.score) for h in retriever.searcher.search(query, mode=mode, top_k=5)]  # type: ignore[arg-type]


def test_vectors_opened_in_background_rank_exactly_as_vectors_opened_at_once(acme_index: Settings) -> None:
    at_once = Retriever.open(acme_index)
    background = Retriever.open(acme_index, vectors_in_background=True)
    try:
        for query in QUERIES:
            for mode in ("vector", "hybrid", "keyword"):
                assert hits(background, query, mode) == hits(at_once, query, mode), (query, mode)
        assert background.corpora() == at_once.corpora()
    finally:
        background.close()
        at_once.close()


def test_vectors_that_cannot_open_fail_only_the_searches_that_need_them(tiny_settings: Settings) -> None:
    ingest(tiny_settings)
    generation = IndexLayout(tiny_settings.index_dir).current()
    assert generation is not None
    shutil.rmtree(generation / "chroma")
    (generation / "chroma").mkdir()  # a vector store holding no collection: the tiny corpus has no vectors
    with pytest.raises(BackendUnavailableError, match="has no vectors for corpora tiny; rebuild the index"):
        Retriever.open(tiny_settings)

    retriever = Retriever.open(tiny_settings, vectors_in_background=True)
    try:
        assert [c.chunks for c in retriever.corpora()] == [3]
        assert [h.citation.doc_id for h in retriever.searcher.search("zebraword", mode="keyword")] == ["alpha"]
        for mode in ("vector", "hybrid"):
            with pytest.raises(BackendUnavailableError, match="has no vectors for corpora tiny; rebuild the index"):
                retriever.searcher.search("zebraword reactor fuel", mode=mode)  # type: ignore[arg-type]
    finally:
        retriever.close()
