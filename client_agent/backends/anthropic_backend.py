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

**Anthropic-compatible servers** (Ollama, llama.cpp, vLLM, LM Studio, gateways) speak only a
subset of the Messages API, and many reject ``search_result`` blocks. ``citations`` says what
to send: ``native`` (``search_result`` blocks, always), ``text`` (hits as text headed by their
citation ids, which the model copies into its answer, as with any OpenAI-compatible model), or
``auto`` (the default): native until a server answers 400 naming ``search_result``, then — said
once, on stderr — text for the rest of the run, the refused request sent again as text. The
choice is never made from the URL: proxies and gateways in front of the real API keep native
citations. Whichever form, the conversation is kept in the native form and converted as it is
sent, so switching mid-run converts what was already said.

Transient API failures (429 rate limits, 529 overload, other 5xx) are retried by the SDK
with exponential backoff (0.5 s doubling to 8 s, with jitter, honouring ``retry-after``);
:func:`from_environment` sets how many times. Errors that retrying cannot fix become
:class:`AnthropicBackendError` with a message saying what to do.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from client_agent.backends.base import Decision, ModelCall, Observation, Reply, RunView, ToolRequest
from client_agent.backends.conversation import (
    DEFAULT_MAX_RETRIES, DROPPED_EVIDENCE, LOOP_EVIDENCE, MUST_ANSWER, CitationMode, ModelBackend, cited, cited_text, endpoint, evidence_title, first_line, history_turns, max_tokens_setting,
    reflection_closing, state_of, system_prompt, unseen,
)

from client_agent.errors import MissingExtraError, ModelBackendError
try:  # imported only when this back-end is chosen (client_agent.cli); the SDK is the anthropic extra
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
except ImportError as error:
    raise MissingExtraError("anthropic", "anthropic", error) from error
from client_agent.connection import Catalog, ToolOutcome
from client_agent.evidence import Evidence

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_MAX_TOKENS = 4096

AUTO: ToolChoiceParam = {"type": "auto"}
NONE: ToolChoiceParam = {"type": "none"}

_MARKER_SPOT = re.compile(r"[\s.!?;:,]*$")


class AnthropicBackendError(ModelBackendError):
    """The Anthropic API could not be used; the message says what to do about it."""


class APIKeyError(AnthropicBackendError):
    """The API key is missing or was rejected."""


Notice = Callable[[str], None]


