"""``ragmcp watch``: keep the index in step with the corpus folders while they are edited (see watch.py)."""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType

import click
from rich.console import Console

from mcp_server.cli_support import handle_errors
from mcp_server.indexing.watch import Watch
from mcp_server.progress import stderr_progress
from mcp_server.settings import Settings


def _say(line: str) -> None:
    click.echo(f"{time.strftime('%H:%M:%S')} {line}", err=True)


@click.command("watch")
@click.pass_obj
@handle_errors
def watch(settings: Settings) -> None:
    """Re-index the corpus folders whenever their files change, until Ctrl-C.

    First brings every configured folder (RAGMCP_CORPORA) up to date, then re-ingests a
    folder once it has been quiet for RAGMCP_WATCH_DEBOUNCE_S seconds (default 1) after a
    change: added, changed and deleted documents, incrementally. Each update publishes a
    new index generation, which running servers switch to by themselves. Hidden files,
    editor backups and files that are not documents are ignored. Use `ragmcp serve --watch`
    to watch from inside the server instead.
    """
    stop = threading.Event()

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        with Watch(settings, _say, stop) as watching:
            with stderr_progress(Console(stderr=True, soft_wrap=True)) as progress:
                watching.catch_up(progress)
            watching.follow()
    except KeyboardInterrupt:
        pass
    _say("stopped watching")
