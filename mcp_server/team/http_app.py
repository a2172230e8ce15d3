"""``ragmcp serve --transport http``: the MCP tools over streamable HTTP at ``/mcp``, plus ``/healthz``.

Each uvicorn worker process calls :func:`create_app`, which reads :class:`Settings` from
the ``RAGMCP_*`` environment (the parent exports its own with :meth:`Settings.to_env`)
and serves the current index generation (:mod:`mcp_server.team.generation_app`), switching to a
newly published one without downtime (:mod:`mcp_server.team.live`); ``/healthz`` reports the
generation being served.
Stateless mode (the default) gives every request a fresh MCP transport, so any worker can
answer any request and several workers or hosts can share one read-only index. (In
stateful mode a switch ends the open sessions; clients get 404 and start new ones, as the
MCP specification prescribes.)

Every request, ``/healthz`` included, must carry an allowed ``Host`` header and, when it
has one, an allowed ``Origin``: loopback names, the bound address, and the configured
lists. This is the protection against DNS rebinding, on by default. Request bodies over
``settings.http.max_body_bytes`` are refused with 413, and a request whose headers or body
arrive too slowly is cut off, and one whose headers are too large refused (:mod:`mcp_server.team.request_reading`).

With a tokens file (``settings.http.tokens_file``) every ``/mcp`` request needs a bearer token
(:mod:`mcp_server.team.auth`) and stays within its client's rate and concurrency limits
(:mod:`mcp_server.team.limits`); each client sees and reads only what its grant allows
(:mod:`mcp_server.team.routing`), and ``/healthz`` no longer names the corpora or the database.
Without one, every request has full access: ``ragmcp serve`` binds such a server to
loopback only, unless told ``--no-auth``. Either way, every call is written to the audit
log (:mod:`mcp_server.team.audit`). Authentication and client limits sit in front of the index
generations, and the audit log and the per-process call limits are shared by them all, so
switching to a new generation resets no limit. Every limit is per worker process.
"""

from __future__ import annotations

import copy
import ipaddress
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import uvicorn
import uvicorn.config
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_server.indexing.generations import IndexLayout
from mcp_server.jsonl_log import JsonlLog
from mcp_server.settings import Settings
from mcp_server.surface.sdk_http import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_server.surface.server import CallRunner
from mcp_server.team.audit import CallAudit
from mcp_server.team.auth import BearerAuth, client_of
from mcp_server.team.generation_app import (
    GENERATION_FIELDS,
    MCP_PATH,
    GenerationApp,
    SharedParts,
    open_generation,
)
from mcp_server.team.live import LiveIndex
from mcp_server.team.request_reading import BoundedRequests
from mcp_server.team.redaction import RedactSecrets
from mcp_server.team.tokens import TokenRegistry

