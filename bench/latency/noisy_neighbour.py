"""A noisy neighbour: one tenant's heaviest SQL beside another tenant's searches, on one team server.

    python bench/ingest/scifact.py               # builds the index this reuses (bench/.cache/scifact)
    python bench/latency/noisy_neighbour.py      # ~3 min; writes bench/latency/results-noisy-neighbour.json
    python bench/latency/noisy_neighbour.py --bundled   # the bundled corpora instead (indexed on first use)

One ``ragmcp serve --transport http`` worker (127.0.0.1) on the SciFact index and the demo
database, with a tokens file of two clients:

- **quiet**: every corpus, no SQL, limits that never throttle it (it sends one call at a
  time, so what it measures is search time, not its own rate limit). It sends
  ``hybrid_search`` calls (SciFact test claims, or with ``--bundled`` the questions of
  bench/agent/bundled-questions.jsonl; ``top_k`` 5) back to back; its latencies are what is measured.
- **noisy**: SQL only, at the default limits (120 requests a minute, burst 20, 4 in
  flight). ``--noisy-clients`` clients share its token and send, back to back, the heaviest
  statements we could write within the limits, in turn: three two-argument ``trim()`` calls
  over 98 KB strings (CPU inside single function calls, so the worker process is killed at
  the deadline), an endless recursive CTE and a sorted 7-way cross join (stopped by the
  progress handler at ``sql_timeout_s``, 5 s).

The quiet client runs ``--seconds`` alone (idle), then ``--seconds`` with the noisy clients
running (after ``--warmup`` seconds of noise). Reports the quiet client's p50/p95 in both
phases and their ratio, and what the noisy client's calls got.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH_DATA, CACHE, DEMO_DATABASE, REPO, log, read_jsonl, read_qrels  # noqa: E402
from http_clients import HEADERS, UNTHROTTLED  # noqa: E402
from mcp_latency import free_port, percentiles, start_http  # noqa: E402

from mcp_server.grants import Grant  # noqa: E402
from mcp_server.indexing.ingest import ingest  # noqa: E402
from mcp_server.settings import Settings, bundled_corpus_dirs  # noqa: E402
from mcp_server.team.tokens import ClientLimits, add_client  # noqa: E402

BIG = "hex(zeroblob(49000))"
TRIM_SET = "(replace(hex(zeroblob(4000)), '0', '1') || '0')"
CROSS_JOIN = "FROM employees a, employees b, employees c, employees d, employees e, employees f, employees g"
HEAVY_SQL = [
    "SELECT " + ", ".join([f"length(trim({BIG}, {TRIM_SET}))"] * 3),
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    f"SELECT a.name, g.name {CROSS_JOIN} ORDER BY random() LIMIT 1",
]


async def call(http: httpx.AsyncClient, url: str, n: int, name: str, arguments: dict[str, Any]) -> str:
    """One ``tools/call``; its outcome: ok, a tool error's first words, or the HTTP status."""
    body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = await http.post(url, json=body)
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    result = response.json().get("result", {})
    return " ".join(result["content"][0]["text"].split()[:12]) if result.get("isError") else "ok"


async def quiet_loop(url: str, token: str, queries: list[str], seconds: float) -> tuple[list[float], Counter[str]]:
    samples: list[float] = []
    outcomes: Counter[str] = Counter()
    until = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=120, headers={**HEADERS, "Authorization": f"Bearer {token}"}) as http:
        n = 0
        while time.monotonic() < until:
            started = time.perf_counter()
            outcome = await call(http, url, n, "hybrid_search", {"query": queries[n % len(queries)], "top_k": 5})
            outcomes[outcome] += 1
            if outcome == "ok":
                samples.append(time.perf_counter() - started)
            n += 1
    return samples, outcomes


async def noisy_loop(url: str, token: str, offset: int, stop: anyio.Event, outcomes: Counter[str]) -> None:
    async with httpx.AsyncClient(timeout=120, headers={**HEADERS, "Authorization": f"Bearer {token}"}) as http:
        n = offset
        while not stop.is_set():
            outcomes[await call(http, url, n, "sql_query", {"sql": HEAVY_SQL[n % len(HEAVY_SQL)]})] += 1
            n += 1


