"""The agent's side of MCP: connect to the retrieval server, list what it offers, call tools.

This is the only module of the agent that imports the MCP SDK. By default :func:`connect`
spawns ``ragmcp serve`` over stdio (the same command a desktop host runs), passing the
parent's ``RAGMCP_*`` settings through; with a URL it speaks streamable HTTP to a shared
server, sending the bearer token when one is given; given a server object of this process
(:data:`InProcessServer`), it talks to it in memory, with no subprocess (how tests run the agent).

Every call returns a :class:`ToolOutcome` — never raises for a tool error — with the text
the server rendered for models, the structured result, and the :class:`Evidence` items it
carries (search hits, a document window, or a SQL result), so the loop can feed the back-end
and the ledger from one object.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult, TextContent, TextResourceContents

from client_agent.errors import ServerConnectionError
from client_agent.evidence import Evidence
from mcp_server.models import Citation, DocumentView, Hit, SqlResult

InProcessServer = MCPServer
"""An MCP server built in this process (``mcp_server.surface.server.build_server``), which :func:`connect` can talk to."""
CORPORA_URI = "ragmcp://corpora"
SCHEMA_URI = "ragmcp://sql/schema"


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the server publishes it: what a model needs to call it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class CorpusSummary:
    name: str
    description: str
    documents: int
    chunks: int


@dataclass(frozen=True)
class Catalog:
    """What the server offers: tools, corpora (with routing descriptions) and the SQL schema text."""

    tools: list[ToolSpec]
    corpora: list[CorpusSummary]
    sql_schema: str

    def tool(self, name: str) -> ToolSpec | None:
        return next((tool for tool in self.tools if tool.name == name), None)


@dataclass(frozen=True)
class ToolOutcome:
    """One tool call's result, as text for the model and as evidence for the ledger."""

    name: str
    arguments: dict[str, Any]
    is_error: bool
    text: str
    structured: dict[str, Any] | None
    seconds: float
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.text)


class ToolServer:
    """A connected MCP session with the retrieval server."""

    def __init__(self, client: Client, catalog: Catalog) -> None:
        self._client = client
        self.catalog = catalog

    @classmethod
    async def open(cls, client: Client) -> ToolServer:
        """Wrap an entered :class:`mcp.Client`, reading the server's catalog once."""
        return cls(client, await _catalog(client))

    async def call(self, name: str, arguments: dict[str, Any], *, step: int) -> ToolOutcome:
        """Call tool ``name``; protocol failures become error outcomes the model can read."""
        started = time.perf_counter()
        try:
            result = await self._client.call_tool(name, arguments)
        except Exception as exc:  # noqa: BLE001 - a failed call is reported to the model, never crashes the loop
            return ToolOutcome(name, arguments, True, f"The call failed: {exc}", None, time.perf_counter() - started)
        seconds = time.perf_counter() - started
        text = _text_of(result)
        structured = result.structured_content if not result.is_error else None
        evidence = evidence_from(name, arguments, structured, step) if structured else []
        return ToolOutcome(name, arguments, bool(result.is_error), text, structured, seconds, evidence)


@asynccontextmanager
async def connect(
    server_url: str | None = None, token: str | None = None, server_env: dict[str, str] | None = None,
    server_log: TextIO | None = None, in_process: InProcessServer | None = None,
) -> AsyncIterator[ToolServer]:
    """Connect to ``in_process`` (in memory), to ``server_url`` (streamable HTTP), or else spawn
    ``ragmcp serve --wait-for-index`` over stdio (the index is brought up to date before the first question).

    The spawned server gets ``server_env`` (default: this process's environment, so the
    user's ``RAGMCP_*`` settings apply) and writes its logs to ``server_log`` (a real file;
    default: this process's stderr). A URL that cannot be connected to raises
    :class:`ServerConnectionError`.
    """
    opened = False
    refused: list[int] = []  # the 401/403 answers the server gave, which the SDK's error does not carry
    try:
        async with AsyncExitStack() as stack:
            transport: Any  # what Client takes: a server of this process, stdio parameters or an HTTP transport
            if in_process is not None:
                transport = in_process
            elif server_url is None:
                spawn = StdioServerParameters(
                    # A one-shot question needs the index first; a desktop host would rather not wait.
                    # Its warnings only: the agent shows its own progress, and the index build's.
                    command=sys.executable, args=["-m", "mcp_server", "serve", "--wait-for-index", "--log-level", "warning"],
                    env=dict(os.environ) if server_env is None else server_env,
                )
                transport = spawn if server_log is None else stdio_client(spawn, errlog=server_log)
            else:
                headers = {"Authorization": f"Bearer {token}"} if token else None
                http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                http.event_hooks["response"].append(_record_refusal(refused))
                transport = streamable_http_client(server_url, http_client=http)
            client = await stack.enter_async_context(Client(transport))
            server = await ToolServer.open(client)
            opened = True
            yield server
    except Exception as exc:
        if opened or server_url is None:
            raise
        if refused:
            raise ServerConnectionError(token_problem(server_url, refused[0], token)) from exc
        raise ServerConnectionError(connection_problem(server_url, exc)) from exc


