"""Index generations: how an index is laid out on disk and swapped atomically.

An index is a series of immutable *generations*, each a directory holding all three
stores (``docstore.sqlite``, ``chroma/``, ``whoosh/``) and a ``manifest.json``. The file
``CURRENT`` names the generation readers use. Ingestion builds the next generation in a
staging directory (a copy of the current one, then changed), and publishes it by renaming
the directory and atomically replacing ``CURRENT``. A reader therefore sees either the old
index or the new one, never a half-built one; a killed ingestion leaves only a staging
directory behind, which the next run deletes.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from mcp_server.errors import EmbeddingModelMismatchError, IndexMissingError

CURRENT = "CURRENT"
MANIFEST = "manifest.json"
STAGING_PREFIX = ".staging-"
KEPT_GENERATIONS = 2  # the current one and the one before, for readers still switching over


@dataclass(frozen=True)
class Manifest:
    """What a generation was built with; readers refuse a generation built by another model."""

    generation: str
    created: str
    embedding_model: str
    dimension: int
    documents: int
    chunks: int

    def check_model(self, model: str) -> None:
        if model != self.embedding_model:
            raise EmbeddingModelMismatchError(
                f"the index was built with embedding model {self.embedding_model!r} ({self.dimension}-d), "
                f"but {model!r} is configured. Either set RAGMCP_EMBEDDING_MODEL back to the model the index "
                "was built with, or rebuild the index with the new model: ragmcp ingest --rebuild"
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

    def require_current(self) -> tuple[Path, Manifest]:
        generation = self.current()
        if generation is None:
            raise IndexMissingError(f"no index at {self.root}; build it with: ragmcp ingest")
        return generation, read_manifest(generation)

    def stage(self, copy_current: bool) -> Path:
        """A new staging directory, optionally seeded with a copy of the current generation."""
        self.root.mkdir(parents=True, exist_ok=True)
        staging = self.root / f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}"
        current = self.current()
        if copy_current and current is not None:
            shutil.copytree(current, staging)
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

    def remove_stale(self) -> None:
        """Delete abandoned staging directories and all but the newest kept generations."""
        if not self.root.is_dir():
            return
        for path in self.root.glob(f"{STAGING_PREFIX}*"):
            shutil.rmtree(path, ignore_errors=True)
        current = self.current()
        generations = sorted(p for p in self.root.glob("gen-*") if p.is_dir())
        for path in generations[:-KEPT_GENERATIONS]:
            if path != current:
                shutil.rmtree(path, ignore_errors=True)


def new_generation_name() -> str:
    """Sortable by creation time: ``gen-<UTC timestamp with microseconds>-<random>``."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now % 1 * 1e6):06d}"
    return f"gen-{stamp}-{uuid.uuid4().hex[:6]}"


def read_manifest(generation: Path) -> Manifest:
    data = json.loads((generation / MANIFEST).read_text(encoding="utf-8"))
    return Manifest(**data)
