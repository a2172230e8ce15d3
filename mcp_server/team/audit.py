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
``ToolError`` for arguments the schema rejects, ...). Listing tools or resources is not logged.

Nor can a client's calls rotate another client's records away (a red team once rotated all
six files in 26 s, with calls carrying a megabyte of arguments each):

- **Each line** is at most :data:`LINE_BYTES`. String arguments are cut at
  :data:`ARGUMENT_CHARS` characters, and arguments still longer than :data:`ARGUMENTS_BYTES`
  as JSON are cut as a whole (:func:`_fitted`); the record then says how long they were:
  ``"arguments_cut": {"original_bytes": 1048000}`` (``uri_cut`` for a resource's URI).
- **Each client** writes full records for ``client_bytes_per_minute`` bytes a minute
  (``RAGMCP_AUDIT_CLIENT_BYTES_PER_MINUTE``, a minute's worth at once, per worker process).
  Past that its records are *thinned*: ``"thinned": true``, arguments cut to
  :data:`THINNED_ARGUMENTS_BYTES`. No call goes unrecorded: a thinned record still has the
  time, client, method, tool or URI, outcome, error, counts and latency.
- **Rotation** never deletes a backup younger than ``RAGMCP_AUDIT_MIN_KEEP_HOURS``
  (:class:`~mcp_server.jsonl_log.JsonlLog`): the log grows past its size instead, so every
  record stays at least that long whatever other clients send.

Never any token material: client names come from the tokens file, nothing here reads
the ``Authorization`` header, and token-shaped text in arguments (names included) is masked
(:func:`~mcp_server.team.redaction.redact`). Unicode line and paragraph separators are
escaped, so every record is one line for any reader. The file rotates by size and several
worker processes may share it (:class:`~mcp_server.jsonl_log.JsonlLog`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import ValidationError

from mcp_server.jsonl_log import JsonlLog, encoded
from mcp_server.surface.call_notes import noting_call
from mcp_server.surface.sdk import (
    CallNext,
    CallToolResult,
    HandlerResult,
    ReadResourceResult,
    ServerRequestContext,
    TextContent,
    TextResourceContents,
)
from mcp_server.surface.sdk_http import get_access_token
from mcp_server.team.redaction import redact

ARGUMENT_CHARS = 10_000
"""Longest string argument written in full; a longer one is cut with a marker."""
LINE_BYTES = 16_384
"""Longest audit line, in UTF-8 bytes, newline included."""
ARGUMENTS_BYTES = LINE_BYTES - 1_024
"""Room for a call's arguments (or a resource's URI) as JSON; the other fields of a line take less than the rest."""
TOOL_BYTES = 256
"""Room for the tool name (ours are short; a longer name is no tool, and the call is refused)."""
THINNED_ARGUMENTS_BYTES = 256
"""Room for the arguments of a thinned record (a client's past its bytes a minute)."""
AUDITED_METHODS = frozenset({"tools/call", "resources/read"})
LOCAL_CLIENT = "local"
"""The client name of calls made without a token (a loopback server with no tokens file)."""


class CallAudit:
    """Server middleware writing one audit line per tool call and resource read, however it ends,
    in full while the client is within ``client_bytes_per_minute`` and thinned past it."""

    def __init__(self, log: JsonlLog, *, client_bytes_per_minute: int) -> None:
        self.log = log
        self.client_bytes_per_minute = client_bytes_per_minute
        self._budgets: dict[str, ByteBudget] = {}

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in AUDITED_METHODS:
            return await call_next(ctx)
        params = dict(ctx.params or {})
        token = get_access_token()
        client = token.client_id if token else LOCAL_CLIENT
        if ctx.method == "tools/call":
            call = _Call(client, ctx.method, "arguments", params.get("arguments") or {}, params.get("name"))
        else:
            call = _Call(client, ctx.method, "uri", params.get("uri"))
        with noting_call() as note:
            try:
                result = await call_next(ctx)
            except anyio.get_cancelled_exc_class():
                self._write(call, "cancelled", None, None)
                raise
            except Exception as e:
                self._write(call, "error", note.error or type(e).__name__, None)
                raise
        typed = _typed(ctx.method, result)
        failed = isinstance(typed, CallToolResult) and typed.is_error
        self._write(call, "error" if failed else "ok", (note.error or "ToolError") if failed else None, typed)
        return result

    def _write(
        self, call: _Call, outcome: str, error: str | None, result: CallToolResult | ReadResourceResult | None
    ) -> None:
        latency_ms = round((time.perf_counter() - call.started) * 1000, 1)
        now = time.monotonic()
        budget = self._budgets.get(call.client)
        if budget is None:
            budget = self._budgets[call.client] = ByteBudget(self.client_bytes_per_minute, now)
        full = budget.allows(now)
        record = {
            **call.fields(ARGUMENTS_BYTES if full else THINNED_ARGUMENTS_BYTES),
            "outcome": outcome, "error": error, **_summary(result), "latency_ms": latency_ms,
        }  # fmt: skip
        if full:
            budget.spend(self.log.write(record))
        else:
            self.log.write({**record, "thinned": True})


class ByteBudget:
    """The bytes of full records one client may still write: ``per_minute`` a minute, a minute's worth at once.

    A record begun within the budget is written whole, so the budget may be overdrawn by one line.
    """

    def __init__(self, per_minute: int, now: float) -> None:
        self.per_minute = per_minute
        self._left = float(per_minute)
        self._updated = now

    def allows(self, now: float) -> bool:
        """Whether a full record may be written at ``now`` (seconds, monotonic)."""
        self._left = min(self.per_minute, self._left + (now - self._updated) * self.per_minute / 60)
        self._updated = now
        return self._left > 0

    def spend(self, size: int) -> None:
        self._left -= size


@dataclass
class _Call:
    """One audited call: who made it, how, and what it asked - as sent, the record's ``asked_field``."""

    client: str
    method: str
    asked_field: str
    asked: Any
    tool: Any = None
    started: float = field(default_factory=time.perf_counter)

    def fields(self, room: int) -> dict[str, Any]:
        """The record's fields naming the call, with what it asked fitted in ``room`` bytes (and how long it was
        when cut)."""
        named: dict[str, Any] = {"client": self.client, "method": self.method}
        if self.method == "tools/call":
            named["tool"] = _fitted(_clipped(self.tool), TOOL_BYTES)
        asked = _clipped(self.asked)
        named[self.asked_field] = fitted = _fitted(asked, room)
        if fitted is not asked:
            named[f"{self.asked_field}_cut"] = {"original_bytes": _size(self.asked)}
        return named


def _clipped(value: Any) -> Any:
    """``value`` with every string (object keys too) longer than :data:`ARGUMENT_CHARS` cut, and marked so, and
    token-shaped text masked."""
    if isinstance(value, str):
        value = redact(value)
        return value if len(value) <= ARGUMENT_CHARS else _marked(value, ARGUMENT_CHARS)
    if isinstance(value, dict):
        return {_clipped(str(key)): _clipped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clipped(item) for item in value]
    return value


def _fitted(value: Any, room: int) -> Any:
    """``value`` itself if its JSON takes at most ``room`` bytes, else as much of it as does.

    Of an object (a call's arguments), its entries from the smallest up: each whole while it fits, then the
    first that does not cut (:func:`_cut`) and the rest left out, so that a huge argument cannot push a short one
    (the SQL statement) out of the record. Any other value is cut as a whole.
    """
    if not isinstance(value, dict) or not value:
        return value if _size(value) <= room else _cut(value, room)
    sizes = {key: _size({key: item}) for key, item in value.items()}  # the entry, and its ", " (or the braces)
    if sum(sizes.values()) <= room:
        return value
    kept: dict[str, Any] = {}
    left = room  # the kept entries' sizes add up to their object's
    for key in sorted(value, key=sizes.__getitem__):
        if sizes[key] <= left:
            kept[key] = value[key]
            left -= sizes[key]
            continue
        room_for_value = left - _size(key) - 4  # '"key": ' and ", "
        cut = _cut(value[key], room_for_value)
        if _size(cut) <= room_for_value:
            kept[key] = cut
        break
    return {key: kept[key] for key in value if key in kept}


def _cut(value: Any, room: int) -> str:
    """The longest beginning of ``value``'s text (a string's own, any other value's JSON) that, marked with how
    much is missing, takes at most ``room`` bytes as JSON; the bare marker if none does."""
    text = value if isinstance(value, str) else encoded(value)
    shortest, longest = 0, min(len(text), room)
    while shortest < longest:
        middle = (shortest + longest + 1) // 2
        if _size(_marked(text, middle)) <= room:
            shortest = middle
        else:
            longest = middle - 1
    return _marked(text, shortest)


def _marked(text: str, kept: int) -> str:
    """The first ``kept`` characters of ``text``, marked with how many more there were."""
    return f"{text[:kept]}…[{len(text) - kept} more characters]"


def _size(value: Any) -> int:
    """The bytes ``value`` takes as JSON in the log."""
    return len(encoded(value).encode("utf-8"))


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
