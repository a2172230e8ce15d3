"""Writing an ingestion's chunks into the staged keyword shards, a segment at a time.

Whoosh's writer keeps every posting of a commit in a pool and sorts it at the end; past a
few hundred thousand chunks that pool spills runs to disk and the final merge takes longer
than the indexing itself. The chunks are therefore committed in segments of at most
:data:`SEGMENT_CHUNKS` each (Whoosh's merge policy folds small segments together later).

Indexing text in Whoosh is pure Python (analysis, then posting writing) and holds one core.
A big run (:data:`CHILD_MIN_DOCUMENTS` documents or more) therefore writes the keyword shards
in child processes, one per core (:func:`keyword_processes`), beside the reading, embedding
and vector writing of the parent: child ``n`` writes part ``n`` of each shard (see
:class:`~mcp_server.stores.keyword.WhooshIndex`), so the work spreads over the machine's
cores. A small run (a watch-mode edit) writes in process, without the second or so a child
takes to start. The children are spawned (not forked: the parent runs the model's and
Chroma's threads), so each imports the parent's main module again: entry points run their
command only under ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
from collections.abc import Sequence
from multiprocessing.context import SpawnProcess
from pathlib import Path
from typing import Protocol

from mcp_server.errors import IngestError
from mcp_server.indexing.build_status import KEYWORD_PHASE
from mcp_server.progress import ProgressSink, SilentProgress
from mcp_server.stores.keyword import KeywordRecord, PartWriter, WhooshIndex

SEGMENT_CHUNKS = 50_000
CHILD_MIN_DOCUMENTS = 2_000
MAX_PROCESSES = 4
QUEUED_BATCHES = 16  # the parent waits when a child is this many batches behind (a segment's commit)
POLL_S = 0.5


class KeywordWriter(Protocol):
    """Takes chunk records in batches and writes them to the shards under one directory."""

    def add(self, records: Sequence[KeywordRecord]) -> None: ...

    def finish(self, progress: ProgressSink) -> None:
        """Write what is still pending (a phase of ``progress``); raises IngestError when writing failed."""
        ...

    def abort(self) -> None:
        """Stop writing; what was not committed is lost (the staged index is discarded anyway)."""
        ...


def open_keyword_writer(path: Path, documents: int) -> KeywordWriter:
    """The writer for a run loading ``documents`` documents: child processes for a big run."""
    if documents >= CHILD_MIN_DOCUMENTS:
        return ProcessKeywordWriter(path, keyword_processes())
    return SegmentWriter(WhooshIndex(path))


def keyword_processes() -> int:
    """Child writers for a big run: one per core (the parent, reading and embedding, needs less than
    a core of its own), at most MAX_PROCESSES."""
    return max(1, min(MAX_PROCESSES, os.cpu_count() or 1))


class SegmentWriter:
    """Writes records to part ``part`` of ``index``'s shards as they come, one open Whoosh writer per
    corpus, committing a segment each time a writer holds ``segment_chunks`` (closes ``index`` when done)."""

    def __init__(self, index: WhooshIndex, segment_chunks: int = SEGMENT_CHUNKS, *, part: int = 0) -> None:
        self._index = index
        self._segment_chunks = segment_chunks
        self._part = part
        self._open: dict[str, PartWriter] = {}
        self.committed = 0

    @property
    def pending(self) -> int:
        """Chunks added and not yet committed."""
        return sum(writer.added for writer in self._open.values())

    def add(self, records: Sequence[KeywordRecord]) -> None:
        by_corpus: dict[str, list[KeywordRecord]] = {}
        for r in records:
            by_corpus.setdefault(r.corpus, []).append(r)
        for corpus, group in by_corpus.items():
            writer = self._open.get(corpus)
            if writer is None:
                writer = self._open[corpus] = self._index.part_writer(corpus, self._part)
            writer.add(group)
            if writer.added >= self._segment_chunks:
                self._commit(corpus)

    def _commit(self, corpus: str) -> None:
        writer = self._open.pop(corpus)
        writer.commit()
        self.committed += writer.added

    def finish(self, progress: ProgressSink) -> None:
        pending = self.pending
        progress.start(KEYWORD_PHASE, pending)
        try:
            for corpus in sorted(self._open):
                self._commit(corpus)
        finally:
            self._index.close()
        progress.advance(pending)

    def abort(self) -> None:
        for writer in self._open.values():
            writer.cancel()
        self._open.clear()


class ProcessKeywordWriter:
    """:class:`SegmentWriter` s in ``processes`` child processes, child ``n`` writing part ``n`` of
    each shard; batches go to the children in turn."""

    def __init__(self, path: Path, processes: int) -> None:
        self._children: list[_Child] = []
        try:
            for part in range(processes):
                self._children.append(_Child(path, part))
        except BaseException:
            self.abort()
            raise
        self._turn = 0

    @property
    def pids(self) -> list[int | None]:
        return [child.process.pid for child in self._children]

    def add(self, records: Sequence[KeywordRecord]) -> None:
        self._children[self._turn].add(records)
        self._turn = (self._turn + 1) % len(self._children)

    def finish(self, progress: ProgressSink) -> None:
        try:
            for child in self._children:
                child.close_input()
            progress.start(KEYWORD_PHASE, sum(child.pending for child in self._children))
            for child in self._children:
                child.wait(progress)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        for child in self._children:
            child.abort()


class _Child:
    """One child process writing part ``part``, fed batches through a bounded queue."""

    def __init__(self, path: Path, part: int) -> None:
        context = multiprocessing.get_context("spawn")  # no fork: the parent runs model and Chroma threads
        self._jobs: multiprocessing.Queue[list[KeywordRecord] | None] = context.Queue(QUEUED_BATCHES)
        self._results: multiprocessing.Queue[tuple[str, int | str]] = context.Queue()
        self.process: SpawnProcess = context.Process(
            target=_write_in_child, args=(str(path), part, self._jobs, self._results),
            name=f"ragmcp-keyword-writer-{part}", daemon=True,
        )  # fmt: skip
        self.process.start()
        self._sent = 0
        self._committed = 0

    @property
    def pending(self) -> int:
        """Chunks sent and not yet reported committed."""
        return self._sent - self._committed

    def add(self, records: Sequence[KeywordRecord]) -> None:
        self._put(list(records))
        self._sent += len(records)
        self._drain(block=False)

    def _put(self, job: list[KeywordRecord] | None) -> None:
        """Queue ``job``, waiting while the child is QUEUED_BATCHES behind (and failing if it died)."""
        while True:
            self._check_alive()
            try:
                self._jobs.put(job, timeout=POLL_S)
                return
            except queue.Full:
                self._drain(block=False)

    def close_input(self) -> None:
        self._put(None)

    def wait(self, progress: ProgressSink) -> None:
        """Until the child is done, advancing ``progress`` by what it commits."""
        while True:
            before = self._committed
            done = self._drain(block=True)
            progress.advance(self._committed - before)
            if done:
                break
        self.process.join()

    def _drain(self, *, block: bool) -> bool:
        """Read the child's reports (waiting up to POLL_S for one when ``block``); True once it is done."""
        while True:
            try:
                kind, value = self._results.get(block=block, timeout=POLL_S if block else None)
            except queue.Empty:
                if block:
                    self._check_alive()
                return False
            if kind == "committed":
                self._committed += int(value)
            elif kind == "done":
                return True
            else:
                self.process.join()
                raise IngestError(f"writing the keyword index failed: {value}")
            block = False

    def _check_alive(self) -> None:
        if not self.process.is_alive():
            self._drain(block=False)  # an error report, if the child sent one
            raise IngestError(
                f"the keyword index writer process stopped (exit code {self.process.exitcode}); "
                "run the ingestion again (a killed run resumes from the embedding cache)"
            )

    def abort(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()


def _write_in_child(
    path: str,
    part: int,
    jobs: multiprocessing.Queue[list[KeywordRecord] | None],
    results: multiprocessing.Queue[tuple[str, int | str]],
) -> None:
    """The child's loop: write each batch, report each commit, and report done (or the error) at the end."""
    try:
        writer = SegmentWriter(WhooshIndex(Path(path)), part=part)
        while (batch := _next_job(jobs)) is not None:
            before = writer.committed
            writer.add(batch)
            if writer.committed > before:
                results.put(("committed", writer.committed - before))
        pending = writer.committed
        writer.finish(SilentProgress())
        results.put(("committed", writer.committed - pending))
        results.put(("done", 0))
    except Exception as error:  # noqa: BLE001 - reported to the parent, which raises it
        results.put(("error", f"{type(error).__name__}: {error}"))



def _next_job(jobs: multiprocessing.Queue[list[KeywordRecord] | None]) -> list[KeywordRecord] | None:
    """The next batch (None: the input is closed); exits the child when its parent is gone (killed
    mid-run), which would otherwise leave it waiting for batches forever."""
    parent = multiprocessing.parent_process()
    while True:
        try:
            return jobs.get(timeout=POLL_S)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                raise SystemExit("the ingesting process is gone") from None
