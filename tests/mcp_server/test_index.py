"""Index generations on disk: publishing is atomic, stale directories are cleaned, the current one is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.errors import EmbeddingModelMismatchError, IndexMissingError
from mcp_server.index import IndexLayout, Manifest, new_generation_name, read_manifest


def _manifest(name: str) -> Manifest:
    return Manifest(generation=name, created="2026-01-01T00:00:00+00:00", embedding_model="m", dimension=3,
                    documents=1, chunks=1)


def _publish(layout: IndexLayout, marker: str) -> Path:
    staging = layout.stage(copy_current=True)
    (staging / "marker").write_text(marker)
    return layout.publish(staging, _manifest(new_generation_name()))


def test_missing_index_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(IndexMissingError, match="build it with: ragmcp ingest"):
        IndexLayout(tmp_path / "index").require_current()


def test_publish_switches_current_and_staging_copies_the_previous_generation(tmp_path: Path) -> None:
    layout = IndexLayout(tmp_path / "index")
    first = _publish(layout, "one")
    assert layout.current() == first
    staging = layout.stage(copy_current=True)
    assert (staging / "marker").read_text() == "one" and not (staging / "manifest.json").exists()
    second = layout.publish(staging, _manifest(new_generation_name()))
    assert layout.current() == second and read_manifest(second).generation == second.name
    assert first.exists()  # kept for readers still switching over


def test_remove_stale_keeps_current_and_previous_only(tmp_path: Path) -> None:
    layout = IndexLayout(tmp_path / "index")
    generations = [_publish(layout, str(i)) for i in range(4)]
    abandoned = layout.stage(copy_current=False)
    layout.remove_stale()
    assert not abandoned.exists()
    assert [g.exists() for g in generations] == [False, False, True, True]
    assert layout.current() == generations[-1]


def test_generation_names_sort_by_creation() -> None:
    names = [new_generation_name() for _ in range(50)]
    assert names == sorted(names) and len(set(names)) == 50


def test_manifest_refuses_another_model() -> None:
    with pytest.raises(EmbeddingModelMismatchError, match="built with embedding model 'm' \\(3-d\\)"):
        _manifest("gen-x").check_model("other")
