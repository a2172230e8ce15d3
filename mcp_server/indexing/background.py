"""Bring the index in line with the configuration in a child process, while a server answers.

A server starts one :class:`BackgroundIngest`: it waits for any other ingestion on the data
dir (another server starting at the same moment, ``ragmcp ingest``) and then ingests the
configured corpora incrementally, so that when several start at once one builds and the
others find nothing left to do. Progress and the outcome go to the log (stderr) as whole lines;
how far the build is also goes to the data dir's build record (:mod:`mcp_server.indexing.build_status`),
which ``ragmcp status`` and the progress notifications of a call waiting for the index read.

The build runs in a spawned child process, not a thread: the server does not keep the
memory the build used once it is done, and the build never holds the interpreter lock a search
needs. It runs at a lower CPU priority (``BUILD_NICENESS``, and so do its keyword writers), so
that on a busy machine searches come first and the build takes what is left. The child
writes nothing to stdout, which over stdio is the protocol. Stopping it (the server shutting
down) ends the wait or the build at its next progress report, and the child stops the same
way when the server is killed; the published index stays as it was.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading
from multiprocessing.connection import Connection

from rich.console import Console

from mcp_server.errors import RetrievalError
from mcp_server.indexing.build_status import BuildStatus, another_build
from mcp_server.progress import LogProgress
from mcp_server.settings import Settings

logger = logging.getLogger(__name__)
STOP_WAIT_S = 5.0
"""How long stopping waits for the build to reach its next progress report before ending the child."""
BUILD_NICENESS = 10
"""How much lower than the server's the build's CPU priority is (``nice``)."""
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
"""The servers' log line format (``ragmcp serve`` uses it too)."""


class BackgroundIngest:
    """One reconciliation of the index with the configured corpora, in a child process."""

    def __init__(self, settings: Settings) -> None:
        context = multiprocessing.get_context("spawn")  # no fork: the server runs model and Chroma threads
        # Closing the writing end (or this process ending) tells the child to stop; it answers with the outcome.
        stop, self._stop = context.Pipe(duplex=False)
        self._outcome, outcome = context.Pipe(duplex=False)
        # Not a daemon: the build starts keyword writer processes of its own.
        self._process = context.Process(
            target=_build, args=(settings, stop, outcome, logging.getLogger().getEffectiveLevel()), name="ragmcp-ingest"
        )
        self._stopped = False
        self._waiter = threading.Thread(target=self._wait, name="ragmcp-ingest-waiter", daemon=True)
        self.finished = threading.Event()
        self.error: str | None = None
        """Why the build failed (a message for the user), or None."""

    def start(self) -> None:
        self._process.start()
        self._waiter.start()

    def stop(self) -> None:
        self._stopped = True
        self._stop.close()
        if self._process.pid is None:
            return
        self._process.join(STOP_WAIT_S)
        if self._process.is_alive():  # a phase without progress reports (e.g. a long merge): the next start resumes
            self._process.terminate()
            self._process.join()

    def _wait(self) -> None:
        self._process.join()
        if self._outcome.poll():
            self.error = self._outcome.recv()
        elif self._process.exitcode and not self._stopped:
            self.error = f"the index build ended unexpectedly (exit code {self._process.exitcode}); see the server's log"
        self.finished.set()


def _build(settings: Settings, stop: Connection, outcome: Connection, log_level: int) -> None:
    """The child: ingest, log the report at the server's log level, and send the parent the error
    message (or None)."""
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stdout may be the parent's protocol stream
    os.nice(BUILD_NICENESS)
    # Imported only now, at the lower priority: importing the stores and readers is seconds of CPU.
    from mcp_server.indexing.ingest import IngestCancelled, ingest
    logging.basicConfig(level=log_level, stream=sys.stderr, format=LOG_FORMAT)
    cancel = threading.Event()
    threading.Thread(target=_cancel_when_stopped, args=(stop, cancel), daemon=True).start()
    progress = LogProgress(Console(stderr=True, soft_wrap=True, highlight=False))
    error: str | None = None
    try:
        report = ingest(settings, progress=progress, on_wait=_log_waiting, stop=cancel)
        progress.close()
        for line in report.lines():  # a note (settings that differ from the index's) is worth a warning
            logger.log(logging.WARNING if line in report.notes else logging.INFO, "%s", line)
    except IngestCancelled:
        logger.info("index build stopped; the next start resumes it")
    except RetrievalError as e:
        error = str(e)
        logger.error("cannot bring the index up to date: %s", e)
    except Exception as e:  # the server keeps serving what is published
        error = f"an unexpected error stopped the index build ({type(e).__name__}); see the server's log"
        logger.exception("the index build failed")
    outcome.send(error)


def _cancel_when_stopped(stop: Connection, cancel: threading.Event) -> None:
    """Set ``cancel`` once the parent closes its end of ``stop`` (asked to stop, or gone)."""
    stop.poll(None)
    cancel.set()


def _log_waiting(status: BuildStatus | None) -> None:
    logger.info("%s; serving what it publishes, then checking the index again", another_build(status))