def _record_refusal(refused: list[int]) -> Callable[[Any], Awaitable[None]]:
    """A response hook for the SDK's HTTP client (its own httpx fork) noting each 401/403."""
    async def record(response: Any) -> None:
        if response.status_code in (401, 403):
            refused.append(response.status_code)
    return record


def token_problem(url: str, status: int, token: str | None) -> str:
    """The server at ``url`` answered but refused the token (401) or what it grants (403)."""
    if status == 403:
        return (f"The retrieval server at {url} answered 403: the token (--token or RAG_AGENT_TOKEN) is not allowed "
                "this request; ask its operator for a grant (`ragmcp token add NAME --corpora ...`).")
    given = "was refused (unknown or revoked)" if token else "is missing"
    return (f"The retrieval server at {url} answered 401: the bearer token {given}. "
            "Set --token or RAG_AGENT_TOKEN to a token from `ragmcp token add`.")


def connection_problem(url: str, exc: BaseException) -> str:
    """Why connecting to ``url`` failed, naming the URL, with a hint at the usual mistakes."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    reason = str(exc) or type(exc).__name__
    message = f"Could not connect to the retrieval server at {url} ({reason})."
    path = urlsplit(url).path.rstrip("/")
    if not path.endswith("/mcp"):
        fixed = urlunsplit(urlsplit(url)._replace(path=f"{path}/mcp", query="", fragment=""))
        message += f" ragmcp serves MCP at the path /mcp: try --server-url {fixed}"
    else:
        message += " Is `ragmcp serve --transport http` running there?"
    return message


async def _catalog(client: Client) -> Catalog:
    tools = [
        ToolSpec(tool.name, tool.description or "", dict(tool.input_schema))
        for tool in (await client.list_tools()).tools
    ]
    corpora_json = await _resource_text(client, CORPORA_URI)
    corpora = [
        CorpusSummary(c["name"], c["description"], int(c.get("documents", 0)), int(c.get("chunks", 0)))
        for c in (json.loads(corpora_json) if corpora_json else [])
    ]
    # The schema resource is there only beside sql_query: asking for it otherwise logs an error on the server.
    schema = await _resource_text(client, SCHEMA_URI) if any(t.name == "sql_query" for t in tools) else ""
    return Catalog(tools, corpora, schema)


async def _resource_text(client: Client, uri: str) -> str:
    try:
        result = await client.read_resource(uri)
    except Exception:  # noqa: BLE001 - a server without this resource simply offers less to route on
        return ""
    return "".join(part.text for part in result.contents if isinstance(part, TextResourceContents))


def _text_of(result: CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, TextContent))


def evidence_from(tool: str, arguments: dict[str, Any], structured: dict[str, Any], step: int) -> list[Evidence]:
    """The citable items in a tool's structured result (hits, a document window, or SQL rows), read through the
    server's own models."""
    if "hits" in structured:
        query = str(structured.get("query", arguments.get("query", "")))
        hits = [Hit.model_validate(hit) for hit in structured["hits"]]
        return [
            Evidence(hit.citation.id, hit.text, "chunk", _record(hit.citation), tool, query, hit.rank, step)
            for hit in hits
        ]
    if "chunks" in structured and "citation" in structured:
        return _document_evidence(tool, arguments, DocumentView.model_validate(structured), step)
    if "rows" in structured and "citation_id" in structured:
        result = SqlResult.model_validate(structured)
        citation = {"id": result.citation_id, "sql": result.sql}
        text = f"{result.sql}\n{render_rows(result)}"  # the query says what the numbers count
        return [Evidence(result.citation_id, text, "sql", citation, tool, result.sql, 1, step)]
    return []


def _record(citation: Citation) -> dict[str, Any]:
    """A citation record as the tool's JSON holds it."""
    return citation.model_dump(mode="json")


def _document_evidence(tool: str, arguments: dict[str, Any], view: DocumentView, step: int) -> list[Evidence]:
    """One evidence item per chunk of a document window, each with its own citation record."""
    reference = str(arguments.get("doc_id", ""))
    items = []
    for rank, span in enumerate(view.chunks, start=1):
        text = view.text[max(0, span.char_start - view.text_offset) : span.char_end - view.text_offset]
        citation = view.citation.model_copy(
            update={"id": span.citation_id, "chunk": span.chunk, "section": span.section,
                    "char_start": span.char_start, "char_end": span.char_end}
        )  # fmt: skip
        items.append(Evidence(span.citation_id, text, "document", _record(citation), tool, reference, rank, step))
    return items


def render_rows(result: SqlResult) -> str:
    """A SQL result as a small pipe table (the text the citation check compares numbers against)."""
    lines = [" | ".join(result.columns)]
    lines += [" | ".join("" if value is None else str(value) for value in row) for row in result.rows]
    if result.truncated:
        lines.append(f"(truncated after {result.row_count} rows)")
    return "\n".join(lines)
