"""Bounds on reading a request, which uvicorn lacks: slow clients and endless headers cannot hold the server.

uvicorn's ``timeout_keep_alive`` covers only the idle time between requests, and it is
reset by every byte received, so a client that sends one header line every few seconds
(or never finishes its body) keeps its connection, and the slot its request holds,
forever (uvicorn issue #157 lists the missing ``--timeout-request-start``). An ASGI
middleware cannot help with headers: the app is called only once they are complete.

:class:`BoundedHttpToolsProtocol` is uvicorn's httptools protocol with two deadlines: a
request's headers must be complete within ``header_timeout_s`` of its first byte (or of
the connection, for the first request), and its body within ``body_timeout_s`` of its
headers. Past either, the connection is closed (after a 408 when no response has begun);
an app still reading the body sees the client disconnect, so its slot is released. Once
a request has been read, its response may take as long as it takes.

It also bounds what the headers may be, before anything authenticates the client: the
request line and headers together at most ``max_header_bytes``, and at most
``max_headers`` header fields. httptools' binding rebuilds a header's value on every piece
that arrives, so an endless header costs quadratic time: two clients streaming one stalled
both workers' event loops. Here the bytes of the header section are counted as they
arrive, and the parser never sees more than the limit: past it (or past the count), the
answer is ``431 Request Header Fields Too Large`` and the connection is closed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

logger = logging.getLogger(__name__)
REQUEST_TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
HEADERS_TOO_LARGE_RESPONSE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
)


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing connections whose request headers or body arrive too slowly,
    and refusing header sections over ``max_header_bytes`` or ``max_headers`` fields (431)."""

    def __init__(
        self, *args: Any, header_timeout_s: float, body_timeout_s: float, max_header_bytes: int, max_headers: int,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.max_header_bytes = max_header_bytes
        self.max_headers = max_headers
        self._read_deadline: asyncio.TimerHandle | None = None
        self._header_bytes: int | None = 0  # bytes of the header section so far; None while no header is read
        self._header_count = 0
        self._refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout_s, "headers")

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._header_bytes is None:
            super().data_received(data)
            return
        room = self.max_header_bytes - self._header_bytes
        if len(data) <= room:
            self._header_bytes += len(data)
            super().data_received(data)
            return
        # Feed no more than the limit: the headers may end within it (the rest is then body or the next request).
        self._header_bytes = self.max_header_bytes
        super().data_received(data[:room])
        if self._refused:
            return
        if self._header_bytes is not None:
            self._refuse(f"headers over {self.max_header_bytes} bytes")
            return
        super().data_received(data[room:])

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.max_headers:
            self._refuse(f"more than {self.max_headers} header fields")
            return
        super().on_header(name, value)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_count = 0
        if self._header_bytes is None:  # the next request on a kept-alive connection: count its headers anew
            self._header_bytes = 0
        if self._read_deadline is None:
            self._arm(self.header_timeout_s, "headers")

    def on_headers_complete(self) -> None:
        self._header_bytes = None
        super().on_headers_complete()
        self._arm(self.body_timeout_s, "body")

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()

    def _refuse(self, why: str) -> None:
        """Answer 431 and close: the parser is fed nothing more from this connection."""
        self._refused = True
        self._disarm()
        client = "%s:%d" % self.client if self.client else "a client"
        logger.warning("refused the request from %s: %s", client, why)
        if not self.transport.is_closing():
            self.transport.write(HEADERS_TOO_LARGE_RESPONSE)
            self.transport.close()

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
