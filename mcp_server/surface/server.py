"""The MCP surface: six cited retrieval tools (five to retrieve, check_answer to check a draft), resources, a research prompt and a view.

The resources: the corpus list, the SQL schema, each document (``doc://``) and a picture of any page of a
PDF or scanned picture with a cited span highlighted (``page://``, a PNG; the URIs are in
:mod:`mcp_server.surface.links`). The search, get_document and check_answer results carry
``resource_link`` blocks naming the documents and page pictures they cite
(:mod:`mcp_server.surface.resource_links`).

:func:`build_server` publishes a :class:`~mcp_server.surface.tools.ToolBackend` (an opened
index generation and the database, or the stdio server's live view of them,
:mod:`mcp_server.surface.stdio`) as a fresh :class:`MCPServer`. Only the MCP surface
imports the MCP SDK: this module, ``http_app.py`` and the HTTP server's
``generation_app.py``, ``auth.py``, ``routing.py`` and ``audit.py``.

A server publishes what one *grant* may read (see :mod:`mcp_server.team.tokens`): the corpus
parameters, the corpus list and the instructions name only the granted corpora, and a
tool the grant leaves out (``sql_query`` without SQL, the searches without corpora) is
not listed; calling it anyway gets a refusal saying why. The local user (stdio, or HTTP
without tokens) has :data:`~mcp_server.grants.FULL_ACCESS`.

The searches, get_document and check_answer name the evidence view (:mod:`mcp_server.surface.view`) in
their ``_meta`` to clients that negotiated MCP Apps, so such hosts show their results in it; the
server advertises the extension, and its ``ui://`` page is one more resource, the same for every grant that
may read a corpus.

Every tool is read-only, idempotent and closed-world. A call runs its blocking work on a
worker thread, at most ``settings.calls.max_concurrent_calls`` at once per process (SQL:
``settings.sql.max_concurrent``) and within
``settings.calls.call_timeout_s`` (waiting included), and returns a typed
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
import threading
import time
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.to_thread
from pydantic import BaseModel, Field

from mcp_server import __version__
from mcp_server.display_text import for_display, json_for_display
from mcp_server.errors import CallTimeoutError, InvalidQueryError, RetrievalError
from mcp_server.grants import FULL_ACCESS, Grant
from mcp_server.grounding.deadline import DeadlineExceeded, running_until
from mcp_server.models import CorpusInfo, SearchFilters, SqlResult
from mcp_server.models import Retriever as RetrieverName
from mcp_server.retrieval.page_pictures import names_chunk
from mcp_server.settings import Settings
from mcp_server.surface import descriptions as text
from mcp_server.surface.arguments import ArgumentCheck
from mcp_server.surface.call_notes import note_error
from mcp_server.surface.fair_slots import FairSlots
from mcp_server.surface.links import DOCUMENT_URI, PAGE_MIME_TYPE, PAGE_URI
from mcp_server.surface.sdk import (
    INVALID_PARAMS,
    CallNext,
    CallToolResult,
    HandlerResult,
    MCPError,
    MCPServer,
    ResourceLink,
    ResourceNotFoundError,
    ResourceSecurity,
    ServerMiddleware,
    ServerRequestContext,
    SubscriptionBus,
    TextContent,
    ToolAnnotations,
    ToolError,
)
from mcp_server.surface.resource_links import check_links, document_links, search_links
from mcp_server.surface.listing import DocumentListing
from mcp_server.surface.answer_check import AnswerCheck
from mcp_server.surface.rendering import fit_search, render_check, render_document, render_search, render_sql
from mcp_server.surface.tools import NO_DATABASE, DocumentResult, SearchResult, ToolBackend
from mcp_server.surface.view import VIEW_META, ViewForAppsHosts, evidence_view

SERVER_NAME = "agentic-rag-mcp"
CORPORA_URI = "ragmcp://corpora"
SCHEMA_URI = "ragmcp://sql/schema"
SEARCH_MODES: tuple[RetrieverName, ...] = ("hybrid", "vector", "keyword")
MAX_ERROR_CHARS = 1_000

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")


def build_server(
    settings: Settings,
    tools: ToolBackend,
    *,
    grant: Grant = FULL_ACCESS,
    calls: "CallRunner | None" = None,
    middleware: Sequence[ServerMiddleware[Any]] = (),
    subscriptions: SubscriptionBus | None = None,
    arguments: ArgumentCheck | None = None,
) -> MCPServer:
    """A new server publishing what ``grant`` may read of ``tools``; the caller owns (and closes) ``tools``.

    Servers of one process share one ``calls`` runner (its concurrency limit is per process);
    ``middleware`` wraps every message the server receives (the audit log); ``subscriptions``
    is the bus its list-changed events go out on (see :func:`refresh_corpus_tools`); ``arguments``
    checks the tools' arguments before each call (pass the same one to :func:`refresh_corpus_tools`).
    """
    scope = grant.scope
    corpora = tools.corpora(scope)
    database = tools.database.name if grant.sql and tools.database is not None else None
    sql = database is not None
    refusals = _refusals(corpora, grant.sql, tools.database is not None)
    numbers = text.limits(settings)
    arguments = arguments or ArgumentCheck()
    server: MCPServer = MCPServer(
        SERVER_NAME,
        title="Cited retrieval",
        version=__version__,
        instructions=text.instructions([c.name for c in corpora], database),
        middleware=[
            *middleware, _Refusals(refusals), _GrantedSubscriptions(tools, scope), arguments,
            DocumentListing(tools, scope), ViewForAppsHosts(),
        ],
        subscriptions=subscriptions,
        extensions=[evidence_view()] if scope is None or scope else [],  # a SQL-only grant has no evidence to show
    )
    surface = _Surface(server, tools, calls or CallRunner(settings), corpora, scope, numbers, arguments)
    _add_corpus_tools(surface)
    if sql:
        _add_sql_tool(surface)
    _add_resources(surface, sql)
    _add_prompt(server, searchable=bool(corpora), sql=sql)
    return server


def refresh_corpus_tools(
    server: MCPServer, settings: Settings, tools: ToolBackend, calls: "CallRunner", published: list[CorpusInfo],
    arguments: ArgumentCheck,
) -> list[CorpusInfo]:
    """Publish the corpus tools of a full-access ``server`` anew if the corpora of ``tools`` differ from
    the ``published`` ones (a new index generation: other counts, a corpus now indexed); returns the
    corpora now published. When they changed, the caller tells the client that the tool list changed.
    The instructions, fixed at the handshake, stay as they are."""
    corpora = tools.corpora()
    if corpora == published:
        return published
    if published:
        for name in [f"{mode}_search" for mode in SEARCH_MODES] + ["get_document", "check_answer"]:
            server.remove_tool(name)
    _add_corpus_tools(_Surface(server, tools, calls, corpora, None, text.limits(settings), arguments))
    return corpora


def _add_corpus_tools(surface: "_Surface") -> None:
    if surface.corpora:
        for mode in SEARCH_MODES:
            _add_search_tool(surface, mode)
        _add_document_tool(surface)
        _add_check_tool(surface)


def _refusals(corpora: list[CorpusInfo], granted_sql: bool, has_database: bool = True) -> dict[str, str]:
    """What a client hears when it calls a tool its grant (or the server's configuration) leaves out, by name."""
    refusals: dict[str, str] = {}
    sql = granted_sql and has_database
    if not corpora:
        refusals |= {
            name: f"{name} is not available to this client: its token grants none of the corpora this "
            "server serves. Ask the server's operator for a token that grants one of them"
            + (", or use sql_query for records." if sql else ".")
            for name in [f"{mode}_search" for mode in SEARCH_MODES] + ["get_document", "check_answer"]
        }
    if not has_database:
        refusals["sql_query"] = NO_DATABASE
    elif not granted_sql:
        refusals["sql_query"] = (
            "sql_query is not available to this client: its token has no SQL grant. "
            + ("Answer from the document search tools, or ask" if corpora else "Ask")
            + " the server's operator for a token with SQL access."
        )
    return refusals


class _Refusals:
    """Server middleware: answers a call of a tool the grant leaves out with its refusal, not 'Unknown tool'."""

    def __init__(self, refusals: dict[str, str]) -> None:
        self.refusals = refusals

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        name = (ctx.params or {}).get("name") if ctx.method == "tools/call" else None
        if isinstance(name, str) and name in self.refusals:
            note_error("NotGranted")
            return CallToolResult(content=[TextContent(type="text", text=self.refusals[name])], is_error=True)
        return await call_next(ctx)


class _GrantedSubscriptions:
    """Server middleware: ``subscriptions/listen`` to a document of a corpus the grant leaves out is refused
    exactly as reading it is (the same error, the same message), never acknowledged."""

    def __init__(self, tools: ToolBackend, scope: Collection[str] | None) -> None:
        self.tools = tools
        self.scope = scope

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "subscriptions/listen" and self.scope is not None:
            notifications = (ctx.params or {}).get("notifications")
            uris = notifications.get("resourceSubscriptions") if isinstance(notifications, dict) else None
            for uri in uris if isinstance(uris, list) else []:
                corpus, _, doc_id = str(uri).removeprefix("doc://").partition("/")
                if str(uri).startswith("doc://") and corpus not in self.scope:
                    try:
                        self.tools.get_document(doc_id, corpus=corpus, chunk=None, window=0, scope=self.scope)
                    except RetrievalError as e:
                        note_error(type(e).__name__)
                        raise MCPError(code=INVALID_PARAMS, message=_message(e), data={"uri": str(uri)}) from e
        return await call_next(ctx)


Slots = Literal["tools", "sql"]
"""Which slots a call takes: SQL statements have their own, so heavy SQL never queues searches behind it."""


class CallRunner:
    """Runs tool work on worker threads, a bounded number at once, each call within a time limit.

    Searches and document reads run at most ``settings.calls.max_concurrent_calls`` at once per
    process, SQL statements at most ``settings.sql.max_concurrent`` at once besides them
    (their worker processes run at low CPU priority, see :mod:`mcp_server.sql.sandbox`).
    A call that runs out of time is answered at once with a tool error and its result is
    discarded, but its work is not abandoned: it keeps its slot until it has really stopped
    (SQL is killed at ``settings.sql.timeout_s``; searches and document reads are bounded; the
    citation check and the quote search stop at the call's deadline, :mod:`mcp_server.grounding.deadline`),
    so the work running at once never exceeds the limits.
    """

    def __init__(self, settings: Settings) -> None:
        self._slots = {
            "tools": FairSlots(settings.calls.max_concurrent_calls), "sql": FairSlots(settings.sql.max_concurrent)
        }
        self._timeout_s = settings.calls.call_timeout_s

    async def run(self, work: Callable[[], T], slots: Slots = "tools", tenant: Hashable = None) -> T:
        """``work()`` on a worker thread, once one of ``slots`` is free for ``tenant`` (the grant's corpora: see
        :mod:`mcp_server.surface.fair_slots`); CallTimeoutError past the time limit."""
        deadline = time.monotonic() + self._timeout_s
        gave_up = threading.Event()
        with anyio.move_on_after(self._timeout_s):
            return await anyio.to_thread.run_sync(
                self._in_slot, work, self._slots[slots], tenant, deadline, gave_up, abandon_on_cancel=True
            )
        gave_up.set()
        raise _call_timeout(self._timeout_s) from None

    def _in_slot(
        self, work: Callable[[], T], slots: FairSlots, tenant: Hashable, deadline: float, gave_up: threading.Event
    ) -> T:
        """On the worker thread: wait for a slot until ``deadline``, run ``work`` in it, free it when it ends."""
        if not slots.acquire(tenant, max(0.0, deadline - time.monotonic())):
            raise _call_timeout(self._timeout_s)
        try:
            if gave_up.is_set():  # the slot came just as the caller stopped waiting
                raise _call_timeout(self._timeout_s)
            with running_until(deadline):
                return work()
        except DeadlineExceeded:
            raise _call_timeout(self._timeout_s) from None
        finally:
            slots.release(tenant)

    async def result(
        self, work: Callable[[], R], render: Callable[[R], str], slots: Slots = "tools", tenant: Hashable = None,
        links: Callable[[R], list[ResourceLink]] | None = None,
    ) -> CallToolResult:
        """The tool result: ``work()``'s model as structured content and its text rendering, followed by
        the resource links ``links`` names in it (its documents, pictures of its cited pages).

        A library error becomes a tool error carrying its message, which says what to do instead.
        """
        try:
            value = await self.run(work, slots, tenant)
        except RetrievalError as e:
            note_error(type(e).__name__)
            raise ToolError(_message(e)) from e
        return CallToolResult(
            content=[TextContent(type="text", text=render(value)), *(links(value) if links is not None else [])],
            structured_content=value.model_dump(mode="json"),
        )


@dataclass(frozen=True)
class _Surface:
    """What one server's tools and resources are built from: a grant's view of the process's tools."""

    server: MCPServer
    tools: ToolBackend
    calls: CallRunner
    corpora: list[CorpusInfo]
    scope: Collection[str] | None
    numbers: dict[str, Any]
    arguments: ArgumentCheck

    @property
    def tenant(self) -> Hashable:
        """Whose calls these are, for sharing the call slots fairly: one grant's corpora (None: everything)."""
        return frozenset(self.scope) if self.scope is not None else None

    def add_tool(
        self, function: Callable[..., Any], name: str, title: str, description: str, *, viewed: bool = True
    ) -> None:
        """Publish ``function`` as the read-only tool ``name``, its arguments checked before each call; a ``viewed``
        tool's results are shown in the evidence view by hosts that render MCP Apps."""
        self.server.add_tool(
            function, name=name, title=title, description=description, annotations=_annotations(title),
            meta=VIEW_META if viewed else None,
        )  # fmt: skip
        self.arguments.add(name, function)


def _call_timeout(timeout_s: float) -> CallTimeoutError:
    return CallTimeoutError(
        f"the call did not finish within {timeout_s:g} s, the server's limit per call; the server may be "
        "busy, so retry in a moment, or ask for less (a smaller top_k, a narrower query, fewer rows)"
    )


def _message(error: RetrievalError) -> str:
    """The error's message, clipped and shown safe: it may quote what the caller sent, which can be huge,
    or a name from inside a document (a sheet's)."""
    message = for_display(str(error), lines=True)
    if len(message) <= MAX_ERROR_CHARS:
        return message
    return f"{message[:MAX_ERROR_CHARS]}…[{len(message) - MAX_ERROR_CHARS} more characters]"


def _field(description: str, **constraints: Any) -> Any:
    """A parameter's description plus JSON-schema ``constraints`` (an enum, a range) that are
    published but left to the retrieval layer to check, so a violation gets its actionable message.
    An optional parameter's ``"default": null`` is left out: not being required says it."""

    def publish(schema: dict[str, Any]) -> None:
        # For an optional parameter the constraints belong on the non-null branch of anyOf.
        branches = [branch for branch in schema.get("anyOf", []) if branch.get("type") != "null"]
        (branches[0] if branches else schema).update(constraints)
        if "default" in schema and schema["default"] is None:
            del schema["default"]

    return Field(description=description, json_schema_extra=publish)


def _corpus_field(corpora: list[CorpusInfo], description: str) -> Any:
    return _field(description, enum=[c.name for c in corpora])


def _annotations(title: str) -> ToolAnnotations:
    return ToolAnnotations(
        title=title, read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )


def _add_search_tool(surface: _Surface, mode: RetrieverName) -> None:
    tools, calls, scope, numbers = surface.tools, surface.calls, surface.scope, surface.numbers
    query_field = _field(text.QUERY, minLength=1, maxLength=numbers["max_query_chars"])
    # The corpora and what each holds are listed once, under the default search's corpus parameter.
    corpora = text.corpus_parameter(surface.corpora, text.SEARCH_CORPUS) if mode == "hybrid" else text.OTHER_CORPUS
    corpus_field = _corpus_field(surface.corpora, corpora)
    top_k_field = _field(text.TOP_K, minimum=1, maximum=numbers["max_top_k"])

    async def search(
        query: Annotated[str, query_field],
        corpus: Annotated[str | None, corpus_field] = None,
        top_k: Annotated[int, top_k_field] = 5,
        filters: Annotated[SearchFilters | None, _field(text.FILTERS)] = None,
        min_score: Annotated[float | None, _field(text.min_score(mode, numbers["rerank_model"]))] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        def work() -> SearchResult:
            found = tools.search(
                query, mode=mode, corpus=corpus, top_k=top_k, filters=filters, scope=scope, min_score=min_score
            )
            return fit_search(found, numbers["max_chars"])

        return await calls.result(work, render_search, tenant=surface.tenant, links=search_links)

    surface.add_tool(
        search, f"{mode}_search", text.SEARCH_TITLES[mode], text.SEARCH_DESCRIPTIONS[mode].format(**numbers)
    )


def _add_document_tool(surface: _Surface) -> None:
    tools, calls, scope = surface.tools, surface.calls, surface.scope
    corpus_field = _corpus_field(surface.corpora, text.DOC_CORPUS)

    async def get_document(
        doc_id: Annotated[str, _field(text.DOC_ID, minLength=1)],
        corpus: Annotated[str | None, corpus_field] = None,
        chunk: Annotated[int | None, _field(text.CHUNK, minimum=0)] = None,
        window: Annotated[int, _field(text.WINDOW, minimum=0)] = 1,
        quote: Annotated[str | None, _field(text.QUOTE.format(**surface.numbers), minLength=1, maxLength=surface.numbers["max_quote_chars"])] = None,
    ) -> Annotated[CallToolResult, DocumentResult]:
        work = partial(
            tools.get_document, doc_id, corpus=corpus, chunk=chunk, window=window, scope=scope, quote=quote
        )
        links = partial(document_links, chunked=names_chunk(doc_id, chunk))
        return await calls.result(work, render_document, tenant=surface.tenant, links=links)

    surface.add_tool(get_document, "get_document", "Read a document", text.GET_DOCUMENT.format(**surface.numbers))


def _add_check_tool(surface: _Surface) -> None:
    tools, calls, scope = surface.tools, surface.calls, surface.scope

    async def check_answer(
        answer: Annotated[str, _field(text.ANSWER, minLength=1)],
        question: Annotated[str | None, _field(text.QUESTION)] = None,
    ) -> Annotated[CallToolResult, AnswerCheck]:
        work = partial(tools.check_answer, answer, question, scope)
        return await calls.result(work, render_check, tenant=surface.tenant, links=check_links)

    surface.add_tool(check_answer, "check_answer", "Check an answer's citations", text.CHECK_ANSWER)


def _add_sql_tool(surface: _Surface) -> None:
    tools, calls, numbers = surface.tools, surface.calls, surface.numbers
    tenant = surface.tenant
    max_rows_field = _field(text.MAX_ROWS.format(**numbers), minimum=1, maximum=numbers["max_rows"])

    async def sql_query(
        sql: Annotated[str, _field(text.SQL)],
        params: Annotated[list[str | int | float | bool | None] | None, _field(text.PARAMS)] = None,
        max_rows: Annotated[int | None, max_rows_field] = None,
    ) -> Annotated[CallToolResult, SqlResult]:
        work = partial(tools.sql_query, sql, params, max_rows)
        return await calls.result(work, render_sql, "sql", tenant)

    database = tools.database
    assert database is not None, "sql_query is published only with a database"
    description = text.SQL_QUERY.format(
        database=database.name, tables=for_display(database.tables_text(), lines=True), schema_uri=SCHEMA_URI,
        cell_chars=database.max_value_chars, **numbers,
    )  # fmt: skip
    surface.add_tool(sql_query, "sql_query", "Read-only SQL", description, viewed=False)


def _add_resources(surface: _Surface, sql: bool) -> None:
    """The corpus list (the granted corpora), and the SQL schema and documents when granted."""
    server, tools, calls, scope = surface.server, surface.tools, surface.calls, surface.scope
    database = tools.database

    @server.resource(
        CORPORA_URI, name="corpora", title="Corpora", mime_type="application/json",
        description="The searchable corpora: name, what each holds and when to use it, document and chunk counts, "
        "and the files that could not be indexed, each with why (tell the user when a question may be about one).",
    )  # fmt: skip
    def corpora_resource() -> str:  # read when asked: a stdio server follows new index generations
        return json_for_display(json.dumps([c.model_dump() for c in tools.corpora(scope)], ensure_ascii=False, indent=2))

    if sql and database is not None:
        schema_json = json_for_display(
            json.dumps([t.model_dump() for t in database.schema()], ensure_ascii=False, indent=2)
        )

        @server.resource(
            SCHEMA_URI, name="sql-schema", title="SQL schema", mime_type="application/json",
            description=f"Tables of the {database.name} database for sql_query: what a row holds, columns with "
            "their types and keys, row counts.",
        )  # fmt: skip
        def schema_resource() -> str:
            return schema_json

    if surface.corpora:

        @server.resource(
            DOCUMENT_URI, name="document", title="Document", mime_type="text/plain",
            description="A document with its citation ids marked where each chunk starts (the get_document rendering).",
        )  # fmt: skip
        async def document_resource(corpus: str, doc_id: str) -> str:
            work = partial(tools.get_document, doc_id, corpus=corpus, chunk=None, window=0, scope=scope)
            try:
                document = await calls.run(work)
            except RetrievalError as e:
                note_error(type(e).__name__)
                raise ResourceNotFoundError(_message(e)) from e
            return render_document(document)

        @server.resource(
            PAGE_URI, name="page", title="Page picture", mime_type=PAGE_MIME_TYPE,
            description="A picture (PNG) of a page of a PDF or scanned picture with the cited span highlighted: "
            "?chunk=N highlights chunk N (on its page), ?quote=... a passage get_document's quote finds, ?page=P shows "
            "page P instead. Tool results link it for each hit and quote that has a page.",
            security=ResourceSecurity(exempt_params={"quote"}),  # a quote is words, not a path: '..' and '/' are fine
        )  # fmt: skip
        async def page_resource(
            corpus: str, doc_id: str, chunk: str | None = None, quote: str | None = None, page: str | None = None
        ) -> bytes:
            try:
                work = partial(
                    tools.page_picture, doc_id, corpus=corpus, chunk=_whole_number("chunk", chunk), quote=quote,
                    page=_whole_number("page", page), scope=scope,
                )  # fmt: skip
                picture = await calls.run(work, tenant=surface.tenant)
            except RetrievalError as e:
                note_error(type(e).__name__)
                raise ResourceNotFoundError(_message(e)) from e
            return picture.png


def _whole_number(name: str, value: str | None) -> int | None:
    """A page:// query value as a number (None when absent); refused naming the parameter when it is not one."""
    if value is None:
        return None
    if not value.strip().isdigit():
        raise InvalidQueryError(f"{name} must be a whole number (from {0 if name == 'chunk' else 1}), got {value!r}")
    return int(value)


def _add_prompt(server: MCPServer, *, searchable: bool, sql: bool) -> None:
    @server.prompt(
        name="research",
        title="Research a question with citations",
        description="Answer a question from the knowledge this client may read, citing every fact.",
    )
    def research(question: str) -> str:
        return text.research_prompt(question, searchable=searchable, sql=sql)
