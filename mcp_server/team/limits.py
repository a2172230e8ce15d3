"""Per-client limits of a team server: a token bucket for the request rate, a ceiling on requests in flight.

:class:`ClientLimiter` holds both per client name. :class:`LimitGate` applies them to every
authenticated HTTP request: over the rate it answers 429 with ``Retry-After`` at once;
over the concurrency ceiling the request waits for one of the client's own requests to
finish, so a client that floods the server queues behind itself, not in front of others -
for ``queue_timeout_s`` at most, then it is answered 503 saying so.

A notification stream - a ``GET /mcp`` or a ``subscriptions/listen`` answered with
``text/event-stream`` - gives its slot back as it starts (a stream is not a call) and ends
after ``stream_lifetime_s``; the client reconnects if it still listens. Any other request
keeps its slot until its response has ended, even when that response is an event stream too:
in a stateful session (``--stateful``) every call is answered so, and a long call of a
client speaking the single-exchange protocol is. Which JSON-RPC method a ``POST`` carries is
read from the body the app reads, as it passes.

The state lives in each server process. With N worker processes or hosts, a client can
reach N times its rate and N times its concurrency; divide the limits by N, or enforce
them at the load balancer, where that matters.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_server.team.tokens import ClientLimits

Clock = Callable[[], float]
logger = logging.getLogger(__name__)
LISTEN_METHOD = "subscriptions/listen"


class TokenBucket:
    """``burst`` requests at once, refilled at ``rate_per_s``; each request takes one token."""

    def __init__(self, rate_per_s: float, burst: int, now: float) -> None:
        self.rate_per_s = rate_per_s
        self.burst = burst
        self._tokens = float(burst)
        self._updated = now

    def take(self, now: float) -> float:
        """0 if the request may go ahead (a token is taken), else the seconds until one is available."""
        self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.rate_per_s)
        self._updated = now
        if self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        return (1 - self._tokens) / self.rate_per_s


class ClientLimiter:
    """The rate and concurrency state of every client of one process, keyed by client name.

    A client whose limits change (the tokens file was edited) starts afresh with the new ones.
    """

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, tuple[ClientLimits, TokenBucket]] = {}
        self._slots: dict[str, tuple[ClientLimits, anyio.CapacityLimiter]] = {}

    def admit(self, client: str, limits: ClientLimits) -> float:
        """0 if ``client`` may make a request now, else the seconds to wait before retrying."""
        now = self._clock()
        known = self._buckets.get(client)
        if known is None or known[0] != limits:
            known = limits, TokenBucket(limits.rate_per_minute / 60, limits.burst, now)
            self._buckets[client] = known
        return known[1].take(now)

    def slots(self, client: str, limits: ClientLimits) -> anyio.CapacityLimiter:
        """The limiter bounding ``client``'s requests in flight."""
        known = self._slots.get(client)
        if known is None or known[0] != limits:
            known = limits, anyio.CapacityLimiter(limits.max_concurrent)
            self._slots[client] = known
        return known[1]


Identify = Callable[[Scope], tuple[str, ClientLimits] | None]
"""The client name and limits of an authenticated request; None when there is no client."""


class LimitGate:
    """ASGI middleware: rate-limit (429) and then cap the concurrency of each client's requests (see the module)."""

    def __init__(
        self, app: ASGIApp, identify: Identify, limiter: ClientLimiter, *, queue_timeout_s: float = 30.0,
        stream_lifetime_s: float = 300.0,
    ) -> None:  # fmt: skip
        self.app = app
        self.identify = identify
        self.limiter = limiter
        self.queue_timeout_s = queue_timeout_s
        self.stream_lifetime_s = stream_lifetime_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = self.identify(scope) if scope["type"] == "http" else None
        if client is None:
            await self.app(scope, receive, send)
            return
        name, limits = client
        wait_s = self.limiter.admit(name, limits)
        if wait_s > 0:
            logger.warning("client %r is over its rate limit; answered 429, retry in %.1f s", name, wait_s)
            await _too_many_requests(send, name, limits, wait_s)
            return
        slots, holder = self.limiter.slots(name, limits), object()
        acquired = False
        with anyio.move_on_after(self.queue_timeout_s):
            await slots.acquire_on_behalf_of(holder)
            acquired = True
        if not acquired:
            logger.warning("client %r waited %g s for one of its %d request slots; answered 503", name,
                           self.queue_timeout_s, limits.max_concurrent)  # fmt: skip
            await _busy(send, name, limits, self.queue_timeout_s)
            return
        held = [True]

        def give_back() -> None:
            if held[0]:
                held[0] = False
                slots.release_on_behalf_of(holder)

        body: list[bytes] = []  # the request body, as the app reads it
        streaming = [False, False]  # a notification stream began; the response ended
        try:
            with anyio.CancelScope() as lifetime:

                async def reading() -> Message:
                    message = await receive()
                    if message["type"] == "http.request":
                        body.append(message.get("body", b""))
                    return message

                async def watched(message: Message) -> None:
                    if message["type"] == "http.response.start" and _is_notification_stream(scope, body, message):
                        give_back()
                        streaming[0] = True
                        lifetime.deadline = anyio.current_time() + self.stream_lifetime_s
                    elif message["type"] == "http.response.body" and not message.get("more_body", False):
                        streaming[1] = True
                    await send(message)

                await self.app(scope, reading, watched)
            if lifetime.cancelled_caught and streaming[0] and not streaming[1]:
                await send({"type": "http.response.body", "body": b"", "more_body": False})  # a clean end
        finally:
            give_back()


def _is_notification_stream(scope: Scope, body: list[bytes], start: Message) -> bool:
    """Whether the response ``start`` begins a stream of notifications: an event stream answering a ``GET`` or a
    ``subscriptions/listen`` (whose ``body`` the app has read by now), not a call's answer sent as events."""
    if not any(name == b"content-type" and value.startswith(b"text/event-stream") for name, value in start["headers"]):
        return False
    if scope["method"] == "GET":
        return True
    try:
        message = json.loads(b"".join(body))
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and message.get("method") == LISTEN_METHOD


async def _busy(send: Send, client: str, limits: ClientLimits, waited_s: float) -> None:
    body = json.dumps({
        "error": "busy",
        "error_description": f"client {client!r} already has {limits.max_concurrent} requests running and this one "
        f"waited {waited_s:g} s for one of them to finish; retry later, or give the token more with "
        "ragmcp token add --max-concurrent",
    }).encode()  # fmt: skip
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"retry-after", b"1")]  # fmt: skip
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _too_many_requests(send: Send, client: str, limits: ClientLimits, wait_s: float) -> None:
    retry_after = max(1, math.ceil(wait_s))
    body = json.dumps({
        "error": "rate_limited",
        "error_description": f"client {client!r} is over its limit of {limits.rate_per_minute:g} requests per minute "
        f"(burst {limits.burst}); retry after {retry_after} s",
    }).encode()  # fmt: skip
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(retry_after).encode()),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
