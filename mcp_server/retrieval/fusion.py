"""Fusion of the vector and keyword rankings into one hybrid ranking.

Two functions, chosen with ``Settings.retrieval.hybrid_fusion``:

* :func:`convex_fusion` (the default) adds the two retrievers' *scores*, each on a scale
  that means the same for every query: cosine similarity for vectors, and BM25 divided by
  the query's IDF mass for keywords (``WhooshIndex.search(normalize=True)``). A retriever
  whose scores are flat for a query (every candidate about equally similar, as the
  English embedding model is on Chinese text) moves the order little, and a confident
  keyword match keeps its lead. Min-max scaling would stretch any spread to 0..1 and
  hide both.
* :func:`reciprocal_rank_fusion` uses ranks only.

The convex keyword weight depends on the query's script (:func:`keyword_weight_for`) and on the
model of the corpus a hit comes from: the English embedding model (all-MiniLM-L6-v2) ranks the right
passage first for 9% of CMRC 2018's Chinese questions, against 96% for keyword search, so a query
written in Chinese, Japanese or Korean leans on keywords more over a corpus embedded by it; over a
corpus of the multilingual model (96% alone) it keeps the ordinary weight, which the CMRC tuning
half also chose (bench/retrieval/tuning-cmrc2018.json).

On SciFact train (bench/retrieval) convex fusion scored nDCG@10 0.741 against 0.726 for
the best reciprocal-rank fusion.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mcp_server.analyzer.scripts import cjk_share


def keyword_weight_for(query: str, weight: float, cjk_weight: float) -> float:
    """The convex keyword weight for ``query``: ``weight`` for Latin-script text, ``cjk_weight`` for CJK text.

    A mixed query gets the weights interpolated by its share of CJK characters
    (:func:`~mcp_server.analyzer.scripts.cjk_share`), e.g. the midpoint for ``"VPN 怎么连"``.
    """
    return weight + (cjk_weight - weight) * cjk_share(query)


def convex_fusion(
    vector: Sequence[tuple[str, float]],
    keyword: Sequence[tuple[str, float]],
    keyword_weight: float | Callable[[str], float],
) -> list[tuple[str, float]]:
    """Fuse (id, score) lists: ``(1 - w) * vector score + w * keyword score``, best first.

    ``keyword_weight`` (w) is between 0 and 1, or gives each id's (each between 0 and 1). An id missing from the vector list gets
    that list's lowest score (it ranked below all of them), one missing from the keyword
    list gets 0 (no normalised BM25 score is lower). Ties are broken by the id's best rank
    in either list, then by the id, so the order is deterministic.
    """
    if not callable(keyword_weight):
        if not 0 <= keyword_weight <= 1:
            raise ValueError(f"keyword_weight must be between 0 and 1, got {keyword_weight}")
        weight = keyword_weight
        keyword_weight = lambda _: weight  # noqa: E731
    vector_scores, keyword_scores = dict(vector), dict(keyword)
    vector_floor = min(vector_scores.values(), default=0.0)
    best_rank = _best_ranks([[i for i, _ in vector], [i for i, _ in keyword]])
    fused = {
        item: (1 - w) * vector_scores.get(item, vector_floor) + w * keyword_scores.get(item, 0.0)
        for item, w in ((item, keyword_weight(item)) for item in best_rank)
    }
    return sorted(fused.items(), key=lambda kv: (-kv[1], best_rank[kv[0]], kv[0]))


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], k: float
) -> list[tuple[str, float]]:
    """Fuse ranked id lists: score(id) = sum of weight / (k + rank), rank from 1; best first.

    Ties are broken by the id's best rank in any list, then by the id, so the order is deterministic.
    """
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    best_rank = _best_ranks(rankings)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best_rank[kv[0]], kv[0]))


def _best_ranks(rankings: Sequence[Sequence[str]]) -> dict[str, int]:
    """Each id's best (lowest) rank, from 1, over all the lists."""
    best: dict[str, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            best[item] = min(best.get(item, rank), rank)
    return best
