"""Ingestion against real ChromaDB, Whoosh and SQLite files: incremental, consistent, crash-safe."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_server.embedding.loading import Embedder
from mcp_server.errors import EmbeddingModelMismatchError, IngestError, NotFoundError
from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.stores.vector import ChromaStore
from tests.helpers import make_settings, write_doc


@pytest.fixture
def embedded_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the embedding model is asked to embed during the test (a spy; the model still runs)."""
    seen: list[str] = []
    original = Embedder.embed

    def spy(self: Embedder, texts: list[str]) -> list:  # type: ignore[type-arg]
        seen.extend(texts)
        return original(self, texts)

    monkeypatch.setattr(Embedder, "embed", spy)
    return seen


def test_first_ingest_reports_every_document(tiny_settings: Settings) -> None:
    report = ingest(tiny_settings)
    assert report.generation is not None
    assert [sorted(c.added) for c in report.corpora] == [["alpha", "beta", "gamma"]]
    assert report.chunks_written == 3


def test_reingest_of_unchanged_corpus_embeds_nothing(tiny_settings: Settings, embedded_texts: list[str]) -> None:
    ingest(tiny_settings)
    embedded_texts.clear()
    report = ingest(tiny_settings)
    assert report.generation is None
    assert report.corpora[0].unchanged == 3
    assert embedded_texts == []


def test_rebuild_takes_unchanged_embeddings_from_cache(tiny_settings: Settings, embedded_texts: list[str]) -> None:
    ingest(tiny_settings)
    embedded_texts.clear()
    report = ingest(tiny_settings, rebuild=True)
    assert report.generation is not None and report.chunks_written == 3
    assert embedded_texts == []


def test_changed_document_is_reembedded_alone(
    tiny_settings: Settings, tiny_corpus: Path, embedded_texts: list[str]
) -> None:
    ingest(tiny_settings)
    embedded_texts.clear()
    write_doc(tiny_corpus, "alpha.md", "Alpha", "# Alpha\n\nThe alpha reactor now runs on quaggaword fuel.")
    report = ingest(tiny_settings)
    assert report.corpora[0].changed == ["alpha"] and report.corpora[0].unchanged == 2
    assert len(embedded_texts) == 1 and "quaggaword" in embedded_texts[0]


def test_changed_and_deleted_documents_leave_all_three_stores(tiny_settings: Settings, tiny_corpus: Path) -> None:
    ingest(tiny_settings)
    write_doc(tiny_corpus, "alpha.md", "Alpha", "# Alpha\n\nThe alpha reactor now runs on quaggaword fuel.")
    (tiny_corpus / "gamma.md").unlink()
    report = ingest(tiny_settings)
    assert report.corpora[0].deleted == ["gamma"]

    retriever = Retriever.open(tiny_settings)
    try:
        assert retriever.searcher.search("zebraword", mode="keyword") == []
        assert [h.citation.id for h in retriever.searcher.search("quaggaword", mode="keyword")] == ["tiny:alpha#0"]
        vector_ids = {h.citation.id for h in retriever.searcher.search("lead shielding gamma rays", mode="vector", top_k=10)}
        assert vector_ids == {"tiny:alpha#0", "tiny:beta#0"}
        assert retriever.documents.get_document("tiny:alpha").text.count("quaggaword") == 1
        with pytest.raises(Exception, match="no document"):
            retriever.documents.get_document("tiny:gamma")
        assert retriever.corpora()[0].documents == 2
    finally:
        retriever.close()
    generation = IndexLayout(tiny_settings.index_dir).current()
    assert generation is not None
    store = ChromaStore.embedded(generation / "chroma", Retriever.open(tiny_settings).models)
    assert store.count() == 2
    store.close()


def test_different_embedding_model_is_refused(tiny_settings: Settings, tmp_path: Path) -> None:
    ingest(tiny_settings)
    other_model = tmp_path / "other-model"
    other_model.mkdir()
    from mcp_server.embedding.onnx_model import default_model_files

    model_file, tokenizer_file = default_model_files()
    os.symlink(model_file, other_model / "model.onnx")
    os.symlink(tokenizer_file, other_model / "tokenizer.json")
    other = tiny_settings.updated(**{"embedding_model": f"onnx:{other_model}"})

    with pytest.raises(EmbeddingModelMismatchError, match="ragmcp ingest --rebuild"):
        Retriever.open(other)
    with pytest.raises(EmbeddingModelMismatchError, match="'auto' \\(tiny: minilm-int8\\)"):
        ingest(other)
    ingest(other, rebuild=True)
    retriever = Retriever.open(other)
    assert retriever.manifest.embedding_model.startswith("onnx:")
    retriever.close()


def test_unknown_target_is_a_clear_error(tiny_settings: Settings) -> None:
    with pytest.raises(IngestError, match="neither a folder nor a known corpus; known corpora: tiny"):
        ingest(tiny_settings, ["no-such-corpus"])


