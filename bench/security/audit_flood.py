"""How many calls of a flooding client it takes to erase a quiet client's first audit record.

Starts ``ragmcp serve --transport http`` (one worker, the audit log at its defaults: 10 MiB, five
backups) from a checkout - this one, or the one given with ``--checkout`` (the code before, for the
comparison) - with the tokens of :mod:`edge` (``light`` is the quiet team, ``heavy`` the flooder).
``light`` makes one ``keyword_search``; then ``heavy`` sends ``sql_query`` calls carrying a hundred
10,000-character parameters each (about 1 MB, just under the request body limit; the schema takes
them) until the file holding ``light``'s record is gone, or ``--calls`` calls. It reports the calls
and seconds that took, the audit log's files and bytes, and writes ``results-audit-flood-<label>.json``.

    git worktree add /tmp/before 4f5133c                  # the code before the audit bounds
    python bench/security/audit_flood.py --checkout /tmp/before --label before
    python bench/security/audit_flood.py --label after
"""

from __future__ import annotations

import argparse
import json
import socket
import tempfile
import time
from pathlib import Path

from edge import REPO, call, start_server

QUIET_QUERY = "vacuum filter, the quiet team's call"
FLOOD_ARGUMENTS: dict[str, object] = {"sql": "SELECT count(*) FROM employees", "params": ["p" * 10_000] * 100}


def audit_files(log: Path) -> list[Path]:
    return [log, *log.parent.glob(log.name + ".*[0-9]")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", type=Path, default=REPO)
    parser.add_argument("--label", default="after")
    parser.add_argument("--calls", type=int, default=300, help="the most flood calls to make")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch)
        with socket.socket() as probe_socket:
            probe_socket.bind(("127.0.0.1", 0))
            port = probe_socket.getsockname()[1]
        process, tokens = start_server(args.checkout.resolve(), data, port, data / "server.log")
        log = data / "audit.jsonl"
        try:
            call(port, tokens["light"], "keyword_search", {"query": QUIET_QUERY})
            holder = log.stat().st_ino  # the file holding the quiet record, wherever rotation moves it
            started = time.monotonic()
            calls, erased = 0, False
            while calls < args.calls and not erased:
                call(port, tokens["heavy"], "sql_query", FLOOD_ARGUMENTS)
                calls += 1
                erased = all(file.stat().st_ino != holder for file in audit_files(log))
            seconds = time.monotonic() - started
        finally:
            process.terminate()
            process.wait(30)
        records = [json.loads(line) for file in audit_files(log) for line in file.read_text(encoding="utf-8").splitlines()]
        flood = [record for record in records if record["client"] == "heavy"]
        results = {
            "label": args.label,
            "flood calls": calls,
            "seconds": round(seconds, 1),
            "quiet record erased": erased,
            "quiet record on disk": any(record.get("arguments", {}).get("query") == QUIET_QUERY for record in records),
            "audit files": len(audit_files(log)),
            "audit bytes": sum(file.stat().st_size for file in audit_files(log)),
            "flood records on disk": len(flood),
            "flood records thinned": sum(1 for record in flood if record.get("thinned")),
            "longest line bytes": max(
                len(line) for file in audit_files(log) for line in file.read_bytes().splitlines(keepends=True)
            ),
            "server warnings": [line for line in (data / "server.log").read_text().splitlines() if "WARNING" in line],
        }
    print(json.dumps(results, indent=2))
    (Path(__file__).parent / f"results-audit-flood-{args.label}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
