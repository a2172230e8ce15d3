"""A re-ingestion reads only files whose size, modification or change time changed (the fingerprint cache)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mcp_server.indexing import ingest as ingest_module
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from mcp_server.stores.fingerprint_cache import FingerprintCache


@pytest.fixture
def read_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files ingestion reads (a spy; they are still read), each once however often."""
    seen: list[str] = []
    original = ingest_module.read_inside

    def spy(path: Path, root: Path, max_bytes: int) -> bytes:
        if path.name not in seen:
            seen.append(path.name)
        return original(path, root, max_bytes)

    monkeypatch.setattr(ingest_module, "read_inside", spy)
    return seen


def settle(folder: Path, age_s: float = 60.0) -> None:
    """Give every file a modification time ``age_s`` in the past, as files not being written have."""
    past = time.time() - age_s
    for path in folder.iterdir():
        os.utime(path, (past, past))


def test_a_reingest_with_nothing_changed_reads_no_file(tiny_settings: Settings, read_files: list[str]) -> None:
    settle(tiny_settings.corpora[0])
    ingest(tiny_settings)
    assert sorted(read_files) == ["alpha.md", "beta.md", "gamma.md"]
    read_files.clear()
    report = ingest(tiny_settings)
    assert report.generation is None and report.corpora[0].unchanged == 3
    assert read_files == []


def test_an_edit_of_the_same_size_is_found_by_its_new_modification_time(
    tiny_settings: Settings, read_files: list[str]
) -> None:
    folder = tiny_settings.corpora[0]
    settle(folder)
    ingest(tiny_settings)
    beta = folder / "beta.md"
    text = beta.read_text(encoding="utf-8")
    beta.write_text(text.replace("Tuesday", "Fridays"), encoding="utf-8")  # same length
    os.utime(beta, (time.time() - 30, time.time() - 30))
    read_files.clear()
    report = ingest(tiny_settings)
    assert read_files == ["beta.md"] and report.corpora[0].changed == ["beta"]


def test_a_file_modified_just_before_it_was_read_is_read_again_next_time(
    tiny_settings: Settings, read_files: list[str]
) -> None:
    folder = tiny_settings.corpora[0]
    settle(folder)
    (folder / "gamma.md").touch()  # modified now: a write in the same clock tick could go unseen
    ingest(tiny_settings)
    read_files.clear()
    ingest(tiny_settings)
    assert read_files == ["gamma.md"]


def test_a_new_chunking_configuration_makes_every_file_count_as_changed(
    tiny_settings: Settings, read_files: list[str]
) -> None:
    folder = tiny_settings.corpora[0]
    settle(folder)
    ingest(tiny_settings)
    config = folder / "corpus.toml"
    config.write_text(config.read_text(encoding="utf-8") + "\n[chunking]\ntarget_tokens = 100\n", encoding="utf-8")
    read_files.clear()
    report = ingest(tiny_settings)
    assert sorted(report.corpora[0].changed) == ["alpha", "beta", "gamma"] and len(read_files) == 3


def test_deleted_files_leave_the_cache(tiny_settings: Settings) -> None:
    folder = tiny_settings.corpora[0]
    settle(folder)
    ingest(tiny_settings)
    (folder / "alpha.md").unlink()
    ingest(tiny_settings)
    cache = FingerprintCache(tiny_settings.fingerprint_cache_path)
    try:
        assert sorted(Path(path).name for path in cache.under(folder.resolve())) == ["beta.md", "gamma.md"]
    finally:
        cache.close()


def test_the_cache_keeps_folders_with_a_common_prefix_apart(tmp_path: Path) -> None:
    cache = FingerprintCache(tmp_path / "cache.sqlite")
    try:
        cache.update([("/x/docs/a.md", "1:2", "f1"), ("/x/docs-old/a.md", "1:2", "f2"), ("/x/docs0", "1:2", "f3")], [])
        assert cache.under(Path("/x/docs")) == {"/x/docs/a.md": ("1:2", "f1")}
    finally:
        cache.close()
