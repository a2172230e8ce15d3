"""Bearer-token authentication for the HTTP server, built from the MCP SDK's auth parts.

:class:`FileTokenVerifier` is the SDK ``TokenVerifier`` hook over a tokens file (see
:mod:`mcp_server.team.tokens`). The SDK's ``BearerAuthBackend`` puts the verified client on each
request and its ``AuthContextMiddleware`` makes it available to the tools
(``get_access_token()``); on ``/mcp``, its ``RequireAuthMiddleware`` answers a missing,
unknown or revoked token with 401 and ``WWW-Authenticate: Bearer ...,
resource_metadata="<url>"``, and the protected-resource metadata (RFC 9728) the MCP
authorization spec asks for is served at ``/.well-known/oauth-protected-resource/mcp``.

``MCPServer`` can wire these parts itself, but only around one server; here they sit in
front of the dispatcher that picks a server per grant (:mod:`mcp_server.team.routing`).

Tokens are issued by the server's operator (``ragmcp token add``), not by an OAuth
authorisation server, so the metadata names this server as its own authorisation server
and clients are configured with their token directly.
"""

from __future__ import annotations

from pydantic import AnyHttpUrl
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp, Scope

from mcp_server.grants import FULL_ACCESS, Grant
from mcp_server.surface.sdk_http import (
    AccessToken,
    AuthContextMiddleware,
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
    TokenVerifier,
    build_resource_metadata_url,
    create_protected_resource_routes,
)
from mcp_server.team.limits import ClientLimiter, LimitGate
from mcp_server.team.tokens import ClientLimits, TokenEntry, TokenRegistry


class ClientToken(AccessToken):
    """A verified token: the client it belongs to. ``token`` holds a fingerprint, never the token."""

    entry: TokenEntry


class FileTokenVerifier(TokenVerifier):
    """Verifies bearer tokens against the hashes in a tokens file, re-read when it changes."""

    def __init__(self, registry: TokenRegistry) -> None:
        self.registry = registry

    async def verify_token(self, token: str) -> ClientToken | None:
        entry = self.registry.find(token)
        if entry is None:
            return None
        return ClientToken(token=f"sha256:{entry.token_sha256[:12]}", client_id=entry.name, scopes=[], entry=entry)


def client_of(scope: Scope) -> TokenEntry | None:
    """The client an authenticated request comes from; None without a valid token."""
    user = scope.get("user")
    token = user.access_token if isinstance(user, AuthenticatedUser) else None
    return token.entry if isinstance(token, ClientToken) else None


def grant_of(scope: Scope) -> Grant:
    """What the request's client may read; everything when the server has no tokens file."""
    client = client_of(scope)
    return client.grant if client is not None else FULL_ACCESS


def _client_limits(scope: Scope) -> tuple[str, ClientLimits] | None:
    client = client_of(scope)
    return (client.name, client.limits) if client is not None else None


class BearerAuth:
    """The authentication of one app: its middleware, its metadata route and the guard around ``/mcp``."""

    def __init__(
        self, registry: TokenRegistry, base_url: str, path: str, *, queue_timeout_s: float, stream_lifetime_s: float
    ) -> None:
        """``base_url``: where clients reach the server; ``path``: the MCP endpoint under it; the timeouts: see
        :class:`~mcp_server.team.limits.LimitGate`."""
        self.queue_timeout_s = queue_timeout_s
        self.stream_lifetime_s = stream_lifetime_s
        self.resource = AnyHttpUrl(base_url + path)
        self.middleware = [
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(FileTokenVerifier(registry))),
            Middleware(AuthContextMiddleware),
        ]
        self.routes: list[Route] = create_protected_resource_routes(
            resource_url=self.resource,
            authorization_servers=[AnyHttpUrl(base_url)],
            resource_name="agentic-rag-mcp cited retrieval",
        )
        self.limiter = ClientLimiter()

    def protect(self, app: ASGIApp) -> ASGIApp:
        """``app`` for authenticated clients only (401 otherwise), within each client's rate and concurrency."""
        metadata = build_resource_metadata_url(self.resource)
        gate = LimitGate(
            app, _client_limits, self.limiter, queue_timeout_s=self.queue_timeout_s,
            stream_lifetime_s=self.stream_lifetime_s,
        )  # fmt: skip
        return RequireAuthMiddleware(gate, [], metadata)
