"""The MCP SDK's streamable HTTP transport and OAuth resource-server parts, as the team server uses them.

With :mod:`mcp_server.surface.sdk` the only modules that import ``mcp`` (see there).
"""

from __future__ import annotations

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, auth_context_var, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings

__all__ = [
    "AccessToken", "AuthContextMiddleware", "AuthenticatedUser", "BearerAuthBackend", "RequireAuthMiddleware",
    "StreamableHTTPSessionManager", "TokenVerifier", "TransportSecurityMiddleware", "TransportSecuritySettings",
    "auth_context_var", "build_resource_metadata_url", "create_protected_resource_routes", "get_access_token",
]  # fmt: skip
