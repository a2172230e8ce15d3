"""The loop's guarantees on any back-end, driven by a scripted back-end over a real MCP server.

The server is the real one (real index, real SDK client over the in-memory transport); the
back-end is a script of decisions, which is what a model is from the loop's point of view.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from client_agent.backends.base import (
    Decision,
    Observation,
    Reply,
    RunView,
    ToolRequest,
)
from client_agent.connection import ToolServer
from client_agent.loop import Agent, Budgets
from client_agent.trace import read_trace
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from mcp_server.surface.server import build_server
from mcp_server.surface.tools import RetrievalTools
from tests.helpers import make_settings, write_doc

pytestmark = pytest.mark.anyio

SUFFICIENT = json.dumps({"sufficient": True, "missing": [], "next_queries": []})


class Scripted:
    """A back-end that replays decisions and reflections, and records what the loop told it."""

    name = "scripted"
    model: str | None = None

    def __init__(self, decisions: list[Decision], reflections: list[str] | None = None,
                 revisions: list[str] | None = None) -> None:
        self.decisions = decisions
        self.reflections = reflections or [SUFFICIENT] * 10
        self.revisions = revisions or []
        self.observed: list[list[Observation]] = []
        self.notes: list[str] = []
        self.feedback: list[str] = []
        self.must_answer: list[bool] = []
        self.retry_feedback: list[str | None] = []

    async def decide(self, view: RunView) -> Decision:
        self.must_answer.append(view.must_answer)
        return self.decisions.pop(0) if self.decisions else Decision(answer="Nothing more to add.")

    def observe(self, observations: list[Observation]) -> None:
        self.observed.append(observations)

    def note(self, text: str) -> None:
        self.notes.append(text)

    async def reflect(self, view: RunView, retry_feedback: str | None = None) -> Reply:
        self.retry_feedback.append(retry_feedback)
        return Reply(self.reflections.pop(0))

    async def revise(self, view: RunView, answer: str, feedback: str) -> Decision:
        self.feedback.append(feedback)
        return Decision(answer=self.revisions.pop(0) if self.revisions else answer)


def search(query: str, tool: str = "hybrid_search", **extra: object) -> ToolRequest:
    return ToolRequest(f"call-{query}", tool, {"query": query, "top_k": 3, **extra})


@pytest.fixture(scope="module")
def gadgets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """Two dated versions of a manual that disagree on battery life, and a returns policy."""
    root = tmp_path_factory.mktemp("gadgets")
    corpus = root / "gadgets"
    corpus.mkdir()
    (corpus / "corpus.toml").write_text('name = "gadgets"\ndescription = "Manuals for Zappo gadgets."\n')
    write_doc(corpus, "z7-manual-v1.md", "Zappo Z7 Manual v1", "# Battery\n\nThe Z7 runs for up to 90 minutes "
              "on one charge.\n\n# Cleaning\n\nWipe the lens weekly.", date="2023-02-01")
    write_doc(corpus, "z7-manual-v2.md", "Zappo Z7 Manual v2", "# Battery\n\nWith the new cell the Z7 runs for "
              "up to 140 minutes on one charge.\n\n# Cleaning\n\nWipe the lens weekly.", date="2025-06-01")
    write_doc(corpus, "returns.md", "Returns policy", "# Returns\n\nGadgets can be returned within 14 days of "
              "delivery for a full refund. Opened software cannot be returned.")
    settings = make_settings(root / "data", corpus)
    ingest(settings)
    yield settings


@pytest.fixture
async def server(gadgets: Settings) -> AsyncIterator[ToolServer]:
    tools = RetrievalTools.open(gadgets)
    try:
        async with Client(build_server(gadgets, tools)) as client:
            yield await ToolServer.open(client)
    finally:
        tools.close()


async def run(server: ToolServer, backend: Scripted, tmp_path: Path, question: str = "How long can I return a gadget?",
              budgets: Budgets | None = None):  # type: ignore[no-untyped-def]
    return await Agent(server, backend, budgets).run(question, tmp_path / "trace.jsonl")


async def test_every_tool_request_gets_exactly_one_outcome_in_order(server: ToolServer, tmp_path: Path) -> None:
    requests = [search("return window for gadgets"), ToolRequest("x", "no_such_tool", {})]
    backend = Scripted([Decision(tool_calls=requests)])
    await run(server, backend, tmp_path)
    (observed,) = backend.observed
    assert [o.request.id for o in observed] == ["call-return window for gadgets", "x"]
    assert not observed[0].outcome.is_error and observed[1].outcome.is_error
    assert "no tool 'no_such_tool'" in observed[1].outcome.text


async def test_near_duplicate_search_is_refused_and_not_sent(server: ToolServer, tmp_path: Path) -> None:
    backend = Scripted([
        Decision(tool_calls=[search("gadget return window days")]),
        Decision(tool_calls=[search("days gadget return windows", tool="keyword_search")]),
    ])
    result = await run(server, backend, tmp_path)
    refused = backend.observed[1][0].outcome
    assert refused.is_error and "repeats the earlier search" in refused.text
    assert result.totals.tool_calls == 1
    assert [e for e in read_trace(result.trace) if e["event"] == "tool_call"][1]["refused"]


async def test_spent_tool_budget_refuses_calls_and_makes_the_backend_answer(server: ToolServer, tmp_path: Path) -> None:
    backend = Scripted([Decision(tool_calls=[search("returns policy"), search("battery minutes")])])
    result = await run(server, backend, tmp_path, budgets=Budgets(max_tool_calls=1))
    assert "tool-call budget (1) is spent" in backend.observed[0][1].outcome.text
    assert backend.must_answer == [False, True] and result.totals.tool_calls == 1


async def test_step_budget_ends_the_run_as_budget_exhausted(server: ToolServer, tmp_path: Path) -> None:
    backend = Scripted([Decision(tool_calls=[search(q)]) for q in ("returns", "battery", "lens cleaning")])
    result = await run(server, backend, tmp_path, budgets=Budgets(max_steps=2))
    assert result.state == "budget_exhausted" and backend.must_answer[-1] is True
    assert result.totals.steps == 2


async def test_malformed_reflection_is_retried_once_then_counts_as_insufficient(
    server: ToolServer, tmp_path: Path
) -> None:
    backend = Scripted([Decision(tool_calls=[search("returns policy")])], reflections=["sure!", '{"sufficient": 1}'])
    result = await run(server, backend, tmp_path)
    assert backend.retry_feedback[0] is None and backend.retry_feedback[1]  # the retry says what was wrong
    reflections = [e for e in read_trace(result.trace) if e["event"] == "reflection"]
    assert [bool(e.get("error")) for e in reflections] == [True, True, False]
    assert reflections[-1]["verdict"] == {"sufficient": False, "missing": [], "next_queries": []}
    assert result.state == "insufficient"


async def test_answer_citing_an_unretrieved_id_is_revised_then_cleaned(server: ToolServer, tmp_path: Path) -> None:
    found = await server.call("hybrid_search", {"query": "return gadgets within days", "top_k": 1}, step=0)
    real = found.evidence[0].citation_id
    backend = Scripted(
        [Decision(tool_calls=[search("return gadgets within days")]),
         Decision(answer="Gadgets can be returned within 14 days of delivery [gadgets:made-up#9].")],
        revisions=["Gadgets can be returned within 30 days [gadgets:made-up#9].",
                   f"Gadgets can be returned within 30 days of delivery [{real}]."],
    )
    result = await run(server, backend, tmp_path)
    assert len(backend.feedback) == 2 and "gadgets:made-up#9" in backend.feedback[0]
    assert "30" in backend.feedback[1]  # the number the cited text does not contain
    assert result.verification["passed"] is False and result.verification["removed"]
    assert "30 days" not in result.answer and result.citations == []


async def test_passing_answer_is_shipped_with_its_citation_records(server: ToolServer, tmp_path: Path) -> None:
    found = await server.call("hybrid_search", {"query": "return gadgets within days", "top_k": 1}, step=0)
    real = found.evidence[0]
    backend = Scripted([Decision(tool_calls=[search("return gadgets within days")]),
                        Decision(answer=f"Gadgets can be returned within 14 days of delivery [{real.citation_id}].")])
    result = await run(server, backend, tmp_path)
    assert result.state == "answered" and result.verification["passed"] is True and not backend.feedback
    assert result.citations == [real.citation]


async def test_conflicting_versions_trigger_a_confirming_search_and_name_the_newer(
    server: ToolServer, tmp_path: Path
) -> None:
    backend = Scripted([Decision(tool_calls=[search("Z7 battery minutes on one charge", top_k=5)])])
    result = await run(server, backend, tmp_path, question="How long does the Z7 battery last?")
    events = read_trace(result.trace)
    confirming = [e for e in events if e["event"] == "tool_call" and e.get("origin") == "conflict"]
    assert len(confirming) == 1 and confirming[0]["tool"] == "keyword_search"
    (note,) = [n for n in backend.notes if n.startswith("Sources disagree")]
    assert "90 minutes" in note and "140 minutes" in note
    assert "The newer source is Zappo Z7 Manual v2 (2025-06-01)" in note
    assert len(result.conflicts) == 1
