"""Progress of long work (ingestion) on stderr: a live bar on a terminal, plain log lines otherwise.

stdout is never touched: it carries results, or the MCP protocol when serving over stdio. Log
lines are whole lines (give the console ``soft_wrap=True``: rich otherwise wraps at 80
columns when stderr is not a terminal, cutting lines in a host's log).

A phase counts whole items (documents, chunks); what one long item is doing - the page being
read, the chunk being embedded - comes as a *detail*, so that a single 300-page manual still
shows movement. A phase's last line is written when its last item is done, so it comes
before whatever the caller prints next (the run's report).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

LOG_INTERVAL_S = 10.0


class ProgressSink(Protocol):
    """Where ingestion reports what it is doing (the CLI draws a progress bar)."""

    def start(self, phase: str, total: int) -> None: ...

    def advance(self, amount: int) -> None: ...

    def detail(self, text: str) -> None:
        """What the current item is doing (``reading manual.pdf: page 120 of 2000``, ``embedding
        manual.pdf: chunk 640 of 1,127``), for long items."""


class SilentProgress:
    """Progress nobody watches."""

    def start(self, phase: str, total: int) -> None:
        pass

    def advance(self, amount: int) -> None:
        pass

    def detail(self, text: str) -> None:
        pass


class _RateColumn(TextColumn):
    """Items per second of the running task."""

    def __init__(self) -> None:
        super().__init__("")

    def render(self, task: Any) -> Any:
        speed = task.finished_speed or task.speed
        return f"{speed:,.1f}/s" if speed else ""


class BarProgress:
    """One rich progress bar per phase."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: Any = None
        self._phase = ""

    def start(self, phase: str, total: int) -> None:
        self._phase = phase
        self._task = self._progress.add_task(phase, total=total)

    def advance(self, amount: int) -> None:
        self._progress.update(self._task, advance=amount, description=self._phase)

    def detail(self, text: str) -> None:
        self._progress.update(self._task, description=f"{self._phase}: {escape(text)}")  # a file name is not markup


class LogProgress:
    """A line per phase start and end (as soon as its last item is done), and one every LOG_INTERVAL_S
    seconds in between, with the latest detail when one came since the last line."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._phase, self._total, self._done, self._reported = "", 0, 0, -1
        self._started = self._last = 0.0

    def start(self, phase: str, total: int) -> None:
        self._finish()
        self._phase, self._total, self._done = phase, total, 0
        self._started = self._last = time.monotonic()
        if total:
            self._console.print(f"{phase}: 0/{total}", highlight=False)

    def advance(self, amount: int) -> None:
        self._done += amount
        now = time.monotonic()
        finished = bool(self._total) and self._done >= self._total and self._reported != self._done
        if finished or now - self._last >= LOG_INTERVAL_S:
            self._last = now
            self._line(now)

    def detail(self, text: str) -> None:
        now = time.monotonic()
        if now - self._last >= LOG_INTERVAL_S:
            self._last = now
            self._line(now, text)

    def close(self) -> None:
        self._finish()

    def _finish(self) -> None:
        if self._total and self._reported != self._done:
            self._line(time.monotonic())
        self._total = 0

    def _line(self, now: float, detail: str = "") -> None:
        """``phase: done/total (rate)``, then the detail; no rate before the first item is done (a long
        first item is not a rate of 0), and the time taken when items take over ten seconds each."""
        elapsed = max(now - self._started, 1e-9)
        rate = self._done / elapsed
        pace = "" if not self._done else f" ({rate:,.1f}/s)" if rate >= 0.1 else f" ({elapsed:,.0f} s)"
        self._reported = self._done
        line = f"{self._phase}: {self._done}/{self._total}{pace}" + (f", {detail}" if detail else "")
        self._console.print(line, highlight=False, markup=False)


@contextmanager
def stderr_progress(console: Console | None = None) -> Iterator[ProgressSink]:
    """A progress sink on stderr that suits where stderr goes."""
    console = console or Console(stderr=True, soft_wrap=True)  # soft wrap: whole lines when not a terminal
    if console.is_terminal:
        columns = (
            TextColumn("{task.description:<20}"), BarColumn(), MofNCompleteColumn(), _RateColumn(), TimeElapsedColumn()
        )
        with Progress(*columns, console=console) as progress:
            yield BarProgress(progress)
    else:
        log = LogProgress(console)
        try:
            yield log
        finally:
            log.close()
