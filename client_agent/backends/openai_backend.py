"""The OpenAI-compatible back-end: any chat-completions model with tool calling decides.

OpenAI's API, gateways in front of it, and the local servers (Ollama, llama.cpp's
``llama-server``, vLLM, LM Studio) all speak chat completions with function tools, through
the ``openai`` SDK that they test against. :class:`OpenAIBackend` keeps one conversation per
run, in that wire format:

- The MCP tools are offered as function tools whose ``parameters`` are the MCP input schemas
  as they are.
- Every tool call the model makes gets its ``tool`` message, paired by ``tool_call_id``, in
  order, right after the assistant message that made it — refusals and errors included. A
  call whose arguments are not a JSON object comes back to the loop with the reason
  (:attr:`ToolRequest.problem`), so the model is told exactly what to fix.
- Hits and document chunks travel as text headed by their citation ids
  (:func:`~client_agent.backends.conversation.result_text`); the model cites by copying the
  ids into its answer, and the loop's citation check gates the answer as for any back-end.
  Evidence the ledger drops from the prompt budget is replaced, as it is sent, by a
  placeholder.
- Calls "without tools" (reflection, revision, the final answer once budgets are spent) are
  made without the tool definitions, which every server honours (``tool_choice: none`` is
  not universally supported).
- Reflection asks for structured output (``response_format`` ``json_schema``) where the
  server offers it: a server that refuses the parameter (400/422) is asked again without it,
  and is not offered it again this run; either way the loop validates the reply and retries a
  malformed one once.
- ``max_tokens`` is sent, which every local server reads; a server that wants
  ``max_completion_tokens`` instead (OpenAI's reasoning models) gets that after its 400.

Transient failures (429, 5xx, connection errors) are retried by the SDK with exponential
backoff (0.5 s doubling to 8 s, with jitter, honouring ``retry-after``). Other failures become
:class:`OpenAIBackendError` saying what to do, naming the server's URL.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from client_agent.backends.base import Decision, ModelCall, Observation, Reply, RunView, ToolRequest
from client_agent.backends.conversation import (
    DEFAULT_MAX_RETRIES, LOOP_EVIDENCE, MUST_ANSWER, ModelBackend, cited_text,
    endpoint, first_line, history_turns, max_tokens_setting, reflection_closing, result_text, state_of, system_prompt,
    unseen,
)

from client_agent.errors import MissingExtraError, ModelBackendError
try:  # imported only when this back-end is chosen (client_agent.cli); the SDK is the openai extra
    import openai
    from openai.types.chat import (
        ChatCompletion, ChatCompletionMessage, ChatCompletionMessageParam, ChatCompletionToolUnionParam,
    )
    from openai.types.shared_params import ResponseFormatJSONSchema
except ImportError as error:
    raise MissingExtraError("openai", "openai", error) from error
from client_agent.connection import Catalog, ToolOutcome
from client_agent.evidence import Evidence
from client_agent.reflection import Verdict

DEFAULT_MAX_TOKENS = 4096


def _described(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "description": Verdict.model_fields[name].description or ""}


_STRINGS = {"type": "array", "items": {"type": "string"}}
VERDICT_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "reflection_verdict",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "sufficient": _described("sufficient", {"type": "boolean"}),
                "missing": _described("missing", _STRINGS),
                "next_queries": _described("next_queries", _STRINGS),
            },
            "required": list(Verdict.model_fields),
            "additionalProperties": False,
        },
    },
}
"""Structured output for the reflection verdict: the verdict's fields and types only (the keywords
strict mode accepts); lengths and counts are the loop's validation's business."""

TOOL_CALLING_HINT = (
    " The server may not have tool calling enabled: llama.cpp's llama-server needs --jinja, vLLM needs "
    "--enable-auto-tool-choice --tool-call-parser <parser>, and the model must support tools."
)

_TOOL_TAG = re.compile(r"\A\s*<\|?tool_call", re.IGNORECASE)

Notice = Callable[[str], None]


class OpenAIBackendError(ModelBackendError):
    """The OpenAI-compatible server could not be used; the message says what to do about it."""


def from_environment(
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    max_tokens: int | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    notice: Notice | None = None,
) -> OpenAIBackend:
    """A back-end configured from arguments, falling back to the environment, then to defaults.

    ``OPENAI_BASE_URL`` (default: OpenAI's API), ``OPENAI_API_KEY`` (required for OpenAI's API; a
    server at a base URL may do without one, and gets
    :data:`~client_agent.backends.conversation.LOCAL_KEY`), ``RAG_AGENT_MODEL`` (without one, a
    base-URL server's first listed model is used) and ``RAG_AGENT_MAX_TOKENS``.
    """
    url, key = endpoint(base_url, api_key, "OPENAI_BASE_URL", "OPENAI_API_KEY")
    if not key:
        raise OpenAIBackendError(
            "No OpenAI API key: set OPENAI_API_KEY (or --api-key) to use OpenAI's API, or point --base-url "
            "(OPENAI_BASE_URL) at an OpenAI-compatible server such as Ollama (http://localhost:11434/v1), "
            "which needs none."
        )
    chosen = model or os.environ.get("RAG_AGENT_MODEL") or None
    if chosen is None and url is None:
        raise OpenAIBackendError("Which OpenAI model? Set --model (or RAG_AGENT_MODEL), e.g. --model gpt-4.1-mini.")
    tokens = max_tokens_setting(max_tokens, DEFAULT_MAX_TOKENS)
    client = openai.AsyncOpenAI(api_key=key, base_url=url, max_retries=max_retries)
    return OpenAIBackend(client, chosen, tokens, notice=notice)


@dataclass
class _UserTurn:
    """A user message as it accumulates: the question, the loop's notes, evidence it fetched itself."""

    parts: list[str | Evidence] = field(default_factory=list)

    def render(self, dropped: set[str]) -> dict[str, Any]:
        texts = [p if isinstance(p, str) else cited_text(p, p.citation_id in dropped) for p in self.parts]
        return {"role": "user", "content": "\n\n".join(texts)}


@dataclass(frozen=True)
class _ToolTurn:
    """The ``tool`` message answering one tool call, rendered as it is sent (dropped evidence shrinks)."""

    call_id: str
    outcome: ToolOutcome

    def render(self, dropped: set[str]) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": self.call_id, "content": result_text(self.outcome, dropped)}


_Turn = dict[str, Any] | _UserTurn | _ToolTurn


class OpenAIBackend(ModelBackend[openai.AsyncOpenAI]):
    """A chat-completions model as the agent's decision maker, over one conversation per run."""

    name = "openai"

    def __init__(self, client: openai.AsyncOpenAI, model: str | None, max_tokens: int = DEFAULT_MAX_TOKENS,
                 notice: Notice | None = None) -> None:
        super().__init__(client)
        self.model = model
        """``None`` until the first call asks the server which model it serves."""
        self.max_tokens = max_tokens
        self.notice: Notice = notice or (lambda message: None)
        self.structured = True
        """Whether to ask for structured output; False once the server refused it."""
        self.token_limit = "max_tokens"
        self._turns: list[_Turn] = []
        self._pending = _UserTurn()

    async def decide(self, view: RunView) -> Decision:
        self._follow(view)
        tools = not view.must_answer
        message, call = await self._create(view, [] if tools else [MUST_ANSWER], tools=tools, commit=True)
        requests = _tool_requests(message) if tools else []
        if tools and not requests and _written_tool_call(message.content or "", view.catalog):
            raise OpenAIBackendError(
                f"The model at {self.client.base_url} wrote a tool call as text instead of calling the tool, so the "
                f"server's tool calling is off or the model has none.{TOOL_CALLING_HINT}")
        self._turns.append(_replay(message, requests))
        if requests:
            return Decision(tool_calls=requests, call=call, note=first_line(message.content or ""))
        return _answer(message, call)

    def observe(self, observations: list[Observation]) -> None:
        """One ``tool`` message per call, right after the assistant message that made the calls."""
        self._turns += [_ToolTurn(o.request.id, o.outcome) for o in observations]
        self._mark_shown(observations)

    def note(self, text: str) -> None:
        self._pending.parts.append(text)

    async def reflect(self, view: RunView, retry_feedback: str | None = None) -> Reply:
        message, call = await self._create(view, reflection_closing(retry_feedback), tools=False, commit=False,
                                           verdict=True)
        return Reply((message.content or "").strip(), call)

    async def revise(self, view: RunView, answer: str, feedback: str) -> Decision:
        """``answer`` is already the conversation's last turn; the loop's feedback says what to fix and how."""
        message, call = await self._create(view, [feedback], tools=False, commit=True)
        self._turns.append(_replay(message, []))
        return _answer(message, call)

    def _start(self, view: RunView) -> None:
        """Open a new run's conversation: earlier chat turns, then the question."""
        self._turns = list(history_turns(view.history))
        self._pending = _UserTurn([view.question])

    async def _create(self, view: RunView, closing: list[str], *, tools: bool, commit: bool,
                      verdict: bool = False) -> tuple[ChatCompletionMessage, ModelCall]:
        """One chat completion on the conversation plus the pending user turn and ``closing``.

        With ``commit`` the user turn joins the conversation (the caller adds the reply);
        without it (reflection) the call leaves no trace in it.
        """
        items = unseen(view.ledger, self._shown)
        if items:
            self._pending.parts += [LOOP_EVIDENCE, *items]
        turn = _UserTurn([*self._pending.parts, *closing])
        turns = [*self._turns, turn] if turn.parts else self._turns
        dropped = {item.citation_id for item in view.ledger.dropped()}
        messages = [{"role": "system", "content": system_prompt(view.catalog)},
                    *(t if isinstance(t, dict) else t.render(dropped) for t in turns)]
        started = time.perf_counter()
        completion = await self._complete(messages, tool_definitions(view.catalog) if tools else None, verdict)
        if commit:
            self._turns = turns
            self._pending = _UserTurn()
        if not completion.choices:
            raise OpenAIBackendError(f"The server at {self.client.base_url} answered without a message (no choices).")
        choice = completion.choices[0]
        usage = completion.usage
        call = ModelCall(
            model=completion.model or self.model or "",
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            seconds=time.perf_counter() - started,
            stop_reason=choice.finish_reason,
        )
        return choice.message, call

    async def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                        verdict: bool) -> ChatCompletion:
        """The call itself, adapting once to what the server refuses (structured output, ``max_tokens``)."""
        model = await self._model()
        while True:
            structured = verdict and self.structured
            try:
                return await self.client.chat.completions.create(
                    model=model,
                    messages=cast(list[ChatCompletionMessageParam], messages),
                    tools=cast(list[ChatCompletionToolUnionParam], tools) if tools else openai.omit,
                    response_format=cast(ResponseFormatJSONSchema, VERDICT_FORMAT) if structured else openai.omit,
                    max_tokens=self.max_tokens if self.token_limit == "max_tokens" else openai.omit,
                    max_completion_tokens=self.max_tokens if self.token_limit != "max_tokens" else openai.omit,
                )
            except openai.APIStatusError as exc:
                if exc.status_code not in (400, 422):
                    raise _explain(exc, model, str(self.client.base_url)) from exc
                if structured:
                    self.structured = False
                elif self.token_limit == "max_tokens" and "max_completion_tokens" in _said(exc):
                    self.token_limit = "max_completion_tokens"
                else:
                    raise _explain(exc, model, str(self.client.base_url)) from exc
            except openai.APIError as exc:
                raise _explain(exc, model, str(self.client.base_url)) from exc

    async def _model(self) -> str:
        """The model to call: the configured one, or else the first the server lists (said once)."""
        if self.model is None:
            try:
                listed = [m.id async for m in self.client.models.list()]
            except openai.APIError as exc:
                raise _explain(exc, None, str(self.client.base_url)) from exc
            if not listed:
                raise OpenAIBackendError(
                    f"The server at {self.client.base_url} lists no models: load one, or name it with --model.")
            self.model = listed[0]
            self.notice(f"model: {self.model} (the first the server lists; --model chooses another)")
        return self.model


