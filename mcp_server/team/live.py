"""Serving the newest index generation without downtime: swap on publish, drain, then close.

An HTTP worker serves one index generation at a time through a :class:`Served` (the
generation's open stores and the ASGI app publishing them). :class:`LiveIndex` is the
ASGI app in front: it reads ``CURRENT`` every ``interval_s`` seconds, and when that names
another generation it

1. opens the new one on a worker thread, with fresh store clients on the new generation's
   own directory (a long-lived ChromaDB client would not see another process's writes),
   while requests keep going to the old one;
2. sends every request that arrives from then on to the new one, in a single assignment;
3. retires the old one: once the requests it was answering have finished (or after
   ``drain_timeout_s``), it stops the old app and closes its stores, which releases the
   generation's lease so that a later ``ragmcp ingest`` may delete it.

Steps 2 and 3 are :class:`~mcp_server.indexing.pool.GenerationPool`'s, as over stdio.

No request ever sees a half-built index (ingestion publishes complete generations only)
and none fails because of the switch. A generation that cannot be opened is logged once
and the old one stays in service; it is tried again at doubling intervals (up to a minute),
and a newer published generation likewise.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_server.indexing.pool import GenerationPool, Pooled

logger = logging.getLogger(__name__)

DRAIN_TIMEOUT_S = 30.0
"""Longest a retired generation waits for its in-flight requests before it is stopped anyway."""
RETRY_MAX_S = 60.0
"""Longest wait between attempts to open a generation that failed to open (doubling from the interval)."""


class Served(Protocol):
    """One opened index generation and the ASGI app answering requests from it."""

    @property
    def generation(self) -> str: ...

    @property
    def app(self) -> ASGIApp: ...

    def running(self) -> AbstractAsyncContextManager[None]:
        """The app's background machinery, entered before the first request and left after the last."""
        ...

    def close(self) -> None:
        """Close the stores (blocking; called on a worker thread)."""
        ...


S = TypeVar("S", bound=Served)


@dataclass(eq=False)
class _Slot(Generic[S]):
    served: S
    retired: anyio.Event = field(default_factory=anyio.Event)  # set by the pool once drained: the app stops


class LiveIndex(Generic[S]):
    """ASGI app routing each request to the generation that was current when it arrived."""

    def __init__(
        self,
        open_current: Callable[[], S],
        current_name: Callable[[], str | None],
        interval_s: float,
        drain_timeout_s: float = DRAIN_TIMEOUT_S,
    ) -> None:
        """``open_current`` opens the published generation (blocking); ``current_name`` reads its name cheaply."""
        self._open_current = open_current
        self._current_name = current_name
        self._interval_s = interval_s
        self._drain_timeout_s = drain_timeout_s
        self._pool: GenerationPool[_Slot[S]] = GenerationPool(lambda slot: slot.retired.set())

    @property
    def served(self) -> S:
        """The generation new requests go to."""
        slot = self._pool.current
        if slot is None:
            raise RuntimeError("LiveIndex is not running; enter run() first")
        return slot.served

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with self._pool.hold() as slot:  # held from before the first await: the swap cannot slip in
            if slot is None:
                raise RuntimeError("LiveIndex is not running; enter run() first")
            await slot.served.app(scope, receive, send)

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Open the current generation and keep following ``CURRENT`` until the context exits."""
        first = await anyio.to_thread.run_sync(self._open_current)
        async with anyio.create_task_group() as group:
            self._pool.publish(await group.start(self._serve, first))
            group.start_soon(self._follow, group)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
        self._pool.publish(None)

    async def _serve(self, served: S, *, task_status: anyio.abc.TaskStatus[_Slot[S]]) -> None:
        """Run ``served`` from its first request to its retirement, then close its stores."""
        slot = _Slot(served)
        try:
            async with served.running():
                task_status.started(slot)
                await slot.retired.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(served.close)

    async def _follow(self, group: anyio.abc.TaskGroup) -> None:
        failed: str | None = None  # the generation that would not open: logged once, retried less often
        wait_s = self._interval_s
        while True:
            await anyio.sleep(wait_s)
            name = None
            try:
                name = await anyio.to_thread.run_sync(self._current_name)
                if name is None or name == self.served.generation:
                    continue
                served = await anyio.to_thread.run_sync(self._open_current)
            except Exception:
                if name != failed:
                    logger.exception("cannot open the newly published index; still serving %s", self.served.generation)
                failed = name
                wait_s = min(wait_s * 2, RETRY_MAX_S)
                continue
            failed, wait_s = None, self._interval_s
            old = self._pool.publish(await group.start(self._serve, served))
            logger.info("now serving index %s (was %s)", served.generation, old.value.served.generation if old else None)
            if old is not None:
                group.start_soon(self._retire, old)

    async def _retire(self, old: Pooled[_Slot[S]]) -> None:
        if running := await self._pool.drain(old, self._drain_timeout_s):
            logger.warning(
                "%d requests still running on index %s after %.0f s; stopping them",
                running, old.value.served.generation, self._drain_timeout_s,
            )  # fmt: skip
