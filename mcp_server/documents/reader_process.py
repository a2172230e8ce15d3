"""Reading documents so that no file can stop the rest: every parser in a child process, every failure a skip.

:class:`DocumentReader` reads the files of one ingestion, all formats alike - Markdown and
e-mail as much as PDF, pictures by OCR and Office archives: a crafted text file can cost a
parser as much as a crafted PDF. Each file is read in a spawned child process that

- runs with an address-space ceiling (``RLIMIT_AS``, ``RAGMCP_READER_MEMORY_MB``), so a
  parser that tries to allocate gigabytes fails there, not in the ingesting process (nor in
  a watching server);
- is given ``RAGMCP_READ_TIMEOUT_S`` per file, and reports every page it reads, so progress
  moves inside a long PDF and a page that takes longer than ``RAGMCP_PAGE_TIMEOUT_S`` is
  stopped by killing the child - the ingesting process holds no lock and no GIL meanwhile;
- writes nothing anywhere: its standard output and error go to ``/dev/null``, so library
  warnings never reach the user and a stdio server's protocol stream stays clean.

A child that dies, runs out of memory or time is replaced for the next file. Whatever a
file does - ``RecursionError``, ``MemoryError``, a library's bug - the result is an
:class:`~mcp_server.errors.IngestError` that names the file and the reason: ingestion
records it as skipped and goes on. A healthy child is kept (one per process) for the next
ingestion, so a watching server does not start a process per change: a small file costs a
quarter of a millisecond to send and read back, a new child about a quarter of a second.

The same process draws a page of a file at query time (:meth:`DocumentReader.draw`, a picture of a
cited page): a hostile PDF costs the server no more there than at ingestion.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from mcp_server.documents.chunking import ChunkingOptions
from mcp_server.documents.extract import Extracted, extract
from mcp_server.documents.limits import FileInput
from mcp_server.documents.page_drawing import PageDrawing, draw_page
from mcp_server.errors import IngestError

_START_TIMEOUT_S = 120.0  # to spawn and import the readers, on a machine busy with other work
_MESSAGE_CHARS = 300  # of a library's error message, in a skip line

Job = ChunkingOptions | PageDrawing
"""What the reading process is asked to do with a file: extract its text (chunked so), or draw one of its pages."""

PageProgress = Callable[[FileInput, int, int], None]
"""Told ``(file, page, pages)`` as the reading process reaches each page of a paged document."""



class DocumentReader:
    """Reads one ingestion's files (see the module docstring); close it, or use it as a context manager."""

    def __init__(self, on_page: PageProgress | None = None) -> None:
        self._on_page = on_page
        self._child: _Child | None = None

    def __enter__(self) -> DocumentReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def read(self, file: FileInput, options: ChunkingOptions) -> Extracted:
        """The file's document and chunks.

        :raises IngestError: the file is refused (by its loader or a limit) or its reading failed.
        """
        extracted: Extracted = self._run(file, options)
        return extracted

    def draw(self, file: FileInput, drawing: PageDrawing) -> bytes:
        """The PNG of one page of the file, highlighted (:func:`~mcp_server.documents.page_drawing.draw_page`).

        :raises IngestError: the file or page cannot be drawn, or drawing it broke a limit.
        """
        png: bytes = self._run(file, drawing)
        return png

    def _run(self, file: FileInput, job: Job) -> Any:
        memory_mb = file.limits.memory_mb
        if self._child is None or not self._child.alive(memory_mb):
            self._stop()
            self._child = _spare.take(memory_mb) or _Child(memory_mb)
        try:
            return self._child.run(file, job, self._on_page)
        except _ChildLost as lost:
            self._stop()
            raise IngestError(f"{file.path} {lost}") from None

    def close(self) -> None:
        """Done reading: a healthy reading process is kept for the next reader of this process."""
        if self._child is not None:
            _spare.keep(self._child)
            self._child = None

    def _stop(self) -> None:
        if self._child is not None:
            self._child.stop()
            self._child = None


