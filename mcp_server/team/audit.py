"""The audit log of the HTTP server: one JSON line per call.

A call is a ``tools/call`` or a ``resources/read`` (reading a document is reading data too)
that reached the MCP server, whatever its outcome::

    {"time": "2025-11-29T20:01:02.345+00:00", "client": "team-a", "method": "tools/call",
     "tool": "sql_query", "arguments": {"sql": "SELECT ..."}, "outcome": "ok", "error": null,
     "results": 3, "result_chars": 812, "latency_ms": 4.2}

Requests refused before they reach the MCP server (401 without a valid token, 429 over
the rate, 413 for a body too large) are not calls and are not written here: they go to
the server log on stderr (the access log, plus a warning naming the client for a 429).
Unauthenticated or runaway traffic therefore cannot flood the audit log and rotate the
record of real calls away.

``results`` counts hits, rows, document chunks or resource contents, ``result_chars`` is
the length of the text returned, and ``error`` names the kind of failure
(``NotFoundError``, ``InvalidQueryError``, ``NotGranted``, ``CallTimeoutError``,
``ToolError`` for arguments the schema rejects, ...). String arguments are cut at
:data:`ARGUMENT_CHARS` characters. Listing tools or resources is not logged.

Never any token material: client names come from the tokens file, nothing here reads
the ``Authorization`` header, and token-shaped text in arguments is masked
(:func:`~mcp_server.team.redaction.redact`). Unicode line and paragraph separators are
escaped, so every record is one line for any reader (:class:`~mcp_server.jsonl_log.JsonlLog`). The file rotates by size and several worker processes may
share it (:class:`~mcp_server.jsonl_log.JsonlLog`).
"""

from __future__ import annotations

import time
from typing import Any

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import (
    CallToolResult,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
)
from pydantic import ValidationError

from mcp_server.jsonl_log import JsonlLog
from mcp_server.surface.call_notes import noting_call
from mcp_server.team.redaction import redact

ARGUMENT_CHARS = 10_000
"""Longest string argument written in full; a longer one is cut with a marker."""
AUDITED_METHODS = frozenset({"tools/call", "resources/read"})
LOCAL_CLIENT = "local"
"""The client name of calls made without a token (a loopback server with no tokens file)."""


class CallAudit:
    """Server middleware writing one audit line per tool call and resource read, however it ends."""

    def __init__(self, log: JsonlLog) -> None:
        self.log = log

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in AUDITED_METHODS:
            return await call_next(ctx)
        params = dict(ctx.params or {})
        token = get_access_token()
        event: dict[str, Any] = {"client": token.client_id if token else LOCAL_CLIENT, "method": ctx.method}
        if ctx.method == "tools/call":
            event |= {"tool": params.get("name"), "arguments": _clipped(params.get("arguments") or {})}
        else:
            event["uri"] = _clipped(params.get("uri"))
        started = time.perf_counter()
        with noting_call() as note:
            try:
                result = await call_next(ctx)
            except anyio.get_cancelled_exc_class():
                self._write(event, started, "cancelled", None, None)
                raise
            except Exception as e:
                self._write(event, started, "error", note.error or type(e).__name__, None)
                raise
        typed = _typed(ctx.method, result)
        failed = isinstance(typed, CallToolResult) and typed.is_error
        self._write(event, started, "error" if failed else "ok", (note.error or "ToolError") if failed else None, typed)
        return result

    def _write(
        self,
        event: dict[str, Any],
        started: float,
        outcome: str,
        error: str | None,
        result: CallToolResult | ReadResourceResult | None,
    ) -> None:
        latency_ms = round((time.perf_counter() - started) * 1000, 1)
        self.log.write({**event, "outcome": outcome, "error": error, **_summary(result), "latency_ms": latency_ms})


def _clipped(value: Any) -> Any:
    """``value`` with every string longer than :data:`ARGUMENT_CHARS` cut, and marked so, and token-shaped text masked."""
    if isinstance(value, str):
        value = redact(value)
    if isinstance(value, str) and len(value) > ARGUMENT_CHARS:
        return f"{value[:ARGUMENT_CHARS]}…[{len(value) - ARGUMENT_CHARS} more characters]"
    if isinstance(value, dict):
        return {key: _clipped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clipped(item) for item in value]
    return value


def _typed(method: str, result: HandlerResult) -> CallToolResult | ReadResourceResult | None:
    """The result as its model (handlers may return it already serialised); None if it is not one."""
    model = CallToolResult if method == "tools/call" else ReadResourceResult
    if isinstance(result, model):
        return result
    try:
        return model.model_validate(result)
    except ValidationError:  # another kind of result (an input request): no count to take
        return None


def _summary(result: CallToolResult | ReadResourceResult | None) -> dict[str, int | None]:
    """How much a call returned: its hits, rows, chunks or contents, and the characters of text."""
    if isinstance(result, ReadResourceResult):
        texts = [c.text for c in result.contents if isinstance(c, TextResourceContents)]
        return {"results": len(result.contents), "result_chars": sum(map(len, texts))}
    if result is None:
        return {"results": None, "result_chars": None}
    chars = sum(len(c.text) for c in result.content if isinstance(c, TextContent))
    data = result.structured_content or {}
    count = next((len(data[key]) for key in ("hits", "chunks") if isinstance(data.get(key), list)), None)
    rows = data.get("row_count")
    return {"results": rows if isinstance(rows, int) else count, "result_chars": chars}
