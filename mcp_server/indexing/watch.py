"""Watch mode: keep the index in step with corpus folders the user keeps editing.

:class:`Watch` follows the configured corpus folders (``settings.corpora``) with
`watchfiles <https://watchfiles.helpmanual.io>`_ (the Rust ``notify`` crate: inotify,
FSEvents, ReadDirectoryChangesW) and, once a folder has been quiet for
``settings.watch.debounce_s``, runs :func:`~mcp_server.indexing.ingest.ingest` on the
folders that changed. Ingestion is incremental and publishes a new generation only when
a document really changed, exactly as ``ragmcp ingest`` does; serving processes switch
to it on their own.

- **Debounced.** Changes are collected until no new one arrives for the debounce time
  (at most ``MAX_DELAY_S`` after the first), so an editor's save storm is one update.
  Changes that arrive during an update are the next update.
- **Ignored.** The index's own data dir (when it lies inside a watched folder), hidden
  entries (``.x.swp``, ``.#x``, ``.git/``), backups and autosaves (``x~``, ``#x#``) and files
  of types that are not documents. A touched file whose bytes did not change is noticed
  but publishes nothing (ingestion compares fingerprints).
- **Not fatal.** A folder that disappears is reported and watched again when it is back
  (then brought up to date); an update that fails (a malformed ``corpus.toml``, another
  ingestion holding the lock) is reported and retried, at growing intervals, until it
  succeeds or another change comes in. Several folders that fail together are retried one
  by one, so one bad folder does not hold back the rest.

Everything it does is reported through ``say`` as whole lines.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import watchfiles

from mcp_server.documents.corpus import CONFIG_FILENAME, SUPPORTED_SUFFIXES
from mcp_server.errors import RetrievalError
from mcp_server.indexing.ingest import IngestReport, ingest
from mcp_server.progress import ProgressSink
from mcp_server.settings import Settings

MAX_DELAY_S = 10.0
"""Longest an update waits for a folder that never goes quiet."""
RECHECK_MS = 2_000
"""How often the folder watcher looks for watched folders that vanished or came back."""
RETRY_S = 2.0
RETRY_MAX_S = 60.0
POLL_S = 0.25  # how often a waiting loop checks the stop event


def is_relevant(path: Path, root: Path, data_dir: Path) -> bool:
    """Whether a change at ``path`` (inside the corpus folder ``root``) may alter a document."""
    if path.is_relative_to(data_dir):
        return False
    relative = path.relative_to(root) if path.is_relative_to(root) else Path(path.name)
    if any(part.startswith(".") for part in relative.parts):
        return False  # hidden entries are never documents: .x.swp, .#x lock files, .git/, .~lock.x#
    name = path.name
    if name.endswith("~") or (name.startswith("#") and name.endswith("#")):
        return False  # editor backups and autosaves
    if name == CONFIG_FILENAME or path.suffix.lower() in SUPPORTED_SUFFIXES:
        return True
    return path.suffix == "" or path.is_dir()  # a folder added, renamed or removed, with the documents in it


def describe(report: IngestReport) -> str:
    """One line saying what an update did, e.g. ``notes: 1 changed, 1 deleted; published gen-... in 0.4 s``."""
    changes = []
    for c in report.corpora:
        kinds = (("added", c.added), ("changed", c.changed), ("deleted", c.deleted))
        counts = [f"{len(ids)} {kind}" for kind, ids in kinds if ids]
        changes.append(f"{c.name}: {', '.join(counts) or 'no document changed'}")
    if report.generation is None:
        return "; ".join(changes) + "; nothing to publish"
    return (
        "; ".join(changes) + f"; published {report.generation} in {report.seconds:.1f} s "
        f"({report.chunks_written} chunks written, {report.chunks_embedded} embedded)"
    )


@dataclass
class _Retry:
    roots: set[Path] = field(default_factory=set)
    at: float = 0.0
    wait_s: float = RETRY_S
    said: dict[Path, str] = field(default_factory=dict)  # the last error reported per folder


class Watch:
    """Re-ingests the configured corpus folders when their files change (see the module docstring).

    Use it as a context manager, which runs the folder watcher on a thread while inside::

        with Watch(settings, say, stop) as watch:
            watch.catch_up()  # changes made while nobody watched
            watch.follow()  # until stop is set
    """

    def __init__(self, settings: Settings, say: Callable[[str], None], stop: threading.Event) -> None:
        self.settings = settings
        self._say = say
        self._stop = stop
        self._roots = sorted({p.resolve() for p in settings.corpora})
        self._data_dir = settings.data_dir.resolve()
        self._changed: queue.Queue[set[Path]] = queue.Queue()
        self._retry = _Retry()
        self._watcher = threading.Thread(target=self._follow_folders, name="ragmcp-watch", daemon=True)
        logging.getLogger("watchfiles").setLevel(logging.WARNING)  # its "N changes detected"; ours say what changed

    def __enter__(self) -> Watch:
        self._watcher.start()  # before catch_up, so that no change slips between the two
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._watcher.join(timeout=5)

    def catch_up(self, progress: ProgressSink | None = None) -> None:
        """Bring every folder up to date."""
        self._update(set(self._roots), progress)

    def follow(self) -> None:
        """Update the folders that change, a burst of changes at a time, until ``stop`` is set."""
        self._say("watching " + ", ".join(str(r) for r in self._roots) + " for changes")
        while not self._stop.is_set():
            roots = self._next_batch()
            if roots:
                self._update(roots)

    def _next_batch(self) -> set[Path]:
        """The folders changed in the next burst of changes, or due for a retry; empty when stopping."""
        first = None
        while first is None and not self._stop.is_set():
            timeout = POLL_S
            if self._retry.roots:
                timeout = min(POLL_S, max(0.0, self._retry.at - time.monotonic()))
                if timeout == 0.0:
                    return self._retry.roots.copy()
            try:
                first = self._changed.get(timeout=timeout)
            except queue.Empty:
                continue
        if first is None:
            return set()
        roots = set(first)
        deadline = time.monotonic() + MAX_DELAY_S
        while not self._stop.is_set():
            quiet_s = min(self.settings.watch.debounce_s, deadline - time.monotonic())
            if quiet_s <= 0:
                break
            try:
                roots |= self._changed.get(timeout=quiet_s)
            except queue.Empty:
                break
        return roots | self._retry.roots

    def _update(self, roots: set[Path], progress: ProgressSink | None = None) -> None:
        present = sorted(r for r in roots if r.is_dir())
        for root in sorted(roots - set(present)):
            self._say(f"folder {root} is gone; its documents stay in the index, and it is watched again when it is back")
            self._retry.roots.discard(root)
        if not present:
            return
        failed = self._ingest(present, progress)
        if failed and len(present) > 1:  # one at a time, so one bad folder does not hold back the others
            failed = {root for root in present if self._ingest([root], progress)}
        self._schedule_retry(failed)

    def _ingest(self, roots: list[Path], progress: ProgressSink | None) -> set[Path]:
        """Ingest ``roots``; the folders to retry (all of them) when that failed."""
        # Ingestion reads every configured folder's corpus.toml: only these may stop this update.
        settings = self.settings.model_copy(update={"corpora": roots})
        try:
            report = ingest(settings, [str(r) for r in roots], progress=progress)
        except RetrievalError as e:  # a malformed corpus.toml, an unreachable store, ...
            message = str(e)
            if len(roots) == 1 and self._retry.said.get(roots[0]) != message:
                self._say(f"could not update {roots[0]}: {message} (retrying)")
                self._retry.said[roots[0]] = message
            return set(roots)
        for root in roots:
            self._retry.said.pop(root, None)
        self._say(describe(report))
        return set()

    def _schedule_retry(self, failed: set[Path]) -> None:
        retry = self._retry
        if not failed:
            retry.roots, retry.wait_s = set(), RETRY_S
            return
        retry.wait_s = RETRY_S if failed != retry.roots else min(retry.wait_s * 2, RETRY_MAX_S)
        retry.roots, retry.at = failed, time.monotonic() + retry.wait_s

    def _follow_folders(self) -> None:
        """The folder watcher (a thread): queue the folders each batch of file changes touches."""
        stop = self._stop
        while not stop.is_set():
            present = [r for r in self._roots if r.is_dir()]
            if not present:
                stop.wait(RECHECK_MS / 1000)
                continue
            try:
                self._watch(present)
            except Exception as e:  # noqa: BLE001 - the watcher must outlive whatever the OS throws at it
                self._say(f"watching failed ({type(e).__name__}: {e}); trying again in {RECHECK_MS / 1000:.0f} s")
                stop.wait(RECHECK_MS / 1000)
            if not stop.is_set():
                self._changed.put(set(self._roots))  # something may have changed while no one watched

    def _watch(self, present: list[Path]) -> None:
        """Watch ``present`` until the set of existing folders changes or ``stop`` is set."""
        for changes in watchfiles.watch(
            *present, watch_filter=None, stop_event=self._stop, rust_timeout=RECHECK_MS, yield_on_timeout=True,
            ignore_permission_denied=True, raise_interrupt=False,
        ):  # fmt: skip
            touched = self._roots_of(Path(path) for _, path in changes)
            if touched:
                self._changed.put(touched)
            if [r for r in self._roots if r.is_dir()] != present:
                return

    def _roots_of(self, paths: Iterable[Path]) -> set[Path]:
        touched = set()
        for path in paths:
            for root in self._roots:
                if path.is_relative_to(root) and (path == root or is_relevant(path, root, self._data_dir)):
                    touched.add(root)
        return touched


@dataclass
class Watching:
    """A :class:`Watch` running on a background thread (``ragmcp serve --watch``)."""

    thread: threading.Thread
    stop_event: threading.Event

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop watching; an update in progress gets ``timeout_s`` to finish."""
        self.stop_event.set()
        self.thread.join(timeout=timeout_s)


def start_watching(settings: Settings, say: Callable[[str], None]) -> Watching:
    """Catch up and follow the folders on a daemon thread until :meth:`Watching.stop`."""
    stop = threading.Event()

    def run() -> None:
        try:
            with Watch(settings, say, stop) as watch:
                watch.catch_up()
                watch.follow()
        except Exception as e:  # noqa: BLE001 - reported; the server keeps serving what is published
            say(f"watch mode stopped: {type(e).__name__}: {e}")

    thread = threading.Thread(target=run, name="ragmcp-watch-updates", daemon=True)
    thread.start()
    return Watching(thread, stop)
