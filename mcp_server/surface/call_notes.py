"""What the tools say about the call in progress, for whoever records it (the team server's audit log).

The tools name the kind of failure of a call (:func:`note_error`); a recorder wraps the
call in :func:`noting_call` and reads the note afterwards. Outside a recorded call, notes
go nowhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class CallNote:
    error: str | None = None


_current_call: ContextVar[CallNote | None] = ContextVar("ragmcp_call_note", default=None)


def note_error(kind: str) -> None:
    """Name the kind of failure of the call in progress (the first name given wins)."""
    note = _current_call.get()
    if note is not None and note.error is None:
        note.error = kind


@contextmanager
def noting_call() -> Iterator[CallNote]:
    """Collect the notes of the call made inside this block."""
    note = CallNote()
    reset = _current_call.set(note)
    try:
        yield note
    finally:
        _current_call.reset(reset)
