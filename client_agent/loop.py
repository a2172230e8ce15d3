"""The agent loop: decide, act, reflect, answer, check — within budgets, on any back-end.

:meth:`Agent.run` answers one question over a connected :class:`~client_agent.connection.ToolServer`:

1. **Decide.** The back-end sees the question, the server's catalog and the evidence so far,
   and asks for tool calls or answers (directly, when no retrieval is needed).
2. **Act / observe.** Each requested call goes to the server — unless it repeats an earlier
   search (:mod:`client_agent.queries`) or the tool budget is spent, in which case it gets an
   error result saying so. Every request gets exactly one outcome; hits enter the ledger.
3. **Reflect.** After new evidence, the back-end returns a JSON verdict, validated strictly
   (:mod:`client_agent.reflection`); a malformed one is retried once, then counted as
   "insufficient, no new queries". Conflicting sources (:mod:`client_agent.conflicts`)
   trigger a confirming search, and the back-end is told which source is newer.
4. **Answer and check.** The answer's citations are checked (:mod:`mcp_server.grounding.verdict`);
   a failing answer goes back for up to ``max_revisions`` revisions with the specific
   failures, and whatever still fails is removed, never shipped as fact.
5. **Stop.** Steps, tool calls and model tokens are bounded; when a budget runs out the
   back-end must answer with what it has, and the run ends ``budget_exhausted``.

Everything is written to the trace (:mod:`client_agent.trace`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from client_agent.backends.base import Backend, Decision, Exchange, ModelCall, Observation, RunView, ToolRequest
from mcp_server.grounding.sentences import cited_ids
from mcp_server.grounding.verdict import CitationCheck, check_answer, enforce
from client_agent.conflicts import Conflict, find_conflicts
from client_agent.connection import ToolOutcome, ToolServer
from client_agent.evidence import Ledger
from client_agent.queries import QueryLog
from client_agent.errors import ReflectionError
from client_agent.reflection import Verdict, parse_verdict
from client_agent.text import identifiers
from client_agent.trace import Totals, Trace

RunState = Literal["answered", "insufficient", "clarify", "budget_exhausted"]
OUT_OF_BUDGET = "I ran out of steps, tool calls or tokens before I could write an answer from the sources."
NOTHING_SUPPORTED = (
    "I could not write an answer that the retrieved sources support, so I am not giving one. "
    "Try rephrasing the question or naming the document or product it is about."
)


@dataclass(frozen=True)
class Budgets:
    """Limits on one run. A spent budget makes the back-end answer with what it has."""

    max_steps: int = 8
    max_tool_calls: int = 12
    max_tokens: int = 100_000
    """Model input plus output tokens over the whole run."""
    evidence_tokens: int = 6_000
    """How much evidence a prompt shows; older, lower-ranked evidence falls out first."""
    max_revisions: int = 2


@dataclass
class RunResult:
    """The outcome of one run, as ``rag-agent ask --json`` prints it."""

    question: str
    answer: str
    state: RunState
    citations: list[dict[str, Any]]
    verification: dict[str, Any]
    totals: Totals
    trace: Path
    conflicts: list[str] = field(default_factory=list)
    cited_texts: dict[str, str] = field(default_factory=dict)
    """What each cited id's citation check compared against (for evaluation; not printed)."""
    sources: list[str] = field(default_factory=list)
    """Every document (``corpus:doc_id``) or SQL result the run received, best first: see :meth:`evidence`."""

    def evidence(self, budget: int) -> list[str]:
        """The evidence the run kept, at most ``budget`` sources: those its answer cites (in citation
        order), then the others by reciprocal-rank fusion of all its tool results
        (:meth:`client_agent.evidence.Ledger.sources`)."""
        if budget < 1:
            raise ValueError(f"the evidence budget must be at least 1 source, got {budget}")
        return self.sources[:budget]

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "state": self.state,
            "citations": self.citations,
            "verification": self.verification,
            "conflicts": self.conflicts,
            "totals": self.totals.to_dict(),
            "trace": str(self.trace),
        }


Progress = Callable[[str], None]


class Agent:
    """Runs questions against one server with one back-end; see the module docstring."""

    def __init__(self, server: ToolServer, backend: Backend, budgets: Budgets | None = None,
                 progress: Progress | None = None) -> None:
        self.server = server
        self.backend = backend
        self.budgets = budgets or Budgets()
        self.progress: Progress = progress or (lambda message: None)

    async def run(self, question: str, trace_path: Path, history: list[Exchange] | None = None) -> RunResult:
        run = _Run(self, question, history or [], Trace(trace_path))
        try:
            return await run.execute()
        finally:
            run.trace.close()