GRACEFUL_SHUTDOWN_S = 10
"""Seconds in-flight requests get to finish after SIGINT/SIGTERM."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """The Host/Origin allow-lists: loopback, the bound address (unless a wildcard), and the configured ones."""
    names = list(LOOPBACK_NAMES)
    if settings.http.host not in WILDCARD_HOSTS and not is_loopback(settings.http.host):
        names.append(f"[{settings.http.host}]" if ":" in settings.http.host else settings.http.host)
    hosts = [pattern for name in names for pattern in (name, f"{name}:*")]
    origins = [
        pattern
        for name in names
        for scheme in ("http", "https")
        for pattern in (f"{scheme}://{name}", f"{scheme}://{name}:*")
    ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts + settings.http.allowed_hosts,
        allowed_origins=origins + settings.http.allowed_origins,
    )


class HeaderCheck:
    """Refuses any HTTP request whose Host or Origin is not allowed (421 / 403), on every path."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self.app = app
        self.check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await self.check.validate_request(Request(scope), is_post=False)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def build_http_app(settings: Settings) -> Starlette:
    """The ASGI app serving the current index generation and following newly published ones.

    Raises TokensFileError when the configured tokens file is missing or malformed.
    """
    security = transport_security(settings)
    registry = TokenRegistry(settings.http.tokens_file) if settings.http.tokens_file is not None else None
    audit = JsonlLog(
        settings.audit_path, max_bytes=settings.audit.max_bytes, backups=settings.audit.backups,
        min_keep_s=settings.audit.min_keep_hours * 3600,
    )  # fmt: skip
    call_audit = CallAudit(audit, client_bytes_per_minute=settings.audit.client_bytes_per_minute)
    shared = SharedParts(settings, security, CallRunner(settings), call_audit, tokens_required=registry is not None)
    live: LiveIndex[GenerationApp] = LiveIndex(
        partial(open_generation, shared), IndexLayout(settings.index_dir).current_name, settings.http.reload_interval_s
    )

    async def healthz(request: Request) -> Response:
        served = live.served
        ok = served.tools.retriever.generation.is_dir()
        health = dict(served.health)
        if registry is not None and client_of(request.scope) is None:  # anyone: no trace of when documents change
            for field in GENERATION_FIELDS:
                health.pop(field, None)
        return JSONResponse({**health, "status": "ok" if ok else "missing"}, status_code=200 if ok else 503)

    routes: list[BaseRoute] = [Route("/healthz", healthz)]
    middleware: list[Middleware] = []
    if registry is None:
        routes.append(Route(MCP_PATH, endpoint=live))
    else:  # authentication and client limits in front of the generations: a switch resets neither
        auth = BearerAuth(
            registry, base_url(settings), MCP_PATH, queue_timeout_s=settings.calls.call_timeout_s,
            stream_lifetime_s=settings.http.stream_lifetime_s,
        )  # fmt: skip
        routes += [Route(MCP_PATH, endpoint=auth.protect(live)), *auth.routes]
        middleware = auth.middleware

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with live.run():
                yield
        finally:
            audit.close()

    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.add_middleware(HeaderCheck, security=security)
    return app


def base_url(settings: Settings) -> str:
    """Where clients reach this server: ``settings.http.public_url``, else the bound address."""
    if settings.http.public_url:
        return settings.http.public_url.rstrip("/")
    host = socket.gethostname() if settings.http.host in WILDCARD_HOSTS else settings.http.host
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.http.port}"


def create_app() -> Starlette:
    """The uvicorn factory: settings from the environment; each worker opens the index itself."""
    return build_http_app(Settings())


def serve_http(settings: Settings, workers: int) -> None:
    """Run uvicorn with ``workers`` processes until SIGINT/SIGTERM, then drain and stop."""
    os.environ.update(settings.to_env())
    uvicorn.run(
        f"{__name__}:create_app",
        factory=True,
        host=settings.http.host,
        port=settings.http.port,
        workers=workers,
        # The protocol with read deadlines and header limits; a partial pickles, so every worker process gets it.
        http=partial(  # type: ignore[arg-type]
            BoundedRequests,
            header_timeout_s=settings.http.header_timeout_s,
            body_timeout_s=settings.http.body_timeout_s,
            max_header_bytes=settings.http.max_header_bytes,
            max_headers=settings.http.max_headers,
        ),
        timeout_worker_healthcheck=settings.http.worker_start_timeout_s,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        log_config=_stderr_logging(),
        server_header=False,
    )


def _stderr_logging() -> dict[str, Any]:
    """uvicorn's logging configuration for every worker: the access log moved from stdout to
    stderr, and the root logger (the server's own and the SDK's messages) on stderr too; no
    query string and nothing shaped like a token on either. The Chroma server client's
    per-request httpx lines are left out."""
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    config["filters"] = {"redact_secrets": {"()": RedactSecrets}}
    for handler in config["handlers"].values():
        handler["filters"] = ["redact_secrets"]
    config["root"] = {"handlers": ["default"], "level": "INFO"}
    config["loggers"]["httpx"] = {"level": "WARNING"}
    return config
