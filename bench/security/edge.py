"""What a hostile client can do to another client's latency: a header flood, and one team's heavy SQL.

Starts ``ragmcp serve --transport http`` (one worker) from a checkout - this one, or the one given with
``--checkout`` (the code before, for the comparison) - over the bundled corpora and demo database,
with a tokens file of two teams, ``heavy`` and ``light``. Then:

- **header flood**: two raw, unauthenticated sockets stream an endless ``X-Big:`` header (reconnecting
  when the server closes them) for ``--seconds``, while ``light`` calls ``keyword_search`` every 0.2 s;
- **SQL fairness**: four threads of ``heavy`` send statements that run to the 3 s SQL deadline, while
  ``light`` sends ``SELECT count(*) FROM employees`` every 0.3 s.

It reports ``light``'s latencies (p50, max) in each, and each idle, and writes ``results-edge-<label>.json``.

    git worktree add /tmp/before 59c3dd1
    python bench/security/edge.py --checkout /tmp/before --label before
    python bench/security/edge.py --label after
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
BIG = "hex(zeroblob(49000))"
TRIM_SET = "(replace(hex(zeroblob(4000)), '0', '1') || '0')"
HOG = f"SELECT {', '.join([f'length(trim({BIG}, {TRIM_SET}))'] * 3)}"


def start_server(checkout: Path, data: Path, port: int, log: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    tokens = data / "tokens.json"
    env.update(PYTHONPATH=str(checkout), RAGMCP_DATA_DIR=str(data), RAGMCP_TOKENS_FILE=str(tokens),
               RAGMCP_SQL_TIMEOUT_S="3")  # fmt: skip
    # cwd: ``python -m`` puts the working directory before PYTHONPATH
    subprocess.run([sys.executable, "-m", "mcp_server", "ingest"], env=env, check=True, capture_output=True, cwd=checkout)
    minted = {}
    for name, corpora in (("heavy", "handbook"), ("light", "products")):
        add = [sys.executable, "-m", "mcp_server", "token", "add", name, "--corpora", corpora, "--sql",
               "--max-concurrent", "8", "--burst", "100", "--rate", "6000"]  # fmt: skip
        minted[name] = subprocess.run(add, env=env, check=True, capture_output=True, text=True, cwd=checkout).stdout.strip()
    command = [sys.executable, "-m", "mcp_server", "serve", "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"), cwd=checkout)
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process, minted
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"the server did not start: {log.read_text()}")


def call(port: int, token: str, name: str, arguments: dict[str, object]) -> float:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    started = time.monotonic()
    httpx.post(f"http://127.0.0.1:{port}/mcp", json=message, headers={**HEADERS, "Authorization": f"Bearer {token}"},
               timeout=120)  # fmt: skip
    return time.monotonic() - started


def measure(seconds: float, pause_s: float, probe: Callable[[], float]) -> dict[str, float]:
    took = []
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        took.append(probe())
        time.sleep(pause_s)
    return {"calls": len(took), "p50_ms": round(statistics.median(took) * 1000, 1), "max_ms": round(max(took) * 1000, 1)}


def flood(port: int, until: float) -> None:
    while time.monotonic() < until:
        try:
            with socket.create_connection(("127.0.0.1", port)) as connection:
                connection.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
                while time.monotonic() < until:
                    connection.sendall(b"a" * 65_536)
        except OSError:
            continue


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", type=Path, default=REPO)
    parser.add_argument("--label", default="after")
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        with socket.socket() as probe_socket:
            probe_socket.bind(("127.0.0.1", 0))
            port = probe_socket.getsockname()[1]
        process, tokens = start_server(args.checkout.resolve(), Path(scratch), port, Path(scratch) / "server.log")
        try:
            search = lambda: call(port, tokens["light"], "keyword_search", {"query": "vacuum filter"})  # noqa: E731
            count = lambda: call(port, tokens["light"], "sql_query", {"sql": "SELECT count(*) FROM employees"})  # noqa: E731
            results: dict[str, object] = {"label": args.label, "load_average": os.getloadavg()}
            results["search idle"] = measure(3, 0.2, search)
            until = time.monotonic() + args.seconds
            flooders = [threading.Thread(target=flood, args=(port, until)) for _ in range(2)]
            for thread in flooders:
                thread.start()
            results["search during header flood"] = measure(args.seconds - 1, 0.2, search)
            for thread in flooders:
                thread.join()
            results["count idle"] = measure(3, 0.3, count)
            until = time.monotonic() + args.seconds

            def hog() -> None:
                while time.monotonic() < until:
                    call(port, tokens["heavy"], "sql_query", {"sql": HOG})

            hogs = [threading.Thread(target=hog) for _ in range(4)]
            for thread in hogs:
                thread.start()
            time.sleep(1)
            results["count beside a SQL hog"] = measure(args.seconds - 2, 0.3, count)
            for thread in hogs:
                thread.join()
        finally:
            process.terminate()
            process.wait(30)
    print(json.dumps(results, indent=2))
    (Path(__file__).parent / f"results-edge-{args.label}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
