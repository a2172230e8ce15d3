"""Progress of one long document (issue 37): the chunks being embedded on the terminal, the running build's
position in ``ragmcp status``, and the lines in the order things happen.

A generated Markdown manual of two hundred small chunks is embedded in requests of
:data:`BATCH` texts, so the embedding takes several steps in a few seconds.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_server import progress as progress_module
from mcp_server.cli import main
from mcp_server.indexing.ingest import ingest
from mcp_server.progress import SilentProgress
from mcp_server.settings import Settings
from tests.helpers import wait_for

STEPS = 200
"""Numbered steps in the generated manual: one small chunk each (with the chunking of :func:`long_manual`)."""
BATCH = 4
"""Texts per embedding request (RAGMCP_EMBEDDING_BATCH_SIZE)."""
POSITION = "indexing documents: 0 of 1 documents done; embedding manual.md: chunk "
"""The build's position while the manual's chunks are embedded (the document counts once they are written)."""
EMBEDDING = re.compile(r"embedding manual\.md: chunk ([\d,]+) of ([\d,]+)")


def long_manual(root: Path, steps: int = STEPS) -> Path:
    """A corpus folder holding one long Markdown manual that chunks into ``steps`` small chunks."""
    folder = root / "pumps"
    folder.mkdir(parents=True)
    (folder / "corpus.toml").write_text(
        'name = "pumps"\ndescription = "Pump manuals."\n[chunking]\ntarget_tokens = 24\nmax_tokens = 32\n'
        "overlap_tokens = 4\n",
        encoding="utf-8",
    )
    text = "".join(
        f"Step {n}: check valve {n} and record pressure reading {n * 13} before the next cycle starts.\n\n"
        for n in range(1, steps + 1)
    )
    (folder / "manual.md").write_text(f"---\ntitle: Pump manual\n---\n# Pump manual\n\n{text}", encoding="utf-8")
    return folder


def chunk_positions(text: str) -> list[tuple[int, int]]:
    """Every 'embedding manual.md: chunk N of M' in ``text``, as (N, M)."""
    return [(int(n.replace(",", "")), int(m.replace(",", ""))) for n, m in EMBEDDING.findall(text)]


@pytest.fixture
def ragmcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """``ragmcp ARGS`` in-process on a fresh data dir serving the long manual; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("RAGMCP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGMCP_CORPORA", str(long_manual(tmp_path)))
    monkeypatch.setenv("RAGMCP_DATABASE", "none")
    monkeypatch.setenv("RAGMCP_EMBEDDING_BATCH_SIZE", str(BATCH))

    def run(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(main, list(args))
        return result.exit_code, result.stdout, result.stderr

    return run


def test_ingest_shows_the_chunks_of_one_long_document_being_embedded_on_stderr(
    ragmcp, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setattr(progress_module, "LOG_INTERVAL_S", 0.0)  # every report a line: stderr is not a terminal here
    code, out, err = ragmcp("ingest")
    assert code == 0, err
    assert out == ""
    positions = chunk_positions(err)
    assert len(positions) >= STEPS // BATCH // 2, err
    done, totals = [n for n, _ in positions], {m for _, m in positions}
    assert len(totals) == 1 and totals.pop() >= STEPS and done == sorted(done) and done[-1] == positions[-1][1]
    lines = err.splitlines()
    embedding = [i for i, line in enumerate(lines) if EMBEDDING.search(line)]
    assert all(lines[i].startswith("indexing documents: 0/1, embedding manual.md: chunk ") for i in embedding)
    assert lines.index("indexing documents: 0/1") < embedding[0]  # the document counts once it is embedded
    assert next(i for i, line in enumerate(lines) if line.startswith("indexing documents: 1/1")) > embedding[-1]


def test_the_first_search_says_the_keyword_index_is_written_before_it_says_published(ragmcp) -> None:  # type: ignore[no-untyped-def]
    code, out, err = ragmcp("search", "valve 17 pressure", "-k", "1")
    assert code == 0, err
    assert out.startswith("[pumps:manual#")
    lines = err.splitlines()
    written = next(i for i, line in enumerate(lines) if re.match(r"writing the keyword index: (\d+)/\1\b", line))
    published = next(i for i, line in enumerate(lines) if line.startswith("published gen-"))
    assert written < published, err


class _PausedEmbedding(SilentProgress):
    """Slows each embedding step a little (so the build record, written every 0.5 s, records one), and
    holds the build at the step after the record shows an embedding position, until released."""

    def __init__(self, record: Path) -> None:
        self.record = record
        self.held = threading.Event()
        self.release = threading.Event()

    def detail(self, text: str) -> None:
        if not text.startswith("embedding") or self.held.is_set():
            return
        if self.record.is_file() and "embedding manual.md" in self.record.read_text(encoding="utf-8"):
            self.held.set()
            assert self.release.wait(120)
        else:
            self.release.wait(0.05)


def test_status_shows_how_far_the_running_build_is_inside_the_document(ragmcp) -> None:  # type: ignore[no-untyped-def]
    settings = Settings()  # from the environment the fixture set
    paused = _PausedEmbedding(settings.data_dir / "build.json")
    build = threading.Thread(target=ingest, args=(settings,), kwargs={"progress": paused})
    build.start()
    try:
        assert wait_for(lambda: paused.held.is_set() or not build.is_alive(), 120) and paused.held.is_set()
        code, out, err = ragmcp("status")
        assert code == 0, err
        building = next(line for line in out.splitlines() if line.startswith("building now: "))
        assert building.startswith(f"building now: {POSITION}")
        (done, total), = chunk_positions(building)
        assert 0 < done < total
        code, out, err = ragmcp("status", "--json")
        assert code == 0, err
        status = json.loads(out)
        assert status["built"] is False
        assert status["build"]["phase"] == "indexing documents" and status["build"]["done"] == 0
        assert status["build"]["detail"] == f"embedding manual.md: chunk {done:,} of {total:,}"
        assert status["build"]["position"] == building.removeprefix("building now: ").rsplit(" (process ", 1)[0]
    finally:
        paused.release.set()
        build.join(120)
    code, out, _ = ragmcp("status", "--json")
    assert code == 0 and "build" not in json.loads(out)  # said only while a build runs
