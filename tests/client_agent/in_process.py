"""The agent connected to a server built in this test process: the same MCP messages as over stdio, no subprocess.

A spawned ``ragmcp serve`` costs seconds of start-up per question and adds nothing to what most agent
tests check; the few that check the stdio path itself use :func:`client_agent.connection.connect`'s
default (see ``ask_offline_stdio`` in conftest).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from client_agent.connection import ToolServer, connect
from mcp_server.settings import Settings
from mcp_server.surface.server import build_server
from mcp_server.surface.tools import RetrievalTools


@asynccontextmanager
async def served(tools: RetrievalTools) -> AsyncIterator[ToolServer]:
    """The agent's connection to a new server over ``tools`` (opened and closed by the caller), in memory."""
    async with connect(in_process=build_server(tools.settings, tools)) as server:
        yield server


@asynccontextmanager
async def serve_in_process(settings: Settings) -> AsyncIterator[ToolServer]:
    """The agent's connection to a server over ``settings``'s index, opened for this connection only."""
    tools = RetrievalTools.open(settings)
    try:
        async with served(tools) as server:
            yield server
    finally:
        tools.close()
