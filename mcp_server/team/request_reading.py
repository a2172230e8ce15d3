"""Bounds on reading a request, which uvicorn lacks: slow clients and endless headers cannot hold the server.

uvicorn's ``timeout_keep_alive`` covers only the idle time between requests, and it is
reset by every byte received, so a client that sends one header line every few seconds
(or never finishes its body) keeps its connection, and the slot its request holds,
forever (uvicorn issue #157 lists the missing ``--timeout-request-start``). An ASGI
middleware cannot help with headers: the app is called only once they are complete.

:class:`BoundedRequests` is our own protocol class, given to uvicorn through its documented
``http`` setting (a protocol class). It stands in front of uvicorn's httptools protocol, which
it creates and drives through the plain :class:`asyncio.Protocol` interface only: every byte
goes first through a parser of its own (``httptools``), which tells where a request's headers
and body begin and end, then (if not refused) on to uvicorn's protocol. It sets two deadlines:
a request's headers must be complete within ``header_timeout_s`` of its first byte (or of the
connection, for the first request), and its body within ``body_timeout_s`` of its headers.
Past either, the connection is closed (after a 408 when the headers were late, no response
having begun); an app still reading the body sees the client disconnect, so its slot is
released. Once a request has been read, its response may take as long as it takes.

It also bounds what the headers may be, before anything authenticates the client: the
request line and headers together at most ``max_header_bytes``, and at most
``max_headers`` header fields. httptools' binding rebuilds a header's value on every piece
that arrives, so an endless header costs quadratic time: two clients streaming one stalled
both workers' event loops. Here the bytes of the header section are counted as they
arrive, and neither parser ever sees more than the limit: past it (or past the count), the
answer is ``431 Request Header Fields Too Large`` and the connection is closed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import cast

import httptools
from uvicorn.config import HTTP_PROTOCOLS
from uvicorn.importer import import_from_string

logger = logging.getLogger(__name__)
REQUEST_TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
HEADERS_TOO_LARGE_RESPONSE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
)


def _uvicorn_protocol() -> Callable[..., asyncio.Protocol]:
    """The class uvicorn uses for ``http="httptools"``, which :class:`BoundedRequests` stands in front of."""
    protocol: Callable[..., asyncio.Protocol] = import_from_string(HTTP_PROTOCOLS["httptools"])
    return protocol


class BoundedRequests(asyncio.Protocol):
    """uvicorn's httptools protocol behind read deadlines and header limits (see the module docstring)."""

    def __init__(
        self, *, header_timeout_s: float, body_timeout_s: float, max_header_bytes: int, max_headers: int,
        **uvicorn_arguments: object,
    ) -> None:  # fmt: skip
        """``uvicorn_arguments``: what uvicorn passes a protocol class (its config and server state), handed on."""
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.max_header_bytes = max_header_bytes
        self.max_headers = max_headers
        self._inner = _uvicorn_protocol()(**uvicorn_arguments)
        self._parser = httptools.HttpRequestParser(self)  # ours: it only watches where each request is
        self._watching = True  # False once our parser gave up (an invalid request: uvicorn answers it)
        self._transport: asyncio.Transport | None = None
        self._read_deadline: asyncio.TimerHandle | None = None
        self._header_bytes: int | None = 0  # bytes of the header section so far; None while no header is read
        self._header_count = 0
        self._refused = False

    # -- asyncio.Protocol: watched, then handed on to uvicorn's protocol ---------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is one in all but its base class
        self._inner.connection_made(transport)
        self._arm(self.header_timeout_s, "headers")

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._header_bytes is None:
            self._feed(data)
            return
        room = self.max_header_bytes - self._header_bytes
        if len(data) <= room:
            self._header_bytes += len(data)
            self._feed(data)
            return
        # Feed no more than the limit: the headers may end within it (the rest is then body or the next request).
        self._header_bytes = self.max_header_bytes
        self._feed(data[:room])
        if self._refused:
            return
        if self._header_bytes is not None:
            self._refuse(f"headers over {self.max_header_bytes} bytes")
            return
        self._feed(data[room:])

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def _feed(self, data: bytes) -> None:
        """Watch ``data`` with our parser, then (unless that refused the request) give it to uvicorn's protocol."""
        if self._watching:
            try:
                self._parser.feed_data(data)
            except (httptools.HttpParserError, httptools.HttpParserUpgrade):  # malformed, or an upgrade: uvicorn answers
                self._watching = False
                self._disarm()
        if not self._refused:
            self._inner.data_received(data)

    # -- our parser's callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._header_count = 0
        if self._header_bytes is None:  # the next request on a kept-alive connection: count its headers anew
            self._header_bytes = 0
        if self._read_deadline is None:
            self._arm(self.header_timeout_s, "headers")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.max_headers and not self._refused:
            self._refuse(f"more than {self.max_headers} header fields")

    def on_headers_complete(self) -> None:
        self._header_bytes = None
        self._arm(self.body_timeout_s, "body")

    def on_message_complete(self) -> None:
        self._disarm()

    # -- refusals and deadlines -------------------------------------------------------------

    def _refuse(self, why: str) -> None:
        """Answer 431 and close: neither parser is fed anything more from this connection."""
        self._refused = True
        self._disarm()
        logger.warning("refused the request from %s: %s", self._client(), why)
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(HEADERS_TOO_LARGE_RESPONSE)
            self._transport.close()

    def _arm(self, timeout_s: float, part: str) -> None:
        self._disarm()
        self._read_deadline = asyncio.get_running_loop().call_later(timeout_s, self._too_slow, timeout_s, part)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _too_slow(self, timeout_s: float, part: str) -> None:
        self._read_deadline = None
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        logger.warning("closed the connection from %s: its request %s did not arrive within %g s", self._client(), part,
                       timeout_s)  # fmt: skip
        if part == "headers":  # no response to this request can have begun
            transport.write(REQUEST_TIMEOUT_RESPONSE)
        transport.close()

    def _client(self) -> str:
        peer = self._transport.get_extra_info("peername") if self._transport is not None else None
        return "%s:%d" % tuple(peer[:2]) if isinstance(peer, tuple) and len(peer) >= 2 else "a client"
