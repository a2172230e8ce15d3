"""``/mcp`` dispatch: each request goes to the MCP server built for its client's grant.

What a client may read shapes what it is shown — the corpus enum and descriptions, the
corpus list, the tools themselves — so each distinct grant gets its own
:class:`~mcp.server.mcpserver.MCPServer`, built on first use and kept for the life of
its router (few grants exist; clients with equal grants share one). An HTTP worker has
one router per index generation it serves (:mod:`mcp_server.team.generation_app`): the servers
of a router share that generation's opened stores, and every router of the process shares
one call runner and one audit log.

A server's session manager must run inside a task group that outlives the requests it
serves; the router starts each one, on first use, in its own task group, which
:meth:`GrantRouter.running` opens and closes (for as long as its generation is served).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup, TaskStatus
from starlette.types import Receive, Scope, Send

from mcp_server.grants import Grant
from mcp_server.surface.sdk_http import StreamableHTTPSessionManager, auth_context_var

BuildManager = Callable[[Grant], StreamableHTTPSessionManager]
"""Builds the MCP server for a grant and returns its (not yet running) session manager."""


class GrantRouter:
    """ASGI app for ``/mcp``: hands each request to the session manager of its grant's server."""

    def __init__(self, build: BuildManager, grant_of: Callable[[Scope], Grant]) -> None:
        self._build = build
        self._grant_of = grant_of
        self._managers: dict[Grant, StreamableHTTPSessionManager] = {}
        self._lock = anyio.Lock()
        self._group: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve while inside; on exit, stop every session manager started meanwhile."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = await self._manager(self._grant_of(scope))
        await manager.handle_request(scope, receive, send)

    async def _manager(self, grant: Grant) -> StreamableHTTPSessionManager:
        manager = self._managers.get(grant)
        if manager is not None:
            return manager
        async with self._lock:
            if grant not in self._managers:
                if self._group is None:
                    raise RuntimeError("GrantRouter used outside its running() context")
                manager = self._build(grant)
                await self._group.start(_run_manager, manager)
                self._managers[grant] = manager
        return self._managers[grant]


async def _run_manager(manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]) -> None:
    # This task outlives the request that started it: it must not keep that request's client.
    auth_context_var.set(None)
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()
