"""HTTP load with authentication off and on: throughput and latency at 32 concurrent clients.

    python bench/ingest/scifact.py            # builds the index this reuses (bench/.cache/scifact)
    python bench/latency/http_auth_load.py    # ~6 min; writes bench/latency/results-http-auth.json

For each configuration a fresh ``ragmcp serve --transport http`` (stateless, 127.0.0.1)
is started on the SciFact index; ``--clients`` concurrent clients then send MCP
``tools/call`` requests back to back, first for ``--warmup`` seconds (not measured), then
for ``--seconds`` (the clients: http_clients.py).

- **auth off**: no tokens file (loopback), as before.
- **auth on**: a tokens file; the clients share ``--tokens`` tokens (client *i* sends token
  *i* mod ``--tokens``), each granted every corpus and SQL, with limits high enough never to
  throttle. This measures what authentication (hash lookup, tokens-file check), the
  per-client limiter and the dispatch to the grant's server cost, not throttling.

Both write the audit log (to a temporary file; ``audit_lines`` counts its lines, warm-up
included). Two request mixes: ``all`` cycles through the five tools (searches on SciFact
test claims), ``light`` only through ``get_document`` and ``sql_query``, whose
millisecond calls show a per-request overhead that search time would hide. Reports
requests per second, p50/p95/p99 and errors (HTTP failures and tool
errors alike), which must be zero.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH_DATA, CACHE, DEMO_DATABASE, REPO, log  # noqa: E402
from http_clients import UNTHROTTLED, Call, run_load, scifact_calls  # noqa: E402
from mcp_latency import free_port, start_http  # noqa: E402

from mcp_server.grants import Grant  # noqa: E402
from mcp_server.team.tokens import add_client  # noqa: E402


def measure(args: argparse.Namespace, mix: str, auth: bool, workers: int, scratch: Path,
            calls: list[Call]) -> dict[str, Any]:  # fmt: skip
    label = f"{mix}-{'on' if auth else 'off'}-{workers}"
    env = {k: v for k, v in os.environ.items() if k != "RAGMCP_TOKENS_FILE"}
    env |= {"RAGMCP_DATA_DIR": str(args.index / "data"), "RAGMCP_CORPORA": str(args.index / "corpus"),
            "RAGMCP_DATABASE": str(DEMO_DATABASE), "RAGMCP_AUDIT_LOG": str(scratch / f"audit-{label}.jsonl")}  # fmt: skip
    tokens: list[str] = []
    if auth:
        tokens_file = scratch / f"tokens-{label}.json"
        tokens = [add_client(tokens_file, f"bench-{i}", Grant(), UNTHROTTLED) for i in range(args.tokens)]
        env["RAGMCP_TOKENS_FILE"] = str(tokens_file)
    log(f"mix {mix}, auth {'on' if auth else 'off'}, {workers} worker(s), {args.clients} clients: "
        f"{args.warmup:.0f} s warm-up, {args.seconds:.0f} s measured")  # fmt: skip
    port = free_port()
    server = start_http(env, port, workers)
    try:
        report = anyio.run(
            lambda: run_load(f"http://127.0.0.1:{port}/mcp", calls, clients=args.clients, warmup_s=args.warmup,
                             seconds=args.seconds, tokens=tokens)  # fmt: skip
        )
    finally:
        server.terminate()
        server.wait()
    audited = sum(1 for _ in (scratch / f"audit-{label}.jsonl").open(encoding="utf-8"))
    return {"mix": mix, "auth": auth, "workers": workers, "clients": args.clients, "tokens": len(tokens),
            "audit_lines": audited, **report}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--index", type=Path, default=CACHE / "scifact")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=4, help="distinct client tokens when auth is on")
    parser.add_argument("--workers", type=int, nargs="+", default=[1])
    parser.add_argument("--mixes", nargs="+", choices=["all", "light"], default=["all", "light"])
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "latency" / "results-http-auth.json")
    args = parser.parse_args()

    runs = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        for mix in args.mixes:
            calls = scifact_calls(args.data, mix)
            for workers in args.workers:
                for auth in (False, True):
                    runs.append(measure(args, mix, auth, workers, Path(scratch), calls))
    report = {"cpus": os.cpu_count(), "load_average": {"before": load_before, "after": os.getloadavg()}, "runs": runs}
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    print(f"| mix | workers | auth | requests/s | p50 / p95 / p99 (ms) | errors |  ({args.clients} clients, "
          f"{os.cpu_count()} CPUs)")
    print("|---|---|---|---|---|---|")
    for run in runs:
        lat = run["latency"]
        print(f"| {run['mix']} | {run['workers']} | {'on' if run['auth'] else 'off'} | {run['throughput_rps']} "
              f"| {lat['p50_ms']} / {lat['p95_ms']} / {lat['p99_ms']} | {run['errors']} |")


if __name__ == "__main__":
    main()
