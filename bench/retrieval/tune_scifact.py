"""Tune BM25 and hybrid fusion on the SciFact *train* queries; the defaults in Settings come from here.

    python bench/retrieval/tune_scifact.py   # ~11 min on 2 free cores (18 BM25 settings x 809 queries)

1. BM25 (IDF formula, B, K1): the grid below, chosen by keyword nDCG@10 on the 809 train queries.
2. Fusion, with that BM25: convex fusion (keyword weight, candidate depth) and reciprocal-rank
   fusion (k, keyword weight, candidate depth), chosen by hybrid nDCG@10 on train. Of the
   candidate depths, the smallest whose best setting is within :data:`DEPTH_TOLERANCE` of the
   overall best is chosen: each extra candidate costs search time on every query.

Everything runs through the product's own stores and fusion functions (mcp_server.stores,
mcp_server.retrieval.fusion), on the index `bench/retrieval/scifact.py` builds. The test queries are
not touched here: `bench/retrieval/scifact.py` scores them with the defaults.
Writes bench/retrieval/tuning-scifact.json and prints the chosen values.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]  # this checkout's mcp_server, bench/, here

from common import BENCH_DATA, REPO, log  # noqa: E402
from harness import BeirSet, doc_of, doc_run, evaluate  # noqa: E402
from scifact import prepare_scifact  # noqa: E402

from mcp_server.retrieval.fusion import convex_fusion, reciprocal_rank_fusion  # noqa: E402
from mcp_server.retrieval.retriever import Retriever  # noqa: E402
from mcp_server.settings.ranking import IdfFormula  # noqa: E402
from mcp_server.stores.keyword import WhooshIndex  # noqa: E402

DEPTH = 200
IDF_GRID: list[IdfFormula] = ["lucene", "whoosh"]
B_GRID = [0.3, 0.5, 0.75]
K1_GRID = [0.9, 1.2, 1.5]
DEPTH_GRID = [50, 100, 200]
CONVEX_WEIGHT_GRID = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6]
RRF_K_GRID = [1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 60.0]
RRF_WEIGHT_GRID = [0.75, 1.0, 1.25, 1.5, 2.0]
NDCG = {"nDCG@10": "ndcg_cut.10"}
DEPTH_TOLERANCE = 0.001
"""nDCG@10 a smaller candidate depth may give up for being faster."""

Scored = dict[str, list[tuple[str, float]]]  # query id -> (citation id, score), best first


def ndcg(rankings: Scored, data: BeirSet) -> float:
    run = {qid: doc_run(doc_of(cid) for cid, _ in ranked) for qid, ranked in rankings.items()}
    return evaluate(run, data.qrels["train"], NDCG)["nDCG@10"]


def vector_rankings(retriever: Retriever, queries: dict[str, str], depth: int) -> Scored:
    """The product's vector search for every query: (citation id, cosine similarity), best first."""
    log(f"vector rankings ({len(queries)} train queries)")
    return {
        qid: [(h.citation.id, h.score) for h in retriever.searcher.search(text, mode="vector", top_k=depth)]
        for qid, text in queries.items()
    }


def keyword_rankings(index: WhooshIndex, queries: dict[str, str]) -> Scored:
    """BM25 rankings as hybrid search's keyword side makes them (normalised scores, quotes as plain words)."""
    return {qid: index.search(text, DEPTH, normalize=True, require_phrases=False) for qid, text in queries.items()}