async def run(url: str, tokens: dict[str, str], queries: list[str], args: argparse.Namespace) -> dict[str, Any]:
    idle, idle_outcomes = await quiet_loop(url, tokens["quiet"], queries, args.seconds)
    noisy_outcomes: Counter[str] = Counter()
    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        for offset in range(args.noisy_clients):
            group.start_soon(noisy_loop, url, tokens["noisy"], offset, stop, noisy_outcomes)
        await anyio.sleep(args.warmup)
        loaded, loaded_outcomes = await quiet_loop(url, tokens["quiet"], queries, args.seconds)
        stop.set()
    ratio = percentiles(loaded)["p50_ms"] / percentiles(idle)["p50_ms"]
    return {
        "quiet_idle": {**percentiles(idle), "outcomes": dict(idle_outcomes)},
        "quiet_beside_noisy": {**percentiles(loaded), "outcomes": dict(loaded_outcomes)},
        "p50_ratio": round(ratio, 2),
        "noisy_outcomes": dict(noisy_outcomes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--index", type=Path, default=CACHE / "scifact")
    parser.add_argument("--bundled", action="store_true", help="the bundled corpora and their questions")
    parser.add_argument("--noisy-clients", type=int, default=8)
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "latency" / "results-noisy-neighbour.json")
    args = parser.parse_args()

    if args.bundled:
        args.index = CACHE / "bundled"
        queries = [q["question"] for q in read_jsonl(REPO / "bench" / "agent" / "bundled-questions.jsonl")]
        if not (args.index / "data" / "index").is_dir():
            ingest(Settings(data_dir=args.index / "data"))
        corpora = os.pathsep.join(str(path) for path in bundled_corpus_dirs())
    else:
        texts = {q["_id"]: q["text"] for q in read_jsonl(args.data / "queries.jsonl")}
        queries = [texts[qid] for qid in read_qrels(args.data / "qrels" / "test.tsv")]
        corpora = str(args.index / "corpus")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        tokens_file = Path(scratch) / "tokens.json"
        tokens = {
            "quiet": add_client(tokens_file, "quiet", Grant(corpora="*", sql=False), UNTHROTTLED),
            "noisy": add_client(tokens_file, "noisy", Grant(corpora=(), sql=True), ClientLimits()),
        }
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
        env |= {"RAGMCP_DATA_DIR": str(args.index / "data"), "RAGMCP_CORPORA": corpora, "RAGMCP_DATABASE": str(DEMO_DATABASE),
                "RAGMCP_TOKENS_FILE": str(tokens_file), "RAGMCP_AUDIT_LOG": str(Path(scratch) / "audit.jsonl")}  # fmt: skip
        port = free_port()
        log(f"{args.seconds:.0f} s idle, then {args.seconds:.0f} s beside {args.noisy_clients} noisy clients")
        server = start_http(env, port)
        try:
            report = anyio.run(run, f"http://127.0.0.1:{port}/mcp", tokens, queries, args)
        finally:
            server.terminate()
            server.wait()
    report = {"index": "bundled" if args.bundled else "scifact", "cpus": os.cpu_count(),
              "load_average": {"before": load_before, "after": os.getloadavg()}, "noisy_clients": args.noisy_clients, "seconds_per_phase": args.seconds, **report}  # fmt: skip
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    idle, loaded = report["quiet_idle"], report["quiet_beside_noisy"]
    print("| quiet client's hybrid_search | p50 (ms) | p95 (ms) | calls |")
    print("|---|---:|---:|---:|")
    print(f"| alone | {idle['p50_ms']} | {idle['p95_ms']} | {idle['n']} |")
    print(f"| beside {args.noisy_clients} noisy SQL clients | {loaded['p50_ms']} | {loaded['p95_ms']} | {loaded['n']} |")
    print(f"p50 ratio {report['p50_ratio']}; noisy calls: {report['noisy_outcomes']}")


if __name__ == "__main__":
    main()
