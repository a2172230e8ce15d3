"""The evidence view as the MCP Apps extension publishes it: the ``ui://`` page, its CSP, the tools naming it.

What the page does in a browser is tested in ``test_view_browser.py``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

import pytest
from mcp import Client
from mcp.client import advertise
from mcp.server import MCPServer
from mcp.types import TextResourceContents

from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.sql.demo import open_database
from mcp_server.surface.server import build_server
from mcp_server.surface.tools import RetrievalTools
from mcp_server.surface.view import VIEW_URI

pytestmark = pytest.mark.anyio

APP_MIME_TYPE = "text/html;profile=mcp-app"  # the extension's, restated so a change in the SDK's constant shows
VIEW_CHARS_PER_TOOL = 70
"""The most characters of tools/list that naming the view in one tool's _meta may take."""
VIEWED = {"hybrid_search", "vector_search", "keyword_search", "get_document", "check_answer"}


def apps_host() -> Any:
    """What a host that renders MCP Apps declares in its initialize capabilities."""
    return advertise("io.modelcontextprotocol/ui", {"mimeTypes": [APP_MIME_TYPE]})


@pytest.fixture(scope="module")
def server(acme: Retriever, server_settings: Settings) -> MCPServer:
    return build_server(server_settings, RetrievalTools(acme, open_database(server_settings), server_settings))


async def test_the_tools_that_show_evidence_name_the_view_and_the_server_advertises_the_extension(
    server: MCPServer,
) -> None:
    async with Client(server, extensions=[apps_host()]) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        extensions = client.server_capabilities.extensions or {}
        listed = {resource.uri: resource for resource in (await client.list_resources()).resources}
    assert "io.modelcontextprotocol/ui" in extensions
    assert {name for name, tool in tools.items() if (tool.meta or {}).get("ui") == {"resourceUri": VIEW_URI}} == VIEWED
    assert tools["sql_query"].meta is None  # rows have no page or quote to show
    assert listed[VIEW_URI].mime_type == APP_MIME_TYPE


async def test_a_client_without_mcp_apps_gets_tools_that_name_no_view(server: MCPServer) -> None:
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
        extensions = client.server_capabilities.extensions or {}
    assert len(tools) == 6 and all(tool.meta is None for tool in tools)  # nothing it could not use, no cost
    assert "io.modelcontextprotocol/ui" in extensions  # what it could negotiate


async def test_naming_the_view_costs_an_apps_host_a_few_characters_per_tool(server: MCPServer) -> None:
    sizes = []
    for extensions in ([apps_host()], None):
        async with Client(server, extensions=extensions) as client:
            listed = await client.list_tools()
        sizes.append(len(json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True))))
    assert 0 < sizes[0] - sizes[1] <= VIEW_CHARS_PER_TOOL * len(VIEWED)  # 335 characters in all (issue 34)


async def test_the_page_is_an_offline_mcp_app_whose_policy_admits_only_its_own_script_and_style(
    server: MCPServer,
) -> None:
    async with Client(server) as client:
        (content,) = (await client.read_resource(VIEW_URI)).contents
    assert isinstance(content, TextResourceContents) and content.mime_type == APP_MIME_TYPE
    ui = (content.meta or {})["ui"]
    assert ui["csp"] == {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []}
    page = content.text
    assert page.startswith("<!DOCTYPE html>") and "__CSP__" not in page
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    for tag, directive in (("script", "script-src"), ("style", "style-src")):
        (body,) = re.findall(rf"<{tag}>(.*?)</{tag}>", page, flags=re.DOTALL)
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert directives[directive] == f"'sha256-{digest}'"  # no 'unsafe-inline', no origin
    assert directives["default-src"] == "'none'" and directives["connect-src"] == "'none'"
    assert directives["img-src"] == "data:" and directives["trusted-types"] == "'none'"
    assert not re.search(r"https?://", page)  # nothing to fetch: no CDN, no font, no link out
    script = page.split("<script>", 1)[1]
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function", script)
