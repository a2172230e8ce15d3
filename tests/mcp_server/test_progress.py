"""Progress on a non-terminal stderr: one line per phase start and end, periodic lines in between."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from mcp_server import progress as progress_module
from mcp_server.progress import stderr_progress


def test_log_progress_reports_each_phase_once_at_start_and_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "LOG_INTERVAL_S", 3600.0)
    out = io.StringIO()
    with stderr_progress(Console(file=out, force_terminal=False, width=200)) as sink:
        sink.start("reading documents", 2)
        sink.advance(1)
        sink.advance(1)
        sink.start("embedding chunks", 0)
        sink.start("writing indexes", 5)
        sink.advance(5)
    lines = [line.split(" (")[0] for line in out.getvalue().splitlines()]
    assert lines == ["reading documents: 0/2", "reading documents: 2/2", "writing indexes: 0/5", "writing indexes: 5/5"]


def test_log_progress_prints_periodic_lines_without_repeating_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "LOG_INTERVAL_S", 0.0)
    out = io.StringIO()
    with stderr_progress(Console(file=out, force_terminal=False, width=200)) as sink:
        sink.start("embedding chunks", 3)
        for _ in range(3):
            sink.advance(1)
    lines = [line.split(" (")[0] for line in out.getvalue().splitlines()]
    assert lines == ["embedding chunks: 0/3", "embedding chunks: 1/3", "embedding chunks: 2/3", "embedding chunks: 3/3"]