def fusion_grid(vector: Scored, keyword: Scored, data: BeirSet) -> dict[str, float]:
    """Train nDCG@10 of every fusion setting, keyed by a readable label."""
    def fused(fuse: Callable[[list[tuple[str, float]], list[tuple[str, float]]], list[tuple[str, float]]],
              depth: int) -> float:
        return ndcg({qid: fuse(vector[qid][:depth], keyword[qid][:depth]) for qid in vector}, data)

    scores = {}
    for depth, weight in itertools.product(DEPTH_GRID, CONVEX_WEIGHT_GRID):
        scores[f"convex depth={depth} w={weight}"] = fused(lambda v, k: convex_fusion(v, k, weight), depth)
    for depth, k, weight in itertools.product(DEPTH_GRID, RRF_K_GRID, RRF_WEIGHT_GRID):
        scores[f"rrf depth={depth} k={k} w={weight}"] = fused(
            lambda v, kw: reciprocal_rank_fusion([[i for i, _ in v], [i for i, _ in kw]], [1.0, weight], k), depth
        )
    return scores


def choose_convex(scores: dict[str, float]) -> tuple[int, float]:
    """The convex (depth, keyword weight): the best weight at the smallest depth within DEPTH_TOLERANCE of the best."""
    convex = {(d, w): scores[f"convex depth={d} w={w}"] for d, w in itertools.product(DEPTH_GRID, CONVEX_WEIGHT_GRID)}
    best = max(convex.values())
    depth = min(d for (d, _), score in convex.items() if score >= best - DEPTH_TOLERANCE)
    weight = max(CONVEX_WEIGHT_GRID, key=lambda w: convex[(depth, w)])
    return depth, weight


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "retrieval" / "tuning-scifact.json")
    args = parser.parse_args()

    data = BeirSet.load(args.data, ("train",))
    queries = data.split_queries("train")
    prepared = prepare_scifact(data)
    retriever = Retriever.open(prepared.settings)
    vector = vector_rankings(retriever, queries, DEPTH)

    log("BM25 grid on train")
    bm25_scores: dict[tuple[IdfFormula, float, float], float] = {}
    keyword_runs: dict[tuple[IdfFormula, float, float], Scored] = {}
    for idf, b, k1 in itertools.product(IDF_GRID, B_GRID, K1_GRID):
        index = WhooshIndex(retriever.generation / "whoosh", bm25_b=b, bm25_k1=k1, idf=idf)
        keyword_runs[(idf, b, k1)] = keyword_rankings(index, queries)
        index.close()
        bm25_scores[(idf, b, k1)] = ndcg({q: r[:100] for q, r in keyword_runs[(idf, b, k1)].items()}, data)
        log(f"  idf={idf} b={b} k1={k1}: keyword nDCG@10 {bm25_scores[(idf, b, k1)]}")
    chosen_bm25 = max(bm25_scores, key=lambda p: bm25_scores[p])

    log(f"fusion grid on train with idf={chosen_bm25[0]} b={chosen_bm25[1]} k1={chosen_bm25[2]}")
    fusion_scores = fusion_grid(vector, keyword_runs[chosen_bm25], data)
    best = {
        family: max((label for label in fusion_scores if label.startswith(family)), key=lambda l: fusion_scores[l])
        for family in ("convex", "rrf")
    }
    depth, weight = choose_convex(fusion_scores)
    report = {
        "split": "train (809 queries)",
        "chosen_bm25": dict(zip(("idf", "b", "k1"), chosen_bm25)),
        "chosen_fusion": {"hybrid_fusion": "convex", "candidate_depth": depth, "convex_keyword_weight": weight,
                          "nDCG@10": fusion_scores[f"convex depth={depth} w={weight}"],
                          "rule": f"smallest depth within {DEPTH_TOLERANCE} of the best nDCG@10, then its best weight"},
        "best_fusion": {family: {"setting": label, "nDCG@10": fusion_scores[label]} for family, label in best.items()},
        "vector_nDCG@10": ndcg({q: r[:100] for q, r in vector.items()}, data),
        "bm25_grid_keyword_nDCG@10": {f"idf={p[0]} b={p[1]} k1={p[2]}": s for p, s in bm25_scores.items()},
        "fusion_grid_hybrid_nDCG@10": fusion_scores,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("chosen_bm25", "chosen_fusion", "best_fusion", "vector_nDCG@10")},
                     indent=2))
    retriever.close()


if __name__ == "__main__":
    main()
