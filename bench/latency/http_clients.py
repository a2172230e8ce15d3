"""The load the HTTP benchmarks send (http_load.py, http_auth_load.py): SciFact tool calls from many clients.

Each client is a plain JSON-RPC-over-HTTP loop (httpx, one POST per ``tools/call``, as the
stateless transport allows), so that the load generator's CPU stays small next to the
server's. Clients start at different places in the call list and call back to back, first
for a warm-up (not measured), then for the measured seconds. Errors count HTTP failures
(a 401 or 429 included) and tool errors alike.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
from common import read_jsonl, read_qrels
from mcp_latency import percentiles

from mcp_server.team.tokens import ClientLimits

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
UNTHROTTLED = ClientLimits(rate_per_minute=1e9, burst=1_000_000, max_concurrent=1_000)
"""Limits no benchmark client reaches: what is measured is the server's work, not throttling."""
SEARCHES = ("hybrid_search", "vector_search", "keyword_search")
Call = tuple[str, dict[str, Any]]


def scifact_calls(data: Path, mix: str = "all") -> list[Call]:
    """The request mix on the SciFact test claims: ``all`` five tools in turn, or the ``light``
    ones only (``get_document`` and ``sql_query``, each a few milliseconds), each tool with its
    own rotating argument."""
    texts = {q["_id"]: q["text"] for q in read_jsonl(data / "queries.jsonl")}
    qrels = read_qrels(data / "qrels" / "test.tsv")
    doc_ids = [f"scifact:{doc}#0" for qid in qrels for doc in list(qrels[qid])[:1]]
    calls: list[Call] = []
    for i, qid in enumerate(qrels):
        if mix == "all":
            calls += [(name, {"query": texts[qid], "top_k": 5}) for name in SEARCHES]
        calls += [
            ("get_document", {"doc_id": doc_ids[i % len(doc_ids)], "window": 1}),
            ("sql_query", {"sql": f"SELECT name, price_cny FROM products WHERE price_cny > {i % 50 * 100}"}),
        ]
    return calls


async def run_load(
    url: str, calls: list[Call], *, clients: int, warmup_s: float, seconds: float, tokens: Sequence[str] = ()
) -> dict[str, Any]:
    """``clients`` clients calling back to back (client *i* sends ``tokens[i % len(tokens)]``, if any);
    the measured seconds, requests, errors, throughput and latency percentiles, overall and per tool."""
    samples: dict[str, list[float]] = {}
    errors: list[str] = []
    measuring = False

    async def client(offset: int, until: float) -> None:
        headers = {**HEADERS, **({"Authorization": f"Bearer {tokens[offset % len(tokens)]}"} if tokens else {})}
        async with httpx.AsyncClient(timeout=120, headers=headers) as http:
            for n in itertools.count(offset * 7):
                if time.monotonic() >= until:
                    return
                name, arguments = calls[n % len(calls)]
                body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
                started = time.perf_counter()
                error = None
                try:
                    response = await http.post(url, json=body)
                    reply = response.json() if response.status_code == 200 else None
                    if reply is None or "error" in reply or reply["result"].get("isError"):
                        error = f"{name}: HTTP {response.status_code} {response.text[:200]}"
                except httpx.HTTPError as e:
                    error = f"{name}: {type(e).__name__}: {e}"
                elapsed = time.perf_counter() - started
                if measuring:
                    if error is not None:
                        errors.append(error)
                    else:
                        samples.setdefault(name, []).append(elapsed)

    until = time.monotonic() + warmup_s + seconds
    async with anyio.create_task_group() as group:
        for offset in range(clients):
            group.start_soon(client, offset, until)
        await anyio.sleep(warmup_s)
        measuring = True
        measured_from = time.monotonic()
    wall = time.monotonic() - measured_from
    every = [s for per_tool in samples.values() for s in per_tool]
    return {
        "seconds": round(wall, 1), "requests": len(every), "errors": len(errors), "error_examples": errors[:5],
        "throughput_rps": round(len(every) / wall, 1), "latency": percentiles(every),
        "per_tool": {name: percentiles(s) for name, s in sorted(samples.items())},
    }  # fmt: skip
