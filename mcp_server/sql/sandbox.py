"""SQL statements run in worker processes that are killed at their deadline: CPU bounded, not only wall-clock.

SQLite checks its progress handler (and ``Connection.interrupt()``) between virtual-machine
steps, never inside one function call, so a statement of a few string functions over large
values (``trim(x, y)`` of a 98 KB string takes about 5 s per call, tens of seconds under load)
overruns any in-process time limit, and a thread cannot be stopped. A process can:
:class:`SqlSandbox` hands each statement to an idle worker process (``python -m
mcp_server.sql.sandbox <database>``, started on demand and reused), and when no answer has
come :data:`KILL_GRACE_S` after the statement's own deadline it kills the worker with SIGKILL
and reaps it before raising :class:`~mcp_server.errors.QueryTimeoutError`. :meth:`SqlSandbox.run`
therefore returns only once the statement's work has stopped, whatever it was doing; the
measurements behind this choice are in ``bench/sql/``.

The protocol is one JSON line each way on the worker's stdin and stdout: a
:class:`~mcp_server.sql.engine.Statement`, then ``{"rows": ...}`` or ``{"error": <class name>,
"message": ...}``. A worker writes ``ready`` once it has started, so the deadline never
counts the start-up. Its stderr is the server's; it runs at the lowest CPU priority
(:data:`NICENESS`), so a client's heavy SQL slows other clients' searches as little as
possible; it ignores SIGINT (the parent decides when it ends) and exits when its stdin
closes, which is also what happens if the parent dies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import IO, Any

from mcp_server.errors import InvalidQueryError, NotFoundError, QueryTimeoutError, ReadOnlyViolationError
from mcp_server.errors import RetrievalError
from mcp_server.sql.engine import Rows, Statement, limit_heap, run_statement, timeout_error

KILL_GRACE_S = 0.5
"""Seconds past a statement's deadline before its worker is killed (its progress handler usually stops it first)."""
START_TIMEOUT_S = 30.0
"""Longest a new worker process may take to start."""
NICENESS = 10
"""CPU priority of the workers (POSIX): under load, searches and the server itself run first."""
WORKER_BASE_MB = 512
"""Address space a worker needs besides its statement's memory (the interpreter, SQLite, the pipes)."""
MAX_IDLE_WORKERS = 8
"""Idle workers kept for reuse; more are stopped when they finish."""
_READY = b"ready\n"
_ERRORS: dict[str, type[RetrievalError]] = {
    cls.__name__: cls for cls in (InvalidQueryError, NotFoundError, QueryTimeoutError, ReadOnlyViolationError)
}


class SqlSandbox:
    """Worker processes that run statements on one SQLite file; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._stop_idle = weakref.finalize(self, _stop_all, self._idle)

    def run(self, statement: Statement) -> Rows:
        """The statement's rows, from a worker process; its errors re-raised here.

        :raises QueryTimeoutError: no answer by the deadline; the worker has been killed and reaped.
        :raises RetrievalError: the statement's own error, or the worker died (out of memory, say).
        """
        worker = self._checkout()
        try:
            reply = worker.ask(statement, statement["timeout_s"] + KILL_GRACE_S)
        except BaseException:
            worker.stop()
            raise
        self._checkin(worker)
        if "error" in reply:
            raise _ERRORS.get(reply["error"], RetrievalError)(reply["message"])
        rows: Rows = reply["rows"]
        return rows

    def close(self) -> None:
        """Stop the idle workers (busy ones stop when their statement ends)."""
        self._stop_idle()

    def _checkout(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.poll() is None:
                    return worker
                worker.stop()  # died while idle (killed from outside): start another
        return _Worker(self.path)

    def _checkin(self, worker: _Worker) -> None:
        with self._lock:
            if self._stop_idle.alive and len(self._idle) < MAX_IDLE_WORKERS:
                self._idle.append(worker)
                return
        worker.stop()


class _Worker:
    """One worker process and the pipes to it."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self._stdin: IO[bytes] = self.process.stdin  # type: ignore[assignment]
        self._stdout: IO[bytes] = self.process.stdout  # type: ignore[assignment]
        self._started = False
        self._killed = False

    def ask(self, statement: Statement, within_s: float) -> dict[str, Any]:
        """Send ``statement`` and wait at most ``within_s`` seconds for the reply (the start-up not counted)."""
        if not self._started:
            if self._read_line(START_TIMEOUT_S) != _READY:
                raise RetrievalError(f"The SQL worker process did not start within {START_TIMEOUT_S:g} s; the "
                                     "server is overloaded, retry in a moment.")  # fmt: skip
            self._started = True
        try:
            self._stdin.write(json.dumps(statement).encode("utf-8") + b"\n")
            self._stdin.flush()
        except BrokenPipeError:
            self.stop()
            raise _stopped() from None
        line = self._read_line(within_s)
        if self._killed:
            raise timeout_error(within_s - KILL_GRACE_S)
        if not line:
            self.stop()
            raise _stopped()
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _read_line(self, within_s: float) -> bytes:
        """The next line from the worker, or b"" if it died or was killed for not answering within ``within_s``."""
        killer = threading.Timer(within_s, self._kill)
        killer.start()
        try:
            return self._stdout.readline()
        finally:
            killer.cancel()

    def _kill(self) -> None:
        self._killed = True
        self.stop()

    def stop(self) -> None:
        """Kill the process and wait until it is gone; nothing it ran is still running after this."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._stdin.close()


def _stopped() -> RetrievalError:
    return RetrievalError(
        "The SQL worker process stopped before it answered (it may have run out of memory, see "
        "RAGMCP_SQL_MEMORY_MB); simplify the query and retry."
    )


def _over_memory(memory_mb: int) -> str:
    return (
        f"The query needs more than the {memory_mb} MB of memory a statement may use (RAGMCP_SQL_MEMORY_MB). "
        "Aggregate less at once: add a LIMIT or narrow the WHERE clause."
    )


def _cap_memory(memory_mb: int) -> None:
    """The worker's address space: the statement's SQLite heap and as much again for Python and the libraries."""
    try:
        import resource
    except ImportError:  # Windows: SQLite's own heap limit still applies
        return
    limit = (2 * memory_mb + WORKER_BASE_MB) * 1_048_576
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def _stop_all(workers: list[_Worker]) -> None:
    while workers:
        workers.pop().stop()


def _serve(path: Path) -> None:
    """The worker's loop: one statement per stdin line, one reply per stdout line, until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(os, "nice"):
        os.nice(NICENESS)
    out = sys.stdout.buffer
    out.write(_READY)
    out.flush()
    memory_mb = 0
    for line in sys.stdin.buffer:
        statement: Statement = json.loads(line)
        if statement["memory_mb"] != memory_mb:  # the same for every statement of a server: set once
            memory_mb = statement["memory_mb"]
            _cap_memory(memory_mb)
            limit_heap(memory_mb)
        try:
            reply: dict[str, Any] = {"rows": run_statement(path, statement)}
        except RetrievalError as e:
            reply = {"error": type(e).__name__, "message": str(e)}
        except MemoryError:  # Python's side (rows, values) over the worker's ceiling: an answer, not a traceback
            reply = {"error": "InvalidQueryError", "message": _over_memory(statement["memory_mb"])}
        out.write(json.dumps(reply).encode("utf-8") + b"\n")
        out.flush()


if __name__ == "__main__":
    _serve(Path(sys.argv[1]))
