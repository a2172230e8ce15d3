"""The interface between the agent loop and whatever decides what to do next.

The loop (:mod:`client_agent.loop`) owns everything that must hold whatever the back-end:
budgets, the evidence ledger, near-duplicate refusal, reflection validation, conflict
lookups, the citation check and the trace. A back-end only *decides*: which tools to call
or what to answer (:meth:`Backend.decide`), what its reflection on the evidence is
(:meth:`Backend.reflect`, raw text the loop validates), and how to revise an answer the
citation check rejected (:meth:`Backend.revise`). The loop tells it what happened through
:meth:`Backend.observe` — the outcome of each requested tool call, paired by id — and
:meth:`Backend.note` — the reflection verdict, conflicts and confirming lookups, written for
the model. Per step the order is: ``decide``, ``observe``, ``reflect``, then any ``note`` calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from client_agent.connection import Catalog, ToolOutcome
from client_agent.evidence import Ledger

AnswerState = Literal["answered", "insufficient", "clarify"]


@dataclass(frozen=True)
class ToolRequest:
    """One tool call a back-end asks for; ``id`` pairs it with its outcome."""

    id: str
    name: str
    arguments: dict[str, Any]
    problem: str | None = None
    """Why the call cannot be made as the model sent it (arguments that are not a JSON object);
    the loop refuses it with this reason instead of calling the server."""


@dataclass(frozen=True)
class ModelCall:
    """Accounting for one model call (the offline back-end makes none)."""

    model: str
    input_tokens: int
    output_tokens: int
    seconds: float
    stop_reason: str | None


@dataclass(frozen=True)
class Decision:
    """What to do next: call ``tool_calls``, or (when there are none) give ``answer``.

    ``state`` is the back-end's own reading of its answer: ``insufficient`` when it says what
    is missing instead of answering, ``clarify`` when it asks the user a question.
    """

    tool_calls: list[ToolRequest] = field(default_factory=list)
    answer: str = ""
    state: AnswerState = "answered"
    call: ModelCall | None = None
    note: str = ""
    """One line for the user on what the back-end is doing (shown as progress)."""


@dataclass(frozen=True)
class Reply:
    """Raw text from the back-end (a reflection), with the model call that produced it."""

    text: str
    call: ModelCall | None = None


@dataclass(frozen=True)
class Observation:
    """What became of one requested tool call: the server's outcome, or the loop's refusal."""

    request: ToolRequest
    outcome: ToolOutcome


@dataclass(frozen=True)
class Exchange:
    """One earlier question and answer of a chat, for resolving follow-ups."""

    question: str
    answer: str


@dataclass
class RunView:
    """What a back-end may look at when it decides: the question, the catalog, the evidence so far."""

    question: str
    history: list[Exchange]
    catalog: Catalog
    ledger: Ledger
    must_answer: bool = False
    """True when budgets are spent: the back-end must answer now, without tool calls."""


class Backend(Protocol):
    """Decides the agent's next move; see the module docstring for the division of labour."""

    name: str
    model: str | None

    async def decide(self, view: RunView) -> Decision:
        """The next tool calls, or the answer (inline citation ids like ``[corpus:doc#3]``)."""
        ...

    def observe(self, observations: list[Observation]) -> None:
        """The outcomes of the last decision's tool calls: one per request, in request order.

        A request the loop refused (near-duplicate query, spent tool budget) comes back as an
        error outcome whose text says why, so every tool call gets its result.
        """
        ...

    def note(self, text: str) -> None:
        """A message from the loop for the model, read before the next decision (verdicts, conflicts)."""
        ...

    async def reflect(self, view: RunView, retry_feedback: str | None = None) -> Reply:
        """A reflection verdict as JSON text ``{"sufficient", "missing", "next_queries"}``.

        ``retry_feedback`` says what was wrong with the previous reply, when this is the retry.
        """
        ...

    async def revise(self, view: RunView, answer: str, feedback: str) -> Decision:
        """A revised answer to ``answer``, which failed the citation check for the reasons in ``feedback``."""
        ...

    async def aclose(self) -> None:
        """Release network clients; the back-end is not used afterwards."""
        ...
