"""Time from spawning ``ragmcp serve`` (stdio) to its ``initialize`` reply, on fresh and warm data dirs.

    python bench/startup/initialize.py              # bundled corpora and SciFact (5,183 files); ~10 min
    python bench/startup/initialize.py --only bundled

A desktop host spawns the server and waits for the handshake (Claude Desktop gives up after
about 60 s), so the handshake must not wait for indexing. For each corpus set this measures,
over ``--runs`` spawns each:

- fresh: an empty data dir (the first start; the index is then built in the background), the
  time to the ``initialize`` reply, and for the bundled corpora also the time until a search
  returns hits (the background build published its first generation);
- warm: a data dir already indexed with the same corpora (a restart), the time to the
  ``initialize`` reply and to the first search's answer after it.

The SciFact corpus (BEIR, from ``$BENCH_DATA/scifact``) is written out as one Markdown file per
document, and its warm index is built once with ``ragmcp ingest`` (timed and reported, not
counted). Writes bench/startup/results.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import BENCH_DATA, CACHE, REPO, log, write_beir_corpus_folder  # noqa: E402

SERVE = [sys.executable, "-m", "mcp_server", "serve"]
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
QUERIES = {"bundled": "how far ahead must annual leave be requested", "scifact": "vitamin D deficiency and fractures"}


class Peer:
    """One server process and its stdout lines as JSON-RPC messages."""

    def __init__(self, env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._pump, args=(self.process.stdout,), daemon=True).start()
        self._next_id = 0

    def _pump(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self._queue.put(json.loads(line))

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        assert self.process.stdin is not None
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        while True:
            reply = self._queue.get(timeout=600)
            if reply.get("id") == self._next_id:
                return reply

    def notify(self, method: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


def env_for(data_dir: Path, corpus: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    env.update({"RAGMCP_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)})
    if corpus is not None:
        env.update({"RAGMCP_CORPORA": str(corpus), "RAGMCP_DATABASE": "none"})
    return env


def one_start(env: dict[str, str], query: str, until_hits: bool) -> dict[str, float]:
    """Spawn, handshake, then search once (or, with ``until_hits``, every 0.5 s until hits come back)."""
    peer = Peer(env)
    try:
        reply = peer.request("initialize", INITIALIZE)
        initialized = time.perf_counter() - peer.started
        assert "result" in reply, reply
        peer.notify("notifications/initialized")
        while True:
            result = peer.request("tools/call", {"name": "hybrid_search", "arguments": {"query": query}})["result"]
            if not result.get("isError") or not until_hits:
                break
            time.sleep(0.5)
        answered = time.perf_counter() - peer.started
        assert not result.get("isError"), result
    finally:
        peer.stop()
    return {"initialize_s": initialized, "search_s": answered}


def fresh_initialize(env_of: Any, runs: int) -> list[float]:
    """Time to the initialize reply on an empty data dir; the server is stopped right after."""
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="ragmcp-bench-") as scratch:
            peer = Peer(env_of(Path(scratch) / "data"))
            try:
                assert "result" in peer.request("initialize", INITIALIZE)
                times.append(time.perf_counter() - peer.started)
            finally:
                peer.stop()
    return times


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": len(values)}


def measure(name: str, corpus: Path | None, runs: int, workdir: Path) -> dict[str, Any]:
    query = QUERIES[name]
    result: dict[str, Any] = {"fresh_initialize_s": summary(fresh_initialize(lambda d: env_for(d, corpus), runs))}
    log(f"{name}: fresh initialize {result['fresh_initialize_s']}")
    if name == "bundled":
        with tempfile.TemporaryDirectory(prefix="ragmcp-bench-") as scratch:
            first = one_start(env_for(Path(scratch) / "data", corpus), query, until_hits=True)
        result["fresh_first_hits_s"] = first["search_s"]
        log(f"{name}: first hits on a fresh data dir after {first['search_s']:.1f} s")
    data_dir = workdir / f"{name}-warm"
    shutil.rmtree(data_dir, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([*SERVE[:-1], "ingest"], env=env_for(data_dir, corpus), check=True, capture_output=True)
    result["warm_index_build_s"] = time.perf_counter() - started
    log(f"{name}: index built in {result['warm_index_build_s']:.1f} s")
    warm = [one_start(env_for(data_dir, corpus), query, until_hits=False) for _ in range(runs)]
    result["warm_initialize_s"] = summary([w["initialize_s"] for w in warm])
    result["warm_first_search_s"] = summary([w["search_s"] for w in warm])
    log(f"{name}: warm initialize {result['warm_initialize_s']}")
    return result


def print_table(results: dict[str, Any]) -> None:
    print("| metric (median of runs; min-max) | " + " | ".join(results) + " |")
    print("|---|" + "---:|" * len(results))
    rows = [
        ("`initialize` reply, fresh data dir", "fresh_initialize_s"),
        ("`initialize` reply, warm data dir", "warm_initialize_s"),
        ("first search answered, warm (from spawn)", "warm_first_search_s"),
    ]
    for label, key in rows:
        cells = [f"{r[key]['median']:.2f} s ({r[key]['min']:.2f}-{r[key]['max']:.2f})" for r in results.values()]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("| first hits, fresh data dir (background build done) | " + " | ".join(
        f"{r['fresh_first_hits_s']:.1f} s" if "fresh_first_hits_s" in r else "—" for r in results.values()
    ) + " |")
    print("| full index build (`ragmcp ingest`, not in the above) | " + " | ".join(
        f"{r['warm_index_build_s']:.1f} s" for r in results.values()
    ) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=["bundled", "scifact"])
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--workdir", type=Path, default=CACHE / "startup")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "startup" / "results.json")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"load_average_before": list(os.getloadavg())}
    if args.only in (None, "bundled"):
        results["bundled"] = measure("bundled", None, args.runs, args.workdir)
    if args.only in (None, "scifact"):
        corpus = args.workdir / "scifact-corpus"
        if not corpus.is_dir():
            count = write_beir_corpus_folder(
                args.data / "corpus.jsonl", corpus, "scifact",
                "BEIR SciFact: 5,183 scientific paper abstracts (title + abstract), for claim verification.",
            )  # fmt: skip
            log(f"wrote {count} SciFact documents to {corpus}")
        results["scifact"] = measure("scifact", corpus, args.runs, args.workdir)
    results["load_average_after"] = list(os.getloadavg())  # type: ignore[assignment]
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print_table({k: v for k, v in results.items() if isinstance(v, dict)})


if __name__ == "__main__":
    main()