def tool_definitions(catalog: Catalog) -> list[dict[str, Any]]:
    """The MCP tools as function tools: name, description, and the MCP input schema as the parameters."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
        for t in catalog.tools
    ]


def _tool_requests(message: ChatCompletionMessage) -> list[ToolRequest]:
    """The model's tool calls as requests; arguments that are not a JSON object make a request the loop refuses."""
    requests = []
    for number, call in enumerate(message.tool_calls or [], start=1):
        function = getattr(call, "function", None)
        call_id = call.id or f"call_{number}"
        if function is None:
            requests.append(ToolRequest(call_id, str(getattr(call, "type", "tool")), {},
                                        problem="only function tools can be called; call one of the listed tools"))
            continue
        requests.append(_parsed(call_id, function.name, function.arguments))
    return requests


def _parsed(call_id: str, name: str, raw: str | None) -> ToolRequest:
    text = (raw or "").strip() or "{}"
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        return ToolRequest(call_id, name, {}, problem=(
            f"the arguments of this {name} call are not valid JSON ({exc.msg} at character {exc.pos} of "
            f"{text[:200]!r}); call it again with the arguments as one JSON object"))
    if not isinstance(arguments, dict):
        kind = "array" if isinstance(arguments, list) else type(arguments).__name__
        return ToolRequest(call_id, name, {}, problem=(
            f"the arguments of this {name} call are a JSON {kind}, not an object; call it again with the arguments "
            "as one JSON object, e.g. {\"query\": \"...\"}"))
    return ToolRequest(call_id, name, arguments)


