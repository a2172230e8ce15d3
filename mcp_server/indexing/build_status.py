"""How far the running index build is, readable by every process sharing the data dir.

The process holding the ingestion lock writes ``<data dir>/build.json`` (atomically, at most
every :data:`WRITE_INTERVAL_S` and at each phase start) while it builds, and deletes it when
done. It holds the phase, how many of its items are done and what the current item is doing
(``embedding manual.pdf: chunk 640 of 1,127``). Servers that are waiting for that build (or
have no index yet) read it to tell a client how far the build is and when to try again
(a stdio server also as progress notifications, :mod:`mcp_server.surface.stdio`), and so does
``ragmcp status``. A record whose writer has died is ignored.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from mcp_server.indexing.generations import write_file_atomically

RECORD = "build.json"
WRITE_INTERVAL_S = 0.5
INDEXING_PHASE = "indexing documents"  # documents read, embedded and written (counted once written), batch by batch
KEYWORD_PHASE = "writing the keyword index"  # the keyword segments still pending at the end
UNITS = {INDEXING_PHASE: "documents", KEYWORD_PHASE: "chunks"}


@dataclass(frozen=True)
class BuildStatus:
    """One moment of a build: its phase, how many of the phase's items are done, since when, and what
    the current item is doing."""

    pid: int
    started: float  # the build's start (time.time())
    phase: str
    phase_started: float
    done: int
    total: int
    detail: str = ""  # e.g. 'embedding manual.pdf: chunk 640 of 1,127'; '' when nothing was said since the last item

    def describe(self) -> str:
        """E.g. 'indexing documents: 0 of 310 documents done; embedding manual.pdf: chunk 640 of 1,127',
        or 'starting'."""
        position = self.phase
        if self.phase in UNITS:
            position = f"{self.phase}: {self.done:,} of {self.total:,} {UNITS[self.phase]} done"
        return f"{position}; {self.detail}" if self.detail else position

    def retry_after_s(self, now: float | None = None) -> int:
        """A sensible wait before asking again: the phase's remaining time at its rate so far, 5 s to 2 min."""
        now = time.time() if now is None else now
        elapsed = now - self.phase_started
        if self.done <= 0 or elapsed <= 0:
            return 15
        remaining = (self.total - self.done) * elapsed / self.done
        return int(min(max(remaining, 5), 120))


def another_build(status: BuildStatus | None) -> str:
    """'another ingestion is running on this data dir (<how far>, process <pid>)'."""
    how_far = f" ({status.describe()}, process {status.pid})" if status is not None else ""
    return f"another ingestion is running on this data dir{how_far}"


def record_path(data_dir: Path) -> Path:
    return data_dir / RECORD


def read_build_status(data_dir: Path) -> BuildStatus | None:
    """The running build's status, or None when no live process is building."""
    try:
        status = BuildStatus(**json.loads(record_path(data_dir).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
    return status if _alive(status.pid) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


class BuildRecord:
    """A progress sink that keeps ``build.json`` up to date; :meth:`clear` removes it at the end."""

    def __init__(self, data_dir: Path) -> None:
        self._path = record_path(data_dir)
        self._started = time.time()
        self._status = BuildStatus(os.getpid(), self._started, "starting", self._started, 0, 0)
        self._written = 0.0
        self._write()

    def start(self, phase: str, total: int) -> None:
        self._status = BuildStatus(os.getpid(), self._started, phase, time.time(), 0, total)
        self._write()

    def advance(self, amount: int) -> None:
        self._status = replace(self._status, done=self._status.done + amount, detail="")
        self._write_soon()

    def detail(self, text: str) -> None:
        self._status = replace(self._status, detail=text)
        self._write_soon()

    def clear(self) -> None:
        self._path.unlink(missing_ok=True)

    def _write_soon(self) -> None:
        """Write the record if the last write is WRITE_INTERVAL_S old (a phase start writes at once)."""
        if time.monotonic() - self._written >= WRITE_INTERVAL_S:
            self._write()

    def _write(self) -> None:
        write_file_atomically(self._path, json.dumps(asdict(self._status)))
        self._written = time.monotonic()
