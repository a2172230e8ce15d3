"""The Whoosh keyword store's scores: BM25 with Lucene's or Whoosh's IDF, and IDF-mass normalisation."""

from __future__ import annotations

from collections.abc import Iterator
from math import log
from pathlib import Path

import pytest

from mcp_server.stores.keyword import KeywordRecord, WhooshIndex

# Four chunks of four words each, so every chunk is exactly average length and a term
# found once scores its IDF: idf * (k1 + 1) * 1 / (1 + k1 * 1).
CHUNKS = {
    "d1": "alpha beta gamma delta",
    "d2": "alpha omega kappa sigma",
    "d3": "zeta theta iota lambda",
    "d4": "omega kappa sigma zeta",
}


def lucene_idf(df: int, n: int = len(CHUNKS)) -> float:
    return log(1 + (n - df + 0.5) / (df + 0.5))


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    store = WhooshIndex(tmp_path / "whoosh")
    store.update([], [KeywordRecord(f"c:{d}#0", "c", d, text) for d, text in CHUNKS.items()])
    store.close()
    return tmp_path / "whoosh"


@pytest.fixture
def store(index_path: Path) -> Iterator[WhooshIndex]:
    opened = WhooshIndex(index_path, bm25_b=0.5, bm25_k1=1.2)
    yield opened
    opened.close()


def test_scores_use_lucene_idf_by_default(store: WhooshIndex) -> None:
    scores = dict(store.search("alpha beta", 10))
    assert scores["c:d1#0"] == pytest.approx(lucene_idf(2) + lucene_idf(1), rel=1e-6)
    assert scores["c:d2#0"] == pytest.approx(lucene_idf(2), rel=1e-6)
    assert set(scores) == {"c:d1#0", "c:d2#0"}


def test_whoosh_idf_is_available(index_path: Path) -> None:
    store = WhooshIndex(index_path, bm25_b=0.5, bm25_k1=1.2, idf="whoosh")
    try:
        assert dict(store.search("beta", 10)) == {"c:d1#0": pytest.approx(log(4 / 2) + 1, rel=1e-6)}
    finally:
        store.close()


def test_normalised_scores_are_the_share_of_the_query_idf_mass_matched(store: WhooshIndex) -> None:
    scores = dict(store.search("alpha beta", 10, normalize=True))
    assert scores["c:d1#0"] == pytest.approx(1.0, rel=1e-6)  # every query term, once, at average length
    assert scores["c:d2#0"] == pytest.approx(lucene_idf(2) / (lucene_idf(2) + lucene_idf(1)), rel=1e-6)


def test_query_terms_missing_from_the_index_do_not_lower_normalised_scores(store: WhooshIndex) -> None:
    assert dict(store.search("alpha beta xylophone", 10, normalize=True)) == pytest.approx(
        dict(store.search("alpha beta", 10, normalize=True))
    )


def test_normalisation_keeps_the_order_and_a_weak_best_match_stays_weak(store: WhooshIndex) -> None:
    raw = store.search("zeta beta gamma delta", 10)
    normalised = store.search("zeta beta gamma delta", 10, normalize=True)
    assert [i for i, _ in raw] == [i for i, _ in normalised]
    weak = store.search("zeta kappa beta gamma delta", 10, normalize=True)
    assert max(score for _, score in weak) < 0.8  # no chunk holds most of the query's weight


