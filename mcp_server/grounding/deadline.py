"""The deadline of the work under way: the citation check and the quote search stop once it has passed.

A tool call runs on a worker thread, and a thread cannot be killed: when a call runs out of
time, its caller answers at once, but the thread would go on to the end of the work. So the
long loops of this package (over an answer's sentences, its cited chunks, a document's text)
look at the current :class:`Deadline` every so often and raise :class:`DeadlineExceeded`
once it has passed. The MCP server runs each call inside :func:`running_until` its time
limit; work outside a call (the agent, the command line) has no deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


class DeadlineExceeded(Exception):
    """The work went on past its deadline: whoever asked for it has stopped waiting."""


@dataclass(frozen=True)
class Deadline:
    """A time (``time.monotonic()``) after which work is abandoned; None: never."""

    at: float | None = None

    def check(self) -> None:
        """Raise DeadlineExceeded if the deadline has passed."""
        if self.at is not None and time.monotonic() >= self.at:
            raise DeadlineExceeded("the work was stopped: its time limit passed")


NO_DEADLINE = Deadline()
_CURRENT: ContextVar[Deadline] = ContextVar("grounding_deadline", default=NO_DEADLINE)


def current_deadline() -> Deadline:
    """The deadline of the work running in this thread (:data:`NO_DEADLINE` outside :func:`running_until`)."""
    return _CURRENT.get()


@contextmanager
def running_until(at: float) -> Iterator[None]:
    """Within this block, :func:`current_deadline` is ``at`` (a ``time.monotonic()`` value)."""
    token = _CURRENT.set(Deadline(at))
    try:
        yield
    finally:
        _CURRENT.reset(token)
