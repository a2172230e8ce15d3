"""A local stand-in for an OpenAI-compatible chat-completions server: scripted replies over real HTTP.

:class:`FakeOpenAI` answers ``POST /v1/chat/completions`` with the replies queued by
``enqueue`` (see :class:`tests.client_agent.fake_http.ScriptedServer`) — completion bodies
built with :func:`completion` and :func:`tool_call`, or an :class:`ErrorReply` in OpenAI's
error shape — and ``GET /v1/models`` with its model list. The real ``openai`` SDK talks to it
through ``base_url``.

Like OpenAI's API, it refuses (400) a conversation in which an assistant message's
``tool_calls`` are not each answered by a ``tool`` message before the next other message,
and a ``tool`` message that answers no call. With ``rejects_response_format`` it is a server
without structured output (400 naming ``response_format``); with ``wants_max_completion_tokens``
one that refuses ``max_tokens`` as OpenAI's reasoning models do.
"""

from __future__ import annotations

import json
from typing import Any

from tests.client_agent.fake_http import Answer, ErrorReply, ScriptedServer

RATE_LIMITED = ErrorReply(429, "rate_limit_exceeded", "Rate limit reached for requests")
UNAUTHORIZED = ErrorReply(401, "invalid_api_key", "Incorrect API key provided")


def tool_call(call_id: str, name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    """A function tool call; ``arguments`` as a dict is sent as JSON text, a string is sent as is."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def completion(content: str | None = None, *calls: dict[str, Any], finish_reason: str | None = None,
               prompt_tokens: int = 100, completion_tokens: int = 20, model: str = "local-model") -> dict[str, Any]:
    """A chat completion with one choice; the finish reason follows from the content unless given."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": finish_reason or ("tool_calls" if calls else "stop")}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }  # fmt: skip


class FakeOpenAI(ScriptedServer):
    """Chat completions on 127.0.0.1 with scripted replies; use as a context manager."""

    def __init__(self, models: tuple[str, ...] = ("local-model",), rejects_response_format: bool = False,
                 wants_max_completion_tokens: bool = False) -> None:
        super().__init__()
        self.models = models
        self.rejects_response_format = rejects_response_format
        self.wants_max_completion_tokens = wants_max_completion_tokens

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def __enter__(self) -> FakeOpenAI:
        super().__enter__()
        return self

    def route(self, method: str, path: str) -> bool:
        return (method, path) == ("POST", "/v1/chat/completions")

    def static(self, method: str, path: str) -> Answer | None:
        if (method, path) != ("GET", "/v1/models"):
            return None
        listed = [{"id": name, "object": "model", "created": 1_700_000_000, "owned_by": "fake"} for name in self.models]
        return 200, {}, {"object": "list", "data": listed}

    def error_body(self, type: str, message: str) -> dict[str, Any]:  # noqa: A002 - the API's field name
        return {"error": {"message": message, "type": type, "param": None, "code": type}}

    def refusal(self, body: dict[str, Any]) -> ErrorReply | None:
        problem = conversation_problem(body)
        if problem is None and self.rejects_response_format and "response_format" in body:
            problem = "response_format is not supported by this server"
        if problem is None and self.wants_max_completion_tokens and "max_tokens" in body:
            problem = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                       "Use 'max_completion_tokens' instead.")
        return ErrorReply(400, "invalid_request_error", problem) if problem else None


def conversation_problem(body: dict[str, Any]) -> str | None:
    """Why OpenAI's API would refuse this conversation's tool messages, or None."""
    open_calls: list[str] = []
    for i, message in enumerate(body.get("messages") or []):
        if message["role"] == "tool":
            if message.get("tool_call_id") not in open_calls:
                return (f"Invalid parameter: messages.[{i}]: messages with role 'tool' must be a response to a "
                        "preceding message with 'tool_calls'.")
            open_calls.remove(message["tool_call_id"])
            continue
        if open_calls:
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    f"'tool_call_id'. The following tool_call_ids did not have response messages: "
                    f"{', '.join(open_calls)}")
        open_calls = [call["id"] for call in message.get("tool_calls") or []]
    if open_calls:
        return f"The following tool_call_ids did not have response messages: {', '.join(open_calls)}"
    return None