def test_a_folder_ingested_by_path_is_served_only_once_configured(tiny_settings: Settings, tmp_path: Path) -> None:
    extra = tmp_path / "notes"
    write_doc(extra, "n1.md", "Note", "A note about the okapi migration.")
    ingest(tiny_settings)
    ingest(tiny_settings, [str(extra)])
    assert ingest(tiny_settings).generation is None  # a full run leaves it in the index, untouched
    retriever = Retriever.open(tiny_settings)
    try:
        assert [c.name for c in retriever.corpora()] == ["tiny"] and retriever.unserved == ["notes"]
        assert retriever.searcher.search("okapi migration", mode="keyword") == []
        with pytest.raises(NotFoundError, match="unknown corpus 'notes'; available: tiny"):
            retriever.documents.get_document("n1", corpus="notes")
    finally:
        retriever.close()

    both = make_settings(tiny_settings.data_dir, *tiny_settings.corpora, extra)
    assert ingest(both).generation is None  # configured again: already indexed, nothing to do
    retriever = Retriever.open(both)
    try:
        assert retriever.searcher.search("okapi", mode="keyword")[0].citation.id == "notes:n1#0"
    finally:
        retriever.close()

    ingest(tiny_settings, rebuild=True)  # a fresh index still holds notes (only `ragmcp corpus remove` drops it)
    retriever = Retriever.open(tiny_settings)
    try:
        assert [c.name for c in retriever.corpora()] == ["tiny"] and retriever.unserved == ["notes"]
    finally:
        retriever.close()


def _search_snapshot(settings: Settings) -> list[list[str]]:
    retriever = Retriever.open(settings)
    try:
        return [
            [f"{h.citation.id}:{h.text}" for h in retriever.searcher.search(q, mode=mode, top_k=5)]
            for q in ("alpha reactor fuel", "quarterly roadmap", "lead shielding")
            for mode in ("vector", "keyword", "hybrid")
        ]
    finally:
        retriever.close()


def _run_ingest_in_subprocess(settings: Settings) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "RAGMCP_DATA_DIR": str(settings.data_dir),
        "RAGMCP_CORPORA": os.pathsep.join(str(p) for p in settings.corpora),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "ingest"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def _wait_for(condition, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


def _cached_vectors(settings: Settings) -> int:
    import sqlite3

    path = settings.embedding_cache_path
    if not path.exists():
        return 0
    with sqlite3.connect(path, timeout=5) as db:
        return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["staging-created", "mid-embedding"])
def test_sigkill_mid_ingest_leaves_previous_index_answering(
    tiny_settings: Settings, tiny_corpus: Path, moment: str
) -> None:
    ingest(tiny_settings)
    before = _search_snapshot(tiny_settings)
    current_before = IndexLayout(tiny_settings.index_dir).current()
    cached_before = _cached_vectors(tiny_settings)
    for i in range(120):  # enough new text that embedding takes several seconds
        write_doc(tiny_corpus, f"bulk/doc{i:03d}.md", f"Bulk {i}", f"Bulk document {i} about topic {i * 7919 % 1000}. " * 12)

    process = _run_ingest_in_subprocess(tiny_settings)
    layout = IndexLayout(tiny_settings.index_dir)
    try:
        if moment == "staging-created":
            _wait_for(lambda: any(layout.root.glob(".staging-*")))
        else:
            _wait_for(lambda: _cached_vectors(tiny_settings) >= cached_before + 64)
        assert process.poll() is None, "ingestion finished before it could be killed"
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()

    assert layout.current() == current_before
    assert _search_snapshot(tiny_settings) == before

    resumed = ingest(tiny_settings)
    assert resumed.generation is not None
    if moment == "mid-embedding":
        assert resumed.chunks_embedded <= resumed.chunks_written - 64
    assert not any(layout.root.glob(".staging-*"))
    retriever = Retriever.open(tiny_settings)
    try:
        assert retriever.corpora()[0].documents == 123
        assert retriever.searcher.search("Bulk document 42", mode="keyword")[0].citation.doc_id == "bulk/doc042"
    finally:
        retriever.close()


def test_an_ingestion_waits_for_the_one_running_and_can_be_stopped(tiny_settings: Settings) -> None:
    import threading

    from filelock import FileLock

    from mcp_server.indexing.ingest import IngestCancelled

    tiny_settings.data_dir.mkdir(parents=True)
    told: list[object] = []
    waiting = threading.Event()
    results: list[str | None] = []

    def on_wait(status: object) -> None:
        told.append(status)
        waiting.set()

    with FileLock(str(tiny_settings.data_dir / "ingest.lock")):  # as another process's ingestion would
        worker = threading.Thread(target=lambda: results.append(ingest(tiny_settings, on_wait=on_wait).generation))
        worker.start()
        assert waiting.wait(60)
        assert told == [None] and worker.is_alive() and IndexLayout(tiny_settings.index_dir).current() is None
    worker.join(120)
    assert results and results[0] is not None
    assert IndexLayout(tiny_settings.index_dir).current_name() == results[0]

    stop = threading.Event()
    with FileLock(str(tiny_settings.data_dir / "ingest.lock")):
        stop.set()
        with pytest.raises(IngestCancelled):
            ingest(tiny_settings, rebuild=True, stop=stop)
    assert IndexLayout(tiny_settings.index_dir).current_name() == results[0]


def _files(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


def test_readers_write_nothing_into_a_published_generation(tiny_settings: Settings) -> None:
    ingest(tiny_settings)
    generation = IndexLayout(tiny_settings.index_dir).current()
    assert generation is not None
    before = _files(generation)
    readers = [Retriever.open(tiny_settings) for _ in range(2)]  # as two worker processes would
    for retriever in readers:
        assert retriever.searcher.search("zebraword fuel", mode="vector")[0].citation.id == "tiny:alpha#0"
        assert retriever.searcher.search("zebraword", mode="hybrid")[0].citation.id == "tiny:alpha#0"
    scratch = [r.vectors._scratch for r in readers]
    for retriever in readers:
        retriever.close()
    assert _files(generation) == before
    assert all(s is not None and not s.exists() for s in scratch)  # the private copies are gone
