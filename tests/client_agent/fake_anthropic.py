"""A local stand-in for the Anthropic Messages API: scripted replies over real HTTP.

:class:`FakeAnthropic` runs a threaded ``http.server`` on 127.0.0.1 that answers
``POST /v1/messages`` with the replies queued by :meth:`FakeAnthropic.enqueue`, in order —
each a Messages API response body, or an :class:`ErrorReply` (a status such as 529 with the
API's error body) — and records every request (headers and JSON body) for assertions. The
real ``anthropic`` SDK talks to it through ``base_url``, so what the tests see is what the
SDK actually sent.

Like the real API, it refuses (400 ``invalid_request_error``) a conversation whose
``tool_use`` blocks are not answered by ``tool_result`` blocks, in order, at the start of
the next user turn, and one that holds tool blocks without defining tools. A request with
no scripted reply left gets a 400 too (which the SDK does not retry), naming the request.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ErrorReply:
    """An error response: ``status`` with the API's ``{"type": "error", "error": {...}}`` body."""

    status: int
    type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"type": "error", "error": {"type": self.type, "message": self.message}}


OVERLOADED = ErrorReply(529, "overloaded_error", "Overloaded")
RATE_LIMITED = ErrorReply(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
UNAUTHORIZED = ErrorReply(401, "authentication_error", "invalid x-api-key")


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    headers: dict[str, str]
    body: dict[str, Any]
    at: float


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


class FakeAnthropic:
    """The Messages API on 127.0.0.1 with scripted replies; use as a context manager."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._replies: list[dict[str, Any] | ErrorReply] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def enqueue(self, *replies: dict[str, Any] | ErrorReply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests]

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def respond(
        self, headers: dict[str, str], body: dict[str, Any], at: float
    ) -> tuple[int, dict[str, str], dict[str, Any]]:
        """Record the request; the status, extra headers and body to answer it with."""
        with self._lock:
            self.requests.append(Recorded(headers, body, at))
            number = len(self.requests)
            reply = self._replies.pop(0) if self._replies else None
        problem = conversation_problem(body)
        if problem:
            return 400, {}, ErrorReply(400, "invalid_request_error", problem).body()
        if reply is None:
            problem = f"fake: no scripted reply for request {number}"
            return 400, {}, ErrorReply(400, "invalid_request_error", problem).body()
        if isinstance(reply, ErrorReply):
            return reply.status, reply.headers, reply.body()
        return 200, {}, reply


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


def _handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path.split("?")[0] != "/v1/messages":
                self._send(404, {}, ErrorReply(404, "not_found_error", f"fake: no route {self.path}").body())
                return
            status, headers, body = fake.respond(
                {k.lower(): v for k, v in self.headers.items()}, json.loads(raw), time.monotonic()
            )
            self._send(status, headers, body)

        def _send(self, status: int, headers: dict[str, str], body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", f"req_fake_{len(fake.requests)}")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the http.server signature
            """Quiet: the tests assert on the recorded requests instead."""

    return Handler
