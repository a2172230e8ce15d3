"""``ragmcp serve`` over stdio: the handshake at once, the index kept in step in the background.

A desktop host starts the server and expects ``initialize`` answered within seconds, whatever
the size of the corpora. So the server opens the published index generation if there is one
(its documents and keyword index at once; its vectors, a copy of gigabytes at a million
chunks, on a thread that the first vector search waits for), starts a :class:`~mcp_server.indexing.background.BackgroundIngest`
that brings the index in line with the configured corpora (or waits for another process
doing so), and answers at once. Until a generation holding a corpus is published, a search
of it (or of everything, when nothing is published yet) is a tool error saying that the
index is being built, how far the build is (read from the build record every process can
read, :mod:`mcp_server.indexing.build_status`) and when to retry.

:class:`LiveTools` follows ``CURRENT`` like an HTTP worker (:mod:`mcp_server.team.live`), through
the same :class:`~mcp_server.indexing.pool.GenerationPool`: every ``reload_interval_s`` it opens a
newly published generation, sends new calls to it and closes the old one once its running calls are
done. When the corpora published change
(counts, a corpus indexed), the corpus tools are published anew and the client is told with
``notifications/tools/list_changed`` and ``notifications/resources/list_changed`` (on a
2026-07-28 connection, the same events on its ``subscriptions/listen`` stream).

A host shows the build's progress through the one call that is waiting for it
(:class:`_IndexProgress`): a corpus tool called with a ``progressToken`` while its corpus is
being indexed waits for the index, at most :data:`INDEX_WAIT_S`, and meanwhile the client
gets ``notifications/progress`` for that token whose message is the build's position
(``building the index (indexing documents: 0 of 1 documents done; embedding manual.pdf:
chunk 640 of 1,127)``).
Then the call runs: on the new index, or told that the index is still being built and when
to retry. A call without a token is answered at once, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from mcp_server.documents.corpus import CorpusConfig
from mcp_server.errors import IndexBuildingError
from mcp_server.indexing.background import BackgroundIngest
from mcp_server.indexing.build_status import read_build_status
from mcp_server.indexing.configured import configured_corpora
from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.pool import GenerationPool
from mcp_server.models import CorpusInfo, SearchFilters, SqlResult
from mcp_server.models import Retriever as RetrieverName
from mcp_server.retrieval.page_pictures import PagePicture
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.sql.demo import open_database
from mcp_server.sql.guard import Params, ReadOnlyDatabase
from mcp_server.surface.arguments import ArgumentCheck
from mcp_server.surface.sdk import (
    CallNext,
    HandlerResult,
    InMemorySubscriptionBus,
    MCPServer,
    ResourcesListChanged,
    ServerMiddleware,
    ServerRequestContext,
    ServerSession,
    ToolsListChanged,
    progress_token_from_params,
)
from mcp_server.surface.server import CallRunner, build_server, refresh_corpus_tools
from mcp_server.surface.answer_check import AnswerCheck
from mcp_server.surface.tools import DocumentResult, RetrievalTools, SearchResult, query_database

logger = logging.getLogger(__name__)
INDEX_WAIT_S = 20.0
"""How long a corpus tool call with a progressToken waits for its corpus to be indexed, reporting the
build's progress: within the minute many hosts give a call, with time left for the call itself."""
PROGRESS_POLL_S = 0.25
"""How often a waiting call reads the build record (written at most every 0.5 s)."""
INDEX_TOOLS = frozenset({"hybrid_search", "vector_search", "keyword_search", "get_document", "check_answer"})
"""The tools that read the index (``sql_query`` does not)."""


def serve_stdio(settings: Settings) -> None:
    """Serve over stdio until the host closes stdin; stdout carries only the protocol."""
    configs = configured_corpora(settings)  # a missing folder or a bad corpus.toml: its message, before anything
    build = BackgroundIngest(settings)
    live = LiveTools(settings, configs, open_database(settings), build)
    try:
        live.refresh(vectors_in_background=True)
        _log_start(live)
        build.start()
        anyio.run(_serve, settings, live)
    finally:
        build.stop()
        live.close()


@dataclass(frozen=True)
class _Held:
    """One opened generation, served from a :class:`~mcp_server.indexing.pool.GenerationPool`."""

    tools: RetrievalTools
    indexed: frozenset[str]  # the configured corpora it holds