class _Run:
    """The state of one run; :meth:`execute` is the loop."""

    def __init__(self, agent: Agent, question: str, history: list[Exchange], trace: Trace) -> None:
        self.server, self.backend, self.budgets, self.progress = (
            agent.server, agent.backend, agent.budgets, agent.progress)
        self.question = question.strip()
        self.trace = trace
        self.ledger = Ledger(self.budgets.evidence_tokens)
        self.view = RunView(self.question, history, self.server.catalog, self.ledger)
        self.queries = QueryLog()
        self.totals = Totals()
        self.verdict: Verdict | None = None
        self.conflicts: dict[tuple[str, str, str], Conflict] = {}

    async def execute(self) -> RunResult:
        b = self.budgets
        self.trace.event("run_start", question=self.question, backend=self.backend.name, model=self.backend.model,
                         budgets=b.__dict__, history=len(self.view.history))
        decision, exhausted = await self._gather()
        answer, check = await self._checked_answer(decision)
        state: RunState = "budget_exhausted" if exhausted else decision.state
        if state == "answered" and self.verdict is not None and not self.verdict.sufficient:
            state = "insufficient"
        if not answer.strip():
            answer = OUT_OF_BUDGET if exhausted else NOTHING_SUPPORTED
            state = "budget_exhausted" if exhausted else "insufficient"
        self.totals.seconds = self.trace.elapsed()
        result = RunResult(
            question=self.question, answer=answer, state=state,
            citations=[self.ledger.get(cid).citation for cid in cited_ids(answer) if cid in self.ledger],  # type: ignore[union-attr]
            verification=check, totals=self.totals, trace=self.trace.path,
            conflicts=[c.describe() for c in self.conflicts.values()],
            cited_texts={cid: text for cid, text in self.ledger.texts().items() if cid in cited_ids(answer)},
            sources=self.ledger.sources(cited_ids(answer)),
        )
        self.trace.event("run_end", state=state, answer=answer, totals=self.totals.to_dict(),
                         citations=[c["id"] for c in result.citations])
        return result

    # --- deciding and acting ---------------------------------------------------------------

    async def _gather(self) -> tuple[Decision, bool]:
        """Steps until the back-end answers; True when a budget ran out first."""
        for step in range(1, self.budgets.max_steps + 1):
            self.totals.steps = step
            self.view.must_answer = self._spent()
            decision = await self.backend.decide(self.view)
            self._account("decide", decision.call)
            if decision.note:
                self.progress(decision.note)
            if not decision.tool_calls:
                return decision, False
            observations = [Observation(r, await self._execute(r, step)) for r in decision.tool_calls]
            self.backend.observe(observations)
            if any(o.outcome.evidence for o in observations if not o.outcome.is_error):
                await self._reflect()
                await self._confirm_conflicts(step)
        self.view.must_answer = True
        self.progress("step budget spent; answering with the evidence gathered")
        decision = await self.backend.decide(self.view)
        self._account("decide", decision.call)
        return decision, True

    def _spent(self) -> bool:
        t, b = self.totals, self.budgets
        return t.tool_calls >= b.max_tool_calls or t.input_tokens + t.output_tokens >= b.max_tokens

    async def _execute(self, request: ToolRequest, step: int, origin: str = "backend") -> ToolOutcome:
        refusal = self._refusal(request)
        if refusal is not None:
            self.trace.event("tool_call", step=step, tool=request.name, arguments=request.arguments,
                             refused=refusal, origin=origin)
            return ToolOutcome(request.name, request.arguments, True, refusal, None, 0.0)
        self.progress(describe_call(request))
        outcome = await self.server.call(request.name, request.arguments, step=step)
        self.queries.record(request.name, request.arguments)
        self.totals.tool_calls += 1
        fresh = self.ledger.add(outcome.evidence)
        self.trace.event(
            "tool_call", step=step, tool=request.name, arguments=request.arguments, origin=origin,
            is_error=outcome.is_error, result_chars=outcome.size, seconds=round(outcome.seconds, 4),
            evidence=[e.citation_id for e in outcome.evidence], new_evidence=len(fresh),
            error=outcome.text[:500] if outcome.is_error else None,
        )
        return outcome

    def _refusal(self, request: ToolRequest) -> str | None:
        if request.problem is not None:
            return f"Refused: {request.problem}"
        if self.server.catalog.tool(request.name) is None:
            names = ", ".join(t.name for t in self.server.catalog.tools)
            return f"Refused: there is no tool {request.name!r}; the tools are {names}."
        if self.totals.tool_calls >= self.budgets.max_tool_calls:
            return (f"Refused: the tool-call budget ({self.budgets.max_tool_calls}) is spent. Answer with the "
                    "evidence you have and say what is missing.")
        return self.queries.repeat_of(request.name, request.arguments)

    # --- reflecting ----------------------------------------------------------------------------

    async def _reflect(self) -> None:
        reply = await self.backend.reflect(self.view)
        self._account("reflect", reply.call)
        try:
            verdict = parse_verdict(reply.text)
        except ReflectionError as first:
            self.trace.event("reflection", error=str(first), raw=reply.text[:2000], retried=True)
            reply = await self.backend.reflect(self.view, retry_feedback=str(first))
            self._account("reflect", reply.call)
            try:
                verdict = parse_verdict(reply.text)
            except ReflectionError as second:
                self.trace.event("reflection", error=str(second), raw=reply.text[:2000], retried=False)
                verdict = Verdict(sufficient=False, missing=[], next_queries=[])
        self.verdict = verdict
        self.trace.event("reflection", verdict=verdict.model_dump())
        if verdict.sufficient:
            self.progress("reflection: the evidence covers the question")
            self.backend.note("Reflection verdict: the evidence is sufficient. Answer now; cite every factual "
                              "sentence with the ids in square brackets.")
        else:
            missing = "; ".join(verdict.missing) or "unspecified"
            self.progress(f"reflection: still missing {missing}")
            queries = "; ".join(verdict.next_queries) or "none proposed"
            self.backend.note(f"Reflection verdict: not sufficient. Missing: {missing}. Next queries: {queries}.")

    async def _confirm_conflicts(self, step: int) -> None:
        """For each newly found conflict: one confirming search, then a note naming the newer source."""
        for conflict in find_conflicts(self.ledger, self.question):
            if conflict.key in self.conflicts:
                continue
            self.conflicts[conflict.key] = conflict
            request = ToolRequest(f"confirm-{len(self.conflicts)}", "keyword_search",
                                  {"query": confirming_query(conflict), "top_k": 5})
            outcome = await self._execute(request, step, origin="conflict")
            found = ", ".join(e.citation_id for e in outcome.evidence) or "nothing new"
            self.trace.event("conflict", description=conflict.describe(), confirming_query=request.arguments["query"],
                             confirming_hits=[e.citation_id for e in outcome.evidence])
            self.progress(f"sources disagree: {conflict.first.evidence.title} vs {conflict.second.evidence.title}")
            self.backend.note(f"{conflict.describe()} A confirming search for {request.arguments['query']!r} "
                              f"returned: {found}. In the answer, say that the sources disagree, give each "
                              "value with its citation, and say which source is newer.")

    # --- answering -------------------------------------------------------------------------------

    async def _checked_answer(self, decision: Decision) -> tuple[str, dict[str, Any]]:
        """The answer after citation checks and revisions, and what the check found."""
        answer = decision.answer
        if not len(self.ledger) and not cited_ids(answer):
            verification = {"checked": False, "reason": "answered without retrieval; the answer cites nothing"}
            self.trace.event("citation_check", **verification)
            return answer, verification
        check = self._check(answer, revision=0)
        revisions = 0
        while not check.passed and revisions < self.budgets.max_revisions:
            revisions += 1
            self.progress(f"citation check failed; asking for revision {revisions}")
            decision = await self.backend.revise(self.view, answer, check.feedback())
            self._account("revise", decision.call)
            answer = decision.answer
            check = self._check(answer, revision=revisions)
        verification = {"checked": True, "revisions": revisions, **check.to_dict()}
        if not check.passed:
            enforced = enforce(answer, check, "remove")
            answer = enforced.answer
            verification["removed"] = enforced.removed
            self.trace.event("citation_check", enforced=True, removed=enforced.removed)
        return answer, verification

    def _check(self, answer: str, revision: int) -> CitationCheck:
        check = check_answer(answer, self.ledger.texts())
        self.trace.event("citation_check", revision=revision, **check.to_dict())
        return check

    def _account(self, purpose: str, call: ModelCall | None) -> None:
        if call is None:
            return
        self.totals.input_tokens += call.input_tokens
        self.totals.output_tokens += call.output_tokens
        self.trace.event("model_call", purpose=purpose, model=call.model, input_tokens=call.input_tokens,
                         output_tokens=call.output_tokens, seconds=round(call.seconds, 4),
                         stop_reason=call.stop_reason)


def confirming_query(conflict: Conflict) -> str:
    """A search for every source on the disputed attribute: the subject's names plus the shared terms."""
    names = identifiers(conflict.first.evidence.title + " " + conflict.second.evidence.title)
    terms = sorted(conflict.first.terms | conflict.second.terms)
    return " ".join(dict.fromkeys([*names, *terms, conflict.first.unit]))


def describe_call(request: ToolRequest) -> str:
    """A progress line for a tool call: "searching products for 'X3 filter'…"."""
    args = request.arguments
    if request.name.endswith("_search"):
        scope = args.get("corpus") or "all corpora"
        kind = request.name.removesuffix("_search")
        return f"searching {scope} for {args.get('query')!r} ({kind})…"
    if request.name == "sql_query":
        return f"querying the database: {' '.join(str(args.get('sql', '')).split())[:120]}…"
    if request.name == "get_document":
        return f"reading {args.get('doc_id')}…"
    return f"calling {request.name}…"

