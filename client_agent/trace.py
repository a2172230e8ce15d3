"""The run trace: one JSON object per line for every decision, call, verdict and check.

A trace is the record of how an answer came about. Each line has ``event`` (what happened),
``t`` (seconds since the run started) and the event's fields. Events:

- ``run_start``: question, back-end, model, budgets.
- ``model_call``: purpose (decide, reflect, revise), model, input/output tokens, seconds, stop reason.
- ``tool_call``: tool, arguments, error flag, result size in characters, seconds, new evidence ids;
  ``refused`` with the reason when the loop did not send it.
- ``reflection``: the verdict (or the parse error and whether it was retried).
- ``conflict``: two sources that disagree, with their dates and the confirming lookup.
- ``citation_check``: the check's findings for one answer draft.
- ``run_end``: final state and totals.

The totals in ``run_end`` are sums of the ``model_call`` and ``tool_call`` lines, so a reader
can check one against the other.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import platformdirs


def default_trace_path(now: datetime | None = None) -> Path:
    """Where a run's trace goes unless ``--trace`` says otherwise: the per-user log directory."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S-%f")
    return Path(platformdirs.user_log_dir("agentic-rag-mcp")) / "traces" / f"run-{stamp}.jsonl"


@dataclass
class Totals:
    steps: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "tool_calls": self.tool_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "seconds": round(self.seconds, 3),
        }


class Trace:
    """Writes one run's events to a JSONL file (replacing an older file of that name), flushed line
    by line so a crashed run still leaves its record."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("w", encoding="utf-8")
        self._started = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self._started

    def event(self, event: str, **fields: Any) -> None:
        record = {"event": event, "t": round(self.elapsed(), 4), **fields}
        self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The events of a trace file, in order."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]
