"""Ways to lift SciFact hybrid search with the default English model, each tuned on *train* and scored once on test.

    python bench/retrieval/scifact_variants.py   # ~12 min on 2 cores (7 of them embedding sub-chunk windows)

The default (convex fusion of cosine and normalised BM25, keyword weight 0.3, 100 candidates per side)
gives SciFact test nDCG@10 0.747 with all-MiniLM-L6-v2. Each variant below changes one thing that does not
depend on the wording of any query; its parameters are chosen by train nDCG@10 (809 queries), and the test
queries (300) are scored once with the chosen values:

- **complete scores**: a candidate missing from one side's top 100 gets its real score on that side (from a
  1,000-deep list) instead of the side's floor;
- **document pooling**: each side's score of a chunk is raised to ``alpha`` times the best score of any chunk
  of its document on that side, so a title matched by keywords and a body matched by meaning add up;
- **vector feedback** (Rocchio): the query vector plus ``beta`` times the mean vector of the ``m`` best fused
  chunks, then searched again;
- **query-adaptive weight**: the keyword weight moves with one property of the query's candidate lists (the
  best keyword score, its lead over the tenth, the best cosine, its lead over the tenth);
- **sub-chunk vectors**: each chunk is also embedded as windows of 80 words (stride 60, after the title), and its
  vector score is the best of its windows (all-MiniLM-L6-v2 was trained on texts of 128 tokens).

Vectors are compared exactly (numpy over every chunk), so the reference row is the default with exact
nearest neighbours. Uses the index `bench/retrieval/scifact.py` builds; writes
bench/retrieval/results-scifact-variants.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]  # this checkout's mcp_server, bench/, here

from common import BENCH_DATA, REPO, log  # noqa: E402
from harness import BeirSet, doc_of, doc_run, evaluate, machine  # noqa: E402
from scifact import prepare_scifact  # noqa: E402

import chromadb  # noqa: E402
from mcp_server.embedding.loading import load_embedder  # noqa: E402
from mcp_server.retrieval.fusion import convex_fusion  # noqa: E402
from mcp_server.retrieval.retriever import Retriever  # noqa: E402
from mcp_server.settings.embedding import ENGLISH_MODEL  # noqa: E402

DEPTH = 100
DEEP = 1_000
WEIGHTS = [0.2, 0.25, 0.3, 0.35, 0.4]
WINDOW_WORDS, WINDOW_STRIDE = 80, 60
Scored = list[tuple[str, float]]
Vectors = npt.NDArray[np.float32]


@dataclass
class Sides:
    """What every variant ranks from: each chunk's vector, each query's vector, and the keyword side 1,000 deep."""

    ids: list[str]
    chunks: Vectors
    queries: dict[str, Vectors]
    keyword: dict[str, Scored]
    windows: tuple[npt.NDArray[np.int64], Vectors] | None = None  # (chunk row of each window, window vectors)
    feature_means: npt.NDArray[np.float64] | None = None  # of query_features over train

    def nearest(self, cosine: Vectors) -> Scored:
        """The ``DEPTH`` chunks of highest ``cosine`` (one value per chunk), best first."""
        top = np.argpartition(-cosine, DEPTH)[:DEPTH]
        return [(self.ids[i], float(cosine[i])) for i in top[np.argsort(-cosine[top])]]

    def vector(self, qid: str) -> Scored:
        return self.nearest(self.chunks @ self.queries[qid])

    def top_keyword(self, qid: str) -> Scored:
        return self.keyword[qid][:DEPTH]


def ndcg(data: BeirSet, split: str, rankings: dict[str, Scored]) -> float:
    """nDCG@10 of ``split`` with each document at its best chunk's rank."""
    run = {qid: doc_run(doc_of(cid) for cid, _ in ranked[:DEPTH]) for qid, ranked in rankings.items()}
    return evaluate(run, data.qrels[split], {"nDCG@10": "ndcg_cut.10"})["nDCG@10"]


def default(sides: Sides, qid: str, weight: float) -> Scored:
    return convex_fusion(sides.vector(qid), sides.top_keyword(qid), weight)


