"""HTTP load on the SciFact index: throughput and latency at 32 concurrent clients, 1 vs 2 workers.

    python bench/ingest/scifact.py        # builds the index this reuses (bench/.cache/scifact)
    python bench/latency/http_load.py     # ~2 min; writes bench/latency/results-http-load.json

For each configuration a fresh ``ragmcp serve --transport http --workers N`` (stateless,
127.0.0.1) is started; ``--clients`` concurrent clients then send MCP ``tools/call``
requests back to back, cycling through the five tools (queries are the SciFact test
claims), first for ``--warmup`` seconds (not measured; every worker warms up) and then for
``--seconds``. Each client is a plain JSON-RPC-over-HTTP loop (httpx, one POST per call,
as the stateless transport allows), so that the load generator's own CPU stays small next
to the server's. Reports requests per second, p50/p95/p99 latency overall and per tool,
and errors (HTTP failures and tool errors alike), which must be zero.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH_DATA, CACHE, REPO, log, read_jsonl, read_qrels  # noqa: E402
from mcp_latency import free_port, percentiles, start_http  # noqa: E402

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def tool_calls(queries: list[str], doc_ids: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The request mix: the five tools in turn, each with its own rotating argument."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for i, query in enumerate(queries):
        calls += [
            ("hybrid_search", {"query": query, "top_k": 5}),
            ("vector_search", {"query": query, "top_k": 5}),
            ("keyword_search", {"query": query, "top_k": 5}),
            ("get_document", {"doc_id": doc_ids[i % len(doc_ids)], "window": 1}),
            ("sql_query", {"sql": f"SELECT name, monthly_price FROM products WHERE monthly_price > {i % 50}"}),
        ]
    return calls


class Load:
    """Clients calling tools back to back; samples are kept only while ``measuring``."""

    def __init__(self, url: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.url = url
        self.calls = calls
        self.measuring = False
        self.samples: dict[str, list[float]] = {}
        self.errors: list[str] = []

    async def client(self, offset: int, until: float) -> None:
        async with httpx.AsyncClient(timeout=120) as http:
            for n in itertools.count(offset * 7):
                if time.monotonic() >= until:
                    return
                name, arguments = self.calls[n % len(self.calls)]
                body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
                started = time.perf_counter()
                error = None
                try:
                    response = await http.post(self.url, json=body, headers=HEADERS)
                    reply = response.json() if response.status_code == 200 else None
                    if reply is None or "error" in reply or reply["result"].get("isError"):
                        error = f"{name}: HTTP {response.status_code} {response.text[:200]}"
                except httpx.HTTPError as e:
                    error = f"{name}: {type(e).__name__}: {e}"
                elapsed = time.perf_counter() - started
                if self.measuring:
                    if error is not None:
                        self.errors.append(error)
                    else:
                        self.samples.setdefault(name, []).append(elapsed)

    async def run(self, clients: int, warmup_s: float, seconds: float) -> float:
        """Run the load; returns the measured wall time."""
        start = time.monotonic()
        until = start + warmup_s + seconds
        async with anyio.create_task_group() as group:
            for offset in range(clients):
                group.start_soon(self.client, offset, until)
            await anyio.sleep(warmup_s)
            self.measuring = True
            measured_from = time.monotonic()
        return time.monotonic() - measured_from


def measure(env: dict[str, str], workers: int, calls: list[tuple[str, dict[str, Any]]], args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    server = start_http(env, port, workers)
    try:
        load = Load(f"http://127.0.0.1:{port}/mcp", calls)
        wall = anyio.run(load.run, args.clients, args.warmup, args.seconds)
    finally:
        server.terminate()
        server.wait()
    every = [s for samples in load.samples.values() for s in samples]
    return {
        "workers": workers,
        "clients": args.clients,
        "seconds": round(wall, 1),
        "requests": len(every),
        "errors": len(load.errors),
        "error_examples": load.errors[:5],
        "throughput_rps": round(len(every) / wall, 1),
        "latency": percentiles(every),
        "per_tool": {name: percentiles(samples) for name, samples in sorted(load.samples.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--index", type=Path, default=CACHE / "scifact")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "latency" / "results-http-load.json")
    args = parser.parse_args()

    env = {**os.environ, "RAGMCP_DATA_DIR": str(args.index / "data"), "RAGMCP_CORPORA": str(args.index / "corpus")}
    texts = {q["_id"]: q["text"] for q in read_jsonl(args.data / "queries.jsonl")}
    qrels = read_qrels(args.data / "qrels" / "test.tsv")
    queries = [texts[qid] for qid in qrels]
    doc_ids = [f"scifact:{doc}#0" for qid in qrels for doc in list(qrels[qid])[:1]]
    calls = tool_calls(queries, doc_ids)

    runs = []
    load_before = os.getloadavg()
    for workers in args.workers:
        log(f"{args.clients} clients, {workers} worker(s): {args.warmup:.0f} s warm-up, {args.seconds:.0f} s measured")
        runs.append(measure(env, workers, calls, args))
    report = {"cpus": os.cpu_count(), "load_average": {"before": load_before, "after": os.getloadavg()}, "runs": runs}
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    print(f"| workers | requests/s | p50 / p95 / p99 (ms) | errors |  ({args.clients} clients, {os.cpu_count()} CPUs)")
    print("|---|---|---|---|")
    for run in runs:
        lat = run["latency"]
        print(f"| {run['workers']} | {run['throughput_rps']} | {lat['p50_ms']} / {lat['p95_ms']} / {lat['p99_ms']} | {run['errors']} |")


if __name__ == "__main__":
    main()
