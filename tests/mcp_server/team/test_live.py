"""LiveIndex: the swap to a newly published generation, the drain of the old one, and failures to open."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
from starlette.types import Receive, Scope, Send

from mcp_server.team.live import LiveIndex


class Generation:
    """A generation whose app answers with its name, optionally after being released by the test."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.generation = name
        self.log = log
        self.gate: anyio.Event | None = None  # when set, requests wait for it

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.gate is not None:
            self.log.append(f"{self.generation} waiting")
            await self.gate.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": self.generation.encode()})

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self.log.append(f"{self.generation} started")
        try:
            yield
        finally:
            self.log.append(f"{self.generation} stopped")

    def close(self) -> None:
        self.log.append(f"{self.generation} closed")


class Disk:
    """What CURRENT names, and what opening it gives (or raises)."""

    def __init__(self, log: list[str]) -> None:
        self.name = "gen-1"
        self.broken: set[str] = set()
        self.log = log
        self.opened: list[Generation] = []

    def open_current(self) -> Generation:
        if self.name in self.broken:
            raise OSError(f"{self.name} is unreadable")
        generation = Generation(self.name, self.log)
        self.opened.append(generation)
        return generation


async def wait_until(condition: object, timeout_s: float = 5) -> None:
    with anyio.fail_after(timeout_s):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(0.01)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_new_requests_switch_while_in_flight_ones_finish_on_the_old_generation() -> None:
    log: list[str] = []
    disk = Disk(log)
    live = LiveIndex(disk.open_current, lambda: disk.name, interval_s=0.02)
    async with live.run(), httpx.AsyncClient(transport=httpx.ASGITransport(app=live), base_url="http://t") as client:
        first = disk.opened[0]
        first.gate = anyio.Event()
        slow: list[str] = []

        async def slow_request() -> None:
            slow.append((await client.get("/")).text)

        async with anyio.create_task_group() as group:
            group.start_soon(slow_request)
            await wait_until(lambda: "gen-1 waiting" in log)
            disk.name = "gen-2"
            await wait_until(lambda: live.served.generation == "gen-2")
            assert (await client.get("/")).text == "gen-2"
            await anyio.sleep(0.2)
            assert "gen-1 closed" not in log  # still answering the slow request
            first.gate.set()
        assert slow == ["gen-1"]
        await wait_until(lambda: "gen-1 closed" in log)
    assert log.index("gen-1 stopped") < log.index("gen-1 closed")
    assert log[-2:] == ["gen-2 stopped", "gen-2 closed"]


@pytest.mark.anyio
async def test_a_generation_that_cannot_be_opened_leaves_the_old_one_serving(caplog: pytest.LogCaptureFixture) -> None:
    log: list[str] = []
    disk = Disk(log)
    live = LiveIndex(disk.open_current, lambda: disk.name, interval_s=0.02)
    async with live.run(), httpx.AsyncClient(transport=httpx.ASGITransport(app=live), base_url="http://t") as client:
        with caplog.at_level(logging.ERROR, logger="mcp_server.team.live"):
            disk.broken.add("gen-2")
            disk.name = "gen-2"
            await anyio.sleep(0.2)
        assert (await client.get("/")).text == "gen-1"
        failures = [r for r in caplog.records if "cannot open the newly published index" in r.getMessage()]
        assert len(failures) == 1 and "still serving gen-1" in failures[0].getMessage()  # logged once, not per poll
        disk.broken.clear()  # the trouble was passing: the same generation opens at a later attempt
        await wait_until(lambda: live.served.generation == "gen-2")
        assert (await client.get("/")).text == "gen-2"


@pytest.mark.anyio
async def test_a_request_that_outlasts_the_drain_timeout_is_stopped() -> None:
    log: list[str] = []
    disk = Disk(log)
    live = LiveIndex(disk.open_current, lambda: disk.name, interval_s=0.02, drain_timeout_s=0.1)
    async with live.run():
        disk.opened[0].gate = anyio.Event()  # never set
        scope = {"type": "http", "method": "GET", "path": "/", "headers": []}

        async def receive() -> dict[str, object]:
            return {"type": "http.request", "body": b""}

        async def send(message: dict[str, object]) -> None:
            pass

        async with anyio.create_task_group() as group:
            group.start_soon(live, scope, receive, send)
            await wait_until(lambda: "gen-1 waiting" in log)
            disk.name = "gen-2"
            await wait_until(lambda: "gen-1 closed" in log)
            group.cancel_scope.cancel()
