"""The MCP surface: five cited retrieval tools, three resources and a research prompt.

:func:`build_server` publishes one :class:`~mcp_server.tools.RetrievalTools` (the index
and database a process opened once) as a fresh :class:`MCPServer`. This module and
``http_app.py`` are the only ones that import the MCP SDK.

Every tool is read-only, idempotent and closed-world. A call runs its blocking work on a
worker thread, at most ``settings.max_concurrent_calls`` at once, and returns a typed
result as ``structuredContent`` (validated against the tool's ``outputSchema``) plus a
text rendering. Library errors become tool errors (``is_error`` results whose message
says what to do instead) here, once; the SDK turns anything unexpected into a generic
tool error without internals and logs it on stderr.

Some parameters publish constraints (the corpus ``enum``, ``top_k`` and length ranges)
in their JSON schema while pydantic checks only their type: the retrieval layer checks
the values itself, so a model that oversteps gets a message naming the valid choices
rather than a validation dump.
"""

# No `from __future__ import annotations`: the tool signatures carry field metadata built at run
# time (the corpus enum, the limits), which the SDK reads with inspect.signature(eval_str=True).

import json
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from mcp_server import __version__
from mcp_server import descriptions as text
from mcp_server.errors import RetrievalError
from mcp_server.models import CorpusInfo, SearchFilters, SqlResult
from mcp_server.models import Retriever as RetrieverName
from mcp_server.rendering import render_document, render_search, render_sql
from mcp_server.settings import Settings
from mcp_server.tools import DocumentResult, RetrievalTools, SearchResult

SERVER_NAME = "agentic-rag-mcp"
CORPORA_URI = "ragmcp://corpora"
SCHEMA_URI = "ragmcp://sql/schema"
DOCUMENT_URI = "doc://{corpus}/{+doc_id}"
SEARCH_MODES: tuple[RetrieverName, ...] = ("hybrid", "vector", "keyword")
MAX_ERROR_CHARS = 1_000

R = TypeVar("R", bound=BaseModel)


def serve_stdio(settings: Settings) -> None:
    """Serve the current index over stdio until the host closes stdin; stdout carries only the protocol."""
    tools = RetrievalTools.open(settings)
    try:
        build_server(settings, tools).run("stdio")
    finally:
        tools.close()


def build_server(settings: Settings, tools: RetrievalTools) -> MCPServer:
    """A new server publishing ``tools``; the caller owns (and closes) ``tools``."""
    corpora = tools.retriever.corpora()
    numbers = text.limits(settings)
    server: MCPServer = MCPServer(
        SERVER_NAME,
        title="Cited retrieval",
        version=__version__,
        instructions=text.INSTRUCTIONS.format(
            corpora=", ".join(c.name for c in corpora) or "none", database=tools.database.name
        ),
    )
    calls = _Calls(settings.max_concurrent_calls)
    for mode in SEARCH_MODES:
        _add_search_tool(server, tools, calls, mode, corpora, numbers)
    _add_document_tool(server, tools, calls, corpora, numbers)
    _add_sql_tool(server, tools, calls, numbers)
    _add_resources(server, tools, calls, corpora)
    _add_prompt(server)
    return server


class _Calls:
    """Runs tool work on worker threads, a bounded number at once, and shapes the result."""

    def __init__(self, limit: int) -> None:
        self._limiter = anyio.CapacityLimiter(limit)

    async def run(self, work: Callable[[], R]) -> R:
        """``work()`` on a worker thread, once one is free."""
        return await anyio.to_thread.run_sync(work, limiter=self._limiter)

    async def result(self, work: Callable[[], R], render: Callable[[R], str]) -> CallToolResult:
        """The tool result: ``work()``'s model as structured content and its text rendering.

        A library error becomes a tool error carrying its message, which says what to do instead.
        """
        try:
            value = await self.run(work)
        except RetrievalError as e:
            raise ToolError(_message(e)) from e
        return CallToolResult(
            content=[TextContent(type="text", text=render(value))],
            structured_content=value.model_dump(mode="json"),
        )


def _message(error: RetrievalError) -> str:
    """The error's message, clipped: it may quote what the caller sent, which can be huge."""
    message = str(error)
    if len(message) <= MAX_ERROR_CHARS:
        return message
    return f"{message[:MAX_ERROR_CHARS]}…[{len(message) - MAX_ERROR_CHARS} more characters]"


def _field(description: str, **constraints: Any) -> Any:
    """A parameter's description plus JSON-schema ``constraints`` (an enum, a range) that are
    published but left to the retrieval layer to check, so a violation gets its actionable message."""

    def publish(schema: dict[str, Any]) -> None:
        # For an optional parameter the constraints belong on the non-null branch of anyOf.
        branches = [branch for branch in schema.get("anyOf", []) if branch.get("type") != "null"]
        (branches[0] if branches else schema).update(constraints)

    return Field(description=description, json_schema_extra=publish)


def _corpus_field(corpora: list[CorpusInfo], purpose: str) -> Any:
    return _field(text.corpus_parameter(corpora, purpose), enum=[c.name for c in corpora])


