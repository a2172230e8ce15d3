"""A call that runs out of time is answered at once, but keeps its slot until its work has stopped."""

from __future__ import annotations

import time

import anyio
import pytest
from mcp import Client

from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.surface.server import build_server
from tests.mcp_server.sql.test_sandbox import BIG, TRIM_SET, cpu_seconds
from tests.mcp_server.surface.mcp_contract import text_of
from tests.mcp_server.surface.test_server import make_tools

pytestmark = pytest.mark.anyio

SQL_TIMEOUT_S = 4.0  # the two calls below take about 1 s; the bomb runs past this (~7 s of CPU)
CALL_TIMEOUT_S = 0.5
TRIM_BOMB = "SELECT " + ", ".join([f"length(trim({BIG}, {TRIM_SET}))"] * 6)  # ~7 s of CPU on a quiet core


@pytest.mark.slow
async def test_a_timed_out_sql_call_holds_its_slot_until_its_worker_is_killed(
    acme: Retriever, server_settings: Settings
) -> None:
    tools = make_tools(
        acme, server_settings, sql_timeout_s=SQL_TIMEOUT_S, call_timeout_s=CALL_TIMEOUT_S, sql_max_concurrent=1
    )
    try:
        async with Client(build_server(tools.settings, tools)) as client:
            started = time.monotonic()
            first = await client.call_tool("sql_query", {"sql": TRIM_BOMB})
            assert first.is_error and f"did not finish within {CALL_TIMEOUT_S:g} s" in text_of(first)
            second = await client.call_tool("sql_query", {"sql": "SELECT 1"})
            assert second.is_error and "the server may be busy" in text_of(second)  # no slot: the bomb still runs
            assert time.monotonic() - started < SQL_TIMEOUT_S  # ... and it had not been killed yet

            await anyio.sleep(SQL_TIMEOUT_S + 1.5 - (time.monotonic() - started))  # killed by now
            before = cpu_seconds()
            await anyio.sleep(1)
            assert cpu_seconds() - before < 0.2
            third = await client.call_tool("sql_query", {"sql": "SELECT 1"})
            assert not third.is_error, text_of(third)
    finally:
        tools.database.close()
