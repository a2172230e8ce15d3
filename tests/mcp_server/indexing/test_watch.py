"""Watch mode with real processes, real files and fresh data dirs: ``ragmcp watch`` and ``ragmcp serve --watch``.

Every wait polls with a deadline; how many generations were published is read from the
watcher's own report lines ("published gen-...") and checked against ``CURRENT``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.watch import is_relevant
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from tests.helpers import subprocess_env, wait_for, write_doc
from tests.mcp_server.surface.mcp_contract import text_of
from tests.mcp_server.team.test_http import HttpServer

CHANGE_DEADLINE_S = 10.0  # a change must be searchable this soon after the file was written
START_DEADLINE_S = 120.0  # the first start builds the index
PUBLISHED = re.compile(r"published (gen-\S+)")


class WatchProcess:
    """``ragmcp watch`` in a subprocess; its stderr lines are collected as they come."""

    def __init__(self, settings: Settings) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_server", "watch"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=subprocess_env(settings), text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()
        self.wait_for(lambda line: "for changes" in line, START_DEADLINE_S)

    def _pump(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, matches: Callable[[str], bool], timeout_s: float, start: int = 0) -> int:
        """The index of the first line from ``start`` on that ``matches``, waiting up to ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                for index in range(start, len(self.lines)):
                    if matches(self.lines[index]):
                        return index
                left = deadline - time.monotonic()
                assert left > 0 and self.process.poll() is None, "\n".join(self.lines)
                self._changed.wait(left)

    def published(self, start: int = 0) -> list[str]:
        """The generations reported published in the lines from ``start`` on."""
        return [m.group(1) for line in self.lines[start:] if (m := PUBLISHED.search(line))]

    def stop(self) -> None:
        self.process.terminate()
        assert self.process.wait(timeout=30) == 0, "\n".join(self.lines)
        assert self.process.stdout is not None and self.process.stdout.read() == ""  # results only, and none


def searched(settings: Settings, query: str) -> list[str]:
    """The citation ids a keyword search of the current index returns."""
    retriever = Retriever.open(settings)
    try:
        return [hit.citation.id for hit in retriever.searcher.search(query, mode="keyword", top_k=5)]
    finally:
        retriever.close()


def save_like_an_editor(path: Path, text: str) -> None:
    """One save the way vim does it: swap file, backup copy, new content written beside and renamed over."""
    swap = path.with_name(f".{path.name}.swp")
    swap.write_text("swap " + text, encoding="utf-8")
    if path.exists():
        shutil.copyfile(path, path.with_name(path.name + "~"))
    fresh = path.with_name(f".{path.name}.tmp")
    fresh.write_text(text, encoding="utf-8")
    os.replace(fresh, path)
    swap.unlink()


