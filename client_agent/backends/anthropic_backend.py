"""The Anthropic back-end: Claude decides, through the Messages API's tool use.

:class:`AnthropicBackend` keeps one Messages conversation per run. The MCP tools are offered
as Anthropic tool definitions built straight from their MCP input schemas; every
``tool_use`` Claude sends gets a ``tool_result`` in the next user turn (same ids, same
order, errors marked ``is_error``). Search hits and document chunks go back as
``search_result`` content blocks whose ``source`` is the citation id, with citations
enabled, so Claude's native citations name our ids exactly; they are written into the
answer as inline ``[citation id]`` markers, which is the form the citation check reads.
SQL results go back as text headed by their query citation id.

Evidence the ledger leaves out of its prompt budget is replaced, in what is sent, by a short
placeholder (the citation id stays), so a long run's prompt does not grow without bound.

Transient API failures (429 rate limits, 529 overload, other 5xx) are retried by the SDK
with exponential backoff (0.5 s doubling to 8 s, with jitter, honouring ``retry-after``);
:func:`from_environment` sets how many times. Errors that retrying cannot fix become
:class:`AnthropicBackendError` with a message saying what to do.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any, cast

import anthropic
from anthropic.types import (
    ContentBlockParam,
    Message,
    MessageParam,
    SearchResultBlockParam,
    TextBlock,
    TextBlockParam,
    ToolChoiceParam,
    ToolParam,
    ToolResultBlockParam,
)

from client_agent.backends.base import AnswerState, Decision, ModelCall, Observation, Reply, RunView, ToolRequest
from client_agent.connection import Catalog, ToolOutcome
from client_agent.evidence import Evidence
from client_agent.reflection import REFLECTION_INSTRUCTIONS

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_MAX_TOKENS = 4096
DEFAULT_MAX_RETRIES = 4
"""Retries after a 429/529/5xx; with the SDK's backoff, four retries wait up to about 7.5 s in all."""

AUTO: ToolChoiceParam = {"type": "auto"}
NONE: ToolChoiceParam = {"type": "none"}

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

_MARKER_SPOT = re.compile(r"[\s.!?;:,]*$")


class AnthropicBackendError(RuntimeError):
    """The Anthropic API could not be used; the message says what to do about it."""


class APIKeyError(AnthropicBackendError):
    """The API key is missing or was rejected."""


