"""SQL is bounded in CPU: statements whose time goes into single function calls stop at their deadline."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server.errors import InvalidQueryError, QueryTimeoutError
from mcp_server.sql.guard import ReadOnlyDatabase
from tests.helpers import demo_row_counts

DEADLINE_S = 1.0
BIG = "hex(zeroblob(49000))"  # 98,000 characters
TRIM_SET = "(replace(hex(zeroblob(4000)), '0', '1') || '0')"  # 8,001 characters (trim's work array stays within the value limit)
PATTERN = f"substr({BIG}, 1, 40000) || '1'"  # matches nowhere, after 40,000 characters at every position

# Each is one row of calls, each call seconds of work (trim) or tens of milliseconds (instr, replace: 600 of them,
# about 14 s on the 2-core machine, where 60 took 1.4 s and a faster CI machine finished inside the deadline);
# the progress handler, every 1,000 virtual-machine steps, looks in far less often than the deadline needs.
CPU_BOMBS = [
    pytest.param(", ".join([f"length(trim({BIG}, {TRIM_SET}))"] * 3), id="trim-98kb-x3"),
    pytest.param(
        " + ".join([f"length(ltrim({BIG}, {TRIM_SET})) + length(rtrim({BIG}, {TRIM_SET}))"] * 3), id="ltrim-rtrim-x3"
    ),
    pytest.param(" + ".join([f"instr({BIG}, {PATTERN})"] * 600), id="instr-x600"),
    pytest.param(" + ".join([f"length(replace({BIG}, {PATTERN}, 'x'))"] * 600), id="replace-x600"),
]


def cpu_seconds() -> float:
    """CPU time used so far by this process, its live child processes and its reaped ones."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = time.process_time() + children.ru_utime + children.ru_stime
    ticks = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == os.getpid():  # fields after the name: state, ppid, ..., utime (11), stime (12)
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


@pytest.fixture
def database(company_db: Path) -> Iterator[ReadOnlyDatabase]:
    database = ReadOnlyDatabase(company_db, timeout_s=DEADLINE_S)
    database.query("SELECT 1")  # its worker process is started: start-up is not what is measured
    yield database
    database.close()


@pytest.mark.slow
@pytest.mark.parametrize("expression", CPU_BOMBS)
def test_cpu_heavy_statement_ends_at_its_deadline_and_its_work_stops(
    database: ReadOnlyDatabase, expression: str
) -> None:
    started = time.monotonic()
    with pytest.raises(QueryTimeoutError, match=f"interrupted after {DEADLINE_S:g} s"):
        database.query(f"SELECT {expression}")
    assert time.monotonic() - started < DEADLINE_S + 1
    before = cpu_seconds()
    time.sleep(1)
    assert cpu_seconds() - before < 0.2  # nothing is still computing, here or in a child process
    employees = demo_row_counts()["employees"]
    assert database.query("SELECT count(*) FROM employees").rows == [[employees]]  # and the next query runs



@pytest.mark.slow
@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 400000) "
                     "SELECT length(json_group_array(hex(zeroblob(500)) || x)) FROM c", id="json-group-array"),
        pytest.param("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
                     "SELECT x, hex(zeroblob(100)) AS pad FROM c ORDER BY pad, x DESC", id="sort-to-temp"),
    ],
)  # fmt: skip
def test_a_memory_hungry_statement_is_stopped_with_a_clear_error(company_db: Path, sql: str) -> None:
    database = ReadOnlyDatabase(company_db, timeout_s=30, memory_mb=64)
    try:
        with pytest.raises(InvalidQueryError, match=r"needs more than the 64 MB of memory .*RAGMCP_SQL_MEMORY_MB"):
            database.query(sql)
        employees = demo_row_counts()["employees"]
        assert database.query("SELECT count(*) FROM employees").rows == [[employees]]  # the worker lives on
    finally:
        database.close()
