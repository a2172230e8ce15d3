"""The audit log's bounds: one line's size, one client's bytes a minute, and rotation keeping recent records.

The pure parts are checked directly; the rest over real HTTP: one server on 127.0.0.1 with a tiny audit log
(10,000 bytes, one backup) that one team floods with calls carrying close to a megabyte of arguments each,
shaped as the tool schemas take them and as they refuse them. The other audit lines over HTTP are checked
in test_auth.py.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_server.grants import Grant
from mcp_server.settings import Settings
from mcp_server.team.audit import (
    ARGUMENT_CHARS,
    LINE_BYTES,
    THINNED_ARGUMENTS_BYTES,
    ByteBudget,
    _clipped,
    _fitted,
    _size,
)
from mcp_server.team.tokens import ClientLimits, add_client
from tests.mcp_server.team.test_http import MCP_HEADERS, HttpServer
from tests.mcp_server.test_jsonl_log import read_lines

BIG = "y" * ARGUMENT_CHARS
FLOOD: list[tuple[str, dict[str, Any]]] = [  # each close to the 1 MiB request body limit
    ("sql_query", {"params": [BIG] * 90, "sql": "SELECT ? AS flood"}),  # fits the schema (fails in SQLite)
    ("hybrid_search", {"query": "flood", "filters": {"tags": [BIG] * 90}}),  # over the 20 tags the schema takes
    ("keyword_search", {"query": "flood", "junk": [{"deeper": [BIG] * 9}] * 10}),  # an argument the tool lacks
]
FLOOD_CALLS = 2 * len(FLOOD)
QUIET_QUERY = "wombat badge, before the flood"


def test_long_string_arguments_are_cut_and_marked() -> None:
    long = "y" * (ARGUMENT_CHARS + 5)
    clipped = _clipped({"sql": long, "params": [long, 3], "top_k": 5})
    assert clipped["sql"] == "y" * ARGUMENT_CHARS + "…[5 more characters]"
    assert clipped["params"] == [clipped["sql"], 3] and clipped["top_k"] == 5


def test_argument_names_are_clipped_and_masked_like_their_values() -> None:
    clipped = _clipped({"rmcp_secret-token": 1, "n" * (ARGUMENT_CHARS + 1): 2})
    assert clipped == {"[redacted]": 1, "n" * ARGUMENT_CHARS + "…[1 more characters]": 2}


def test_arguments_too_long_as_a_whole_keep_their_short_entries_and_fit() -> None:
    arguments = {"nested": [{"many": ["z" * 50] * 200}] * 5, "sql": "SELECT 1", "max_rows": 3, "more": ["x"] * 900}
    fitted = _fitted(arguments, 6_000)
    assert _size(fitted) <= 6_000 and list(fitted) == ["nested", "sql", "max_rows", "more"]
    assert (fitted["sql"], fitted["max_rows"], fitted["more"]) == ("SELECT 1", 3, ["x"] * 900)  # whole: smaller
    assert fitted["nested"].startswith('[{"many": ["zzz') and fitted["nested"].endswith(" more characters]")
    tight = _fitted(arguments, 100)
    assert _size(tight) <= 100 and list(tight) == ["sql", "max_rows", "more"]  # the largest left out
    kept, marker = tight["more"].split("…")
    assert kept.startswith('["x", "x"') and marker == f"[{len(json.dumps(['x'] * 900)) - len(kept)} more characters]"
    assert _fitted("\u2028" * 5_000, 300).endswith("…[4955 more characters]")  # escaped: 6 bytes each


def test_a_clients_byte_budget_refills_a_minutes_worth_a_minute() -> None:
    budget = ByteBudget(60_000, now=0.0)
    assert budget.allows(0.0)
    budget.spend(70_000)  # a line begun within the budget is written whole
    assert not budget.allows(1.0) and not budget.allows(10.0)  # 10,000 bytes short, then none
    assert budget.allows(10.1)
    budget.spend(1_000)
    assert budget.allows(1_000.0)  # refilled to a minute's worth, no more
    budget.spend(60_000)
    assert not budget.allows(1_000.0)


@dataclass
class Flooded:
    """The audit records after team-a's call, team-b's flood and team-a's call after it; the server's stderr."""

    records: list[dict[str, Any]]
    lines: list[bytes]
    stderr: str


@pytest.fixture(scope="module")
def flooded(teams_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flooded]:
    root = tmp_path_factory.mktemp("audit-flood")
    tokens_file, audit_log = root / "tokens.json", root / "audit" / "audit.jsonl"
    tokens = {
        "team-a": add_client(tokens_file, "team-a", Grant(corpora=("teama",), sql=False), ClientLimits()),
        "team-b": add_client(tokens_file, "team-b", Grant(corpora=("teamb",), sql=True), ClientLimits(burst=100)),
    }
    settings = teams_settings.updated(**{
        "tokens_file": tokens_file, "audit_log": audit_log, "audit_max_bytes": 10_000, "audit_backups": 1,
        "audit_client_bytes_per_minute": 16_384,
    })  # fmt: skip
    server = HttpServer(settings, root / "stderr.log")

    def call(client: str, tool: str, arguments: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {tokens[client]}"}
        response = httpx.post(f"{server.url}/mcp", json=message, headers=headers, timeout=60)
        assert response.status_code == 200, response.text

    try:
        call("team-a", "keyword_search", {"query": QUIET_QUERY})
        for i in range(FLOOD_CALLS):
            call("team-b", *FLOOD[i % len(FLOOD)])
        call("team-a", "keyword_search", {"query": "wombat badge, after the flood"})
    finally:
        assert server.stop() in (0, -signal.SIGTERM), server.log.read_text()
    files = [audit_log, *sorted(audit_log.parent.glob("audit.jsonl.*[0-9]"))]
    yield Flooded(read_lines(audit_log), [line for f in files for line in f.read_bytes().splitlines(keepends=True)],
                  server.log.read_text())  # fmt: skip


@pytest.mark.slow
def test_a_flood_of_huge_calls_cannot_rotate_another_teams_record_away(flooded: Flooded) -> None:
    quiet = [record for record in flooded.records if record["client"] == "team-a"]
    assert [record["arguments"]["query"] for record in quiet][:1] == [QUIET_QUERY]
    assert "RAGMCP_AUDIT_MIN_KEEP_HOURS" in flooded.stderr  # the log grew past its size instead, and says so


@pytest.mark.slow
def test_every_audit_line_stays_under_the_cap_and_says_what_it_cut(flooded: Flooded) -> None:
    assert all(len(line) <= LINE_BYTES and line.endswith(b"\n") for line in flooded.lines)
    flood = [record for record in flooded.records if record["client"] == "team-b"]
    assert all(record["arguments_cut"]["original_bytes"] > 900_000 for record in flood)
    sql = [record for record in flood if record["tool"] == "sql_query"]
    assert [record["arguments"]["sql"] for record in sql] == ["SELECT ? AS flood"] * 2  # the short argument kept
    assert [record["error"] for record in flood[:3]] == ["InvalidQueryError", "ToolError", "ToolError"]


@pytest.mark.slow
def test_a_client_past_its_bytes_a_minute_leaves_a_thinned_line_for_every_call(flooded: Flooded) -> None:
    flood = [record for record in flooded.records if record["client"] == "team-b"]
    assert [record["tool"] for record in flood] == [tool for tool, _ in FLOOD] * 2  # not one call unrecorded
    assert "thinned" not in flood[0] and all(record["thinned"] for record in flood[2:])
    thinned = [record for record in flood if record.get("thinned")]
    assert all(_size(record["arguments"]) <= THINNED_ARGUMENTS_BYTES for record in thinned)
    assert all({"time", "method", "outcome", "error", "latency_ms"} <= set(record) for record in thinned)
    after = [record for record in flooded.records if record["client"] == "team-a"][-1]
    assert after["arguments"] == {"query": "wombat badge, after the flood"} and "thinned" not in after