def complete_scores(sides: Sides, qid: str, weight: float) -> Scored:
    """Both sides over the union of their top ``DEPTH``, each candidate with its own score on each side."""
    cosine = sides.chunks @ sides.queries[qid]
    row = {cid: i for i, cid in enumerate(sides.ids)}
    keywords = dict(sides.keyword[qid])
    union = {cid for cid, _ in sides.vector(qid)} | {cid for cid, _ in sides.top_keyword(qid)}
    vector = sorted(((cid, float(cosine[row[cid]])) for cid in union), key=lambda h: -h[1])
    keyword = sorted(((cid, keywords.get(cid, 0.0)) for cid in union), key=lambda h: -h[1])
    return convex_fusion(vector, keyword, weight)


def pooled(side: Scored, alpha: float) -> Scored:
    """Each chunk's score raised to ``alpha`` times its document's best on this side."""
    best: dict[str, float] = {}
    for cid, score in side:
        best[doc_of(cid)] = max(best.get(doc_of(cid), score), score)
    return sorted(((cid, max(score, alpha * best[doc_of(cid)])) for cid, score in side), key=lambda h: -h[1])


def document_pooling(sides: Sides, qid: str, weight: float, alpha: float) -> Scored:
    return convex_fusion(pooled(sides.vector(qid), alpha), pooled(sides.top_keyword(qid), alpha), weight)


def vector_feedback(sides: Sides, qid: str, weight: float, m: int, beta: float) -> Scored:
    """Search again with the query vector moved towards the mean of the ``m`` best fused chunks (Rocchio)."""
    row = {cid: i for i, cid in enumerate(sides.ids)}
    first = [row[cid] for cid, _ in default(sides, qid, 0.3)[:m]]
    query = sides.queries[qid] + beta * sides.chunks[first].mean(axis=0)
    moved = sides.nearest(sides.chunks @ (query / np.linalg.norm(query)))
    return convex_fusion(moved, sides.top_keyword(qid), weight)


def query_features(vector: Scored, keyword: Scored) -> npt.NDArray[np.float64]:
    """Best keyword score, its lead over the tenth, best cosine, its lead over the tenth."""
    k = [s for _, s in keyword] + [0.0] * 10
    v = [s for _, s in vector]
    return np.array([k[0], k[0] - k[9], v[0], v[0] - v[9]])


def adaptive_weight(sides: Sides, qid: str, weight: float, feature: int, slope: float) -> Scored:
    """The keyword weight moved by ``slope`` times the query's ``feature`` above its train mean."""
    assert sides.feature_means is not None
    vector, keyword = sides.vector(qid), sides.top_keyword(qid)
    moved = weight + slope * (query_features(vector, keyword)[feature] - sides.feature_means[feature])
    return convex_fusion(vector, keyword, min(0.9, max(0.05, float(moved))))


def sub_chunk_vectors(sides: Sides, qid: str, weight: float) -> Scored:
    """Each chunk's vector score is the best of its windows'."""
    assert sides.windows is not None
    owners, vectors = sides.windows
    best = np.full(len(sides.ids), -1.0, dtype=np.float32)
    np.maximum.at(best, owners, vectors @ sides.queries[qid])
    return convex_fusion(sides.nearest(best), sides.top_keyword(qid), weight)


Variant = Callable[..., Scored]
VARIANTS: dict[str, tuple[Variant, dict[str, list[Any]]]] = {
    "default (exact vectors)": (default, {"weight": WEIGHTS}),
    "complete scores": (complete_scores, {"weight": WEIGHTS}),
    "document pooling": (document_pooling, {"weight": WEIGHTS, "alpha": [0.8, 0.9, 0.95, 1.0]}),
    "vector feedback": (vector_feedback, {"weight": WEIGHTS, "m": [3, 5, 10], "beta": [0.5, 1.0, 2.0]}),
    "query-adaptive weight": (
        adaptive_weight, {"weight": [0.3], "feature": [0, 1, 2, 3], "slope": [-1.0, -0.5, -0.25, 0.25, 0.5, 1.0]}
    ),
    "sub-chunk vectors": (sub_chunk_vectors, {"weight": WEIGHTS}),
}


