"""A local stand-in for the Anthropic Messages API: scripted replies over real HTTP.

:class:`FakeAnthropic` answers ``POST /v1/messages`` with the replies queued by ``enqueue``
(see :class:`tests.client_agent.fake_http.ScriptedServer`): each a Messages API response
body, or an :class:`ErrorReply` (a status such as 529 with the API's error body). The real
``anthropic`` SDK talks to it through ``base_url``.

Like the real API, it refuses (400 ``invalid_request_error``) a conversation whose
``tool_use`` blocks are not answered by ``tool_result`` blocks, in order, at the start of
the next user turn, and one that holds tool blocks without defining tools. With
``rejects_search_results`` it is an Anthropic-compatible server that knows only text blocks
(as Ollama's, llama.cpp's and most gateways' ``/v1/messages`` do): any ``search_result``
block gets a 400 naming it. A request with no scripted reply left gets a 400 too (which the
SDK does not retry), naming the request.
"""

from __future__ import annotations

from typing import Any

from tests.client_agent.fake_http import ErrorReply, ScriptedServer

OVERLOADED = ErrorReply(529, "overloaded_error", "Overloaded")
RATE_LIMITED = ErrorReply(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
UNAUTHORIZED = ErrorReply(401, "authentication_error", "invalid x-api-key")


def text(value: str, citations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A text content block, optionally with native citations."""
    return {"type": "text", "text": value, "citations": citations}


def cite(source: str, cited_text: str, index: int = 0, title: str = "") -> dict[str, Any]:
    """A ``search_result_location`` citation of one search result's first text block."""
    return {
        "type": "search_result_location", "source": source, "title": title, "cited_text": cited_text,
        "search_result_index": index, "start_block_index": 0, "end_block_index": 1,
    }  # fmt: skip


def tool_use(block_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": block_id, "name": name, "input": arguments}


def message(*content: dict[str, Any], stop_reason: str | None = None, input_tokens: int = 100,
            output_tokens: int = 20, model: str = "claude-test") -> dict[str, Any]:
    """A Messages API response; the stop reason follows from the content unless given."""
    reason = stop_reason or ("tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn")
    return {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": list(content),
        "stop_reason": reason, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }  # fmt: skip


class FakeAnthropic(ScriptedServer):
    """The Messages API on 127.0.0.1 with scripted replies; use as a context manager."""

    def __init__(self, rejects_search_results: bool = False) -> None:
        super().__init__()
        self.rejects_search_results = rejects_search_results

    def __enter__(self) -> FakeAnthropic:
        super().__enter__()
        return self

    def route(self, method: str, path: str) -> bool:
        return (method, path) == ("POST", "/v1/messages")

    def error_body(self, type: str, message: str) -> dict[str, Any]:  # noqa: A002 - the API's field name
        return {"type": "error", "error": {"type": type, "message": message}}

    def refusal(self, body: dict[str, Any]) -> ErrorReply | None:
        problem = conversation_problem(body) or (search_result_problem(body) if self.rejects_search_results else None)
        return ErrorReply(400, "invalid_request_error", problem) if problem else None


def search_result_problem(body: dict[str, Any]) -> str | None:
    """The error of a server that takes only text content: where the first ``search_result`` block is."""
    for i, current in enumerate(body.get("messages") or []):
        blocks = current["content"] if isinstance(current["content"], list) else []
        for j, block in enumerate(blocks):
            nested = block.get("content") if block.get("type") == "tool_result" else None
            places = [(f"{j}", block), *((f"{j}.content.{k}", part) for k, part in enumerate(nested or []))]
            for where, part in places:
                if isinstance(part, dict) and part.get("type") == "search_result":
                    return f"messages.{i}.content.{where}: unknown content block type 'search_result'; expected 'text'"
    return None


def conversation_problem(body: dict[str, Any]) -> str | None:
    """Why the real API would refuse this conversation's tool blocks, or None."""
    messages = body.get("messages") or []
    has_tool_blocks = False
    for i, current in enumerate(messages):
        blocks = current["content"] if isinstance(current["content"], list) else []
        has_tool_blocks |= any(b.get("type") in ("tool_use", "tool_result") for b in blocks)
        if current["role"] != "assistant":
            continue
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if not uses:
            continue
        following = messages[i + 1]["content"] if i + 1 < len(messages) else []
        leading = following[: len(uses)]
        results = [b["tool_use_id"] for b in leading if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results != uses:
            return (
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(uses)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
                "next message."
            )
    if has_tool_blocks and not body.get("tools"):
        return "Requests which include `tool_use` or `tool_result` blocks must define tools."
    return None
