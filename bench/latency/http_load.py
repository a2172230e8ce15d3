"""HTTP load on the SciFact index: throughput and latency at 1, 8, 32 and 64 concurrent clients, 1 vs 2 workers.

    python bench/ingest/scifact.py        # builds the index this reuses (bench/.cache/scifact)
    python bench/latency/http_load.py     # ~8 min; writes bench/latency/results-http-load.json

For each configuration a fresh ``ragmcp serve --transport http --workers N`` (stateless,
127.0.0.1) is started; each ``--clients`` count of concurrent clients then sends MCP ``tools/call``
requests back to back, cycling through the five tools (queries are the SciFact test
claims), first for ``--warmup`` seconds (not measured; every worker warms up) and then for
``--seconds`` (the clients: http_clients.py). No tokens; the audit log goes to a temporary
file. Reports requests per second, p50/p95/p99 latency overall and per tool, and errors
(HTTP failures and tool errors alike), which must be zero, and draws throughput and p95
against clients, one line per worker count, in bench/latency/http-load.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import matplotlib

matplotlib.use("Agg")  # files only, no screen
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH_DATA, CACHE, DEMO_DATABASE, REPO, log  # noqa: E402
from http_clients import Call, run_load, scifact_calls  # noqa: E402
from mcp_latency import free_port, start_http  # noqa: E402


def measure(
    env: dict[str, str], workers: int, clients: int, calls: list[Call], args: argparse.Namespace
) -> dict[str, Any]:
    port = free_port()
    server = start_http(env, port, workers)
    try:
        report = anyio.run(
            lambda: run_load(f"http://127.0.0.1:{port}/mcp", calls, clients=clients, warmup_s=args.warmup,
                             seconds=args.seconds)  # fmt: skip
        )
    finally:
        server.terminate()
        server.wait()
    return {"workers": workers, "clients": clients, **report}


def plot(runs: list[dict[str, Any]], out: Path) -> None:
    """Throughput and p95 latency against concurrent clients, one line per worker count."""
    figure, (rate, p95) = plt.subplots(1, 2, figsize=(9, 3.6))
    counts = sorted({run["clients"] for run in runs})
    for workers in sorted({run["workers"] for run in runs}):
        mine = sorted((run for run in runs if run["workers"] == workers), key=lambda run: run["clients"])
        clients = [run["clients"] for run in mine]
        label = f"{workers} worker{'s' if workers > 1 else ''}"
        rate.plot(clients, [run["throughput_rps"] for run in mine], marker="o", label=label)
        p95.plot(clients, [run["latency"]["p95_ms"] / 1000 for run in mine], marker="o", label=label)
    for axes, title in ((rate, "throughput (requests/s)"), (p95, "p95 latency (s)")):
        axes.set_xscale("log", base=2)
        axes.set_xticks(counts, labels=[str(c) for c in counts])
        axes.set_xlabel("concurrent clients")
        axes.set_ylim(bottom=0)
        axes.set_title(title)
        axes.grid(alpha=0.3)
        axes.legend()
    figure.suptitle(f"ragmcp serve --transport http, SciFact index, five tools in turn ({os.cpu_count()} CPUs)")
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--index", type=Path, default=CACHE / "scifact")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "latency" / "results-http-load.json")
    parser.add_argument("--plot", type=Path, default=REPO / "bench" / "latency" / "http-load.png")
    args = parser.parse_args()

    calls = scifact_calls(args.data)
    runs = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "RAGMCP_DATA_DIR": str(args.index / "data"), "RAGMCP_CORPORA": str(args.index / "corpus"),
               "RAGMCP_DATABASE": str(DEMO_DATABASE), "RAGMCP_AUDIT_LOG": str(Path(scratch) / "audit.jsonl")}  # fmt: skip
        env.pop("RAGMCP_TOKENS_FILE", None)
        for workers in args.workers:
            for clients in args.clients:
                log(f"{clients} clients, {workers} worker(s): {args.warmup:.0f} s warm-up, {args.seconds:.0f} s measured")
                runs.append(measure(env, workers, clients, calls, args))
    report = {"cpus": os.cpu_count(), "load_average": {"before": load_before, "after": os.getloadavg()}, "runs": runs}
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    plot(runs, args.plot)

    print(f"| workers | clients | requests/s | p50 / p95 / p99 (ms) | errors |  ({os.cpu_count()} CPUs)")
    print("|---|---|---|---|---|")
    for run in runs:
        lat = run["latency"]
        print(f"| {run['workers']} | {run['clients']} | {run['throughput_rps']} | "
              f"{lat['p50_ms']} / {lat['p95_ms']} / {lat['p99_ms']} | {run['errors']} of {run['requests']} |")


if __name__ == "__main__":
    main()