def collect(retriever: Retriever, queries: dict[str, str], with_windows: bool) -> Sides:
    """Every chunk's stored vector, each query embedded by the model, the product's keyword side 1,000 deep, and
    (``with_windows``) each chunk's word windows embedded."""
    ids: list[str] = []
    rows: list[Vectors] = []
    with tempfile.TemporaryDirectory() as scratch:  # Chroma writes even to read: read a copy
        shutil.copytree(retriever.generation / "chroma", Path(scratch) / "chroma")
        client = chromadb.PersistentClient(str(Path(scratch) / "chroma"))
        for listed in client.list_collections():
            collection = client.get_collection(listed.name)
            for offset in range(0, collection.count(), 2_000):
                batch = collection.get(include=["embeddings"], limit=2_000, offset=offset)
                ids += batch["ids"]
                rows.append(np.asarray(batch["embeddings"], dtype=np.float32))
    embedder = load_embedder(ENGLISH_MODEL)
    log(f"{len(ids)} chunk vectors; embedding {len(queries)} queries and reading their keyword side")
    query_vectors = {qid: np.asarray(embedder.embed_query(text), dtype=np.float32) for qid, text in queries.items()}
    keyword = {qid: retriever.searcher.fusion_candidates(text, DEEP)[1] for qid, text in queries.items()}
    sides = Sides(ids, np.vstack(rows), query_vectors, keyword)
    if with_windows:
        sides.windows = embedded_windows(retriever, {cid: i for i, cid in enumerate(ids)})
    return sides


def embedded_windows(retriever: Retriever, row: dict[str, int]) -> tuple[npt.NDArray[np.int64], Vectors]:
    """Each chunk's windows of ``WINDOW_WORDS`` words (stride ``WINDOW_STRIDE``) after its document's title, embedded."""
    texts: list[str] = []
    owners: list[int] = []
    for corpus in retriever.docstore.corpora():
        for document in retriever.docstore.documents(corpus.name):
            for chunk in retriever.docstore.chunks(corpus.name, document.doc_id):
                words = document.text[chunk.char_start : chunk.char_end].split()
                starts = range(0, max(1, len(words) - WINDOW_WORDS + WINDOW_STRIDE), WINDOW_STRIDE)
                for start in starts if len(words) > WINDOW_WORDS else [0]:
                    texts.append(f"{document.title}\n" + " ".join(words[start : start + WINDOW_WORDS]))
                    owners.append(row[f"{corpus.name}:{document.doc_id}#{chunk.chunk}"])
    log(f"embedding {len(texts)} windows of {len(set(owners))} chunks (~7 min)")
    embedder = load_embedder(ENGLISH_MODEL)
    vectors = [v for start in range(0, len(texts), 256) for v in embedder.embed(texts[start : start + 256])]
    return np.asarray(owners, dtype=np.int64), np.vstack(vectors)


def grid(values: dict[str, list[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(values, combo)) for combo in itertools.product(*values.values())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "retrieval" / "results-scifact-variants.json")
    parser.add_argument("--no-windows", action="store_true", help="skip the sub-chunk vectors (saves ~7 min)")
    args = parser.parse_args()
    started = time.perf_counter()
    data = BeirSet.load(args.data, ("train", "test"))
    split_queries = {split: data.split_queries(split) for split in ("train", "test")}
    prepared = prepare_scifact(data)
    retriever = Retriever.open(prepared.settings)
    try:
        sides = collect(retriever, {**split_queries["train"], **split_queries["test"]}, not args.no_windows)
    finally:
        retriever.close()
    sides.feature_means = np.mean(
        [query_features(sides.vector(q), sides.top_keyword(q)) for q in split_queries["train"]], axis=0
    )
    results: dict[str, Any] = {}
    for name, (rank, values) in VARIANTS.items():
        if sides.windows is None and rank is sub_chunk_vectors:
            continue
        tried = {
            json.dumps(params): ndcg(data, "train", {q: rank(sides, q, **params) for q in split_queries["train"]})
            for params in grid(values)
        }
        chosen = max(tried, key=lambda key: tried[key])  # the first of equals, in grid order
        test = ndcg(data, "test", {q: rank(sides, q, **json.loads(chosen)) for q in split_queries["test"]})
        results[name] = {"chosen on train": json.loads(chosen), "train nDCG@10": tried[chosen], "test nDCG@10": test,
                         "grid (train nDCG@10)": tried}
        log(f"{name}: train {tried[chosen]} with {chosen}; test {test}")
    report = {"data": "BEIR SciFact: 5,183 documents; train 809 queries, test 300", "machine": machine(),
              "model": ENGLISH_MODEL, "variants": results, "seconds": round(time.perf_counter() - started, 1)}
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