def from_environment(
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    max_tokens: int | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> AnthropicBackend:
    """A back-end configured from arguments, falling back to the environment, then to defaults.

    ``ANTHROPIC_API_KEY`` (required), ``ANTHROPIC_BASE_URL``, ``RAG_AGENT_MODEL`` (default
    :data:`DEFAULT_MODEL`) and ``RAG_AGENT_MAX_TOKENS`` (default :data:`DEFAULT_MAX_TOKENS`).
    The SDK sends the key as ``Authorization: Bearer <key>``.
    """
    key = api_key or os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise APIKeyError(
            "No Anthropic API key: set ANTHROPIC_API_KEY to use Claude, or use the offline back-end "
            "(--backend offline), which needs no key."
        )
    tokens = max_tokens if max_tokens is not None else _positive_int_env("RAG_AGENT_MAX_TOKENS", DEFAULT_MAX_TOKENS)
    if tokens < 1:
        raise AnthropicBackendError(f"max tokens must be a positive number, not {tokens}")
    client = anthropic.AsyncAnthropic(
        api_key=key, base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or None, max_retries=max_retries
    )
    return AnthropicBackend(client, model or os.environ.get("RAG_AGENT_MODEL") or DEFAULT_MODEL, tokens)


def _positive_int_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    if not raw.strip().isdigit() or int(raw) < 1:
        raise AnthropicBackendError(f"{name} must be a positive whole number of tokens, not {raw!r}")
    return int(raw)


class AnthropicBackend:
    """Claude as the agent's decision maker, over one Messages conversation per run."""

    name = "anthropic"

    def __init__(self, client: anthropic.AsyncAnthropic, model: str, max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
        self.client = client
        self.model: str | None = model
        self.max_tokens = max_tokens
        self._run: RunView | None = None
        self._messages: list[MessageParam] = []
        self._pending: list[ContentBlockParam] = []
        """The next user turn, as it accumulates: tool results, then notes from the loop."""
        self._shown: set[str] = set()
        """Citation ids whose evidence is in the conversation."""

    async def aclose(self) -> None:
        """Close the SDK client's connections."""
        await self.client.close()

    async def decide(self, view: RunView) -> Decision:
        if view is not self._run:
            self._start(view)
        closing = [_text(MUST_ANSWER)] if view.must_answer else []
        message, call = await self._create(view, closing, NONE if view.must_answer else AUTO, commit=True)
        uses = [block for block in message.content if block.type == "tool_use"]
        requests = [ToolRequest(block.id, block.name, dict(block.input)) for block in uses]
        if requests:
            return Decision(tool_calls=requests, call=call, note=_first_line(_plain_text(message.content)))
        return _answer(message, call)

    def observe(self, observations: list[Observation]) -> None:
        """Tool results lead the next user turn (the API wants them before any other content)."""
        self._pending[:0] = [_tool_result(o.request.id, o.outcome) for o in observations]
        self._shown.update(item.citation_id for o in observations for item in o.outcome.evidence)

    def note(self, text: str) -> None:
        self._pending.append(_text(text))

    async def reflect(self, view: RunView, retry_feedback: str | None = None) -> Reply:
        closing = [_text(REFLECTION_INSTRUCTIONS)]
        if retry_feedback:
            closing.append(_text(REFLECTION_RETRY.format(feedback=retry_feedback)))
        message, call = await self._create(view, closing, NONE, commit=False)
        return Reply(_plain_text(message.content), call)

    async def revise(self, view: RunView, answer: str, feedback: str) -> Decision:
        """``answer`` is already the conversation's last turn; the loop's feedback says what to fix and how."""
        message, call = await self._create(view, [_text(feedback)], NONE, commit=True)
        return _answer(message, call)

    def _start(self, view: RunView) -> None:
        """Open a new run's conversation (the loop makes one view per run): earlier chat turns, then the question."""
        self._run, self._messages, self._pending, self._shown = view, [], [], set()
        for exchange in view.history:
            self._messages.append({"role": "user", "content": exchange.question})
            self._messages.append({"role": "assistant", "content": exchange.answer})
        self._pending.append(_text(view.question))

    def _catch_up(self, view: RunView) -> None:
        """Show Claude evidence the loop fetched on its own (confirming lookups for conflicts)."""
        unseen = [item for item in view.ledger if item.citation_id not in self._shown]
        if unseen:
            self._pending += [_text(LOOP_EVIDENCE), *(_evidence_block(item) for item in unseen)]
            self._shown.update(item.citation_id for item in unseen)

    async def _create(
        self, view: RunView, closing: list[TextBlockParam], tool_choice: ToolChoiceParam, *, commit: bool
    ) -> tuple[Message, ModelCall]:
        """One Messages call on the conversation plus the pending user turn and ``closing``.

        With ``commit`` the user turn and Claude's reply join the conversation; without it
        (reflection) the call leaves no trace in it. Tools are always defined, because the
        API requires them whenever the conversation holds tool blocks; ``tool_choice``
        ``none`` is how a call is made "without tools".
        """
        self._catch_up(view)
        turn: MessageParam = {"role": "user", "content": [*self._pending, *closing]}
        dropped = {item.citation_id for item in view.ledger.dropped()}
        started = time.perf_counter()
        try:
            message = await self.client.messages.create(
                model=self.model or DEFAULT_MODEL,
                max_tokens=self.max_tokens,
                system=system_prompt(view.catalog),
                tools=tool_definitions(view.catalog),
                tool_choice=tool_choice,
                messages=[_within_budget(m, dropped) for m in [*self._messages, turn]],
            )
        except anthropic.APIError as exc:
            raise _explain(exc, self.model) from exc
        usage = message.usage
        cached = (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
        call = ModelCall(
            model=message.model,
            input_tokens=usage.input_tokens + cached,
            output_tokens=usage.output_tokens,
            seconds=time.perf_counter() - started,
            stop_reason=message.stop_reason,
        )
        if commit:
            self._messages += [turn, {"role": "assistant", "content": _replayable(message.content)}]
            self._pending = []
        return message, call


def system_prompt(catalog: Catalog) -> str:
    """The standing instructions plus the knowledge bases, each with its routing description."""
    if not catalog.corpora:
        return SYSTEM_PROMPT
    corpora = "\n".join(f"- {c.name} ({c.documents} documents): {c.description}" for c in catalog.corpora)
    return f"{SYSTEM_PROMPT}\n\nKnowledge bases:\n{corpora}"


def tool_definitions(catalog: Catalog) -> list[ToolParam]:
    """The MCP tools as Anthropic tool definitions: name, description, and the MCP input schema as is."""
    return [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in catalog.tools]


def _tool_result(tool_use_id: str, outcome: ToolOutcome) -> ToolResultBlockParam:
    """The ``tool_result`` for one call: search results per chunk, SQL as cited text, errors as errors."""
    result: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": tool_use_id}
    if outcome.is_error:
        return {**result, "content": outcome.text or "The tool call failed.", "is_error": True}
    if not outcome.evidence:
        return {**result, "content": outcome.text or "(empty result)"}
    if outcome.evidence[0].kind == "sql":
        return {**result, "content": f"[{outcome.evidence[0].citation_id}]\n{outcome.text}"}
    header = _text(outcome.text.split("\n\n", 1)[0])
    return {**result, "content": [header, *(_evidence_block(item) for item in outcome.evidence)]}


def _evidence_block(item: Evidence) -> SearchResultBlockParam | TextBlockParam:
    """A chunk as a ``search_result`` (source = citation id, citations on); a SQL result as cited text."""
    if item.kind == "sql":
        return _text(f"[{item.citation_id}]\n{item.text}")
    title = f"{item.title} (updated {item.updated})" if item.updated else item.title
    return {
        "type": "search_result", "source": item.citation_id, "title": title,
        "content": [_text(item.text)], "citations": {"enabled": True},
    }  # fmt: skip


def _within_budget(message: MessageParam, dropped: set[str]) -> MessageParam:
    """``message`` with the text of search results the ledger dropped replaced by a placeholder."""
    content = message["content"]
    if not dropped or isinstance(content, str):
        return message
    return cast(MessageParam, {"role": message["role"], "content": [_shrunk(block, dropped) for block in content]})


def _shrunk(block: Any, dropped: set[str]) -> Any:
    if block.get("type") == "search_result" and block.get("source") in dropped:
        return {**block, "content": [_text(DROPPED_EVIDENCE)]}
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        return {**block, "content": [_shrunk(part, dropped) for part in block["content"]]}
    return block


def _answer(message: Message, call: ModelCall) -> Decision:
    """Claude's text reply as an answer, with its native citations written in as ``[id]`` markers."""
    answer = "".join(_with_markers(block) for block in message.content if block.type == "text").strip()
    return Decision(answer=answer, state=_state_of(answer), call=call)


def _state_of(answer: str) -> AnswerState:
    lowered = answer.lower()
    if lowered.startswith(INSUFFICIENT_PREFIX.lower()):
        return "insufficient"
    if lowered.startswith(CLARIFY_PREFIX.lower()):
        return "clarify"
    return "answered"


def _with_markers(block: TextBlock) -> str:
    """The block's text with an ``[id]`` for each search result it cites, before trailing punctuation."""
    sources: list[str] = []
    for citation in block.citations or []:
        if citation.type == "search_result_location" and citation.source not in sources:
            sources.append(citation.source)
    markers = "".join(f" [{s}]" for s in sources if f"[{s}]" not in block.text)
    if not markers:
        return block.text
    tail = _MARKER_SPOT.search(block.text)
    cut = tail.start() if tail else len(block.text)
    return f"{block.text[:cut]}{markers}{block.text[cut:]}"


def _replayable(content: Sequence[Any]) -> list[ContentBlockParam]:
    """Claude's reply as it goes back into the conversation: text (markers included) and tool calls."""
    blocks: list[ContentBlockParam] = []
    for block in content:
        if block.type == "text" and block.text:
            blocks.append(_text(_with_markers(block)))
        elif block.type == "tool_use":
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)})
    return blocks


