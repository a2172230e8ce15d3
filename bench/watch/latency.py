"""Watch mode's change-to-searchable latency: a file is saved, how long until a search finds the change?

    python bench/watch/latency.py                 # bundled corpora, 20 edits; ~2 min on 2 cores
    python bench/watch/latency.py --corpus scifact --edits 20   # 5,183 documents; first run embeds them all

A copy of the corpora goes into a temporary directory and is ingested into a fresh data dir
(not timed); then ``ragmcp serve --transport http --watch`` serves it with the default
settings (debounce ``RAGMCP_WATCH_DEBOUNCE_S`` = 1 s, workers checking for a new index every
``RAGMCP_RELOAD_INTERVAL_S`` = 1 s). Each edit appends a sentence with a word found nowhere
else to one document (a different one each time) and stamps the time of the write; an MCP
client then calls ``keyword_search`` for that word every 50 ms until the edited document is
the hit. Edits are sequential: the next starts once the previous one is searchable. Also
reported: the ingestion time of each update, from the server's own log lines. Writes
bench/watch/results-latency.json (or ``--out``) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import BENCH_DATA, REPO, log, write_beir_corpus_folder  # noqa: E402

from mcp_server.indexing.ingest import ingest  # noqa: E402
from mcp_server.settings import Settings, bundled_corpus_dirs  # noqa: E402

POLL_S = 0.05
TIMEOUT_S = 120.0
UPDATE = re.compile(r"; published gen-\S+ in ([0-9.]+) s")


def corpora(kind: str, scratch: Path) -> list[Path]:
    if kind == "bundled":
        return [Path(shutil.copytree(c, scratch / "corpora" / c.name)) for c in bundled_corpus_dirs()]
    folder = scratch / "corpora" / "scifact"
    write_beir_corpus_folder(BENCH_DATA / "scifact" / "corpus.jsonl", folder, "scifact", "Scientific abstracts.")
    return [folder]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def measure(url: str, documents: list[Path], edits: int) -> list[dict[str, Any]]:
    results = []
    async with Client(f"{url}/mcp") as client:
        for i in range(edits):
            path = documents[i * 7919 % len(documents)]  # spread over the corpus, never the same twice in a row
            word = f"watchprobe{i}q{os.getpid()}"
            with path.open("a", encoding="utf-8") as f:
                f.write(f"\n\nThe latency probe says {word}.\n")
            written = time.monotonic()
            polls = 0
            with anyio.fail_after(TIMEOUT_S):
                while True:
                    polls += 1
                    found = await client.call_tool("keyword_search", {"query": word, "top_k": 1})
                    hits = (found.structured_content or {}).get("hits", [])
                    if hits:
                        break
                    await anyio.sleep(POLL_S)
            latency = time.monotonic() - written
            results.append({"file": path.name, "latency_s": round(latency, 3), "polls": polls})
            log(f"edit {i + 1}/{edits}: {path.name} searchable after {latency:.2f} s")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=["bundled", "scifact"], default="bundled")
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or REPO / "bench" / "watch" / f"results-latency{'' if args.corpus == 'bundled' else '-scifact'}.json"
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        folders = corpora(args.corpus, scratch)
        settings = Settings(data_dir=scratch / "data", corpora=folders)
        log(f"ingesting {', '.join(f.name for f in folders)} into a fresh data dir")
        first = ingest(settings)
        documents = sorted(p for f in folders for p in f.rglob("*.md") if not p.name.startswith("."))
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")} | settings.to_env()
        log_path = scratch / "server.log"
        with log_path.open("wb") as server_log:
            server = subprocess.Popen(
                [sys.executable, "-m", "mcp_server", "serve", "--transport", "http", "--watch", "--port", str(port)],
                env=env | {"PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL, stderr=server_log,
            )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                try:
                    if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"the server did not start:\n{log_path.read_text()}")
                time.sleep(0.2)
            while "for changes" not in log_path.read_text():  # the watcher's catch-up is done
                time.sleep(0.1)
            edits = anyio.run(measure, url, documents, args.edits)
        finally:
            server.terminate()
            server.wait(timeout=60)
        updates = [float(s) for s in UPDATE.findall(log_path.read_text())]
    latencies = [e["latency_s"] for e in edits]
    result = {
        "corpus": args.corpus, "documents": first.corpora and sum(len(c.added) for c in first.corpora),
        "chunks": first.chunks_written, "edits": len(edits),
        "debounce_s": settings.watch.debounce_s, "reload_interval_s": settings.http.reload_interval_s,
        "latency_s": {"median": round(statistics.median(latencies), 2), "p95": round(percentile(latencies, 0.95), 2),
                      "min": min(latencies), "max": max(latencies)},
        "update_ingest_s": {"median": round(statistics.median(updates), 2), "max": max(updates), "n": len(updates)},
        "load_average_after": round(os.getloadavg()[0], 2), "per_edit": edits,
    }  # fmt: skip
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lat, upd = result["latency_s"], result["update_ingest_s"]
    print("| corpus | documents / chunks | edits | change → searchable median | p95 | min–max | update ingest median |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.corpus} | {result['documents']:,} / {result['chunks']:,} | {len(edits)} | {lat['median']:.2f} s "
          f"| {lat['p95']:.2f} s | {lat['min']:.2f}–{lat['max']:.2f} s | {upd['median']:.2f} s |")


if __name__ == "__main__":
    main()