class LiveTools:
    """The tools over whichever generation is published now (see the module docstring); thread-safe."""

    def __init__(
        self, settings: Settings, configs: list[CorpusConfig], database: ReadOnlyDatabase | None, build: BackgroundIngest
    ) -> None:
        self.settings = settings
        self._configs = configs
        self._database = database
        self._build = build
        self._layout = IndexLayout(settings.index_dir)
        self._pool: GenerationPool[_Held] = GenerationPool(lambda held: held.tools.close())

    @property
    def database(self) -> ReadOnlyDatabase | None:
        return self._database

    @property
    def generation(self) -> str | None:
        held = self._pool.current
        return held.tools.retriever.manifest.generation if held is not None else None

    def corpora(self, scope: Collection[str] | None = None) -> list[CorpusInfo]:
        """Every configured corpus: as indexed in the served generation, or marked as not indexed yet."""
        with self._pool.hold() as held:
            indexed = {c.name: c for c in held.tools.corpora()} if held is not None else {}
        return [
            indexed.get(c.name)
            or CorpusInfo(name=c.name, description=c.description, language=c.language, documents=0, chunks=0, indexed=False)
            for c in self._configs
            if scope is None or c.name in scope
        ]

    def unserved(self) -> list[str]:
        held = self._pool.current
        return held.tools.retriever.unserved if held is not None else []

    def search(
        self, query: str, *, mode: RetrieverName, corpus: str | None, top_k: int, filters: SearchFilters | None,
        scope: Collection[str] | None = None, min_score: float | None = None,
    ) -> SearchResult:  # fmt: skip
        with self._use(corpus) as tools:
            result = tools.search(
                query, mode=mode, corpus=corpus, top_k=top_k, filters=filters, scope=scope, min_score=min_score
            )
        pending = [c.name for c in self.corpora(scope) if not c.indexed]
        if corpus is None and not result.hits and pending:  # not "nothing found" while part is unsearched
            raise IndexBuildingError(f"No hits in the indexed corpora. {self._building(', '.join(pending))}")
        return result

    def get_document(
        self, ref: str, *, corpus: str | None, chunk: int | None, window: int, scope: Collection[str] | None = None,
        quote: str | None = None,
    ) -> DocumentResult:
        with self._use(corpus) as tools:
            return tools.get_document(ref, corpus=corpus, chunk=chunk, window=window, scope=scope, quote=quote)

    def page_picture(
        self, ref: str, *, corpus: str | None, chunk: int | None, quote: str | None, page: int | None,
        scope: Collection[str] | None = None,
    ) -> PagePicture:
        with self._use(corpus) as tools:
            return tools.page_picture(ref, corpus=corpus, chunk=chunk, quote=quote, page=page, scope=scope)

    def sql_query(self, sql: str, params: Params, max_rows: int | None) -> SqlResult:
        return query_database(self._database, sql, params, max_rows)

    def check_answer(self, answer: str, question: str | None, scope: Collection[str] | None = None) -> AnswerCheck:
        with self._use(None) as tools:
            return tools.check_answer(answer, question, scope)

    def document_page(
        self, scope: Collection[str] | None, after: tuple[str, str] | None, limit: int
    ) -> list[tuple[str, str, str]]:
        with self._pool.hold() as held:
            return held.tools.document_page(scope, after, limit) if held is not None else []

    def refresh(self, *, vectors_in_background: bool = False) -> bool:
        """Open the published generation if it is not the one served (blocking, and with its vectors
        unless ``vectors_in_background``: a new generation is served only once fully open); True when
        it changed."""
        name = self._layout.current_name()
        if name is None or name == self.generation:
            return False
        retriever = Retriever.open(self.settings, vectors_in_background=vectors_in_background)
        tools = RetrievalTools(retriever, self._database, self.settings)
        self._pool.publish(_Held(tools, frozenset(c.name for c in tools.corpora())))  # the old one closes once unused
        return True

    def close(self) -> None:
        """Retire the served generation: closed now, or by the last call still using it."""
        self._pool.publish(None)

    def build_position(self, corpus: str | None) -> str | None:
        """How far the index build is, while a call about ``corpus`` (None: any) would be told that the index
        is being built and the build (or the opening of what it published) is under way; else None."""
        with self._pool.hold() as held:
            if not self._unserved(held, corpus):
                return None
        status = read_build_status(self.settings.data_dir)  # this server's build, or the one it waits for
        if status is not None:
            return f"building the index ({status.describe()})"
        if self._layout.current_name() != self.generation:
            return "the index is built; opening it"
        return None if self._build.finished.is_set() else "building the index (starting)"

    @contextmanager
    def _use(self, corpus: str | None) -> Iterator[RetrievalTools]:
        """The served generation for one call; IndexBuildingError when what is asked is not indexed yet."""
        with self._pool.hold() as held:
            if held is None or self._unserved(held, corpus):
                raise IndexBuildingError(self._building(corpus if held is not None else None))
            yield held.tools

    def _unserved(self, held: _Held | None, corpus: str | None) -> bool:
        """Whether ``held`` (the served generation, None before the first) lacks ``corpus``, a configured
        one, or (``corpus`` None) every configured corpus, whatever else the index holds."""
        if held is None:
            return True
        if corpus is None:
            return not any(c.name in held.indexed for c in self._configs)
        return any(c.name == corpus for c in self._configs) and corpus not in held.indexed

    def _building(self, corpus: str | None) -> str:
        """Why ``corpus`` (one name or several; None: any corpus) cannot be searched yet, how far its build is and when to retry."""
        what = f"corpus {corpus}" if corpus is not None else "the corpora"
        if self._build.error is not None and read_build_status(self.settings.data_dir) is None:
            return (
                f"{what} cannot be searched: the index could not be built ({self._build.error}). "
                "Tell the user; retrying will not help until the problem is fixed and the server restarted."
            )
        status = read_build_status(self.settings.data_dir)
        if status is None:
            return f"The index is being built, so {what} cannot be searched yet (starting). Retry in about 15 s."
        return (
            f"The index is being built, so {what} cannot be searched yet ({status.describe()}). "
            f"Retry in about {status.retry_after_s()} s."
        )


