"""What the model back-end tests share: how each API's back-end is set up on its scripted server
(:data:`MODEL_APIS`), a small catalog, tool outcomes as the MCP connection builds them, and a run
view — the inputs both back-ends turn into their wire formats."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client_agent.backends import anthropic_backend, openai_backend
from client_agent.backends.base import Backend, Exchange, Observation, RunView
from client_agent.backends.conversation import ModelBackend
from client_agent.errors import ModelBackendError
from client_agent.connection import Catalog, CorpusSummary, ToolOutcome, ToolSpec, evidence_from
from client_agent.evidence import Ledger
from client_agent.loop import Agent, RunResult
from mcp_server.settings import Settings
from tests.client_agent import fake_anthropic, fake_openai
from tests.client_agent.fake_http import ErrorReply, ScriptedServer
from tests.client_agent.in_process import serve_in_process


@dataclass(frozen=True)
class ModelAPI:
    """One model API as its back-end's tests drive it: the scripted server, the back-end, a plain reply."""

    key: str
    model: str
    server: Callable[[], ScriptedServer]
    backend: Callable[..., ModelBackend[Any]]
    base_url: Callable[[Any], str]
    """Where the SDK is pointed on the server (the OpenAI SDK wants ``/v1``, the Anthropic SDK adds it)."""
    reply: Callable[[str], dict[str, Any]]
    """The API's response body for a reply that is just ``text``."""
    rate_limited: ErrorReply
    """The API's 429."""
    error: type[ModelBackendError]
    """What the back-end raises when the API cannot be used."""


MODEL_APIS = {
    "openai": ModelAPI(
        "sk-test-openai", "qwen-test", fake_openai.FakeOpenAI, openai_backend.from_environment,
        lambda server: server.base_url, fake_openai.completion, fake_openai.RATE_LIMITED,
        openai_backend.OpenAIBackendError,
    ),
    "anthropic": ModelAPI(
        "sk-ant-test-key", "claude-test-model", fake_anthropic.FakeAnthropic, anthropic_backend.from_environment,
        lambda server: server.url, lambda text: fake_anthropic.message(fake_anthropic.text(text)),
        fake_anthropic.RATE_LIMITED, anthropic_backend.AnthropicBackendError,
    ),
}  # fmt: skip


QUESTION = "What fuel does the alpha reactor use, and how many orders are open?"

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to search for."},
        "corpus": {"anyOf": [{"type": "string", "enum": ["tiny"]}, {"type": "null"}], "default": None},
        "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
    },
    "required": ["query"],
}
SQL_SCHEMA = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}
CATALOG = Catalog(
    tools=[
        ToolSpec("hybrid_search", "Search the knowledge bases (default).", SEARCH_SCHEMA),
        ToolSpec("keyword_search", "Exact terms and codes.", SEARCH_SCHEMA),
        ToolSpec("sql_query", "Read-only SQL. Tables: orders(id, status).", SQL_SCHEMA),
    ],
    corpora=[CorpusSummary("tiny", "Reactor notes and team rituals; not for HR questions.", 3, 3)],
    sql_schema="orders(id, status)",
)


def citation(doc: str, chunk: int = 0, updated: str | None = None) -> dict[str, Any]:
    return {
        "id": f"tiny:{doc}#{chunk}", "corpus": "tiny", "doc_id": doc, "chunk": chunk, "title": doc.title(),
        "source": f"{doc}.md", "section": doc.title(), "char_start": 0, "char_end": 60, "updated": updated,
    }  # fmt: skip


def search_outcome(query: str, *hits: tuple[str, str, str | None]) -> ToolOutcome:
    """A hybrid_search outcome as the MCP connection builds it, for hits (doc, text, updated)."""
    structured = {
        "query": query, "corpus": "tiny", "retriever": "hybrid",
        "hits": [
            {"rank": rank, "score": 1.0 / rank, "retriever": "hybrid", "text": body,
             "citation": citation(doc, 0, updated)}
            for rank, (doc, body, updated) in enumerate(hits, start=1)
        ],
    }  # fmt: skip
    rendered = f"{len(hits)} hits for {query!r} in corpus tiny (hybrid search), best first.\n\n" + "\n\n".join(
        f"[tiny:{doc}#0]\n{body}" for doc, body, _ in hits
    )
    arguments = {"query": query, "corpus": "tiny"}
    return ToolOutcome("hybrid_search", arguments, False, rendered, structured, 0.01,
                       evidence_from("hybrid_search", arguments, structured, step=1))