def _plain_text(content: Iterable[Any]) -> str:
    return "".join(block.text for block in content if block.type == "text").strip()


def _first_line(text: str, limit: int = 160) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else f"{line[: limit - 1]}…"


def _text(text: str) -> TextBlockParam:
    return {"type": "text", "text": text}


def _explain(exc: anthropic.APIError, model: str | None) -> AnthropicBackendError:
    """An API failure as an error that says what to do (after the SDK's retries, for transient ones)."""
    if isinstance(exc, anthropic.AuthenticationError):
        return APIKeyError(
            "The Anthropic API rejected the API key (401 authentication error): check ANTHROPIC_API_KEY, "
            "or use the offline back-end (--backend offline)."
        )
    if isinstance(exc, anthropic.NotFoundError):
        return AnthropicBackendError(f"The Anthropic API has no model {model!r} (404): set RAG_AGENT_MODEL or --model.")
    if isinstance(exc, (anthropic.RateLimitError, anthropic.InternalServerError)):
        kind = "rate-limited" if isinstance(exc, anthropic.RateLimitError) else "overloaded or failing"
        return AnthropicBackendError(
            f"The Anthropic API is {kind}: it answered {exc.status_code} ({exc.api_message or exc.message}) to "
            "every attempt, retries included. Try again later, or allow more retries."
        )
    if isinstance(exc, anthropic.APIStatusError):
        reason = exc.api_message or exc.message
        return AnthropicBackendError(f"The Anthropic API refused the request ({exc.status_code}): {reason}")
    return AnthropicBackendError(f"Could not reach the Anthropic API: {exc.message}")