def test_unknown_idf_formula_is_refused(index_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown IDF formula 'bm15'"):
        WhooshIndex(index_path, idf="bm15")  # type: ignore[arg-type]


def test_a_search_uses_the_statistics_of_exactly_the_corpora_it_searches(tmp_path: Path) -> None:
    alone = WhooshIndex(tmp_path / "alone")
    alone.update([], [KeywordRecord(f"c:{d}#0", "c", d, text) for d, text in CHUNKS.items()])
    shared = WhooshIndex(tmp_path / "shared")
    shared.update([], [KeywordRecord(f"c:{d}#0", "c", d, text) for d, text in CHUNKS.items()])
    shared.update([], [KeywordRecord(f"x:{i}#0", "x", str(i), "alpha beta beta omega") for i in range(5)])
    try:
        for normalize in (False, True):
            expected = alone.search("alpha beta omega", 10, normalize=normalize)
            assert shared.search("alpha beta omega", 10, corpora=["c"], normalize=normalize) == expected
        both = dict(shared.search("alpha beta", 10))  # both corpora: N = 9, df(alpha) = 7, df(beta) = 6
        assert both["c:d1#0"] == pytest.approx(lucene_idf(7, 9) + lucene_idf(6, 9), rel=1e-6)  # all 4 words long
        assert shared.corpora() == ["c", "x"]
        shared.remove_corpus("x")
        assert shared.corpora() == ["c"] and not (tmp_path / "shared" / "x").exists()
        assert shared.search("alpha beta omega", 10) == alone.search("alpha beta omega", 10)
    finally:
        alone.close()
        shared.close()


def test_common_words_only_score_chunks_that_hold_a_rarer_query_word(index_path: Path, store: WhooshIndex) -> None:
    # "alpha" is in 2 of 4 chunks (more than 0.3 of them: common), "beta" in 1 (rare).
    pruned = WhooshIndex(index_path, bm25_b=0.5, bm25_k1=1.2, common_term_share=0.3)
    try:
        assert pruned.search("alpha beta", 10) == [("c:d1#0", dict(store.search("alpha beta", 10))["c:d1#0"])]
        assert pruned.search("alpha beta", 10, normalize=True) == store.search("alpha beta", 10, normalize=True)[:1]
        # Only common words: searched as before, nothing dropped.
        assert pruned.search("alpha omega", 10) == store.search("alpha omega", 10)
        assert {hit for hit, _ in pruned.search("alpha omega", 10)} == {"c:d1#0", "c:d2#0", "c:d4#0"}
        # A required phrase already restricts the matches: the other words add to the score as before.
        assert pruned.search('"omega kappa" alpha', 10) == store.search('"omega kappa" alpha', 10)
    finally:
        pruned.close()


def test_words_in_few_chunks_are_never_common(index_path: Path, store: WhooshIndex) -> None:
    # "alpha" is in half the chunks, but in no more than two: searched on its own, as without pruning.
    floored = WhooshIndex(index_path, bm25_b=0.5, bm25_k1=1.2, common_term_share=0.3, common_term_min_chunks=2)
    try:
        assert floored.search("alpha beta", 10) == store.search("alpha beta", 10)
        assert len(floored.search("alpha beta", 10)) == 2
    finally:
        floored.close()


def test_a_reader_kept_between_searches_sees_the_next_update(tmp_path: Path) -> None:
    store = WhooshIndex(tmp_path / "whoosh")
    try:
        store.update([], [KeywordRecord("c:a#0", "c", "a", "alpha beta")])
        assert [hit for hit, _ in store.search("gamma alpha", 10)] == ["c:a#0"]
        store.update(["c:a"], [KeywordRecord("c:b#0", "c", "b", "gamma")])
        assert [hit for hit, _ in store.search("gamma alpha", 10)] == ["c:b#0"]
        store.remove_corpus("c")
        assert store.search("gamma alpha", 10) == []
    finally:
        store.close()


def test_an_updated_index_scores_as_one_built_from_the_chunks_it_holds_now(tmp_path: Path) -> None:
    """An update deletes a document's old chunks, but they stay in their segment until it merges. They must not
    count in the statistics (chunk count, document frequency, average length): a corpus's scores would otherwise
    depend on text that nobody can read any more, and on when segments happen to merge."""
    filler = [KeywordRecord(f"c:f{i}#0", "c", f"f{i}", f"filler{i} words{i % 7} here") for i in range(300)]
    kept = [KeywordRecord(f"c:{d}#0", "c", d, text) for d, text in CHUNKS.items() if d in ("d1", "d3")]
    replaced = [KeywordRecord(f"c:{d}#0", "c", d, text) for d, text in CHUNKS.items() if d in ("d2", "d4")]
    added = [KeywordRecord("c:d5#0", "c", "d5", "alpha alpha epsilon")]
    updated = WhooshIndex(tmp_path / "updated", bm25_b=0.5)
    fresh = WhooshIndex(tmp_path / "fresh", bm25_b=0.5)
    try:
        updated.update([], [*filler, *kept, *replaced, *[KeywordRecord(f"c:old{i}#0", "c", f"old{i}", "alpha omega "
                                                                        "kappa sigma zeta " * 6) for i in range(40)]])
        updated.update(["c:d2", "c:d4", *(f"c:old{i}" for i in range(40))], added)
        reader = updated._reader(["c"])  # the deleted chunks are still in their segment
        with reader as arrays:
            assert arrays is not None and arrays.reader.doc_count_all() > arrays.reader.doc_count()
        fresh.update([], [*filler, *kept, *added])
        for query in ("alpha omega", "kappa zeta epsilon", '"alpha beta" gamma'):
            for normalize in (False, True):
                now, built = updated.search(query, 10, normalize=normalize), fresh.search(query, 10, normalize=normalize)
                assert [cid for cid, _ in now] == [cid for cid, _ in built], query
                assert [s for _, s in now] == pytest.approx([s for _, s in built], rel=1e-12), query
    finally:
        updated.close()
        fresh.close()
