"""Screening embedding models through the product on a sample of a retrieval set: quality, ingest speed, query latency.

    python bench/retrieval/screen_models.py cmrc2018 --documents 120 --queries 300
    python bench/retrieval/screen_models.py scifact --documents 600 --queries 150

A cheap first look before full runs (scifact.py, cmrc2018.py, hotpotqa.py with --model): a
seeded sample of the set's test questions, the documents they are about, and other documents
drawn at random up to ``--documents``, indexed once per model by the product's ingestion
(``bench/.cache/retrieval/screen-<set>-<documents>[-<model>]``). For each model: the metrics of
vector, keyword and hybrid search with their defaults, chunks embedded per second, and the
p50/p95 of one search per mode. Numbers on a sample only compare the models with each other.
Writes bench/retrieval/screening-<set>.json.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]  # this checkout's mcp_server, bench/, here

from common import BENCH_DATA, CACHE, REPO, log, read_jsonl  # noqa: E402
from harness import MODES, BeirSet, doc_run, machine, markdown_table, prepare_index, score_runs  # noqa: E402

from mcp_server.settings.embedding import ENGLISH_MODEL, MULTILINGUAL_MODEL  # noqa: E402
from mcp_server.retrieval.retriever import Retriever  # noqa: E402

SETS = {  # folder, language, measures, chunks per query
    "scifact": ("scifact", "en", {"nDCG@10": "ndcg_cut.10", "Recall@100": "recall.100"}, 100),
    "cmrc2018": ("cmrc2018-dev", "zh", {"Recall@1": "recall.1", "Recall@5": "recall.5", "MRR@10": "recip_rank"}, 10),
    "hotpotqa": ("hotpotqa-dev500/beir", "en", {"nDCG@10": "ndcg_cut.10", "Recall@5": "recall.5"}, 20),
}


def sample(data: BeirSet, documents: int, queries: int, seed: int, folder: Path) -> BeirSet:
    """A BEIR folder with ``queries`` test questions, their documents, and random others up to ``documents``."""
    rng = random.Random(seed)
    qrels = data.qrels["test"]
    chosen = sorted(rng.sample(sorted(qrels), min(queries, len(qrels))))
    needed = {doc for q in chosen for doc in qrels[q]}
    corpus = list(read_jsonl(data.corpus))
    others = [d["_id"] for d in corpus if d["_id"] not in needed]
    keep = needed | set(rng.sample(others, max(0, min(len(others), documents - len(needed)))))
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for document in corpus:
            if document["_id"] in keep:
                f.write(json.dumps(document, ensure_ascii=False) + "\n")
    return BeirSet(folder / "corpus.jsonl", {q: data.queries[q] for q in chosen}, {"test": {q: qrels[q] for q in chosen}})


def timed_runs(prepared_settings: object, queries: dict[str, str], top_k: int) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, float]]]:
    """Document runs per mode, and each mode's search latency p50/p95 in milliseconds."""
    retriever = Retriever.open(prepared_settings)  # type: ignore[arg-type]
    try:
        retriever.searcher.search("warm up", mode="hybrid", top_k=top_k)
        runs, latency = {}, {}
        for mode in MODES:
            seconds, run = [], {}
            for qid, text in queries.items():
                started = time.perf_counter()
                hits = retriever.searcher.search(text, mode=mode, top_k=top_k)
                seconds.append(time.perf_counter() - started)
                run[qid] = doc_run(hit.citation.doc_id for hit in hits)
            runs[mode] = run
            cuts = statistics.quantiles(seconds, n=20)
            latency[mode] = {"p50 ms": round(1000 * statistics.median(seconds), 1), "p95 ms": round(1000 * cuts[18], 1)}
        return runs, latency
    finally:
        retriever.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("set", choices=sorted(SETS))
    parser.add_argument("--documents", type=int, default=300)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--models", nargs="+", default=[ENGLISH_MODEL, MULTILINGUAL_MODEL])
    args = parser.parse_args()

    folder, language, measures, top_k = SETS[args.set]
    name = f"screen-{args.set}-{args.documents}"
    data = sample(BeirSet.load(BENCH_DATA / folder), args.documents, args.queries, args.seed, CACHE / "retrieval" / name / "beir")
    report: dict[str, object] = {"set": args.set, "documents": args.documents, "queries": len(data.queries),
                                 "seed": args.seed, "machine": machine(), "models": {}}  # fmt: skip
    for model in args.models:
        prepared = prepare_index(name, data, f"A sample of {args.set}.", language=language, model=model)
        runs, latency = timed_runs(prepared.settings, data.queries, top_k)
        scores = score_runs(runs, data.qrels["test"], measures)
        speed = prepared.chunks_embedded / prepared.seconds if prepared.chunks_embedded else None
        report["models"][model] = {  # type: ignore[index]
            "scores": scores, "latency": latency, "chunks_embedded": prepared.chunks_embedded,
            "ingest_seconds": round(prepared.seconds, 1), "chunks_per_second": speed and round(speed, 2),
        }  # fmt: skip
        print(markdown_table(f"{args.set} sample, {model}", scores))
        log(f"{model}: {prepared.chunks_embedded} chunks in {prepared.seconds:.0f} s; latency {latency}")
    out = REPO / "bench" / "retrieval" / f"screening-{args.set}.json"
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
