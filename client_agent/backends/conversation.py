"""What the model back-ends share: the instructions, evidence as cited text, reading the answer.

Claude (:mod:`client_agent.backends.anthropic_backend`) and any OpenAI-compatible model
(:mod:`client_agent.backends.openai_backend`) hold the same conversation in two wire
formats. Everything that does not depend on the format lives here: the system prompt and
the loop's standing messages, the rendering of evidence as text headed by its citation id
(the form every model can cite by copying the id; Claude's native citations are the one
alternative), the answer-state prefixes, the error every model back-end raises, and the
lifecycle both share (:class:`ModelBackend`: the SDK client, how it is configured and closed,
one conversation per run).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Generic, Literal, Protocol, TypeVar

from client_agent.backends.base import AnswerState, Exchange, Observation, RunView
from client_agent.connection import Catalog, ToolOutcome
from client_agent.errors import ModelBackendError
from client_agent.evidence import Evidence, Ledger
from client_agent.reflection import REFLECTION_INSTRUCTIONS

CitationMode = Literal["native", "text", "auto"]
"""How search hits reach Claude: ``search_result`` blocks (native citations), cited text, or native
until the server refuses them (see :mod:`client_agent.backends.anthropic_backend`)."""

INSUFFICIENT_PREFIX = "Insufficient evidence:"
CLARIFY_PREFIX = "Clarifying question:"

SYSTEM_PROMPT = f"""\
You answer questions using read-only retrieval tools over the user's knowledge bases.

How to use the tools:
- Route each search to the knowledge base whose description fits the question (the corpus
  argument); search all of them only when none clearly fits.
- hybrid_search is the default. Use keyword_search for exact names, codes, error strings and
  numbers; vector_search for paraphrases and concepts.
- Use sql_query for numbers about customers, orders, products and other records in the database
  (counts, sums, latest dates); its description lists the tables.
- Use get_document to read around a hit when one chunk is not enough.
- A multi-part question needs evidence for every part: search for each part.
- Do not repeat a search with nearly the same words; search for what is still missing.
- Answer directly, without tools, when the question is arithmetic or general knowledge that
  does not depend on the knowledge bases.

How to answer:
- Use only the evidence the tools returned. Do not add facts from memory to an answer about
  the knowledge bases.
