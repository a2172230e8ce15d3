"""Tune BM25 and hybrid-fusion parameters on SciFact *train* queries; report the choice on *test*.

    python bench/ingest/scifact.py          # builds the index this reuses (bench/.cache/scifact)
    python bench/retrieval/tune_scifact.py  # ~10 min on 2 cores

Grid-searches BM25F (B, K1) for keyword search, then reciprocal-rank-fusion k and the
keyword weight for hybrid search, maximising nDCG@10 over the 809 train queries
(pytrec_eval). The test queries are only scored once, with the chosen parameters.
Chunk hits are turned into document rankings by each document's best chunk.
Writes bench/retrieval/tuning-scifact.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytrec_eval

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import BENCH_DATA, CACHE, REPO, log, read_jsonl, read_qrels  # noqa: E402

from mcp_server.fusion import reciprocal_rank_fusion  # noqa: E402
from mcp_server.retrieval import Retriever  # noqa: E402
from mcp_server.settings import Settings  # noqa: E402
from mcp_server.stores.keyword import WhooshIndex  # noqa: E402

DEPTH = 100
BM25_GRID = {"b": [0.5, 0.65, 0.75, 0.9], "k1": [0.6, 0.9, 1.2, 1.5]}
RRF_K_GRID = [5, 10, 20, 40, 60, 100]
KEYWORD_WEIGHT_GRID = [0.5, 0.75, 1.0, 1.25, 1.5, 2.0]
TEXTBOOK = {"bm25_b": 0.75, "bm25_k1": 1.2, "rrf_k": 60.0}  # the usual defaults, reported beside the tuned values

Rankings = dict[str, list[str]]  # query id -> chunk citation ids, best first


def doc_run(rankings: Rankings) -> dict[str, dict[str, float]]:
    """Chunk rankings to document scores for pytrec_eval: each document at its best chunk's rank."""
    run: dict[str, dict[str, float]] = {}
    for qid, ids in rankings.items():
        docs: dict[str, float] = {}
        for rank, cid in enumerate(ids):
            doc_id = cid.split(":", 1)[1].rsplit("#", 1)[0]
            docs.setdefault(doc_id, float(DEPTH * 10 - rank))
        run[qid] = docs
    return run


def evaluate(rankings: Rankings, qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    scores = evaluator.evaluate(doc_run({q: r for q, r in rankings.items() if q in qrels}))
    return {
        "ndcg@10": round(sum(s["ndcg_cut_10"] for s in scores.values()) / len(qrels), 4),
        "recall@100": round(sum(s["recall_100"] for s in scores.values()) / len(qrels), 4),
    }


def keyword_rankings(index: WhooshIndex, queries: dict[str, str]) -> Rankings:
    return {qid: [cid for cid, _ in index.search(text, DEPTH)] for qid, text in queries.items()}


def fuse(vector: Rankings, keyword: Rankings, k: float, keyword_weight: float, depth: int) -> Rankings:
    return {
        qid: [cid for cid, _ in reciprocal_rank_fusion([vector[qid][:depth], keyword[qid][:depth]], [1.0, keyword_weight], k)]
        for qid in vector
    }


def best(grid: Sequence[tuple[float, ...]], score: dict[tuple[float, ...], float]) -> tuple[float, ...]:
    return max(grid, key=lambda params: score[params])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--index", type=Path, default=CACHE / "scifact" / "data")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "retrieval" / "tuning-scifact.json")
    args = parser.parse_args()

    texts = {q["_id"]: q["text"] for q in read_jsonl(args.data / "queries.jsonl")}
    splits = {name: read_qrels(args.data / "qrels" / f"{name}.tsv") for name in ("train", "test")}
    queries = {name: {qid: texts[qid] for qid in qrels} for name, qrels in splits.items()}
    settings = Settings(data_dir=args.index, corpora=[], max_top_k=DEPTH)
    retriever = Retriever.open(settings)
    depth = Settings(corpora=[]).candidate_depth

    log("vector rankings (train + test)")
    vector = {
        name: {qid: [h.citation.id for h in retriever.search(t, mode="vector", top_k=DEPTH)] for qid, t in qs.items()}
        for name, qs in queries.items()
    }

    log("BM25 grid on train")
    bm25_scores: dict[tuple[float, ...], float] = {}
    for b, k1 in itertools.product(BM25_GRID["b"], BM25_GRID["k1"]):
        index = WhooshIndex(retriever.generation / "whoosh", bm25_b=b, bm25_k1=k1)
        bm25_scores[(b, k1)] = evaluate(keyword_rankings(index, queries["train"]), splits["train"])["ndcg@10"]
        index.close()
        log(f"  b={b} k1={k1}: train nDCG@10 {bm25_scores[(b, k1)]}")
    b, k1 = best(list(bm25_scores), bm25_scores)
    chosen_index = WhooshIndex(retriever.generation / "whoosh", bm25_b=b, bm25_k1=k1)
    keyword = {name: keyword_rankings(chosen_index, qs) for name, qs in queries.items()}
    default_index = WhooshIndex(retriever.generation / "whoosh", bm25_b=TEXTBOOK["bm25_b"], bm25_k1=TEXTBOOK["bm25_k1"])
    keyword_default_test = keyword_rankings(default_index, queries["test"])

    log("fusion grid on train")
    rrf_scores: dict[tuple[float, ...], float] = {}
    for k, weight in itertools.product(RRF_K_GRID, KEYWORD_WEIGHT_GRID):
        fused = fuse(vector["train"], keyword["train"], k, weight, depth)
        rrf_scores[(k, weight)] = evaluate(fused, splits["train"])["ndcg@10"]
    rrf_k, keyword_weight = best(list(rrf_scores), rrf_scores)

    test = splits["test"]
    report = {
        "chosen": {"bm25_b": b, "bm25_k1": k1, "rrf_k": rrf_k, "rrf_keyword_weight": keyword_weight,
                   "rrf_vector_weight": 1.0, "candidate_depth": depth},
        "train_ndcg@10": {"bm25_grid": {f"b={p[0]},k1={p[1]}": s for p, s in bm25_scores.items()},
                          "rrf_grid": {f"k={p[0]},w_kw={p[1]}": s for p, s in rrf_scores.items()}},
        "test": {
            "vector": evaluate(vector["test"], test),
            "keyword (default b=0.75,k1=1.2)": evaluate(keyword_default_test, test),
            "keyword (tuned)": evaluate(keyword["test"], test),
            "hybrid (default k=60, w=1)": evaluate(
                fuse(vector["test"], keyword_default_test, TEXTBOOK["rrf_k"], 1.0, depth), test
            ),
            "hybrid (tuned)": evaluate(fuse(vector["test"], keyword["test"], rrf_k, keyword_weight, depth), test),
        },
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"chosen on train: {report['chosen']}\n")
    print("| SciFact test (300 queries) | nDCG@10 | Recall@100 |\n|---|---|---|")
    for name, scores in report["test"].items():
        print(f"| {name} | {scores['ndcg@10']} | {scores['recall@100']} |")


if __name__ == "__main__":
    main()