def _stderr_line(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def from_environment(
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    max_tokens: int | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    citations: CitationMode = "auto",
    notice: Notice = _stderr_line,
) -> AnthropicBackend:
    """A back-end configured from arguments, falling back to the environment, then to defaults.

    ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``, ``RAG_AGENT_MODEL`` (default
    :data:`DEFAULT_MODEL`) and ``RAG_AGENT_MAX_TOKENS`` (default :data:`DEFAULT_MAX_TOKENS`).
    The key is required for Anthropic's own API; a server at a base URL may do without one
    (:data:`~client_agent.backends.conversation.LOCAL_KEY` is sent). The SDK sends the key as
    ``Authorization: Bearer <key>``.
    """
    url, key = endpoint(base_url, api_key, "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
    if not key:
        raise APIKeyError(
            "No Anthropic API key: set ANTHROPIC_API_KEY to use Claude, or use the offline back-end "
            "(--backend offline), which needs no key."
        )
    tokens = max_tokens_setting(max_tokens, DEFAULT_MAX_TOKENS)
    client = anthropic.AsyncAnthropic(api_key=key, base_url=url, max_retries=max_retries)
    return AnthropicBackend(client, model or os.environ.get("RAG_AGENT_MODEL") or DEFAULT_MODEL, tokens,
                            citations=citations, notice=notice)


class AnthropicBackend(ModelBackend[anthropic.AsyncAnthropic]):
    """Claude as the agent's decision maker, over one Messages conversation per run."""

    name = "anthropic"

    def __init__(self, client: anthropic.AsyncAnthropic, model: str, max_tokens: int = DEFAULT_MAX_TOKENS,
                 citations: CitationMode = "auto", notice: Notice = _stderr_line) -> None:
        super().__init__(client)
        self.model: str | None = model
        self.max_tokens = max_tokens
        self.citations: CitationMode = citations
        """``text`` once an ``auto`` run has fallen back; read it to start the next run the same way."""
        self.notice = notice
        self._messages: list[MessageParam] = []
        self._pending: list[ContentBlockParam] = []
        """The next user turn, as it accumulates: tool results, then notes from the loop."""

    async def decide(self, view: RunView) -> Decision:
        self._follow(view)
        closing = [_text(MUST_ANSWER)] if view.must_answer else []
        message, call = await self._create(view, closing, NONE if view.must_answer else AUTO, commit=True)
        uses = [block for block in message.content if block.type == "tool_use"]
        requests = [ToolRequest(block.id, block.name, dict(block.input)) for block in uses]
        if requests:
            return Decision(tool_calls=requests, call=call, note=first_line(_plain_text(message.content)))
        return _answer(message, call)

    def observe(self, observations: list[Observation]) -> None:
        """Tool results lead the next user turn (the API wants them before any other content)."""
        self._pending[:0] = [_tool_result(o.request.id, o.outcome) for o in observations]
        self._mark_shown(observations)

    def note(self, text: str) -> None:
        self._pending.append(_text(text))

    async def reflect(self, view: RunView, retry_feedback: str | None = None) -> Reply:
        closing = [_text(part) for part in reflection_closing(retry_feedback)]
        message, call = await self._create(view, closing, NONE, commit=False)
        return Reply(_plain_text(message.content), call)

    async def revise(self, view: RunView, answer: str, feedback: str) -> Decision:
        """``answer`` is already the conversation's last turn; the loop's feedback says what to fix and how."""
        message, call = await self._create(view, [_text(feedback)], NONE, commit=True)
        return _answer(message, call)

    def _start(self, view: RunView) -> None:
        """Open a new run's conversation: earlier chat turns, then the question."""
        self._pending = [_text(view.question)]
        self._messages = cast(list[MessageParam], history_turns(view.history))

    def _catch_up(self, view: RunView) -> None:
        """Show Claude evidence the loop fetched on its own (confirming lookups for conflicts)."""
        items = unseen(view.ledger, self._shown)
        if items:
            self._pending += [_text(LOOP_EVIDENCE), *(_evidence_block(item) for item in items)]

    async def _create(
        self, view: RunView, closing: list[TextBlockParam], tool_choice: ToolChoiceParam, *, commit: bool
    ) -> tuple[Message, ModelCall]:
        """One Messages call on the conversation plus the pending user turn and ``closing``.

        With ``commit`` the user turn and Claude's reply join the conversation; without it
        (reflection) the call leaves no trace in it. Tools are always defined, because the
        API requires them whenever the conversation holds tool blocks; ``tool_choice``
        ``none`` is how a call is made "without tools". A server that refuses ``search_result``
        blocks gets the same request again with hits as cited text (``auto`` citations).
        """
        self._catch_up(view)
        turn: MessageParam = {"role": "user", "content": [*self._pending, *closing]}
        started = time.perf_counter()
        try:
            message = await self._send(view, [*self._messages, turn], tool_choice)
        except anthropic.APIError as exc:
            raise _explain(exc, self.model, str(self.client.base_url)) from exc
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

    async def _send(self, view: RunView, messages: list[MessageParam], tool_choice: ToolChoiceParam) -> Message:
        """The Messages call; with ``auto`` citations, sent again with hits as text if the server refuses them."""
        try:
            return await self._request(view, messages, tool_choice)
        except anthropic.APIStatusError as exc:
            if not (self.citations == "auto" and _rejects_search_results(exc)):
                raise
        self.citations = "text"
        self.notice(
            f"The Messages API at {self.client.base_url} does not accept search_result blocks (Claude's native "
            "citations): sending search hits as cited text for the rest of this run (--citations text skips "
            "this first try)."
        )
        return await self._request(view, messages, tool_choice)

    async def _request(self, view: RunView, messages: list[MessageParam], tool_choice: ToolChoiceParam) -> Message:
        dropped = {item.citation_id for item in view.ledger.dropped()}
        return await self.client.messages.create(
            model=self.model or DEFAULT_MODEL,
            max_tokens=self.max_tokens,
            system=system_prompt(view.catalog),
            tools=tool_definitions(view.catalog),
            tool_choice=tool_choice,
            messages=[_on_wire(m, dropped, self.citations != "text") for m in messages],
        )


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
        return _text(cited_text(item))
    return {
        "type": "search_result", "source": item.citation_id, "title": evidence_title(item),
        "content": [_text(item.text)], "citations": {"enabled": True},
    }  # fmt: skip


def _rejects_search_results(exc: anthropic.APIStatusError) -> bool:
    """A 400 (or 422) whose error names ``search_result``: the server does not take the block type."""
    return exc.status_code in (400, 422) and "search_result" in f"{exc.message} {exc.body}"


def _on_wire(message: MessageParam, dropped: set[str], native: bool) -> MessageParam:
    """``message`` as it is sent: dropped evidence as a placeholder and, unless ``native``, every
    ``search_result`` as cited text (and a tool result made only of text as one string)."""
    content = message["content"]
    if isinstance(content, str) or (native and not dropped):
        return message
    return cast(MessageParam, {"role": message["role"], "content": [_wire_block(b, dropped, native) for b in content]})


def _wire_block(block: Any, dropped: set[str], native: bool) -> Any:
    if block.get("type") == "search_result":
        body = DROPPED_EVIDENCE if block["source"] in dropped else block["content"][0]["text"]
        return {**block, "content": [_text(body)]} if native else _text(cited(block["source"], block["title"], body))
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        parts = [_wire_block(part, dropped, native) for part in block["content"]]
        return {**block, "content": parts if native else "\n\n".join(part["text"] for part in parts)}
    return block


def _answer(message: Message, call: ModelCall) -> Decision:
    """Claude's text reply as an answer, with its native citations written in as ``[id]`` markers."""
    answer = "".join(_with_markers(block) for block in message.content if block.type == "text").strip()
    return Decision(answer=answer, state=state_of(answer), call=call)


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


def _text(text: str) -> TextBlockParam:
    return {"type": "text", "text": text}


def _explain(exc: anthropic.APIError, model: str | None, base_url: str) -> AnthropicBackendError:
    """An API failure as an error that says what to do (after the SDK's retries, for transient ones)."""
    if isinstance(exc, anthropic.AuthenticationError):
        return APIKeyError(
            "The Anthropic API rejected the API key (401 authentication error): check ANTHROPIC_API_KEY or "
            "--api-key, or use the offline back-end (--backend offline)."
        )
    if isinstance(exc, anthropic.NotFoundError):
        return AnthropicBackendError(
            f"The Messages API at {base_url} has no model {model!r} or no /v1/messages route (404): set "
            "RAG_AGENT_MODEL or --model, and check --base-url (without /v1)."
        )
    if isinstance(exc, (anthropic.RateLimitError, anthropic.InternalServerError)):
        kind = "rate-limited" if isinstance(exc, anthropic.RateLimitError) else "overloaded or failing"
        return AnthropicBackendError(
            f"The Anthropic API is {kind}: it answered {exc.status_code} ({exc.api_message or exc.message}) to "
            "every attempt, retries included. Try again later, or allow more retries."
        )
    if isinstance(exc, anthropic.APIStatusError):
        reason = exc.api_message or exc.message
        hint = (" This server does not take search_result blocks: use --citations text (or auto)."
                if _rejects_search_results(exc) else "")
        return AnthropicBackendError(f"The Anthropic API refused the request ({exc.status_code}): {reason}{hint}")
    return AnthropicBackendError(f"Could not reach the Anthropic API at {base_url}: {exc.message}")