- Cite every factual sentence inline with the ids of the evidence that supports it, in square
  brackets, exactly as given: [handbook:hr/leave-policy#2] or [sql:company:1a2b3c4d]. Every
  number you state must appear in the evidence you cite for it.
- When sources conflict, give both, each with its citation, and say which source is newer
  (by the dates shown with the results).
- When the evidence is not enough, begin with "{INSUFFICIENT_PREFIX}" and say exactly which
  facts are missing. When the question is ambiguous, ask one question, beginning with
  "{CLARIFY_PREFIX}".
- Be concise and direct."""

MUST_ANSWER = (
    "The step and tool-call budget is spent. Give your final answer now, without tools, from the "
    "evidence above; if it is not enough, say exactly what is missing."
)

REFLECTION_RETRY = "Your previous reflection could not be used: {feedback}\nReply with the JSON object only."

LOOP_EVIDENCE = "Evidence the agent retrieved to check a conflict between sources (cite it like any other):"

DROPPED_EVIDENCE = "(Left out of this prompt to save space: it ranked low. Search again if you need it.)"


DEFAULT_MAX_RETRIES = 4
"""Retries after a 429/5xx (Anthropic's 529 included) or a dropped connection: the SDKs back off
exponentially (0.5 s doubling to 8 s, with jitter, honouring ``retry-after``), so four retries
wait up to about 7.5 s in all."""

LOCAL_KEY = "not-needed"
"""The key sent to a ``--base-url`` server when none is set: local servers ignore it, the SDKs want one."""


class SDKClient(Protocol):
    """What a back-end's lifecycle needs of its SDK client (``openai.AsyncOpenAI``, ``anthropic.AsyncAnthropic``)."""

    @property
    def base_url(self) -> object:
        """The server's URL, named in error messages."""
        ...

    async def close(self) -> None:
        """Close the client's connections."""
        ...


ClientT = TypeVar("ClientT", bound=SDKClient)


def endpoint(
    base_url: str | None, api_key: str | None, url_variable: str, key_variable: str
) -> tuple[str | None, str | None]:
    """The server's URL and the key to send: the arguments, else the environment variables named.

    A server at a base URL may do without a key, and gets :data:`LOCAL_KEY`; ``None`` for the key
    means there is none for the API's own server, which the caller reports in its API's terms.
    """
    url = base_url or os.environ.get(url_variable) or None
    key = api_key or os.environ.get(key_variable) or (LOCAL_KEY if url else None)
    return url, key


class ModelBackend(ABC, Generic[ClientT]):
    """What the model back-ends share beyond the wire format: the SDK client, which retries
    transient failures itself (``max_retries``, see :data:`DEFAULT_MAX_RETRIES`) and which
    :meth:`aclose` closes, and one conversation per run, opened by :meth:`_start` when the loop
    hands over a new run's view (the loop makes one view per run)."""

    def __init__(self, client: ClientT) -> None:
        self.client = client
        self._run: RunView | None = None
        self._shown: set[str] = set()
        """Citation ids whose evidence is in the conversation."""

    async def aclose(self) -> None:
        """Close the SDK client's connections."""
        await self.client.close()

    def _follow(self, view: RunView) -> None:
        """Open a new conversation when ``view`` is a new run's; a run's later calls continue its own."""
        if view is not self._run:
            self._run, self._shown = view, set()
            self._start(view)

    @abstractmethod
    def _start(self, view: RunView) -> None:
        """Open the run's conversation in the back-end's wire format: earlier chat turns, then the question."""

    def _mark_shown(self, observations: list[Observation]) -> None:
        """Note the evidence the observed tool results bring into the conversation."""
        self._shown.update(item.citation_id for o in observations for item in o.outcome.evidence)


def reflection_closing(retry_feedback: str | None) -> list[str]:
    """What closes a reflection request: the reflection instructions, and on the retry what was wrong."""
    closing = [REFLECTION_INSTRUCTIONS]
    if retry_feedback:
        closing.append(REFLECTION_RETRY.format(feedback=retry_feedback))
    return closing


def system_prompt(catalog: Catalog) -> str:
    """The standing instructions plus the knowledge bases, each with its routing description."""
    if not catalog.corpora:
        return SYSTEM_PROMPT
    corpora = "\n".join(f"- {c.name} ({c.documents} documents): {c.description}" for c in catalog.corpora)
    return f"{SYSTEM_PROMPT}\n\nKnowledge bases:\n{corpora}"


def history_turns(history: Iterable[Exchange]) -> list[dict[str, str]]:
    """Earlier chat turns as plain user/assistant messages (the same shape in both wire formats)."""
    turns: list[dict[str, str]] = []
    for exchange in history:
        turns += [{"role": "user", "content": exchange.question}, {"role": "assistant", "content": exchange.answer}]
    return turns


def evidence_title(item: Evidence) -> str:
    """The title a model sees for a chunk: with its date, when it has one, so it can tell which source is newer."""
    return f"{item.title} (updated {item.updated})" if item.updated else item.title


def cited_text(item: Evidence, dropped: bool = False) -> str:
    """One evidence item as text headed by its citation id: ``[id] Title (updated …)`` then the text.

    A SQL result is its query and rows under its id. ``dropped`` (the ledger left the item
    out of the prompt budget) keeps the id and title but replaces the text by a placeholder.
    """
    if item.kind == "sql":
        return f"[{item.citation_id}]\n{item.text}"
    return cited(item.citation_id, evidence_title(item), DROPPED_EVIDENCE if dropped else item.text)


def cited(citation_id: str, title: str, text: str) -> str:
    """The cited-text form of one chunk: its id in brackets and its title, then its text."""
    return f"[{citation_id}] {title}\n{text}"


def result_text(outcome: ToolOutcome, dropped: set[str]) -> str:
    """A tool outcome as the text of its tool result: errors as the server said them, SQL rows under
    their query's citation id, hits and document chunks each as :func:`cited_text` after the
    server's one-line summary."""
    if outcome.is_error:
        return outcome.text or "The tool call failed."
    if not outcome.evidence:
        return outcome.text or "(empty result)"
    if outcome.evidence[0].kind == "sql":
        return f"[{outcome.evidence[0].citation_id}]\n{outcome.text}"
    summary = outcome.text.split("\n\n", 1)[0]
    return "\n\n".join([summary, *(cited_text(e, e.citation_id in dropped) for e in outcome.evidence)])


def unseen(ledger: Ledger, shown: set[str]) -> list[Evidence]:
    """Evidence the loop fetched on its own (confirming lookups) that the model has not been shown;
    they are marked shown."""
    items = [item for item in ledger if item.citation_id not in shown]
    shown.update(item.citation_id for item in items)
    return items


def state_of(answer: str) -> AnswerState:
    """The answer's state, read from the prefixes the system prompt asks for."""
    lowered = answer.lower()
    if lowered.startswith(INSUFFICIENT_PREFIX.lower()):
        return "insufficient"
    if lowered.startswith(CLARIFY_PREFIX.lower()):
        return "clarify"
    return "answered"


def first_line(text: str, limit: int = 160) -> str:
    """The first line of what a model said alongside its tool calls, shortened for a progress line."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else f"{line[: limit - 1]}…"


def max_tokens_setting(given: int | None, default: int) -> int:
    """Most tokens one reply may have: ``given``, else ``RAG_AGENT_MAX_TOKENS``, else ``default``."""
    if given is not None:
        if given < 1:
            raise ModelBackendError(f"max tokens must be a positive number, not {given}")
        return given
    raw = os.environ.get("RAG_AGENT_MAX_TOKENS")
    if not raw:
        return default
    if not raw.strip().isdigit() or int(raw) < 1:
        raise ModelBackendError(f"RAG_AGENT_MAX_TOKENS must be a positive whole number of tokens, not {raw!r}")
    return int(raw)
