"""One index generation served over MCP streamable HTTP: its stores behind a :class:`GrantRouter`.

:func:`open_generation` opens the current generation's stores and builds the ASGI app that
answers ``/mcp`` from them: a :class:`~mcp_server.team.routing.GrantRouter`, which builds the MCP
server of each grant on first use. :class:`~mcp_server.team.live.LiveIndex` keeps one
:class:`GenerationApp` per generation it serves: it enters :meth:`GenerationApp.running`
before the generation's first request and, once the generation is retired and drained,
leaves it (stopping that generation's MCP servers) and calls :meth:`GenerationApp.close`.

What does not depend on the generation is opened once per worker process and shared by all
the generations it serves (:class:`SharedParts`): the call runner, whose concurrency and
time limits are per process, and the audit log. Authentication and the per-client limits
sit in front of the ``LiveIndex`` (:mod:`mcp_server.team.http_app`), so a switch of generation
resets neither.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import partial

from starlette.types import ASGIApp

from mcp_server.grants import Grant
from mcp_server.settings import Settings
from mcp_server.surface.sdk_http import StreamableHTTPSessionManager, TransportSecuritySettings
from mcp_server.surface.server import CallRunner, build_server
from mcp_server.surface.tools import RetrievalTools
from mcp_server.team.audit import CallAudit
from mcp_server.team.auth import grant_of
from mcp_server.team.routing import GrantRouter

MCP_PATH = "/mcp"


@dataclass(frozen=True)
class SharedParts:
    """What every generation served by one worker process shares."""

    settings: Settings
    security: TransportSecuritySettings
    calls: CallRunner
    audit: CallAudit
    tokens_required: bool
    """A tokens file is in use: ``/healthz``, which answers anyone, then names no corpus and no database."""


@dataclass(frozen=True)
class GenerationApp:
    """One index generation published over MCP: its tools, the router to its grants' servers, its health."""

    tools: RetrievalTools
    router: GrantRouter
    health: dict[str, object]

    @property
    def generation(self) -> str:
        return self.tools.retriever.manifest.generation

    @property
    def app(self) -> ASGIApp:
        return self.router

    def running(self) -> AbstractAsyncContextManager[None]:
        return self.router.running()

    def close(self) -> None:
        self.tools.close()


def open_generation(shared: SharedParts) -> GenerationApp:
    """Open the current index generation and build the app publishing it to each grant."""
    tools = RetrievalTools.open(shared.settings)
    try:
        router = GrantRouter(partial(_session_manager, shared, tools), grant_of)
        return GenerationApp(tools, router, generation_health(tools, name_contents=not shared.tokens_required))
    except BaseException:
        tools.close()
        raise


def _session_manager(shared: SharedParts, tools: RetrievalTools, grant: Grant) -> StreamableHTTPSessionManager:
    """The (not yet running) session manager of a new MCP server publishing what ``grant`` may read of ``tools``."""
    settings = shared.settings
    server = build_server(settings, tools, grant=grant, calls=shared.calls, middleware=[shared.audit])
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=settings.http.stateless_http,
        json_response=settings.http.stateless_http,
        max_request_body_size=settings.http.max_body_bytes,
        transport_security=shared.security,
    )
    return server.session_manager


GENERATION_FIELDS = ("generation", "created")
"""What ``/healthz`` tells only authenticated requests on a server with tokens."""


def generation_health(tools: RetrievalTools, *, name_contents: bool) -> dict[str, object]:
    """What ``/healthz`` reports about the generation being served.

    Without ``name_contents`` (a tokens file is in use) the corpus and database names and the
    document and chunk counts are left out: they are for token holders only, and a client must
    not learn another team's size. The generation and its time (:data:`GENERATION_FIELDS`) go
    only to authenticated requests when tokens are in use (``http_app``), so nobody without a
    token can watch every edit being published.
    """
    manifest = tools.retriever.manifest
    health: dict[str, object] = {
        "generation": manifest.generation,
        "created": manifest.created,
        "embedding_model": manifest.embedding_model,
        "vectors": manifest.vector_collection or "embedded",
    }
    if name_contents:
        health["documents"], health["chunks"] = manifest.documents, manifest.chunks
        health["corpora"] = {c.name: {"documents": c.documents, "chunks": c.chunks} for c in tools.retriever.corpora()}
        health["database"] = tools.database.name if tools.database is not None else None
    return health
