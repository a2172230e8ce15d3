"""Per-client limits: the token bucket, and the gate's 429 and concurrency ceiling on an ASGI app."""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
import httpx
import pytest
from starlette.types import Receive, Scope, Send

from mcp_server.team.limits import ClientLimiter, LimitGate, TokenBucket
from mcp_server.team.tokens import ClientLimits


def test_a_bucket_allows_the_burst_then_the_sustained_rate() -> None:
    bucket = TokenBucket(rate_per_s=2.0, burst=3, now=100.0)
    assert [bucket.take(100.0) for _ in range(3)] == [0, 0, 0]
    assert bucket.take(100.0) == pytest.approx(0.5)  # one token comes back every 0.5 s
    assert bucket.take(100.5) == 0
    assert bucket.take(100.5) == pytest.approx(0.5)
    assert [bucket.take(110.0) for _ in range(3)] == [0, 0, 0]  # refilled to the burst, never beyond
    assert bucket.take(110.0) > 0


def test_clients_have_separate_buckets_and_new_limits_start_afresh() -> None:
    now = [0.0]
    limiter = ClientLimiter(clock=lambda: now[0])
    tight = ClientLimits(rate_per_minute=60, burst=1)
    assert limiter.admit("a", tight) == 0
    assert limiter.admit("a", tight) == pytest.approx(1.0)
    assert limiter.admit("b", tight) == 0
    assert limiter.admit("a", ClientLimits(rate_per_minute=60, burst=2)) == 0
    now[0] = 1.0
    assert limiter.admit("b", tight) == 0


class Tracker:
    """A tiny ASGI app that reads each request's body and holds the request open until released, counting those
    in flight per client. With ``event_stream``, it begins every response as an event stream at once, as an
    MCP session does (the answer, or notifications, follow)."""

    def __init__(self, event_stream: bool = False) -> None:
        self.event_stream = event_stream
        self.in_flight: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.release = anyio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = dict(scope["headers"])[b"x-client"].decode()
        await receive()
        self.in_flight[client] = self.in_flight.get(client, 0) + 1
        self.peak[client] = max(self.peak.get(client, 0), self.in_flight[client])
        if self.event_stream:
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", EVENT_STREAM)]})
        await self.release.wait()
        self.in_flight[client] -= 1
        if not self.event_stream:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


EVENT_STREAM = b"text/event-stream"
LIMITS = {"slow": ClientLimits(max_concurrent=2, burst=100), "other": ClientLimits(max_concurrent=2, burst=100),
          "tight": ClientLimits(rate_per_minute=30, burst=2), "single": ClientLimits(max_concurrent=1, burst=100)}  # fmt: skip
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hybrid_search", "arguments": {"query": "x"}}}
LISTEN = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"notifications": {}}}


def identify(scope: Scope) -> tuple[str, ClientLimits] | None:
    name = dict(scope["headers"]).get(b"x-client", b"").decode()
    return (name, LIMITS[name]) if name in LIMITS else None


@pytest.mark.anyio
async def test_the_gate_caps_each_clients_requests_in_flight_without_holding_up_others() -> None:
    tracker = Tracker()
    gate = LimitGate(tracker, identify, ClientLimiter())
    statuses: list[int] = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url="http://test") as http:

        async def request(client: str) -> None:
            statuses.append((await http.get("/", headers={"x-client": client})).status_code)

        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(request, "slow")
            group.start_soon(request, "other")
            with anyio.fail_after(10):
                while tracker.in_flight.get("other", 0) < 1 or tracker.in_flight.get("slow", 0) < 2:
                    await anyio.sleep(0.01)
            assert tracker.in_flight == {"slow": 2, "other": 1}  # four of "slow" wait; "other" got in at once
            tracker.release.set()
    assert statuses == [200] * 7
    assert tracker.peak == {"slow": 2, "other": 1}


@pytest.mark.anyio
async def test_over_the_rate_the_gate_answers_429_with_retry_after() -> None:
    tracker = Tracker()
    tracker.release.set()
    gate = LimitGate(tracker, identify, ClientLimiter())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url="http://test") as http:
        responses = [await http.get("/", headers={"x-client": "tight"}) for _ in range(3)]
        other = await http.get("/", headers={"x-client": "other"})
    assert [r.status_code for r in responses] == [200, 200, 429]
    refused: Any = responses[2]
    assert refused.headers["retry-after"] == "2"  # 30 a minute: the next token in 2 s
    assert "over its limit of 30 requests per minute (burst 2)" in refused.json()["error_description"]
    assert other.status_code == 200


@pytest.mark.anyio
async def test_calls_answered_as_event_streams_keep_their_slots_until_answered() -> None:
    """As in a stateful session, where every call's answer is an event stream begun at once: the ceiling holds."""
    tracker = Tracker(event_stream=True)
    limiter = ClientLimiter()
    waiting = limiter.slots("slow", LIMITS["slow"])
    gate = LimitGate(tracker, identify, limiter)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url="http://test") as http:

        async def call() -> None:
            assert (await http.post("/", json=CALL, headers={"x-client": "slow"})).status_code == 200

        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(call)
            with anyio.fail_after(10):  # every call has reached the gate: running, or waiting for a slot
                while tracker.in_flight.get("slow", 0) + waiting.statistics().tasks_waiting < 6:
                    await anyio.sleep(0.01)
            tracker.release.set()
    assert tracker.peak == {"slow": 2}


@pytest.mark.anyio
@pytest.mark.parametrize(("method", "body"), [("GET", None), ("POST", LISTEN)])
async def test_a_notification_stream_gives_its_slot_back_as_it_starts(method: str, body: dict[str, Any] | None) -> None:
    tracker = Tracker(event_stream=True)
    gate = LimitGate(tracker, identify, ClientLimiter())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url="http://test") as http:
        async with anyio.create_task_group() as group:
            group.start_soon(partial(http.request, method, "/", json=body, headers={"x-client": "single"}))
            with anyio.fail_after(10):
                while tracker.in_flight.get("single", 0) < 1:
                    await anyio.sleep(0.01)
            group.start_soon(partial(http.post, "/", json=CALL, headers={"x-client": "single"}))
            with anyio.fail_after(10):  # the call runs beside the stream, though the client has one slot
                while tracker.in_flight.get("single", 0) < 2:
                    await anyio.sleep(0.01)
            tracker.release.set()
