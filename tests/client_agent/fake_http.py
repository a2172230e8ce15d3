"""What the local model-API stand-ins share: a threaded HTTP server on 127.0.0.1 with scripted replies.

:class:`ScriptedServer` answers each request its subclass routes with the next reply queued by
:meth:`ScriptedServer.enqueue`, in order — a response body, or an :class:`ErrorReply` (a
status with the API's error body) — and records every request (headers and JSON body) for
assertions. The real SDKs talk to it through their ``base_url``, so what a test sees is what
the SDK actually sent. A subclass says which paths it serves (:meth:`ScriptedServer.route`),
how its API shapes an error body, and why its API would refuse a request before any reply
is used (:meth:`ScriptedServer.refusal`).
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
    """An error response: ``status`` with the API's error body for ``type`` and ``message``."""

    status: int
    type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


Answer = tuple[int, dict[str, str], dict[str, Any]]


class ScriptedServer:
    """An HTTP API on 127.0.0.1 with scripted replies; use as a context manager."""

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

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    # --- what a subclass defines ------------------------------------------------------------

    def route(self, method: str, path: str) -> bool:
        """Whether ``method path`` is a scripted endpoint (others may be answered by :meth:`static`)."""
        raise NotImplementedError

    def static(self, method: str, path: str) -> Answer | None:
        """A fixed answer for an unscripted endpoint (e.g. a model list), or None for a 404."""
        return None

    def error_body(self, type: str, message: str) -> dict[str, Any]:  # noqa: A002 - the APIs' field name
        raise NotImplementedError

    def refusal(self, body: dict[str, Any]) -> ErrorReply | None:
        """Why the real API would refuse this request whatever the script says, or None."""
        return None

    # --- answering -----------------------------------------------------------------------------

    def answer(self, method: str, path: str, headers: dict[str, str], body: dict[str, Any]) -> Answer:
        """Record a scripted request and answer it: the API's refusal, else the next scripted reply."""
        if not self.route(method, path):
            fixed = self.static(method, path)
            return fixed or (404, {}, self.error_body("not_found_error", f"fake: no route {method} {path}"))
        with self._lock:
            self.requests.append(Recorded(path, headers, body, time.monotonic()))
            number = len(self.requests)
            reply = self._replies.pop(0) if self._replies else None
        refused = self.refusal(body)
        if refused is None and reply is None:
            refused = ErrorReply(400, "invalid_request_error", f"fake: no scripted reply for request {number}")
        if refused is not None:
            return refused.status, refused.headers, self.error_body(refused.type, refused.message)
        if isinstance(reply, ErrorReply):
            return reply.status, reply.headers, self.error_body(reply.type, reply.message)
        assert reply is not None
        return 200, {}, reply


def _handler(fake: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
            self._send(*fake.answer("GET", self.path.split("?")[0], self._headers(), {}))

        def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            self._send(*fake.answer("POST", self.path.split("?")[0], self._headers(), json.loads(raw or b"{}")))

        def _headers(self) -> dict[str, str]:
            return {k.lower(): v for k, v in self.headers.items()}

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
