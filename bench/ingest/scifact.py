"""Ingestion benchmark on BEIR SciFact: throughput, peak memory, and distance from the embedding floor.

    python bench/ingest/scifact.py            # ~20 min on 2 cores: ingest, bare embedding, re-ingests

Steps, each timed: (1) ingest the 5,183 abstracts into a fresh index (fresh embedding
cache); (2) embed the very same chunk texts with the bare embedder, no stores — the
physical floor; (3) re-ingest with nothing changed; (4) re-ingest after changing 1% of
the documents. Writes bench/ingest/results-scifact.json and prints a Markdown table.
The built index is kept in bench/.cache/scifact/ for the other benchmarks.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import BENCH_DATA, CACHE, REPO, log, write_beir_corpus_folder  # noqa: E402

from mcp_server.progress import stderr_progress  # noqa: E402
from mcp_server.embedding import load_embedder  # noqa: E402
from mcp_server.ingest import EMBED_BATCH, ingest  # noqa: E402
from mcp_server.settings import Settings  # noqa: E402
from mcp_server.stores.docstore import DocumentStore  # noqa: E402
from mcp_server.index import IndexLayout  # noqa: E402


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bare_embedding_seconds(settings: Settings) -> tuple[float, int]:
    """Embed every indexed chunk's embedding text (title + chunk) with the bare model, in length order."""
    generation, _ = IndexLayout(settings.index_dir).require_current()
    store = DocumentStore(generation / "docstore.sqlite", read_only=True)
    texts = []
    for corpus in store.corpora():
        for document in store.documents(corpus.name):
            for chunk in store.chunks(corpus.name, document.doc_id):
                texts.append(f"{document.title}\n{document.text[chunk.char_start:chunk.char_end]}")
    store.close()
    texts.sort(key=len)
    embedder = load_embedder(settings.embedding_model)
    embedder.embed(["warm-up"])
    started = time.perf_counter()
    for start in range(0, len(texts), EMBED_BATCH):
        embedder.embed(texts[start : start + EMBED_BATCH])
    return time.perf_counter() - started, len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--workdir", type=Path, default=CACHE / "scifact")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "ingest" / "results-scifact.json")
    args = parser.parse_args()

    corpus_dir, data_dir = args.workdir / "corpus", args.workdir / "data"
    shutil.rmtree(args.workdir, ignore_errors=True)
    documents = write_beir_corpus_folder(
        args.data / "corpus.jsonl", corpus_dir, "scifact",
        "BEIR SciFact: 5,183 scientific paper abstracts (title + abstract), for claim verification.",
    )
    settings = Settings(data_dir=data_dir, corpora=[corpus_dir])

    log(f"ingesting {documents} documents into a fresh index at {data_dir}")
    with stderr_progress() as progress:
        first = ingest(settings, progress=progress)
    peak = peak_rss_mib()
    log(f"bare embedding of the same chunks")
    bare_seconds, bare_chunks = bare_embedding_seconds(settings)
    assert bare_chunks == first.chunks_written

    log("re-ingest, nothing changed")
    unchanged = ingest(settings)
    changed_files = sorted(corpus_dir.glob("*.md"))[:: 100]
    for path in changed_files:
        path.write_text(path.read_text(encoding="utf-8") + "\nRevised abstract.\n", encoding="utf-8")
    log(f"re-ingest, {len(changed_files)} documents changed")
    with stderr_progress() as progress:
        one_percent = ingest(settings, progress=progress)

    result = {
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "documents": documents,
        "chunks": first.chunks_written,
        "ingest_seconds": round(first.seconds, 1),
        "chunks_per_second": round(first.chunks_written / first.seconds, 1),
        "embed_seconds_inside_ingest": round(first.embed_seconds, 1),
        "bare_embedding_seconds": round(bare_seconds, 1),
        "ratio_ingest_to_bare_embedding": round(first.seconds / bare_seconds, 3),
        "peak_rss_mib": round(peak, 0),
        "reingest_unchanged_seconds": round(unchanged.seconds, 2),
        "reingest_1pct_changed_documents": len(changed_files),
        "reingest_1pct_seconds": round(one_percent.seconds, 1),
        "reingest_1pct_chunks_embedded": one_percent.chunks_embedded,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("| metric | value |\n|---|---|")
    for key, value in result.items():
        if key != "machine":
            print(f"| {key} | {value} |")


if __name__ == "__main__":
    main()