def _log_start(live: LiveTools) -> None:
    corpora = live.corpora()
    served = [c.name for c in corpora if c.indexed]
    pending = [c.name for c in corpora if not c.indexed]
    generation = live.generation or "none yet"
    logger.info("index generation %s; serving corpora: %s", generation, ", ".join(served) or "none yet")
    if pending:
        logger.info("not indexed yet, building in the background: %s", ", ".join(pending))
    if live.unserved():
        logger.info(
            "in the index but not configured, so not served: %s (delete with: ragmcp corpus remove NAME)",
            ", ".join(live.unserved()),
        )
    database = live.database
    logger.info("SQL database: %s", f"{database.name} ({database.path})" if database else "none (RAGMCP_DATABASE)")


class _LegacySession:
    """Server middleware for connections that open with the initialize handshake: it announces that
    the tool and resource lists change (the SDK's stdio run announces neither; a 2026-07-28
    connection learns it from its listen stream) and remembers the session to notify."""

    def __init__(self) -> None:
        self.session: ServerSession | None = None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict):
            capabilities = result.get("capabilities", {})
            for listed in ("tools", "resources"):
                if isinstance(capabilities.get(listed), dict):
                    capabilities[listed]["listChanged"] = True
        elif ctx.method == "notifications/initialized":
            self.session = ctx.session
        return result


class _IndexProgress:
    """Server middleware: a corpus tool call carrying a ``progressToken`` while its corpus is being indexed
    waits for the index (at most :data:`INDEX_WAIT_S`), sending the build's position as progress
    notifications for that token each time it changes; then the call goes on (see the module docstring)."""

    def __init__(self, live: LiveTools) -> None:
        self._live = live

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call" and progress_token_from_params(ctx.params) is not None:
            params = ctx.params or {}
            arguments = params.get("arguments")
            corpus = arguments.get("corpus") if isinstance(arguments, dict) else None
            if params.get("name") in INDEX_TOOLS and (corpus is None or isinstance(corpus, str)):
                await self._wait(ctx, corpus)
        return await call_next(ctx)

    async def _wait(self, ctx: ServerRequestContext[Any, Any], corpus: str | None) -> None:
        """Until ``corpus`` is served, the build is over or INDEX_WAIT_S have passed, report the build's
        position whenever it changes (progress: the count of positions reported, which only grows)."""
        deadline = anyio.current_time() + INDEX_WAIT_S
        last, reported = "", 0
        while anyio.current_time() < deadline and (position := self._live.build_position(corpus)) is not None:
            if position != last:
                last, reported = position, reported + 1
                await ctx.session.report_progress(reported, None, position)
            await anyio.sleep(PROGRESS_POLL_S)


async def _serve(settings: Settings, live: LiveTools) -> None:
    bus = InMemorySubscriptionBus()
    legacy = _LegacySession()
    calls = CallRunner(settings)
    arguments = ArgumentCheck()
    middleware: list[ServerMiddleware[Any]] = [legacy, _IndexProgress(live)]
    server = build_server(settings, live, calls=calls, middleware=middleware, subscriptions=bus, arguments=arguments)
    async with anyio.create_task_group() as group:
        group.start_soon(_follow, server, settings, live, calls, arguments, bus, legacy)
        await server.run_stdio_async()
        group.cancel_scope.cancel()


async def _follow(
    server: MCPServer, settings: Settings, live: LiveTools, calls: CallRunner, arguments: ArgumentCheck,
    bus: InMemorySubscriptionBus, legacy: _LegacySession,
) -> None:  # fmt: skip
    """Serve each newly published generation; tell the client when the corpus tools changed."""
    published = live.corpora()
    failed: str | None = None
    while True:
        await anyio.sleep(settings.http.reload_interval_s)
        try:
            if not await anyio.to_thread.run_sync(live.refresh):
                continue
        except Exception:
            name = IndexLayout(settings.index_dir).current_name()
            if name != failed:
                logger.exception("cannot open the newly published index %s; still serving %s", name, live.generation)
            failed = name
            continue
        failed = None
        logger.info("now serving index %s", live.generation)
        now = refresh_corpus_tools(server, settings, live, calls, published, arguments)
        if now is published:
            continue
        published = now
        await bus.publish(ToolsListChanged())
        await bus.publish(ResourcesListChanged())
        if legacy.session is not None:
            await legacy.session.send_tool_list_changed()
            await legacy.session.send_resource_list_changed()
