"""Bring the index in line with the configuration on a background thread, while a server answers.

A server starts one :class:`BackgroundIngest`: it waits for any other ingestion on the data
dir (another server starting at the same moment, ``ragmcp ingest``) and then ingests the
configured corpora incrementally, so that when several start at once one builds and the
others find nothing left to do. Progress and the outcome go to the log as whole lines.
Stopping it (the server shutting down) ends the wait or the build at its next progress
report; the published index stays as it was.
"""

from __future__ import annotations

import logging
import threading

from rich.console import Console

from mcp_server.errors import RetrievalError
from mcp_server.indexing.build_status import BuildStatus, another_build
from mcp_server.indexing.ingest import IngestCancelled, ingest
from mcp_server.progress import LogProgress
from mcp_server.settings import Settings

logger = logging.getLogger(__name__)
STOP_WAIT_S = 5.0
"""How long stopping waits for the build to reach its next progress report."""


class BackgroundIngest:
    """One reconciliation of the index with the configured corpora, on a daemon thread."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ragmcp-ingest", daemon=True)
        self.finished = threading.Event()
        self.error: str | None = None
        """Why the build failed (a message for the user), or None."""

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(STOP_WAIT_S)

    def _run(self) -> None:
        progress = LogProgress(Console(stderr=True, soft_wrap=True, highlight=False))
        try:
            report = ingest(self._settings, progress=progress, on_wait=_log_waiting, stop=self._stop)
            progress.close()
            for line in report.lines():
                logger.info("%s", line)
        except IngestCancelled:
            logger.info("index build stopped; the next start resumes it")
        except RetrievalError as e:
            self.error = str(e)
            logger.error("cannot bring the index up to date: %s", e)
        except Exception as e:  # the server keeps serving what is published
            self.error = f"an unexpected error stopped the index build ({type(e).__name__}); see the server's log"
            logger.exception("the index build failed")
        finally:
            self.finished.set()


def _log_waiting(status: BuildStatus | None) -> None:
    logger.info("%s; serving what it publishes, then checking the index again", another_build(status))
