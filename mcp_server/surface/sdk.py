"""The MCP SDK's server side, as this server uses it: the one module (with :mod:`mcp_server.surface.sdk_http`) that imports ``mcp``.

Every other module takes the SDK's names from here, so what the server relies on is listed in one
place and a new SDK version (the 2.x line renamed ``FastMCP``, ``isError`` and ``McpError``) is met
here. ``tests/test_layout.py`` fails when another module imports ``mcp``.
"""

from __future__ import annotations

from mcp.server.apps import Apps, ResourceCsp, client_supports_apps
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.mcpserver.resources import ResourceSecurity
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, SubscriptionBus, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    ListResourcesResult,
    ListToolsResult,
    ReadResourceResult,
    Resource,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)

__all__ = [
    "INVALID_PARAMS", "Apps", "CallNext", "CallToolResult", "FuncMetadata", "HandlerResult", "InMemorySubscriptionBus",
    "ListResourcesResult", "ListToolsResult", "MCPError", "MCPServer", "ReadResourceResult", "Resource", "ResourceCsp",
    "ResourceLink", "ResourceNotFoundError", "ResourceSecurity", "ResourcesListChanged", "ServerMiddleware",
    "ServerRequestContext", "ServerSession", "SubscriptionBus", "TextContent", "TextResourceContents", "Tool",
    "ToolAnnotations", "ToolError", "ToolsListChanged", "client_supports_apps", "func_metadata",
    "progress_token_from_params",
]  # fmt: skip