def _annotations(title: str) -> ToolAnnotations:
    return ToolAnnotations(
        title=title, read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )


def _add_search_tool(
    server: MCPServer,
    tools: RetrievalTools,
    calls: _Calls,
    mode: RetrieverName,
    corpora: list[CorpusInfo],
    numbers: dict[str, Any],
) -> None:
    query_field = _field(text.QUERY.format(**numbers), minLength=1, maxLength=numbers["max_query_chars"])
    corpus_field = _corpus_field(corpora, "Search only this corpus; omit to search all of them.")
    top_k_field = _field(text.TOP_K.format(**numbers), minimum=1, maximum=numbers["max_top_k"])

    async def search(
        query: Annotated[str, query_field],
        corpus: Annotated[str | None, corpus_field] = None,
        top_k: Annotated[int, top_k_field] = 5,
        filters: Annotated[SearchFilters | None, Field(description=text.FILTERS)] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        work = partial(tools.search, query, mode=mode, corpus=corpus, top_k=top_k, filters=filters)
        return await calls.result(work, render_search)

    title = text.SEARCH_TITLES[mode]
    server.add_tool(
        search,
        name=f"{mode}_search",
        title=title,
        description=text.SEARCH_DESCRIPTIONS[mode].format(**numbers),
        annotations=_annotations(title),
    )


def _add_document_tool(
    server: MCPServer, tools: RetrievalTools, calls: _Calls, corpora: list[CorpusInfo], numbers: dict[str, Any]
) -> None:
    corpus_field = _corpus_field(corpora, text.DOC_CORPUS)

    async def get_document(
        doc_id: Annotated[str, _field(text.DOC_ID, minLength=1)],
        corpus: Annotated[str | None, corpus_field] = None,
        chunk: Annotated[int | None, _field(text.CHUNK, minimum=0)] = None,
        window: Annotated[int, _field(text.WINDOW, minimum=0)] = 1,
    ) -> Annotated[CallToolResult, DocumentResult]:
        work = partial(tools.get_document, doc_id, corpus=corpus, chunk=chunk, window=window)
        return await calls.result(work, render_document)

    server.add_tool(
        get_document,
        title="Read a document",
        description=text.GET_DOCUMENT.format(**numbers),
        annotations=_annotations("Read a document"),
    )


def _add_sql_tool(server: MCPServer, tools: RetrievalTools, calls: _Calls, numbers: dict[str, Any]) -> None:
    max_rows_field = _field(text.MAX_ROWS.format(**numbers), minimum=1, maximum=numbers["max_rows"])

    async def sql_query(
        sql: Annotated[str, Field(description=text.SQL)],
        params: Annotated[list[str | int | float | bool | None] | None, Field(description=text.PARAMS)] = None,
        max_rows: Annotated[int | None, max_rows_field] = None,
    ) -> Annotated[CallToolResult, SqlResult]:
        return await calls.result(partial(tools.sql_query, sql, params, max_rows), render_sql)

    database = tools.database
    server.add_tool(
        sql_query,
        title="Read-only SQL",
        description=text.SQL_QUERY.format(
            database=database.name, schema=database.schema_text(), cell_chars=database.max_value_chars, **numbers
        ),
        annotations=_annotations("Read-only SQL"),
    )


def _add_resources(server: MCPServer, tools: RetrievalTools, calls: _Calls, corpora: list[CorpusInfo]) -> None:
    corpora_json = json.dumps([c.model_dump() for c in corpora], ensure_ascii=False, indent=2)
    schema_json = json.dumps([t.model_dump() for t in tools.database.schema()], ensure_ascii=False, indent=2)

    @server.resource(
        CORPORA_URI, name="corpora", title="Corpora", mime_type="application/json",
        description="The searchable corpora: name, what each holds and when to use it, document and chunk counts.",
    )  # fmt: skip
    def corpora_resource() -> str:
        return corpora_json

    @server.resource(
        SCHEMA_URI, name="sql-schema", title="SQL schema", mime_type="application/json",
        description=f"Tables of the {tools.database.name} database for sql_query: columns, keys, row counts.",
    )  # fmt: skip
    def schema_resource() -> str:
        return schema_json

    @server.resource(
        DOCUMENT_URI, name="document", title="Document", mime_type="text/plain",
        description="A document with its citation ids marked where each chunk starts (the get_document rendering).",
    )  # fmt: skip
    async def document_resource(corpus: str, doc_id: str) -> str:
        try:
            document = await calls.run(partial(tools.get_document, doc_id, corpus=corpus, chunk=None, window=0))
        except RetrievalError as e:
            raise ResourceNotFoundError(_message(e)) from e
        return render_document(document)


def _add_prompt(server: MCPServer) -> None:
    @server.prompt(
        name="research",
        title="Research a question with citations",
        description="Answer a question from the corpora and the database, citing every fact.",
    )
    def research(question: str) -> str:
        return text.RESEARCH_PROMPT.format(question=question)
