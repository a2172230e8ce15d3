"""Where a keyword search's time goes on a big index, and what the common-terms pruning saves there.

    python bench/scale/scale.py --chunks 100000               # builds bench/.cache/scale/100000
    python bench/scale/keyword_cpu.py --chunks 100000         # ~2 min; add --profile for a cProfile listing

In-process, on the keyword shards of the index ``bench/scale/scale.py`` built at that size:
for each ``bm25_common_term_share`` given, the CPU time (``time.process_time``) of the
first ``--queries`` SciFact test claims, once as hybrid search's keyword side runs them
(``candidate_depth`` hits, normalised scores) and once as ``keyword_search`` does (``top_k``
10), on a fresh index each share (its posting cache empty at the start, ``--cache-mb`` 0 keeps it
empty; the second pass finds what the first one kept). With ``--profile``, the functions that take the most time at the first share. Writes
bench/scale/results-keyword-cpu.json (``--out``) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import BENCH_DATA, CACHE, REPO, read_jsonl, read_qrels  # noqa: E402

from mcp_server.settings import Settings  # noqa: E402
from mcp_server.stores.keyword import WhooshIndex  # noqa: E402


def cpu_ms(index: WhooshIndex, queries: list[str], k: int, normalize: bool) -> dict[str, float]:
    seconds = []
    for text in queries:
        started = time.process_time()
        index.search(text, k, normalize=normalize, require_phrases=not normalize)
        seconds.append(time.process_time() - started)
    return {
        "p50": round(1000 * statistics.median(seconds), 1),
        "p95": round(1000 * statistics.quantiles(seconds, n=20)[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000, help="the size bench/scale/scale.py built")
    parser.add_argument("--shares", type=float, nargs="+", default=[1.0, 0.05, 0.02, 0.01])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--cache-mb", type=int, default=None,
        help="posting cache of each index measured (default: the product's keyword_cache_mb; 0: every search decodes)",
    )
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "scale" / "results-keyword-cpu.json")
    args = parser.parse_args()

    data_dir = CACHE / "scale" / str(args.chunks) / "data"
    generation = data_dir / "index" / (data_dir / "index" / "CURRENT").read_text().strip()
    texts = {q["_id"]: q["text"] for q in read_jsonl(args.data / "queries.jsonl")}
    queries = [texts[qid] for qid in read_qrels(args.data / "qrels" / "test.tsv")][: args.queries]
    settings = Settings(data_dir=data_dir)
    results: dict[str, object] = {
        "chunks": args.chunks, "cache_mb": settings.retrieval.keyword_cache_mb if args.cache_mb is None else args.cache_mb,
        "load_average_before": os.getloadavg(),
    }
    rows = {}
    for share in args.shares:
        index = WhooshIndex(
            generation / "whoosh", bm25_b=settings.bm25.b, bm25_k1=settings.bm25.k1, idf=settings.bm25.idf,
            common_term_share=share, common_term_min_chunks=settings.bm25.common_term_min_chunks,
            posting_cache_bytes=(settings.retrieval.keyword_cache_mb if args.cache_mb is None else args.cache_mb) * 2**20,
        )  # fmt: skip
        cpu_ms(index, queries[:10], 10, False)  # warm the file cache
        if args.profile and share == args.shares[0]:
            profiler = cProfile.Profile()
            profiler.runcall(cpu_ms, index, queries, settings.retrieval.candidate_depth, True)
            listing = io.StringIO()
            pstats.Stats(profiler, stream=listing).sort_stats("tottime").print_stats(25)
            print(listing.getvalue())
        rows[str(share)] = {
            "hybrid_keyword_side_ms": cpu_ms(index, queries, settings.retrieval.candidate_depth, True),
            "keyword_search_ms": cpu_ms(index, queries, 10, False),
        }
        index.close()
    results["cpu_ms"] = rows
    results["load_average_after"] = os.getloadavg()
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"| share ({args.chunks} chunks, {len(queries)} claims) | hybrid's keyword side CPU p50 / p95 (ms) "
          "| keyword_search CPU p50 / p95 (ms) |")
    print("|---|---|---|")
    for share, row in rows.items():
        h, k = row["hybrid_keyword_side_ms"], row["keyword_search_ms"]
        print(f"| {share} | {h['p50']} / {h['p95']} | {k['p50']} / {k['p95']} |")


if __name__ == "__main__":
    main()
