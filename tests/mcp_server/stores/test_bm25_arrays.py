"""Keyword search's numpy BM25 ranks and scores exactly as Whoosh's own search of the same query."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from whoosh import query

from mcp_server.stores.analysis import build_keyword_query
from mcp_server.stores.keyword import CONTENT, KeywordRecord, LiveSearcher, WhooshIndex

VOCABULARY = [f"word{n}" for n in range(60)]


def _chunk(rng: random.Random) -> str:
    """5 to 40 words, word n drawn about 1/(n+1) as often as word0 (so some words are in most chunks)."""
    weights = [1 / (n + 1) for n in range(len(VOCABULARY))]
    return " ".join(rng.choices(VOCABULARY, weights, k=rng.randint(5, 40)))


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(7)
    path = tmp_path_factory.mktemp("bm25") / "whoosh"
    store = WhooshIndex(path)
    for batch in range(4):  # two parts of corpus "a", two commits each, and a corpus "b"
        store.update([], [KeywordRecord(f"a:{batch}-{n}#0", "a", f"{batch}-{n}", _chunk(rng)) for n in range(250)], part=batch % 2)
    store.update([], [KeywordRecord(f"b:{n}#0", "b", str(n), _chunk(rng)) for n in range(200)])
    store.update([f"a:1-{n}" for n in range(0, 250, 3)] + [f"b:{n}" for n in range(50)], [])
    store.close()
    return path


@pytest.fixture(scope="module")
def queries() -> list[str]:
    rng = random.Random(11)
    return [" ".join(rng.sample(VOCABULARY, rng.randint(1, 8))) for _ in range(40)] + ["word3 absentword", "word0 word1"]


def _whoosh(
    store: WhooshIndex, corpora: list[str], parsed: query.Query, k: int | None, restriction: query.Query | None = None
) -> list[tuple[str, float]]:
    """Whoosh's search, with the statistics of the live chunks the store uses (the index holds deleted ones);
    ``k`` None scores every match (no block skipping) and ranks them all."""
    with store._reader(corpora) as arrays:
        assert arrays is not None
        searcher = LiveSearcher(arrays.reader, arrays=arrays, weighting=store.weighting, closereader=False)
        return [(hit["id"], float(hit.score)) for hit in searcher.search(parsed, limit=k, filter=restriction)]


def _same(found: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [chunk for chunk, _ in found] == [chunk for chunk, _ in expected]
    assert [score for _, score in found] == pytest.approx([score for _, score in expected], rel=1e-12)


@pytest.fixture(params=[0, 2**20], ids=["uncached", "cached"])
def store(index_path: Path, request: pytest.FixtureRequest) -> Iterator[WhooshIndex]:
    opened = WhooshIndex(index_path, bm25_b=0.4, bm25_k1=1.1, posting_cache_bytes=request.param)
    yield opened
    opened.close()


@pytest.mark.parametrize("corpora", [["a"], ["a", "b"]])
def test_plain_words_rank_and_score_as_whooshs_or(store: WhooshIndex, queries: list[str], corpora: list[str]) -> None:
    for text in queries:
        for k in (1, 7, 1000):
            expected = _whoosh(store, corpora, build_keyword_query(CONTENT, text, store._analyzer), k)
            _same(store.search(text, k, corpora=corpora), expected)
    assert len(store.search("word0", 1000, corpora=corpora)) > 300  # deleted chunks are not hits, the rest are


def test_a_document_filter_ranks_as_whooshs(store: WhooshIndex, queries: list[str]) -> None:
    keys = {f"a:0-{n}" for n in range(0, 250, 2)} | {"a:1-3", "b:60"}  # a:1-3 is deleted
    restriction = query.Or([query.Term("doc_key", key) for key in sorted(keys)])
    for text in queries:
        expected = _whoosh(store, ["a", "b"], build_keyword_query(CONTENT, text, store._analyzer), 20, restriction)
        _same(store.search(text, 20, doc_keys=keys), expected)


def test_common_words_add_only_to_chunks_with_a_rarer_word_as_lucenes_common_terms_query(index_path: Path, queries: list[str]) -> None:
    pruned = WhooshIndex(index_path, bm25_b=0.4, bm25_k1=1.1, common_term_share=0.3)
    try:
        with pruned._reader(["a", "b"]) as arrays:
            assert arrays is not None
            reader = arrays.reader
            cutoff = 0.3 * reader.doc_count_all()
            common = {word for word in VOCABULARY if reader.doc_frequency(CONTENT, word) > cutoff}
        assert 2 <= len(common) < 20
        checked = 0
        for text in queries:
            words = text.split()
            rare = [query.Term(CONTENT, w) for w in words if w not in common and w != "absentword"]
            extra = [query.Term(CONTENT, w) for w in words if w in common]
            if not rare or not extra:
                continue
            checked += 1
            # Whoosh's exhaustive search: with a limit its AndMaybe skips blocks of the optional words
            # that can still raise a score, and drops hits (on 18 of these 26 queries).
            expected = _whoosh(pruned, ["a", "b"], query.AndMaybe(query.Or(rare), query.Or(extra)), None)[:50]
            _same(pruned.search(text, 50), expected)
        assert checked >= 10
    finally:
        pruned.close()