class _Spare:
    """The one idle reading process a process keeps between ingestions."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._child: _Child | None = None

    def take(self, memory_mb: int) -> _Child | None:
        with self._lock:
            child, self._child = self._child, None
        if child is not None and child.alive(memory_mb):
            return child
        if child is not None:
            child.stop()
        return None

    def keep(self, child: _Child) -> None:
        if not child.alive(child.memory_mb):
            child.stop()
            return
        with self._lock:
            replaced, self._child = self._child, child
        if replaced is not None:  # one spare is enough; a concurrent reader's goes
            replaced.stop()


_spare = _Spare()


def _run_guarded(file: FileInput, job: Job, read_page: Callable[[int, int], None] | None) -> object:
    """The job (:func:`extract` or :func:`draw_page`), with any failure but a refusal turned into one
    (the file's bug, not ours to die of)."""
    try:
        if isinstance(job, PageDrawing):
            return draw_page(file, job, read_page)
        return extract(file, job, read_page)
    except IngestError:
        raise
    except RecursionError as error:
        raise IngestError(f"{file.path} is nested too deeply to read; flatten its structure.") from error
    except MemoryError as error:
        raise _needs_memory(file) from error
    except Exception as error:  # noqa: BLE001 - a parser's bug on one file must not stop the ingestion
        # A Python object's heap address ("<Element body at 0x7f3a…>") says nothing to a reader: dropped.
        message = re.sub(r" at 0x[1-9a-fA-F][0-9a-fA-F]{7,}", "", " ".join(str(error).split()))
        if "bad_alloc" in message or "Failed to allocate" in message:  # onnxruntime's (OCR) out of memory
            raise _needs_memory(file) from error
        shown = message if len(message) <= _MESSAGE_CHARS else message[: _MESSAGE_CHARS - 1] + "…"
        raise IngestError(f"{file.path} could not be read ({type(error).__name__}: {shown}).") from error


def _needs_memory(file: FileInput) -> IngestError:
    return IngestError(
        f"{file.path} needs more memory to read than RAGMCP_READER_MEMORY_MB ({file.limits.memory_mb} MB) allows; "
        "raise it or split the file."
    )


class _ChildLost(Exception):
    """The reading process died or was stopped; the message says why, after the file's name."""


class _Child:
    """One reading process and the pipe to it."""

    def __init__(self, memory_mb: int) -> None:
        context = multiprocessing.get_context("spawn")  # no fork: the parent runs model and store threads
        self.memory_mb = memory_mb
        self._pipe, child_end = context.Pipe()
        self._process: BaseProcess = context.Process(
            target=_serve, args=(child_end, memory_mb), name="ragmcp-reader", daemon=True
        )
        self._process.start()
        child_end.close()
        self._started = False

    def alive(self, memory_mb: int) -> bool:
        return self._process.is_alive() and memory_mb == self.memory_mb

    def run(self, file: FileInput, job: Job, on_page: PageProgress | None) -> Any:
        self._wait_until_started()
        try:
            self._pipe.send((file, job))
        except (OSError, EOFError) as error:
            raise _ChildLost(f"could not be read: the reading process ended ({error}).") from error
        started = time.monotonic()
        page_started: float | None = None  # the page deadline runs from the first page on (none for unpaged files)
        limits = file.limits
        while True:
            deadline = started + limits.file_seconds
            if page_started is not None:
                deadline = min(deadline, page_started + limits.page_seconds)
            wait = deadline - time.monotonic()
            if wait <= 0 or not self._pipe.poll(wait):
                if time.monotonic() - started >= limits.file_seconds:
                    raise _ChildLost(
                        f"took longer than {limits.file_seconds:g} s to read; raise RAGMCP_READ_TIMEOUT_S or split the file."
                    )
                raise _ChildLost(
                    f"took longer than {limits.page_seconds:g} s on one page; raise RAGMCP_PAGE_TIMEOUT_S if its "
                    "pages are genuinely slow to read."
                )
            try:
                message: tuple[Any, ...] = self._pipe.recv()
            except (EOFError, OSError):
                self._process.join(5)
                raise _ChildLost(
                    f"could not be read: reading it needed more than RAGMCP_READER_MEMORY_MB ({self.memory_mb} MB) "
                    f"or crashed the reader (exit code {self._process.exitcode}); raise the limit if the file is genuine."
                ) from None
            kind = message[0]
            if kind == "page":
                page_started = time.monotonic()
                if on_page is not None:
                    on_page(file, message[1], message[2])
            elif kind == "done":
                return message[1]
            else:
                raise IngestError(message[1])

    def _wait_until_started(self) -> None:
        """Wait for a new process to have imported its readers, so a file's time limits count reading only."""
        if self._started:
            return
        try:
            if self._pipe.poll(_START_TIMEOUT_S) and self._pipe.recv() == ("started",):
                self._started = True
                return
        except (EOFError, OSError):
            pass
        raise _ChildLost(f"could not be read: the reading process did not start within {_START_TIMEOUT_S:g} s.")

    def stop(self) -> None:
        try:
            self._pipe.close()
        except OSError:
            pass
        if self._process.is_alive():
            self._process.kill()
        self._process.join(5)


def _serve(pipe: Connection, memory_mb: int) -> None:
    """The reading process: read each file sent, reporting pages, until the pipe closes."""
    _quiet()
    _cap_memory(memory_mb)
    pipe.send(("started",))
    while True:
        try:
            file, job = pipe.recv()
        except (EOFError, OSError):
            return
        try:
            result = _run_guarded(file, job, lambda page, pages: pipe.send(("page", page, pages)))
        except IngestError as error:
            pipe.send(("refused", str(error)))
            continue
        pipe.send(("done", result))


def _quiet() -> None:
    """Send this process's output, Python's and the C libraries', to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)


def _cap_memory(memory_mb: int) -> None:
    try:
        import resource
    except ImportError:  # not on Windows: only the time limits apply there
        return
    limit = memory_mb * 1_048_576
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
