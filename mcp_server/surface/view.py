"""The evidence view: an MCP App that hosts supporting the ``io.modelcontextprotocol/ui`` extension render in the chat.

The extension (SEP-1865, stable 2026-01-26) lets a tool name, in its ``_meta.ui.resourceUri``, a
``ui://`` resource holding an HTML page (MIME type ``text/html;profile=mcp-app``); such a host
reads it with ``resources/read``, shows it in a sandboxed iframe and hands it the tool's
result over ``postMessage``. Our page, ``evidence_view.html`` beside this module, shows a
search's hits, a ``get_document`` quote or a ``check_answer`` verdict per sentence, and asks
the host to call ``get_document`` for a neighbouring chunk or a sentence's evidence. As the
extension asks, a tool names the view only to a client that negotiated the extension (its
``initialize`` capabilities list ``io.modelcontextprotocol/ui`` with the page's MIME type):
others get the tool list without it, as compact as before, and the text and
``structuredContent`` results they always had.

The page is one file of plain HTML, CSS and JavaScript that fetches nothing: the resource
declares no domain in ``_meta.ui.csp``, and the page's own Content-Security-Policy, filled in
here, lets run only its one script and one style sheet (by their SHA-256), loads images only
from ``data:`` URLs and enforces Trusted Types with no policy, so document text can never be
written into the page as HTML.
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import cache
from importlib.resources import files
from typing import Any

from mcp_server.surface.sdk import (
    Apps,
    CallNext,
    HandlerResult,
    ListToolsResult,
    ResourceCsp,
    ServerRequestContext,
    Tool,
    client_supports_apps,
)

VIEW_URI = "ui://agentic-rag-mcp/evidence"
VIEW_META: dict[str, Any] = {"ui": {"resourceUri": VIEW_URI}}
"""The ``_meta`` of a tool whose results the evidence view shows."""

_POLICY = (
    "default-src 'none'; script-src {script}; style-src {style}; img-src data:; connect-src 'none'; "
    "base-uri 'none'; form-action 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
)


def evidence_view() -> Apps:
    """The MCP Apps extension of one server, carrying the evidence view (advertised in the server's capabilities)."""
    apps = Apps()
    apps.add_html_resource(
        VIEW_URI, view_html(), name="evidence-view", title="Evidence",
        description="Shows a search's hits, a get_document quote or a check_answer verdict per sentence.",
        csp=ResourceCsp(connect_domains=[], resource_domains=[], frame_domains=[], base_uri_domains=[]),
        prefers_border=True,
    )  # fmt: skip
    return apps


class ViewForAppsHosts:
    """Server middleware: ``tools/list`` names the evidence view (``_meta.ui``) only to clients that negotiated MCP Apps."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        listed = await call_next(ctx)
        if ctx.method != "tools/list" or client_supports_apps(ctx):
            return listed
        result = ListToolsResult.model_validate(listed)
        return result.model_copy(update={"tools": [_without_view(tool) for tool in result.tools]})


def _without_view(tool: Tool) -> Tool:
    meta = {key: value for key, value in (tool.meta or {}).items() if key != "ui"}
    return tool.model_copy(update={"meta": meta or None})


@cache
def view_html() -> str:
    """The page, its Content-Security-Policy naming the hashes of its inline script and style sheet."""
    page = files("mcp_server.surface").joinpath("evidence_view.html").read_text(encoding="utf-8")
    policy = _POLICY.format(script=_inline_hash(page, "script"), style=_inline_hash(page, "style"))
    return page.replace("__CSP__", policy, 1)


def _inline_hash(page: str, tag: str) -> str:
    """The CSP source (``'sha256-…'``) of the one inline ``<tag>`` element of ``page``."""
    (body,) = re.findall(rf"<{tag}>(.*?)</{tag}>", page, flags=re.DOTALL)
    return f"'sha256-{base64.b64encode(hashlib.sha256(body.encode('utf-8')).digest()).decode('ascii')}'"