def _written_tool_call(content: str, catalog: Catalog) -> bool:
    """Whether a reply is a tool call written out as text (``<tool_call>…`` or ``{"name": "<a tool>", …}``):
    what a server passes through when its tool-call parsing is off."""
    text = content.strip()
    if _TOOL_TAG.match(text):
        return True
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and catalog.tool(str(value.get("name"))) is not None


def _replay(message: ChatCompletionMessage, requests: list[ToolRequest]) -> dict[str, Any]:
    """The model's reply as it goes back into the conversation: its text, and the tool calls the loop answers."""
    replayed: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
    if requests:
        replayed["tool_calls"] = [
            {"id": r.id, "type": "function",
             "function": {"name": r.name, "arguments": json.dumps(r.arguments, ensure_ascii=False)}}
            for r in requests
        ]  # fmt: skip
    return replayed


def _answer(message: ChatCompletionMessage, call: ModelCall) -> Decision:
    answer = (message.content or "").strip()
    return Decision(answer=answer, state=state_of(answer), call=call)


def _said(exc: openai.APIStatusError) -> str:
    return f"{exc.message} {exc.body}"


def _explain(exc: openai.APIError, model: str | None, base_url: str) -> OpenAIBackendError:
    """An API failure as an error that says what to do (after the SDK's retries, for transient ones)."""
    if isinstance(exc, openai.AuthenticationError):
        return OpenAIBackendError(
            f"The server at {base_url} rejected the API key (401): check OPENAI_API_KEY or --api-key.")
    if isinstance(exc, openai.NotFoundError):
        return OpenAIBackendError(
            f"The server at {base_url} has no model {model!r} or no chat completions route (404): check --model "
            "(GET /v1/models lists the server's models) and --base-url (it usually ends in /v1).")
    if isinstance(exc, (openai.RateLimitError, openai.InternalServerError)):
        kind = "rate-limited" if isinstance(exc, openai.RateLimitError) else "overloaded or failing"
        return OpenAIBackendError(
            f"The server at {base_url} is {kind}: it answered {exc.status_code} ({exc.message}) to every attempt, "
            "retries included. Try again later, or allow more retries (--max-retries).")
    if isinstance(exc, openai.APIStatusError):
        hint = TOOL_CALLING_HINT if "tool" in _said(exc).lower() else ""
        return OpenAIBackendError(f"The server at {base_url} refused the request ({exc.status_code}): {exc.message}{hint}")
    return OpenAIBackendError(
        f"Could not reach the OpenAI-compatible server at {base_url}: {exc.message}. Is it running, and does "
        "--base-url (OPENAI_BASE_URL) end in /v1?")
