"""What reranking adds to hybrid search's latency, over the bundled corpora, against a local rerank server.

The rerank server is the tests' scripted stand-in (tests/mcp_server/retrieval/rerank_server.py)
on 127.0.0.1: it scores each text by a word list in microseconds, so what is measured is
ragmcp's side — loading the candidates' texts, the HTTP round trip with 50 texts, parsing,
reordering — not a model's compute (a real cross-encoder adds its own time on top). Cases,
each the median and p95 of ``Retriever.searcher.search(top_k=5)`` over the queries, after a warm-up:

* ``off``: no rerank server configured (the baseline);
* ``reranked``: a vLLM-shaped server answering (``RAGMCP_RERANK_CANDIDATES`` 50, and 10);
* ``down, each search tries``: the server's port closed and the pause after a failure set to
  0, so every search pays a refused connection and a log line (the worst case of a down server);
* ``down, paused``: the same with the default 30 s pause: all but the first search skip the server.

    .venv/bin/python bench/retrieval/rerank_overhead.py
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from common import CACHE, REPO  # noqa: E402

from mcp_server.indexing.ingest import ingest  # noqa: E402
from mcp_server.retrieval import rerank  # noqa: E402
from mcp_server.retrieval.retriever import Retriever  # noqa: E402
from mcp_server.settings import Settings  # noqa: E402
from tests.mcp_server.retrieval.rerank_server import RerankStandIn  # noqa: E402

CORPORA = ["handbook", "engineering", "products", "reports", "support"]
QUERIES = [
    "how far ahead must annual leave be requested", "what to do when the VPN does not connect",
    "parental leave for a new baby", "deploy fails with a migration lock", "battery life of the widget",
    "who approves travel expenses", "quarterly revenue growth", "reset a forgotten password",
    "warranty period for returns", "on-call rotation and escalation",
]  # fmt: skip
ROUNDS = 10
RESULTS = Path(__file__).with_name("results-rerank-overhead.json")


def timed(retriever: Retriever) -> dict[str, float]:
    """Median and p95 milliseconds of a 5-hit hybrid search, over ROUNDS rounds of the queries."""
    for query in QUERIES:
        retriever.searcher.search(query, top_k=5)
    times = []
    for _ in range(ROUNDS):
        for query in QUERIES:
            started = time.perf_counter()
            retriever.searcher.search(query, top_k=5)
            times.append((time.perf_counter() - started) * 1000)
    return {
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(statistics.quantiles(times, n=20)[18], 2),
        "searches": len(times),
    }


def measure(settings: Settings, **rerank_settings: object) -> dict[str, float]:
    retriever = Retriever.open(settings.updated(**rerank_settings))
    try:
        return timed(retriever)
    finally:
        retriever.close()


def main() -> None:
    logging.disable(logging.WARNING)  # the down cases' one line per failed search
    settings = Settings(data_dir=CACHE / "grounding", corpora=[REPO / "corpora" / name for name in CORPORA])
    ingest(settings)
    results: dict[str, dict[str, float]] = {"off": measure(settings)}
    with RerankStandIn(prefer=["leave", "vpn", "deploy"]) as server:
        on = {"rerank_url": server.url, "rerank_model": "bge-reranker-v2-m3"}
        results["reranked, 50 candidates"] = measure(settings, **on)
        results["reranked, 10 candidates"] = measure(settings, **on, rerank_candidates=10)
        sent = len(server.received)
    pause = rerank.PAUSE_AFTER_FAILURE_S
    rerank.PAUSE_AFTER_FAILURE_S = 0.0
    results["down, each search tries"] = measure(settings, **on)
    rerank.PAUSE_AFTER_FAILURE_S = pause
    results["down, paused"] = measure(settings, **on)
    base = results["off"]["p50_ms"]
    for name, row in results.items():
        row["added_p50_ms"] = round(row["p50_ms"] - base, 2)
        print(f"{name:26} p50 {row['p50_ms']:7.2f} ms  p95 {row['p95_ms']:7.2f} ms  added p50 {row['added_p50_ms']:+.2f} ms")
    RESULTS.write_text(json.dumps({"requests_answered": sent, "cases": results}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
