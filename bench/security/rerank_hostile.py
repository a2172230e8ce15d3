"""What a hostile rerank server can do to hybrid search: drip its answer, or send a huge one.

The rerank server is the tests' scripted stand-in (tests/mcp_server/retrieval/rerank_server.py) on
127.0.0.1, run by this process; the searching side runs in a child process from a checkout - this
one, or the one given with ``--checkout`` (the code before, for the comparison) - over the bundled
corpora, so its memory is measured alone. Cases:

- **drip**: 8 hybrid searches at once (``top_k`` 5, ``RAGMCP_RERANK_TIMEOUT_S=1``) against a server
  that sends its headers, then a 40-byte body one byte every 0.5 s (each byte inside the timeout,
  the whole answer 20 s). Reports each search's wall time and whether it came back reranked.
- **huge, sized** / **huge, unsized**: one rerank call (50 texts, timeout 60 s) against a server
  whose valid answer is padded with 400 MB of spaces, with a content-length and without one
  (read until the connection closes). Reports the peak resident memory the call added
  (``ru_maxrss``), its time, and how it ended.

It writes ``results-rerank-hostile-<label>.json``.

    mkdir /tmp/before && git archive 4f5133c mcp_server corpora | tar -x -C /tmp/before
    python bench/security/rerank_hostile.py --checkout /tmp/before --label before
    python bench/security/rerank_hostile.py --label after
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SEARCHES = 8
DRIP_BODY = "[" + " " * 38 + "]"  # 40 bytes: a malformed answer (no scores), so it fails once complete
PADDING = 400 * 1024 * 1024
TEXTS = 50

# The child: imports come from the checkout (PYTHONPATH and cwd), not from this file's repository.
DRIP_CHILD = """
import json, logging, sys, threading, time
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
logging.disable(logging.WARNING)
retriever = Retriever.open(Settings.from_names(rerank_url=sys.argv[1], rerank_model="bge-reranker-v2-m3", rerank_timeout_s=1))
retriever.searcher.search("warm up", top_k=5, mode="vector")  # loads the embedding model
rows = []
def search(n):
    started = time.monotonic()
    ranking = retriever.searcher.ranking("how far ahead must annual leave be requested", top_k=5)
    rows.append({"seconds": round(time.monotonic() - started, 2), "reranked": ranking.reranked_by is not None})
threads = [threading.Thread(target=search, args=(n,)) for n in range(int(sys.argv[2]))]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(rows))
"""
HUGE_CHILD = """
import json, resource, sys, time
from mcp_server.retrieval.rerank import Reranker, RerankError, RerankServer
reranker = Reranker(RerankServer(sys.argv[1], "bge-reranker-v2-m3", None, 60.0))
texts = [f"text {n}" for n in range(int(sys.argv[2]))]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.monotonic()
try:
    outcome = f"reranked ({len(reranker.scores('q', texts))} scores)"
except RerankError as e:
    outcome = f"refused: {e}"
seconds = time.monotonic() - started
added_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"added_mb": round(added_kb / 1024, 1), "seconds": round(seconds, 2), "outcome": outcome}))
"""


def child(checkout: Path, data: Path, code: str, *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    env.update(PYTHONPATH=str(checkout), RAGMCP_DATA_DIR=str(data))
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=checkout, capture_output=True, text=True,
                          check=True)  # fmt: skip
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=REPO, help="the code that searches (default: this one)")
    parser.add_argument("--label", required=True)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from tests.mcp_server.retrieval.rerank_server import RerankStandIn, Reply

    results: dict[str, Any] = {"label": args.label}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
        subprocess.run([sys.executable, "-m", "mcp_server", "ingest"], env={**env, "RAGMCP_DATA_DIR": str(data)},
                       cwd=args.checkout, check=True, capture_output=True)  # fmt: skip
        drip = Reply(200, DRIP_BODY, drip_s=0.5, drip="body")
        with RerankStandIn(replies=[drip] * SEARCHES) as server:
            rows = child(args.checkout, data, DRIP_CHILD, server.url, str(SEARCHES))
        seconds = sorted(row["seconds"] for row in rows)
        results["drip"] = {"searches": len(rows), "median_s": seconds[len(seconds) // 2], "max_s": seconds[-1],
                           "reranked": sum(row["reranked"] for row in rows)}  # fmt: skip
        print(f"drip: {results['drip']}")
        answer = json.dumps([{"index": n, "score": 0.5} for n in range(TEXTS)])
        for name, sized in (("huge, sized", True), ("huge, unsized", False)):
            with RerankStandIn(replies=[Reply(200, answer, padding=PADDING, sized=sized)]) as server:
                results[name] = child(args.checkout, data, HUGE_CHILD, server.url, str(TEXTS))
                results[name]["server_sent_mb"] = round(server.wait_sent()[0] / 2**20, 1)
            print(f"{name}: {results[name]}")
    path = Path(__file__).with_name(f"results-rerank-hostile-{args.label}.json")
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