def sql_outcome() -> ToolOutcome:
    structured = {"columns": ["open_orders"], "rows": [[17]], "row_count": 1, "truncated": False,
                  "citation_id": "sql:company:0badc0de", "sql": "SELECT count(*) AS open_orders FROM orders"}
    arguments = {"sql": "SELECT count(*) AS open_orders FROM orders"}
    return ToolOutcome("sql_query", arguments, False, "open_orders\n17\n1 row. Cite as [sql:company:0badc0de]",
                       structured, 0.01, evidence_from("sql_query", arguments, structured, step=1))


UNKNOWN_CORPUS = "Unknown corpus 'nowhere'; the corpora are: tiny."
ALPHA = ("alpha", "The alpha reactor runs on zebraword fuel at 451 kelvin.", "2024-05-01")
BETA = ("beta", "Beta teams meet every Tuesday to review the quarterly roadmap.", None)


def view(question: str = QUESTION, history: list[Exchange] | None = None, ledger: Ledger | None = None) -> RunView:
    return RunView(question, history or [], CATALOG, ledger if ledger is not None else Ledger())


PARALLEL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("hybrid_search", {"query": "alpha reactor fuel", "corpus": "tiny"}),
    ("sql_query", {"sql": "SELECT count(*) AS open_orders FROM orders"}),
    ("keyword_search", {"query": "", "corpus": "nowhere"}),
]
"""The three calls :func:`gather_evidence` scripts: a search, a SQL query, and one that fails."""


async def gather_evidence(fake: ScriptedServer, backend: Backend, run: RunView,
                          calls_reply: dict[str, Any]) -> list[ToolOutcome]:
    """One decide whose scripted reply (``calls_reply``, in the server's wire format) makes the
    :data:`PARALLEL_CALLS`; their outcomes go into the ledger and are observed."""
    fake.enqueue(calls_reply)
    decision = await backend.decide(run)
    outcomes = [
        search_outcome("alpha reactor fuel", ALPHA, BETA),
        sql_outcome(),
        ToolOutcome("keyword_search", {"query": ""}, True, UNKNOWN_CORPUS, None, 0.0),
    ]
    for outcome in outcomes:
        run.ledger.add(outcome.evidence)
    backend.observe([Observation(request, outcome) for request, outcome in zip(decision.tool_calls, outcomes)])
    return outcomes


async def request_after_evidence(fake: ScriptedServer, backend: Backend, calls_reply: dict[str, Any],
                                 done_reply: dict[str, Any], run: RunView | None = None, note: str | None = None,
                                 must_answer: bool = False) -> dict[str, Any]:
    """The body of the decide request that follows :func:`gather_evidence` (and ``note``, if given)."""
    run = run or view()
    await gather_evidence(fake, backend, run, calls_reply)
    if note:
        backend.note(note)
    run.must_answer = must_answer
    fake.enqueue(done_reply)
    await backend.decide(run)
    return fake.requests[-1].body


async def revised_run(backend: Backend, settings: Settings, trace: Path) -> tuple[RunResult, list[ToolSpec]]:
    """The whole agent loop over a real MCP server (in this process) on ``settings``'s tiny corpus, with a back-end
    scripted to cite an id it never retrieved and then revise: checks that the revision passed, and
    returns the result with the server's tools (the run's trace is written to ``trace``)."""
    async with serve_in_process(settings) as server:
        result = await Agent(server, backend).run("What fuel does the alpha reactor use, at what temperature?", trace)
        specs = server.catalog.tools
    assert result.answer == "The alpha reactor runs on zebraword fuel at 451 kelvin [tiny:alpha#0]."
    assert result.state == "answered" and [c["id"] for c in result.citations] == ["tiny:alpha#0"]
    assert (result.verification["revisions"], result.verification["passed"]) == (1, True)
    return result, specs
