"""One team's heavy SQL does not take every SQL slot: another team's light statement runs at once (real server).

"At once" is measured against the hogs themselves, under the same load: a light statement that had to
wait for a SQL slot would wait for a hog to reach its deadline, so it would take about as long as one.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from mcp_server.grants import Grant
from mcp_server.settings import Settings
from mcp_server.team.tokens import ClientLimits, add_client
from tests.mcp_server.team.test_http import MCP_HEADERS, HttpServer

BIG = "hex(zeroblob(49000))"
TRIM_SET = "(replace(hex(zeroblob(4000)), '0', '1') || '0')"
HOG = f"SELECT {', '.join([f'length(trim({BIG}, {TRIM_SET}))'] * 3)}"  # runs to its deadline
SQL_TIMEOUT_S = 3.0


@pytest.fixture(scope="module")
def two_teams(teams_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServer, str, str]]:
    root = tmp_path_factory.mktemp("sql-fairness")
    tokens_file = root / "tokens.json"
    heavy = add_client(tokens_file, "heavy", Grant(corpora=("teama",)), ClientLimits(max_concurrent=8, burst=50))
    light = add_client(tokens_file, "light", Grant(corpora=("teamb",)), ClientLimits(max_concurrent=8, burst=50))
    settings = teams_settings.updated(**{
        "tokens_file": tokens_file, "audit_log": root / "audit.jsonl", "sql_timeout_s": SQL_TIMEOUT_S,
        "sql_max_concurrent": 2,
    })  # fmt: skip
    running = HttpServer(settings, root / "stderr.log")
    yield running, heavy, light
    assert running.stop() in (0, -signal.SIGTERM), running.log.read_text()


def _sql(server: HttpServer, token: str, sql: str) -> httpx.Response:
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "sql_query", "arguments": {"sql": sql}}}
    return httpx.post(f"{server.url}/mcp", json=call, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"},
                      timeout=60)  # fmt: skip


@pytest.mark.slow
def test_a_sql_hog_leaves_another_teams_light_statement_fast(two_teams: tuple[HttpServer, str, str]) -> None:
    server, heavy, light = two_teams
    assert _sql(server, light, "SELECT 1").status_code == 200  # both teams have been served
    until = time.monotonic() + 3 * SQL_TIMEOUT_S

    hog_took: list[float] = []

    def hog() -> None:
        while time.monotonic() < until:
            started = time.monotonic()
            _sql(server, heavy, HOG)
            hog_took.append(time.monotonic() - started)

    hogs = [threading.Thread(target=hog) for _ in range(4)]
    for thread in hogs:
        thread.start()
    time.sleep(1)
    took = []
    while time.monotonic() < until - 1:
        started = time.monotonic()
        answer = _sql(server, light, "SELECT count(*) FROM employees")
        took.append(time.monotonic() - started)
        assert answer.status_code == 200 and '"isError":false' in answer.text.replace(" ", "")
        time.sleep(0.3)
    for thread in hogs:
        thread.join()
    assert hog_took and max(took) < min(hog_took) / 3, (took, hog_took)  # it never waited for a hog
