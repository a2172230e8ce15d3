"""The scale table: tool latency over MCP stdio, ingestion, memory and disk at 10k, 100k (and 1M) chunks.

    python bench/ingest/scifact.py                         # once: the SciFact index and its embedding cache
    python bench/scale/scale.py --chunks 10000 100000      # ~25 min on 2 cores; writes bench/scale/results.json
    python bench/scale/scale.py --chunks 1000000           # ~45 min
    python bench/scale/scale.py --chunks 1000000 --tools-only --label ...  # step 4 again, on that index

Each size is SciFact copied under new document ids (``c<copy>-<id>``) until the corpus
holds about that many chunks. The texts are unchanged, so the embedding cache seeded from
the SciFact index serves every vector and the model is not what is measured — except for
a sprinkle of changed texts (``--changed-share`` of the copies' documents get a sentence of
their own appended), so that not every chunk has an exact twin. Per size:

1. ingest into a fresh index in a child process: seconds, seconds spent embedding (the
   changed texts), chunks/s without embedding, the child's peak RSS and that of the largest
   of its keyword writer processes;
2. re-ingest with nothing changed (a child process): seconds and peak RSS (what a server's
   start-up check of the folders costs, in the child process it runs in);
3. disk: bytes of the published generation;
4. over MCP stdio (a spawned ``ragmcp serve``, the real SDK client): ``hybrid_search``,
   ``vector_search``, ``keyword_search`` (SciFact test claims as queries, ``top_k`` 10)
   and ``get_document`` p50/p95, after 10 warm-up calls; then the server's peak RSS. Also the
   seconds from spawning the server to its ``initialize`` reply and to its first search's answer
   (which waits for the private copy of the vectors and the first readers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "latency"))

from common import BENCH_DATA, CACHE, REPO, log, read_jsonl, read_qrels, seed_embedding_cache  # noqa: E402
from mcp_latency import percentiles, timed  # noqa: E402

import yaml  # noqa: E402

CHUNKS_PER_DOCUMENT = 8906 / 5183  # SciFact's, with the default chunking
INGEST_CHILD = """
import json, resource, sys
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
report = ingest(Settings())
print(json.dumps({"seconds": report.seconds, "embed_seconds": report.embed_seconds,
                  "chunks_written": report.chunks_written, "chunks_embedded": report.chunks_embedded,
                  "generation": report.generation,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "writer_peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def write_copies(corpus_jsonl: Path, folder: Path, chunks: int, changed_share: float) -> int:
    """SciFact copied under new ids until about ``chunks`` chunks; returns the document count."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "corpus.toml").write_text(
        'name = "scale"\ndescription = "SciFact abstracts, copied under new ids."\n', encoding="utf-8"
    )
    docs = list(read_jsonl(corpus_jsonl))
    wanted = round(chunks / CHUNKS_PER_DOCUMENT)
    every = round(1 / changed_share) if changed_share > 0 else 0
    for n in range(wanted):
        copy, doc = divmod(n, len(docs))
        source = docs[doc]
        text = source["text"]
        if copy > 0 and every and n % every == 0:
            text += f"\nThis copy, number {copy}, was revised for the scale benchmark."
        front = yaml.safe_dump({"title": source["title"] or source["_id"]}, allow_unicode=True, width=10_000)
        (folder / f"c{copy}-{source['_id']}.md").write_text(f"---\n{front}---\n{text}\n", encoding="utf-8")
    return wanted


def run_ingest(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", INGEST_CHILD], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def children_peak_rss_mib() -> float:
    """The largest VmHWM among this process's direct children (the stdio server)."""
    peak = 0.0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(os.getpid()) and "VmHWM" in fields:
            peak = max(peak, int(fields["VmHWM"].split()[0]) / 1024)
    return peak


async def latency(
    env: dict[str, str], queries: list[str], doc_ids: list[str], calls: int, settle_s: float
) -> dict[str, Any]:
    server = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server", "serve"], env=env)
    results: dict[str, Any] = {}
    spawned = time.perf_counter()
    async with Client(server) as client:
        results["initialize_s"] = round(time.perf_counter() - spawned, 2)
        await client.call_tool("hybrid_search", {"query": queries[0], "top_k": 10})
        results["first_search_s"] = round(time.perf_counter() - spawned, 2)
        await anyio.sleep(settle_s)  # the server's start-up check of the corpus folders runs meanwhile
        for query in queries[:10]:
            await client.call_tool("hybrid_search", {"query": query, "top_k": 10})
        for tool in ("hybrid_search", "vector_search", "keyword_search"):
            it = iter(queries)
            results[tool] = percentiles(
                await timed(lambda: client.call_tool(tool, {"query": next(it), "top_k": 10}), calls)
            )
        docs = iter(doc_ids)
        results["get_document"] = percentiles(
            await timed(lambda: client.call_tool("get_document", {"doc_id": next(docs), "window": 1}), calls)
        )
        results["server_peak_rss_mib"] = round(children_peak_rss_mib(), 1)
    return results


def measure_tools_only(args: argparse.Namespace, chunks: int, queries: list[str]) -> dict[str, Any]:
    """Step 4 alone, on the index an earlier run left at this size (its corpus and data dir)."""
    workdir = args.workdir / str(chunks)
    corpus, data_dir = workdir / "corpus", workdir / "data"
    if not (data_dir / "index" / "CURRENT").is_file():
        raise SystemExit(f"no index at {data_dir}; run without --tools-only first")
    env = {**os.environ, "RAGMCP_DATA_DIR": str(data_dir), "RAGMCP_CORPORA": str(corpus)}
    doc_ids = [f"scale:{path.stem}#0" for path in sorted(corpus.glob("c0-*.md"))[: args.calls]]
    log(f"{chunks} chunks: {args.calls} calls per tool over stdio, on the index built before")
    return {"chunks_asked": chunks, "index_reused": True, "tools": anyio.run(latency, env, queries, doc_ids, args.calls, args.settle_s)}


def measure(args: argparse.Namespace, chunks: int, queries: list[str]) -> dict[str, Any]:
    workdir = args.workdir / str(chunks)
    corpus, data_dir = workdir / "corpus", workdir / "data"
    shutil.rmtree(data_dir, ignore_errors=True)
    log(f"{chunks} chunks: writing the corpus")
    documents = write_copies(args.data / "corpus.jsonl", corpus, chunks, args.changed_share)
    seed_embedding_cache(data_dir / "embedding-cache.sqlite", args.seed_cache)
    env = {**os.environ, "RAGMCP_DATA_DIR": str(data_dir), "RAGMCP_CORPORA": str(corpus)}
    log(f"{chunks} chunks: ingesting {documents} documents")
    first = run_ingest(env)
    log(f"{chunks} chunks: re-ingest, nothing changed")
    unchanged = run_ingest(env)
    generation = data_dir / "index" / (data_dir / "index" / "CURRENT").read_text().strip()
    doc_ids = [f"scale:{path.stem}#0" for path in sorted(corpus.glob("c0-*.md"))[: args.calls]]
    log(f"{chunks} chunks: {args.calls} calls per tool over stdio")
    tools = anyio.run(latency, env, queries, doc_ids, args.calls, args.settle_s)
    without_embedding = first["seconds"] - first["embed_seconds"]
    return {
        "chunks": first["chunks_written"], "documents": documents,
        "ingest_s": round(first["seconds"], 1), "embed_s": round(first["embed_seconds"], 1),
        "chunks_embedded": first["chunks_embedded"],
        "chunks_per_s_without_embedding": round(first["chunks_written"] / without_embedding, 1),
        "ingest_peak_rss_mib": round(first["peak_rss_mib"], 1),
        "keyword_writer_peak_rss_mib": round(first["writer_peak_rss_mib"], 1),
        "unchanged_reingest_s": round(unchanged["seconds"], 2),
        "unchanged_reingest_peak_rss_mib": round(unchanged["peak_rss_mib"], 1),
        "disk_mib": round(disk_bytes(generation) / 2**20, 1),
        "tools": tools,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--workdir", type=Path, default=CACHE / "scale")
    parser.add_argument("--seed-cache", type=Path, default=CACHE / "scifact" / "data" / "embedding-cache.sqlite")
    parser.add_argument("--changed-share", type=float, default=0.005)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument(
        "--tools-only", action="store_true",
        help="only the MCP latencies and serving RSS, on the index a previous run built (same index format)",
    )
    parser.add_argument(
        "--settle-s", type=float, default=0.0,
        help="seconds to wait after the first search before timing (the server checks the corpus folders on start)",
    )
    parser.add_argument("--label", default="after", help="the key this run is stored under in --out")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "scale" / "results.json")
    args = parser.parse_args()
    if not args.seed_cache.is_file():
        raise SystemExit(f"no embedding cache at {args.seed_cache}; build the SciFact index: python bench/ingest/scifact.py")

    texts = {q["_id"]: q["text"] for q in read_jsonl(args.data / "queries.jsonl")}
    qrels = read_qrels(args.data / "qrels" / "test.tsv")
    queries = [texts[qid] for qid in qrels][: args.calls]
    run = measure_tools_only if args.tools_only else measure
    runs = [run(args, chunks, queries) for chunks in args.chunks]
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results[args.label] = {
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "changed_share": args.changed_share, "runs": runs,
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
