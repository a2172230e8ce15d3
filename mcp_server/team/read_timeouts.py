"""Deadlines for reading a request, which uvicorn lacks: slow clients cannot hold the server.

uvicorn's ``timeout_keep_alive`` covers only the idle time between requests, and it is
reset by every byte received, so a client that sends one header line every few seconds
(or never finishes its body) keeps its connection, and the slot its request holds,
forever (uvicorn issue #157 lists the missing ``--timeout-request-start``). An ASGI
middleware cannot help with headers: the app is called only once they are complete.

:class:`TimedHttpToolsProtocol` is uvicorn's httptools protocol with two deadlines: a
request's headers must be complete within ``header_timeout_s`` of its first byte (or of
the connection, for the first request), and its body within ``body_timeout_s`` of its
headers. Past either, the connection is closed (after a 408 when no response has begun);
an app still reading the body sees the client disconnect, so its slot is released. Once
a request has been read, its response may take as long as it takes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

logger = logging.getLogger(__name__)
REQUEST_TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class TimedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing connections whose request headers or body arrive too slowly."""

    def __init__(self, *args: Any, header_timeout_s: float, body_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self._read_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout_s, "headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._read_deadline is None:  # the next request on a kept-alive connection
            self._arm(self.header_timeout_s, "headers")

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._arm(self.body_timeout_s, "body")

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()

    def _arm(self, timeout_s: float, part: str) -> None:
        self._disarm()
        self._read_deadline = self.loop.call_later(timeout_s, self._too_slow, timeout_s, part)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _too_slow(self, timeout_s: float, part: str) -> None:
        self._read_deadline = None
        if self.transport.is_closing():
            return
        client = "%s:%d" % self.client if self.client else "a client"
        logger.warning("closed the connection from %s: its request %s did not arrive within %g s", client, part,
                       timeout_s)  # fmt: skip
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(REQUEST_TIMEOUT_RESPONSE)
        self.transport.close()
