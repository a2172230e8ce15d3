"""The opened index generations a server answers from: new calls get the newest, old ones close once drained.

Both servers follow ``CURRENT`` (over stdio :mod:`mcp_server.surface.stdio`, over HTTP
:mod:`mcp_server.team.live`) through one :class:`GenerationPool`:

1. a call *holds* the generation served when it starts (:meth:`GenerationPool.hold`) and keeps
   it until it is done, whatever is published meanwhile;
2. :meth:`GenerationPool.publish` sends every call that starts from then on to the new
   generation, in one assignment, and *retires* the old one;
3. a retired generation is closed exactly once, as soon as no call holds it: at once when
   unused, else by its last call; a server that will not wait for ever (HTTP, where a stream
   may stay open) also awaits :meth:`GenerationPool.drain`, which closes it after a timeout
   even with calls still running.

The pool is thread-safe and needs no event loop: stdio's tool calls hold generations on worker
threads, HTTP's on the event loop (the lock guards a few assignments, never a wait). Closing runs
the ``close`` given to the pool in whichever thread retired the generation last.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio

DRAIN_POLL_S = 0.05
"""How often :meth:`GenerationPool.drain` looks whether the retired generation's calls are done."""

G = TypeVar("G")


@dataclass(eq=False)
class Pooled(Generic[G]):
    """One opened generation and the calls holding it."""

    value: G
    users: int = 0
    retired: bool = False
    closed: bool = False


class GenerationPool(Generic[G]):
    """The generation new calls get, and the retired ones still finishing calls (see the module docstring)."""

    def __init__(self, close: Callable[[G], None]) -> None:
        """``close`` releases a generation (its stores and lease) once no call holds it."""
        self._close = close
        self._lock = threading.Lock()
        self._current: Pooled[G] | None = None

    @property
    def current(self) -> G | None:
        """The generation new calls get (None before the first is published, and after the last is retired)."""
        current = self._current
        return current.value if current is not None else None

    @contextmanager
    def hold(self) -> Iterator[G | None]:
        """The current generation (None if there is none), kept open until the block ends."""
        with self._lock:
            held = self._current
            if held is not None:
                held.users += 1
        try:
            yield held.value if held is not None else None
        finally:
            if held is not None:
                with self._lock:
                    held.users -= 1
                self._close_once(held, force=False)

    def publish(self, value: G | None) -> Pooled[G] | None:
        """Give ``value`` (None: nothing) to every call from now on; retire the generation it replaces and return
        it (closed already when no call held it, else by its last call or by :meth:`drain`)."""
        with self._lock:
            old, self._current = self._current, Pooled(value) if value is not None else None
            if old is not None:
                old.retired = True
        if old is not None:
            self._close_once(old, force=False)
        return old

    async def drain(self, retired: Pooled[G], timeout_s: float) -> int:
        """Wait until no call holds ``retired``, at most ``timeout_s``; then close it even if calls still hold
        it. Returns how many calls did (0: drained in time)."""
        with anyio.move_on_after(timeout_s):
            while retired.users:
                await anyio.sleep(DRAIN_POLL_S)
        running = retired.users
        self._close_once(retired, force=True)
        return running

    def _close_once(self, pooled: Pooled[G], *, force: bool) -> None:
        """Close ``pooled`` if it is retired and (unless ``force``) unused, and not closed before."""
        with self._lock:
            if not pooled.retired or pooled.closed or (pooled.users and not force):
                return
            pooled.closed = True
        self._close(pooled.value)
