"""Choose ``bm25_common_term_share`` on the SciFact *train* queries: what it costs in nDCG, what it saves in time.

    python bench/retrieval/tune_common_terms.py   # ~4 min on 2 free cores; writes tuning-common-terms.json

A query word found in more than the share of the searched chunks only adds to the score of
chunks that hold a rarer query word (Lucene's common-terms query; see
``mcp_server.stores.bm25_arrays.bm25_top``). For each share of the grid, on the 809
train claims and the index ``bench/retrieval/scifact.py`` builds:

- keyword nDCG@10 (``keyword_search``'s ranking) and hybrid nDCG@10 (the product's convex
  fusion at the default weight and candidate depth, over the same vector rankings);
- the keyword side's CPU time per query (``time.process_time``, not inflated by other
  processes), as hybrid search runs it (``candidate_depth`` hits, normalised scores);
- how many of the 809 rankings are identical to the plain ``Or``'s.

The share chosen is the smallest (the fastest) whose hybrid nDCG@10 is within
:data:`TOLERANCE` of the plain ``Or``'s. The test queries are not touched. The grid runs
with ``bm25_common_term_min_chunks`` 0, so that each share prunes on SciFact's 8,906 chunks
as it does on a large index (the product's floor of 1,000 chunks would leave SciFact exact
below a share of about 0.11); SciFact copied under new ids has the same shares at every size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]  # this checkout's mcp_server, bench/, here

from common import BENCH_DATA, REPO, log  # noqa: E402
from harness import BeirSet  # noqa: E402
from scifact import prepare_scifact  # noqa: E402
from tune_scifact import Scored, ndcg, vector_rankings  # noqa: E402

from mcp_server.retrieval.fusion import convex_fusion  # noqa: E402
from mcp_server.retrieval.retriever import Retriever  # noqa: E402
from mcp_server.stores.keyword import WhooshIndex  # noqa: E402

SHARE_GRID = [1.0, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.005]
TOLERANCE = 0.002
"""Hybrid nDCG@10 the pruning may give up against the plain ``Or``."""


def keyword_side(index: WhooshIndex, queries: dict[str, str], depth: int) -> tuple[Scored, list[float]]:
    """Rankings as hybrid search's keyword side makes them, and the CPU seconds of each query."""
    rankings: Scored = {}
    seconds: list[float] = []
    for qid, text in queries.items():
        started = time.process_time()
        rankings[qid] = index.search(text, depth, normalize=True, require_phrases=False)
        seconds.append(time.process_time() - started)
    return rankings, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "retrieval" / "tuning-common-terms.json")
    args = parser.parse_args()

    data = BeirSet.load(args.data, ("train",))
    queries = data.split_queries("train")
    settings = prepare_scifact(data).settings
    retriever = Retriever.open(settings)
    depth = settings.retrieval.candidate_depth
    vector = vector_rankings(retriever, queries, depth)
    grid: dict[str, dict[str, float]] = {}
    plain: Scored = {}
    for share in SHARE_GRID:
        index = WhooshIndex(
            retriever.generation / "whoosh", bm25_b=settings.bm25.b, bm25_k1=settings.bm25.k1,
            idf=settings.bm25.idf, common_term_share=share,
        )  # fmt: skip
        keyword, seconds = keyword_side(index, queries, depth)
        index.close()
        plain = plain or keyword
        fused = {q: convex_fusion(vector[q], keyword[q], settings.retrieval.convex_keyword_weight) for q in queries}
        grid[str(share)] = {
            "keyword_nDCG@10": ndcg({q: r[:10] for q, r in keyword.items()}, data),
            "hybrid_nDCG@10": ndcg(fused, data),
            "cpu_ms_p50": 1000 * statistics.median(seconds),
            "cpu_ms_p95": 1000 * statistics.quantiles(seconds, n=20)[-1],
            "rankings_identical_to_plain_or": sum(keyword[q] == plain[q] for q in queries),
        }
        log(f"  share {share}: {grid[str(share)]}")
    baseline = grid[str(1.0)]["hybrid_nDCG@10"]
    chosen = min(
        (share for share in SHARE_GRID if grid[str(share)]["hybrid_nDCG@10"] >= baseline - TOLERANCE),
    )
    report = {
        "split": f"train ({len(queries)} queries)",
        "chosen_share": chosen,
        "rule": f"smallest share whose hybrid nDCG@10 is within {TOLERANCE} of the plain Or's (share 1.0)",
        "candidate_depth": depth,
        "grid": grid,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    retriever.close()


if __name__ == "__main__":
    main()
