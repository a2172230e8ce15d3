"""Which queries, and how busy the machine: the two things hybrid_search's latency on SciFact depends on.

    python bench/ingest/scifact.py           # builds the index this reuses (bench/.cache/scifact)
    python bench/latency/query_sets.py       # ~3 min; writes bench/latency/results-query-sets.json

In-process (no MCP), on the SciFact index: ``hybrid_search`` and ``keyword_search`` over three
query sets — the latency table's (the first 100 test claims, ``top_k`` 5), all 300 test claims
with ``top_k`` 10, and the first 300 train claims with ``top_k`` 10 — each call timed twice:
wall-clock, and the CPU time of the process (all its threads), which other processes on the machine do
not inflate. The load average is recorded beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import BENCH_DATA, CACHE, REPO, read_jsonl, read_qrels  # noqa: E402

from mcp_server.retrieval.retriever import Retriever  # noqa: E402
from mcp_server.settings import Settings  # noqa: E402


def pick(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--index", type=Path, default=CACHE / "scifact")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "latency" / "results-query-sets.json")
    args = parser.parse_args()
    texts = {q["_id"]: q["text"] for q in read_jsonl(args.data / "queries.jsonl")}
    test = [texts[q] for q in read_qrels(args.data / "qrels" / "test.tsv")]
    train = [texts[q] for q in read_qrels(args.data / "qrels" / "train.tsv")]
    sets = {"test[:100], top_k 5 (the latency table)": (test[:100], 5), "test (300), top_k 10": (test, 10),
            "train[:300], top_k 10": (train[:300], 10)}
    retriever = Retriever.open(Settings(data_dir=args.index / "data", corpora=[args.index / "corpus"]))
    for query in test[:10]:
        retriever.searcher.search(query, mode="hybrid")
    report: dict[str, object] = {"load_average_before": os.getloadavg()}
    for label, (queries, top_k) in sets.items():
        for mode in ("hybrid", "keyword"):
            wall, cpu = [], []
            for query in queries:
                started, started_cpu = time.perf_counter(), time.process_time()
                retriever.searcher.search(query, mode=mode, top_k=top_k)  # type: ignore[arg-type]
                wall.append(time.perf_counter() - started)
                cpu.append(time.process_time() - started_cpu)
            report[f"{mode}: {label}"] = {"wall_p50_ms": pick(wall, 0.5), "wall_p95_ms": pick(wall, 0.95),
                                           "cpu_p50_ms": pick(cpu, 0.5), "cpu_p95_ms": pick(cpu, 0.95)}
            print(label, mode, report[f"{mode}: {label}"], flush=True)
    report["load_average_after"] = os.getloadavg()
    retriever.close()
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
