"""Fit the affine map that puts a model's cosine similarities on all-MiniLM-L6-v2's scale.

    python bench/retrieval/fit_model_scales.py                       # multilingual-e5-small: ~25 min on 2 shared cores
    python bench/retrieval/fit_model_scales.py --model bge-small-en  # ~5 min

With ``RAGMCP_EMBEDDING_MODEL=auto`` one search may cover corpora of both models, and their neighbours are
merged (and fused with keyword scores) by similarity. E5's similarities sit high and close together (unrelated
passages about 0.75-0.8; bge-small-en's are high too), MiniLM's spread from about 0 to 0.8, so without a common
scale any E5 corpus would outrank every MiniLM one. Both models are run on the same English texts, SciFact *train* queries (the test
queries are never used) and a seeded sample of abstracts: for every query and rank r = 1..TOP, the model's r-th best
similarity is paired with MiniLM's r-th best, and a least-squares line through the pairs maps it onto MiniLM.
The product applies the map to the model's similarities always (mcp_server.embedding.choice), so a corpus's scores do
not depend on what else a search covers.

Writes the model's entry in bench/retrieval/model-scales.json (the slope and offset, and how well the scales
agree after mapping).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]  # this checkout's mcp_server, bench/, here

from common import BENCH_DATA, REPO, log, read_jsonl  # noqa: E402
from harness import BeirSet  # noqa: E402

from mcp_server.documents.window import embedding_text  # noqa: E402
from mcp_server.embedding.loading import Embedder, load_embedder  # noqa: E402
import argparse  # noqa: E402

from mcp_server.settings.embedding import ENGLISH_MODEL, MULTILINGUAL_MODEL  # noqa: E402

QUERIES = 200
DOCUMENTS = 1_500
TOP = 20
SEED = 33


def similarities(embedder: Embedder, queries: list[str], documents: list[str]) -> np.ndarray:
    """Cosine similarity of every query (embedded as a query) with every document (as a passage)."""
    passages = np.stack(embedder.embed(documents))
    asked = np.stack([embedder.embed_query(q) for q in queries])
    return asked @ passages.T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=MULTILINGUAL_MODEL, help="the model spec to map onto MiniLM's scale")
    args = parser.parse_args()
    data = BeirSet.load(BENCH_DATA / "scifact", splits=("train",))
    rng = random.Random(SEED)
    qrels = data.qrels["train"]
    chosen = sorted(rng.sample(sorted(qrels), QUERIES))
    relevant = {doc for q in chosen for doc in qrels[q]}
    corpus = {d["_id"]: embedding_text(d.get("title", ""), d["text"]) for d in read_jsonl(data.corpus)}
    others = sorted(set(corpus) - relevant)
    ids = sorted(relevant | set(rng.sample(others, DOCUMENTS - len(relevant))))
    texts, questions = [corpus[i] for i in ids], [data.queries[q] for q in chosen]
    log(f"embedding {len(texts)} abstracts and {len(questions)} train queries with each model")
    minilm = similarities(load_embedder(ENGLISH_MODEL), questions, texts)
    other = similarities(load_embedder(args.model), questions, texts)
    x = -np.sort(-other, axis=1)[:, :TOP].ravel()
    y = -np.sort(-minilm, axis=1)[:, :TOP].ravel()
    slope, offset = np.polyfit(x, y, 1)
    mapped = slope * other + offset
    position = {doc: i for i, doc in enumerate(ids)}
    rel = [(qi, position[d]) for qi, q in enumerate(chosen) for d in qrels[q]]

    def summary(matrix: np.ndarray) -> dict[str, float]:
        top = -np.sort(-matrix, axis=1)
        return {
            "rank 1 mean": round(float(top[:, 0].mean()), 4),
            f"rank {TOP} mean": round(float(top[:, TOP - 1].mean()), 4),
            "all pairs mean": round(float(matrix.mean()), 4),
            "relevant pairs mean": round(float(np.mean([matrix[q, d] for q, d in rel])), 4),
        }

    report = {
        "data": f"SciFact train: {QUERIES} queries (seed {SEED}), {len(ids)} abstracts ({len(relevant)} relevant)",
        "fit": f"least squares of MiniLM's r-th best similarity on the model's, r = 1..{TOP}, per query",
        "slope": round(float(slope), 4),
        "offset": round(float(offset), 4),
        "minilm": summary(minilm),
        "model": summary(other),
        "model mapped": summary(mapped),
    }
    out = REPO / "bench" / "retrieval" / "model-scales.json"
    known = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    out.write_text(json.dumps({**known, args.model: report}, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
