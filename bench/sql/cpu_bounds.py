"""How well each way of stopping SQL bounds a statement whose time goes into single function calls.

    python bench/sql/cpu_bounds.py     # ~3 min; writes bench/sql/results-cpu-bounds.json

For each statement (the CPU bombs of tests/mcp_server/sql/test_sandbox.py, plus an endless
recursive CTE for contrast) and a deadline of ``--deadline`` seconds, three ways of stopping it:

- **progress**: a progress handler checking the clock every 1,000 virtual-machine steps (the
  server's only bound before sql/sandbox.py);
- **interrupt**: ``Connection.interrupt()`` from a timer thread at the deadline;
- **sandbox**: the server's way: the statement in a worker process, killed ``KILL_GRACE_S``
  after the deadline (``ReadOnlyDatabase.query``).

The first two run in a child process of their own, killed after ``--cap`` seconds if still
running, so that a runaway cannot stall the benchmark. Reports, per statement and way, the
wall-clock seconds until the caller got its answer and the CPU seconds burnt: the child's own
for the first two; for the sandbox, this process tree's over the call, the killed worker's
included.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_server.errors import RetrievalError  # noqa: E402
from mcp_server.sql.demo import materialize_database  # noqa: E402
from mcp_server.sql.guard import ReadOnlyDatabase  # noqa: E402
from tests.helpers import DEMO_DATABASE_SOURCES  # noqa: E402
from tests.mcp_server.sql.test_sandbox import CPU_BOMBS, cpu_seconds  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
CHILD = """
import json, sqlite3, sys, threading, time
mode, deadline, sql = sys.argv[1], float(sys.argv[2]), sys.argv[3]
connection = sqlite3.connect(":memory:")
connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 100_000)
started = time.monotonic()
if mode == "progress":
    connection.set_progress_handler(lambda: time.monotonic() > started + deadline, 1000)
else:
    threading.Timer(deadline, connection.interrupt).start()
try:
    connection.execute(sql).fetchall()
    outcome = "finished"
except sqlite3.Error as e:
    outcome = str(e)
print(json.dumps({"wall_s": time.monotonic() - started, "cpu_s": time.process_time(), "outcome": outcome}))
"""


def in_process(mode: str, sql: str, deadline: float, cap: float) -> dict[str, Any]:
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, mode, str(deadline), sql], capture_output=True,
                              text=True, timeout=cap, check=True)  # fmt: skip
        result: dict[str, Any] = json.loads(done.stdout)
    except subprocess.TimeoutExpired:
        result = {"wall_s": time.monotonic() - started, "cpu_s": None, "outcome": f"still running after {cap:g} s"}
    return {key: round(value, 2) if isinstance(value, float) else value for key, value in result.items()}


def sandboxed(database: ReadOnlyDatabase, sql: str) -> dict[str, Any]:
    before, started = cpu_seconds(), time.monotonic()
    try:
        database.query(sql)
        outcome = "finished"
    except RetrievalError as e:
        outcome = str(e).split(".")[0]
    wall = time.monotonic() - started
    time.sleep(0.5)  # the killed worker is reaped: its CPU is in RUSAGE_CHILDREN
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu_seconds() - before, 2), "outcome": outcome}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deadline", type=float, default=1.0)
    parser.add_argument("--cap", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "sql" / "results-cpu-bounds.json")
    args = parser.parse_args()
    statements = {param.id: f"SELECT {param.values[0]}" for param in CPU_BOMBS} | {"endless-cte": ENDLESS}
    load_before = os.getloadavg()
    rows = []
    scratch = REPO / "bench" / ".cache" / "cpu-bounds"
    database = ReadOnlyDatabase(
        materialize_database(DEMO_DATABASE_SOURCES, scratch / "company.sqlite"), timeout_s=args.deadline
    )
    database.query("SELECT 1")
    try:
        for name, sql in statements.items():
            for mode in ("progress", "interrupt"):
                rows.append({"statement": name, "way": mode, **in_process(mode, sql, args.deadline, args.cap)})
                print(rows[-1], file=sys.stderr)
            rows.append({"statement": name, "way": "sandbox", **sandboxed(database, sql)})
            print(rows[-1], file=sys.stderr)
    finally:
        database.close()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = {"cpus": os.cpu_count(), "deadline_s": args.deadline, "cap_s": args.cap,
              "load_average": {"before": load_before, "after": os.getloadavg()},
              "children_cpu_s": round(children.ru_utime + children.ru_stime, 1), "rows": rows}  # fmt: skip
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"| statement | progress handler | interrupt() at deadline | sandbox (kill) |  (deadline {args.deadline:g} s; "
          "wall s / CPU s)")
    print("|---|---|---|---|")
    for name in statements:
        cells = [next(r for r in rows if r["statement"] == name and r["way"] == way) for way in
                 ("progress", "interrupt", "sandbox")]  # fmt: skip
        print(f"| {name} | " + " | ".join(f"{c['wall_s']} / {c['cpu_s']}" for c in cells) + " |")


if __name__ == "__main__":
    main()