@pytest.fixture
def watch_settings(tmp_path: Path, tiny_corpus: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", corpora=[tiny_corpus])


def test_what_counts_as_a_document_change(tmp_path: Path) -> None:
    root, data = tmp_path / "notes", tmp_path / "notes" / "index-data"
    (root / "sub").mkdir(parents=True)
    relevant = ["a.md", "sub/b.txt", "c.PDF", "d.html", "e.png", "corpus.toml", "sub", "gone-folder"]
    ignored = [
        ".a.md.swp", "a.md~", ".#a.md", "#a.md#", ".git/config", ".hidden/a.md", "index-data/CURRENT",
        "index-data/index/gen-1/docstore.sqlite", "a.zip", "sub/notes.swp", "4913.tmp",
    ]  # fmt: skip
    assert [p for p in relevant if not is_relevant(root / p, root, data)] == []
    assert [p for p in ignored if is_relevant(root / p, root, data)] == []


@pytest.mark.slow
def test_an_editor_burst_of_20_saves_publishes_one_generation(tiny_corpus: Path, watch_settings: Settings) -> None:
    watcher = WatchProcess(watch_settings)
    try:
        assert len(watcher.published()) == 1  # the first catch-up built the index
        burst = len(watcher.lines)
        beta = tiny_corpus / "beta.md"
        for version in range(20):
            save_like_an_editor(beta, f"# Beta\n\nBeta teams now meet in room marmot{version}word.\n")
            time.sleep(0.02)  # the pace of an editor's autosave, not a wait for the watcher
        watcher.wait_for(lambda line: "published" in line, CHANGE_DEADLINE_S, burst)
        assert searched(watch_settings, "marmot19word") == ["tiny:beta#0"]
        assert searched(watch_settings, "marmot18word") == []
        sentinel = len(watcher.lines)  # a later change, so that any extra generation of the burst shows before it
        write_doc(tiny_corpus, "gamma.md", "Gamma", "# Gamma\n\nGamma rays are stopped by wombatword shielding.")
        watcher.wait_for(lambda line: "published" in line, CHANGE_DEADLINE_S, sentinel)
        published = watcher.published(burst)
        assert len(published) == 2, "\n".join(watcher.lines[burst:])
        assert IndexLayout(watch_settings.index_dir).current_name() == published[-1]
    finally:
        watcher.stop()


@pytest.mark.slow
def test_ignored_files_a_data_dir_inside_and_touches_publish_nothing(tmp_path: Path, tiny_corpus: Path) -> None:
    settings = Settings(data_dir=tiny_corpus / "index-data", corpora=[tiny_corpus])  # the index inside the folder
    watcher = WatchProcess(settings)
    try:
        start = len(watcher.lines)
        (tiny_corpus / ".alpha.md.swp").write_text("swap", encoding="utf-8")
        (tiny_corpus / "alpha.md~").write_text("backup", encoding="utf-8")
        (tiny_corpus / ".#alpha.md").write_text("lock", encoding="utf-8")
        (tiny_corpus / "archive.zip").write_bytes(b"PK not a document")
        os.utime(tiny_corpus / "beta.md")  # touched, bytes unchanged
        touched = watcher.wait_for(lambda line: "nothing to publish" in line, CHANGE_DEADLINE_S, start)
        write_doc(tiny_corpus, "alpha.md", "Alpha", "# Alpha\n\nThe alpha reactor now runs on okapiword fuel.")
        done = watcher.wait_for(lambda line: "published" in line, CHANGE_DEADLINE_S, touched + 1)
        assert searched(settings, "okapiword") == ["tiny:alpha#0"]
        assert len(watcher.published(start)) == 1
        # Publishing wrote into the data dir inside the folder: if that counted as a change, updates would
        # follow every publish. None may come within three debounce periods (the bounded wait is the check).
        with pytest.raises(AssertionError):
            watcher.wait_for(lambda line: "tiny:" in line, 3 * settings.watch.debounce_s, done + 1)
    finally:
        watcher.stop()


@pytest.fixture
def two_folders(tmp_path: Path, tiny_corpus: Path) -> Iterator[tuple[Path, Settings, WatchProcess]]:
    """A second folder, "other", beside the tiny corpus, and ``ragmcp watch`` following both."""
    other = tmp_path / "other"
    write_doc(other, "otter.md", "Otter", "# Otter\n\nOtters hold hands while they sleep.")
    settings = Settings(data_dir=tmp_path / "data", corpora=[tiny_corpus, other])
    watcher = WatchProcess(settings)
    yield other, settings, watcher
    watcher.stop()


def save_and_wait(watcher: WatchProcess, settings: Settings, folder: Path, doc_id: str, word: str, did: str) -> None:
    """Save a document holding ``word`` into ``folder``; the watcher must report ``did`` for it ("1 added")
    and publish, and a search for ``word`` find it, within the deadline."""
    start = len(watcher.lines)
    write_doc(folder, f"{doc_id}.md", doc_id.title(), f"# {doc_id.title()}\n\nThis page mentions {word} once.")
    corpus = folder.name
    watcher.wait_for(lambda line: f"{corpus}: {did}" in line and "published" in line, CHANGE_DEADLINE_S, start)
    assert searched(settings.model_copy(update={"corpora": [folder]}), word) == [f"{corpus}:{doc_id}#0"]


@pytest.mark.slow
def test_a_removed_folder_is_reported_and_watched_again_when_back(
    tiny_corpus: Path, two_folders: tuple[Path, Settings, WatchProcess]
) -> None:
    other, settings, watcher = two_folders
    start = len(watcher.lines)
    shutil.rmtree(other)
    watcher.wait_for(lambda line: f"folder {other} is gone" in line, CHANGE_DEADLINE_S, start)
    save_and_wait(watcher, settings, tiny_corpus, "delta", "quokkaword", "1 added")
    # watched again, and "changed": the vanished folder's documents stayed in the index
    save_and_wait(watcher, settings, other, "otter", "kelpword", "1 changed")


@pytest.mark.slow
def test_a_broken_folder_is_reported_retried_and_holds_back_no_other(
    tiny_corpus: Path, two_folders: tuple[Path, Settings, WatchProcess]
) -> None:
    other, settings, watcher = two_folders
    start = len(watcher.lines)
    (other / "corpus.toml").write_text('name = "Other Name"\ndescription = "x"\n', encoding="utf-8")
    save_and_wait(watcher, settings, tiny_corpus, "delta", "quokkaword", "1 added")
    watcher.wait_for(lambda line: f"could not update {other}" in line and "not valid" in line, 30, start)
    fixed = len(watcher.lines)
    (other / "corpus.toml").write_text('name = "other"\ndescription = "Otter facts."\n', encoding="utf-8")
    watcher.wait_for(lambda line: line.endswith("nothing to publish") or "published" in line, 30, fixed)
    assert not any("could not update" in line for line in watcher.lines[fixed:])


async def _wait_until_found(client: Client, query: str, found: Callable[[str], bool], written: float) -> None:
    """Search until ``found(text of the result)``, failing CHANGE_DEADLINE_S after the file was written."""
    with anyio.fail_after(max(0.0, written + CHANGE_DEADLINE_S - time.monotonic())):
        while True:
            result = await client.call_tool("keyword_search", {"query": query, "top_k": 3})
            assert not result.is_error, text_of(result)
            if found(text_of(result)):
                return
            await anyio.sleep(0.1)


@pytest.mark.slow
@pytest.mark.anyio
async def test_serve_http_watch_edits_adds_and_deletes_are_searchable_within_10_s(
    tmp_path: Path, tiny_corpus: Path
) -> None:
    settings = Settings.from_names(data_dir=tmp_path / "data", corpora=[tiny_corpus], reload_interval_s=0.2)
    server = HttpServer(settings, tmp_path / "stderr.log", "--watch")
    try:
        async with Client(f"{server.url}/mcp") as client:
            assert "tiny:alpha#0" in text_of(await client.call_tool("keyword_search", {"query": "zebraword"}))
            # the start-up reconciliation (a child process) is done, so the watcher publishes each change below
            assert wait_for(lambda: "INFO mcp_server.indexing.background: " in server.log.read_text(), 60)

            write_doc(tiny_corpus, "alpha.md", "Alpha", "# Alpha\n\nThe alpha reactor now runs on quaggaword fuel.")
            await _wait_until_found(client, "quaggaword", lambda text: "tiny:alpha#0" in text, time.monotonic())
            assert "tiny:alpha" not in text_of(await client.call_tool("keyword_search", {"query": "zebraword"}))

            write_doc(tiny_corpus, "notes/delta.md", "Delta", "# Delta\n\nDelta squads train with the okapiword drill.")
            await _wait_until_found(client, "okapiword", lambda text: "tiny:notes/delta#0" in text, time.monotonic())

            (tiny_corpus / "gamma.md").unlink()
            await _wait_until_found(client, "shielding", lambda text: "tiny:gamma" not in text, time.monotonic())
    finally:
        # One uvicorn worker re-raises SIGTERM once it has shut down gracefully.
        assert server.stop() in (0, -signal.SIGTERM), server.log.read_text()
    updates = [line for line in server.log.read_text().splitlines() if "; published gen-" in line]
    # one generation per change (besides the first build of the index at start), each a line of its own
    assert [sum(f"tiny: 1 {did};" in line for line in updates) for did in ("changed", "added", "deleted")] == [1, 1, 1], updates
