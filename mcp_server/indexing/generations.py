"""Index generations: how an index is laid out on disk and swapped atomically.

An index is a series of immutable *generations*, each a directory holding all three
stores and a ``manifest.json``:

* ``docstore.sqlite``: documents, chunk spans and metadata of every corpus;
* ``whoosh/<corpus>/``: one Whoosh keyword index (a *shard*) per corpus;
* ``chroma/``: one ChromaDB collection per corpus (``corpus-<hash of the name>``).

Per-corpus shards keep each corpus's search statistics and ANN graph its own (a search
over some corpora depends on nothing else), and let a corpus be dropped whole. The
manifest's ``layout`` says which arrangement a generation has (:data:`STORE_LAYOUT`);
an older one is rebuilt by the next ``ragmcp ingest``. The file
``CURRENT`` names the generation readers use. Ingestion builds the next generation in a
staging directory (a copy of the current one, then changed), and publishes it by renaming
the directory and atomically replacing ``CURRENT``. A reader therefore sees either the old
index or the new one, never a half-built one; a killed ingestion leaves only a staging
directory behind, which the next run deletes.

A process reading a generation holds a :class:`GenerationLease` on it (a shared ``flock`` on
its manifest, released automatically if the process dies). Ingestion keeps the current and
the previous generation and deletes older ones only when no reader holds a lease, so a
long-running server never loses the files under its feet; a generation skipped because it
was leased is deleted by a later run. A generation whose vectors live on a Chroma server
names its collections' prefix in the manifest (``vector_collection``) instead of holding ``chroma/``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mcp_server.errors import EmbeddingModelMismatchError, IndexMissingError

CURRENT = "CURRENT"
MANIFEST = "manifest.json"
STAGING_PREFIX = ".staging-"
REMOVING_PREFIX = ".removing-"
OPEN_ATTEMPTS = 5  # a reader retries when ingestion removed the generation it was about to lease
KEPT_GENERATIONS = 2  # the current one and the one before, for readers still switching over
STORE_LAYOUT = 2  # 1: one keyword index and one vector collection for all corpora; 2: one of each per corpus


@dataclass(frozen=True)
class Manifest:
    """What a generation was built with; readers refuse a generation built by another model."""

    generation: str
    created: str
    embedding_model: str  # ``auto`` (each corpus's model in corpus_models), or the one model's name
    dimension: int
    documents: int
    chunks: int
    vector_collection: str | None = None  # the Chroma server collections' name prefix; None: embedded in chroma/
    layout: int = 1  # how the stores are arranged (STORE_LAYOUT when written by this version)
    settings: dict[str, Any] | None = None  # the INDEX_SETTINGS it was built with; None: not recorded (older version)
    corpus_models: dict[str, str] | None = None  # with ``auto``: each corpus's model spec (mcp_server.embedding.choice)
    pipeline: str | None = None  # the ingestion pipeline version that read its files; None: 5 or older

    def check_dimension(self, model: str, dimension: int) -> None:
        """Refuse vectors of another length than the index holds (another model answering under ``model``'s name)."""
        if dimension != self.dimension:
            raise EmbeddingModelMismatchError(
                f"the index holds {self.dimension}-dimensional vectors from embedding model {model!r}, but it now "
                f"returns {dimension}-dimensional ones: another model answers under that name. Serve the model the "
                "index was built with, or rebuild the index with this one: ragmcp ingest --rebuild"
            )


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomically(path: Path, content: str) -> None:
    """Write via a temporary file, fsync, rename: the file is either old or new, never torn."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(content)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class GenerationLease:
    """A shared lock on one generation, held while this process reads it; ingestion won't delete it.

    Raises FileNotFoundError when the generation is gone (removed before the lock was taken).
    """

    def __init__(self, generation: Path) -> None:
        self.generation = generation
        manifest = generation / MANIFEST
        self._fd: int | None = os.open(manifest, os.O_RDONLY)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_SH)
            if os.stat(manifest).st_ino != os.fstat(self._fd).st_ino:  # renamed away while we waited
                raise FileNotFoundError(manifest)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None


def _remove_unless_leased(generation: Path) -> bool:
    """Delete a generation no reader holds a lease on; True when it was deleted.

    The exclusive lock is held only while the directory is renamed out of the way, so a reader
    waiting for its shared lock finds the manifest gone and retries with the current generation.
    """
    try:
        fd = os.open(generation / MANIFEST, os.O_RDONLY)
    except FileNotFoundError:  # not a complete generation (a crash between publish steps)
        shutil.rmtree(generation, ignore_errors=True)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    try:
        doomed = generation.with_name(f"{REMOVING_PREFIX}{generation.name}")
        os.rename(generation, doomed)
    finally:
        os.close(fd)
    shutil.rmtree(doomed, ignore_errors=True)
    return True


class IndexLayout:
    """The generations under one index directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def current(self) -> Path | None:
        """The published generation's directory, or None when nothing was ever published."""
        try:
            name = (self.root / CURRENT).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return self.root / name

    def current_name(self) -> str | None:
        """The name of the published generation (a cheap read of ``CURRENT``), or None."""
        current = self.current()
        return current.name if current is not None else None

    def lease_current(self) -> tuple[Path, Manifest, GenerationLease]:
        """The current generation with a lease on it, which the caller releases when done reading."""
        for _ in range(OPEN_ATTEMPTS):
            generation = self.current()
            if generation is None:
                raise IndexMissingError(f"no index at {self.root}; build it with: ragmcp ingest")
            try:
                lease = GenerationLease(generation)
            except FileNotFoundError:
                continue  # removed between reading CURRENT and locking: CURRENT has moved on
            return generation, read_manifest(generation), lease
        raise IndexMissingError(f"the index at {self.root} kept changing while being opened; try again")

    def stage(self, name: str, copy_current: bool, skip: tuple[str, ...] = ()) -> Path:
        """A staging directory for generation ``name``, optionally seeded with a copy of the
        current generation (less the top-level entries in ``skip``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        staging = self.root / f"{STAGING_PREFIX}{name}"
        current = self.current()
        if copy_current and current is not None:
            shutil.copytree(current, staging, ignore=lambda folder, _: skip if folder == str(current) else ())
            (staging / MANIFEST).unlink()
        else:
            staging.mkdir()
        return staging

    def publish(self, staging: Path, manifest: Manifest) -> Path:
        """Make a fully built staging directory the current generation."""
        write_file_atomically(staging / MANIFEST, json.dumps(asdict(manifest), indent=2))
        generation = self.root / manifest.generation
        os.rename(staging, generation)
        _fsync_dir(self.root)
        write_file_atomically(self.root / CURRENT, manifest.generation + "\n")
        return generation

    def remove_stale(self) -> list[str]:
        """Delete abandoned staging directories and all but the newest kept generations, except
        generations a reader holds a lease on. Returns the names of the generations removed
        (abandoned staging ones included), whose other resources the caller may drop."""
        if not self.root.is_dir():
            return []
        removed = []
        for path in self.root.glob(f"{STAGING_PREFIX}*"):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name.removeprefix(STAGING_PREFIX))
        for path in self.root.glob(f"{REMOVING_PREFIX}*"):  # a removal interrupted by a crash
            shutil.rmtree(path, ignore_errors=True)
        current = self.current()
        generations = sorted(p for p in self.root.glob("gen-*") if p.is_dir())
        for path in generations[:-KEPT_GENERATIONS]:
            if path != current and _remove_unless_leased(path):
                removed.append(path.name)
        return removed


def new_generation_name() -> str:
    """Sortable by creation time: ``gen-<UTC timestamp with microseconds>-<random>``."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now % 1 * 1e6):06d}"
    return f"gen-{stamp}-{uuid.uuid4().hex[:6]}"


def read_manifest(generation: Path) -> Manifest:
    data = json.loads((generation / MANIFEST).read_text(encoding="utf-8"))
    return Manifest(**data)
