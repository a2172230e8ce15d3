"""The ingestion measurements both ingestion benchmarks share.

Steps, each timed: (1) ingest the corpora into a fresh index (fresh embedding cache);
(2) embed the very same chunk texts with the bare embedder, no stores — the physical
floor; (3) re-ingest with nothing changed; (4) re-ingest after changing 1% of the
documents (at least one), then put them back and re-ingest, so a cached index holds the
real corpus. Peak memory is the process's maximum resident set size.
"""

from __future__ import annotations

import os
import platform
import resource
import time
from pathlib import Path
from typing import Any

from common import log

from mcp_server.indexing.embedding_models import models_of_index
from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.ingest import ingest
from mcp_server.progress import stderr_progress
from mcp_server.settings import Settings
from mcp_server.stores.docstore import DocumentStore


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bare_embedding_seconds(settings: Settings) -> tuple[float, int]:
    """Embed every indexed chunk's embedding text (title + chunk) with the bare model of its corpus, in length order."""
    generation, manifest, lease = IndexLayout(settings.index_dir).lease_current()
    models, _ = models_of_index(settings, manifest)
    store = DocumentStore(generation / "docstore.sqlite", read_only=True)
    texts: dict[str, list[str]] = {}
    for corpus in store.corpora():
        for document in store.documents(corpus.name):
            for chunk in store.chunks(corpus.name, document.doc_id):
                texts.setdefault(corpus.name, []).append(f"{document.title}\n{document.text[chunk.char_start:chunk.char_end]}")
    store.close()
    lease.release()
    seconds = 0.0
    for embedder, corpora in models.groups(texts):
        todo = sorted((text for corpus in corpora for text in texts[corpus]), key=len)
        embedder.embed(["warm-up"])
        started = time.perf_counter()
        step = settings.embedding.batch_size  # as ingestion steps through the texts
        for start in range(0, len(todo), step):
            embedder.embed(todo[start : start + step])
        seconds += time.perf_counter() - started
    return seconds, sum(map(len, texts.values()))


def measure_ingestion(settings: Settings, documents: list[Path]) -> dict[str, Any]:
    """Run the four steps on ``settings`` (a fresh data dir); ``documents`` are the source files (1% get edited)."""
    log(f"ingesting {len(documents)} documents into a fresh index at {settings.data_dir}")
    with stderr_progress() as progress:
        first = ingest(settings, progress=progress)
    peak = peak_rss_mib()
    log("bare embedding of the same chunks")
    bare_seconds, bare_chunks = bare_embedding_seconds(settings)
    assert bare_chunks == first.chunks_written

    log("re-ingest, nothing changed")
    unchanged = ingest(settings)
    changed = sorted(documents)[:: 100]
    originals = {path: path.read_text(encoding="utf-8") for path in changed}
    for path, text in originals.items():
        path.write_text(text + "\nRevised.\n", encoding="utf-8")
    log(f"re-ingest, {len(changed)} documents changed")
    with stderr_progress() as progress:
        one_percent = ingest(settings, progress=progress)
    for path, text in originals.items():
        path.write_text(text, encoding="utf-8")
    log("re-ingest with the changed documents restored")
    ingest(settings)
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_after": os.getloadavg()},
        "documents": len(documents),
        "chunks": first.chunks_written,
        "ingest_seconds": round(first.seconds, 1),
        "chunks_per_second": round(first.chunks_written / first.seconds, 1),
        "embed_seconds_inside_ingest": round(first.embed_seconds, 1),
        "bare_embedding_seconds": round(bare_seconds, 1),
        "ratio_ingest_to_bare_embedding": round(first.seconds / bare_seconds, 3),
        "peak_rss_mib": round(peak, 0),
        "reingest_unchanged_seconds": round(unchanged.seconds, 2),
        "reingest_1pct_changed_documents": len(changed),
        "reingest_1pct_seconds": round(one_percent.seconds, 1),
        "reingest_1pct_chunks_embedded": one_percent.chunks_embedded,
    }


def print_table(result: dict[str, Any]) -> None:
    print("| metric | value |\n|---|---|")
    for key, value in result.items():
        if key != "machine":
            print(f"| {key} | {value} |")
