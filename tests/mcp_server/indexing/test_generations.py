"""Index generations on disk: publishing is atomic, stale directories are cleaned, the current one is kept."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_server.errors import EmbeddingModelMismatchError, IndexMissingError
from mcp_server.indexing.generations import (
    IndexLayout,
    Manifest,
    new_generation_name,
    read_manifest,
)

HOLD_LEASE = """
import sys, time
from pathlib import Path
from mcp_server.indexing.generations import IndexLayout
generation, _, lease = IndexLayout(Path(sys.argv[1])).lease_current()
print(generation.name, flush=True)
time.sleep(600)
"""


def _manifest(name: str) -> Manifest:
    return Manifest(generation=name, created="2026-01-01T00:00:00+00:00", embedding_model="m", dimension=3,
                    documents=1, chunks=1)


def _publish(layout: IndexLayout, marker: str) -> Path:
    name = new_generation_name()
    staging = layout.stage(name, copy_current=True)
    (staging / "marker").write_text(marker)
    return layout.publish(staging, _manifest(name))


def test_missing_index_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(IndexMissingError, match="build it with: ragmcp ingest"):
        IndexLayout(tmp_path / "index").lease_current()


def test_publish_switches_current_and_staging_copies_the_previous_generation(tmp_path: Path) -> None:
    layout = IndexLayout(tmp_path / "index")
    first = _publish(layout, "one")
    assert layout.current() == first
    name = new_generation_name()
    staging = layout.stage(name, copy_current=True)
    assert (staging / "marker").read_text() == "one" and not (staging / "manifest.json").exists()
    second = layout.publish(staging, _manifest(name))
    assert layout.current() == second and read_manifest(second).generation == second.name
    assert first.exists()  # kept for readers still switching over


def test_remove_stale_keeps_current_and_previous_only(tmp_path: Path) -> None:
    layout = IndexLayout(tmp_path / "index")
    generations = [_publish(layout, str(i)) for i in range(4)]
    abandoned = layout.stage("gen-abandoned", copy_current=False)
    removed = layout.remove_stale()
    assert not abandoned.exists()
    assert [g.exists() for g in generations] == [False, False, True, True]
    assert sorted(removed) == sorted(["gen-abandoned", generations[0].name, generations[1].name])
    assert layout.current() == generations[-1]


def test_a_leased_generation_outlives_its_turn_until_released(tmp_path: Path) -> None:
    layout = IndexLayout(tmp_path / "index")
    first = _publish(layout, "0")
    generation, manifest, lease = layout.lease_current()
    assert (generation, manifest.generation) == (first, first.name)
    later = [_publish(layout, str(i)) for i in range(1, 4)]
    assert layout.remove_stale() == [later[0].name]  # the reader's generation is skipped, not deleted
    assert (first / "marker").read_text() == "0"
    lease.release()
    assert layout.remove_stale() == [first.name]
    assert not first.exists() and [g.exists() for g in later] == [False, True, True]


def test_a_lease_in_another_process_protects_the_generation(tmp_path: Path) -> None:
    layout = IndexLayout(tmp_path / "index")
    first = _publish(layout, "0")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LEASE, str(layout.root)], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == first.name
    try:
        for i in range(3):
            _publish(layout, str(i))
        layout.remove_stale()
        assert first.exists()
    finally:
        holder.kill()  # a dead reader's lease goes with it
        holder.wait()
    layout.remove_stale()
    assert not first.exists()


def test_a_reader_retries_when_its_generation_is_removed_before_it_locks(tmp_path: Path) -> None:
    layout = IndexLayout(tmp_path / "index")
    old = _publish(layout, "old")
    new = _publish(layout, "new")
    reads = iter([old.name, new.name])  # a reader that read CURRENT just before a publish …
    layout.current = lambda: layout.root / next(reads)  # type: ignore[method-assign]
    shutil.rmtree(old)  # … and found the generation gone when it tried to lock it
    generation, _, lease = layout.lease_current()
    assert generation == new
    lease.release()


def test_generation_names_sort_by_creation() -> None:
    names = [new_generation_name() for _ in range(50)]
    assert names == sorted(names) and len(set(names)) == 50


def test_manifest_refuses_vectors_of_another_length() -> None:
    with pytest.raises(EmbeddingModelMismatchError, match="holds 3-dimensional vectors from embedding model 'm'"):
        _manifest("gen-x").check_dimension("m", 4)
