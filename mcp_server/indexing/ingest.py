"""Incremental, crash-safe ingestion of corpus folders into a new index generation.

One run: find what changed (by a fingerprint of each file's bytes and the chunking
pipeline, which a file whose size and modification time are unchanged keeps without being
read: :mod:`mcp_server.stores.fingerprint_cache`), stage a copy of the current generation, remove changed and deleted
documents from all three stores, then stream the new and changed ones through in
batches: chunk, embed (embeddings come from the persistent cache when the same text was
embedded before, and every new batch is committed to that cache at once) and write each
batch to the stores; then publish the staging directory atomically.

If the process is killed at any point, the published generation is untouched and keeps
answering; the next run deletes the staging directory, redoes the bookkeeping and takes
every embedding already computed from the cache.

One ingestion runs at a time per data dir (a file lock); another one (a second server
starting, ``ragmcp ingest``) waits for it, and meanwhile can read how far it is
(:mod:`mcp_server.indexing.build_status`). Without targets, ingestion brings the
configured corpora up to date; other corpora in the index are left as they are (never
served). ``rebuild`` starts a fresh index that still holds every indexed corpus (re-read from
its folder); only :func:`remove_corpora` deletes corpora.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from filelock import FileLock, Timeout

from mcp_server.citation_ids import DocumentRef
from mcp_server.documents.corpus import (
    CorpusConfig,
    SkippedFile,
    SourceFile,
    load_corpus_config,
    scan_corpus,
)
from mcp_server.documents.extract import Extracted, check_chunk_cap
from mcp_server.documents.limits import FileInput, ReadingLimits
from mcp_server.documents.reader_process import DocumentReader
from mcp_server.documents.safe_open import read_inside
from mcp_server.documents.window import TokenWindow, embedding_text, fit_to_window
from mcp_server.embedding.choice import SAMPLE_CHARS, CorpusModels, auto_spec
from mcp_server.embedding.loading import Embedder
from mcp_server.settings.embedding import ENGLISH_MODEL
from mcp_server.errors import IngestError
from mcp_server.indexing.build_status import INDEXING_PHASE, BuildRecord, BuildStatus, read_build_status
from mcp_server.indexing.embedding_models import models_of_index
from mcp_server.indexing.configured import check_unique_name, configured_corpora
from mcp_server.indexing.keyword_writer import KeywordWriter, open_keyword_writer
from mcp_server.indexing.recorded_settings import adopt_recorded
from mcp_server.indexing.generations import (
    STORE_LAYOUT,
    IndexLayout,
    Manifest,
    new_generation_name,
    read_manifest,
)
from mcp_server.indexing.run_report import save_run_report
from mcp_server.progress import ProgressSink, SilentProgress
from mcp_server.settings import Settings
from mcp_server.stores.docstore import (
    DocumentStore,
    StoredChunk,
    StoredCorpus,
    StoredDocument,
    StoredPage,
    StoredSkip,
)
from mcp_server.stores.embedding_cache import EmbeddingCache, text_key
from mcp_server.stores.fingerprint_cache import SETTLED_NS, FingerprintCache
from mcp_server.stores.keyword import KeywordRecord, WhooshIndex
from mcp_server.stores.vector import (
    ChromaStore,
    VectorRecord,
    drop_server_collections,
    open_generation_vectors,
    server_collection_name,
)  # fmt: skip

PIPELINE_VERSION = "6"  # bump when loaders or chunking change what a file turns into (6: chunks cut to the model window)
LOCK_POLL_S = 0.5
BATCH_CHUNKS = 2_000  # chunks read, embedded and written together; bounds the memory of a run


class IngestCancelled(Exception):
    """The ingestion was stopped from another thread; the published index is as it was."""


@dataclass
class CorpusReport:
    name: str
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)  # files left out, each with its reason
    hidden: list[str] = field(default_factory=list)  # hidden entries (names starting with '.'), not looked into
    other_types: Counter[str] = field(default_factory=Counter)  # files passed over for their suffix ('': none)

    def skip_lines(self) -> list[str]:
        """One whole line per skipped file (what, why, what to do), one for all hidden entries and one for
        the files of types not indexed."""
        lines = [f"{self.name}: skipped {skip.source}: {skip.reason}" for skip in self.skipped]
        if self.hidden:
            shown = ", ".join(self.hidden[:5]) + (", ..." if len(self.hidden) > 5 else "")
            lines.append(
                f"{self.name}: {len(self.hidden)} hidden files or folders not indexed "
                f"(names starting with '.'): {shown}"
            )
        if self.other_types:
            lines.append(f"{self.name}: {other_types_line(self.other_types)}")
        return lines


def other_types_line(counts: Counter[str]) -> str:
    """The files passed over for their type, by suffix (most first), and how to have one read as text:
    ``3 files of types not indexed: .log ×2, .bak (...)``."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], not item[0], item[0]))  # files without one last
    shown = ", ".join((suffix or "no suffix") + (f" ×{n}" if n > 1 else "") for suffix, n in ranked[:8])
    line = f"{sum(counts.values())} files of types not indexed: {shown}" + (", ..." if len(ranked) > 8 else "")
    example = next((suffix for suffix, _ in ranked if suffix), None)
    if example is None:
        return line
    hint = f'to have a type read as text, list it in the folder\'s corpus.toml: [documents] include = ["{example}"]'
    return f"{line} ({hint})"


@dataclass(frozen=True)
class _Written:
    """What writing one batch of chunks did."""

    chunks: int
    embedded: int  # vectors computed by the model
    embed_seconds: float


@dataclass
class IngestReport:
    corpora: list[CorpusReport]
    generation: str | None  # None when nothing changed and no new generation was published
    chunks_written: int = 0
    chunks_embedded: int = 0  # embeddings computed by the model (not taken from the cache)
    seconds: float = 0.0
    embed_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # what the run did differently from what was asked

    def add(self, written: _Written) -> None:
        self.chunks_written += written.chunks
        self.chunks_embedded += written.embedded
        self.embed_seconds += written.embed_seconds

    def lines(self) -> list[str]:
        """What the run did, one line per corpus and one for the index, for a terminal or a log."""
        lines = list(self.notes)
        for c in self.corpora:
            lines += c.skip_lines()
            lines.append(
                f"{c.name}: {len(c.added)} added, {len(c.changed)} changed, {len(c.deleted)} deleted, "
                f"{c.unchanged} unchanged" + (f", {len(c.skipped)} skipped" if c.skipped else "")
            )
        if self.generation is None:
            return [*lines, "index is up to date; nothing to do"]
        return [
            *lines,
            f"published {self.generation}: {self.chunks_written} chunks written, {self.chunks_embedded} embedded, "
            f"in {self.seconds:.1f} s",
        ]

    def to_json(self) -> dict[str, Any]:
        """What ``ragmcp status`` shows of the run: counts per corpus, and each skipped file with its reason."""
        return {
            "generation": self.generation,
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
            "corpora": [
                {
                    "name": c.name, "added": len(c.added), "changed": len(c.changed), "deleted": len(c.deleted),
                    "unchanged": c.unchanged, "skipped": [asdict(skip) for skip in c.skipped],
                    "hidden": len(c.hidden), "other_types": dict(c.other_types), "lines": c.skip_lines(),
                }
                for c in self.corpora
            ],
        }  # fmt: skip


@dataclass(frozen=True)
class _PreparedChunk:
    corpus: str
    doc_id: str
    name: str  # the document's file name, for progress
    chunk: int
    text: str
    embed_text: str
    keyword_text: str


def _pipeline_tag(config: CorpusConfig) -> str:
    """What besides a file's bytes decides what it turns into."""
    return f"|pipeline={PIPELINE_VERSION}|chunking={config.chunking!r}"


def file_fingerprint(data: bytes, config: CorpusConfig) -> str:
    """What the index records of a file's bytes read under ``config``: a different one means it is read anew."""
    digest = hashlib.sha256(data)
    digest.update(_pipeline_tag(config).encode())
    return digest.hexdigest()


def _skip_key(fingerprint: str, limits: ReadingLimits) -> str:
    """What a refusal is remembered by: the file and the limits it was refused under (raise one: read again)."""
    return f"{fingerprint}|{limits.tag()}"


def reading_limits(settings: Settings) -> ReadingLimits:
    """The limits files are read within, from the ``RAGMCP_*`` settings."""
    return ReadingLimits(
        max_file_bytes=int(settings.reading.max_file_mb * 1_048_576),
        max_unzipped_bytes=int(settings.reading.max_unzipped_mb * 1_048_576),
        max_sheet_cells=settings.reading.max_sheet_cells,
        max_chunks=settings.reading.max_document_chunks,
        memory_mb=settings.reading.reader_memory_mb,
        file_seconds=settings.reading.read_timeout_s,
        page_seconds=settings.reading.page_timeout_s,
        ocr=settings.reading.ocr == "auto",
        ocr_max_pages=settings.reading.ocr_max_pages,
    )


def resolve_targets(settings: Settings, targets: Sequence[str], known: dict[str, Path]) -> list[CorpusConfig]:
    """Corpus configs for the targets: folders, or names of configured/indexed corpora; none means
    every configured corpus."""
    configured = {cfg.name: cfg for cfg in configured_corpora(settings)}
    if not targets:
        return list(configured.values())
    configs: dict[str, CorpusConfig] = {}
    for target in targets:
        if Path(target).is_dir():
            config = load_corpus_config(Path(target))
        elif target in configured:
            config = configured[target]
        elif target in known and known[target].is_dir():
            config = load_corpus_config(known[target])
        else:
            names = ", ".join(sorted(set(configured) | set(known))) or "none"
            raise IngestError(f"{target!r} is neither a folder nor a known corpus; known corpora: {names}")
        check_unique_name(config, configs.get(config.name))
        configs[config.name] = config
    return list(configs.values())


def _kept_corpora(configs: Sequence[CorpusConfig], known: dict[str, Path]) -> list[CorpusConfig]:
    """The indexed corpora a rebuild was not asked about, re-read from their folders so the fresh
    index keeps them."""
    named = {cfg.name for cfg in configs}
    return [load_corpus_config(root) for name, root in sorted(known.items()) if name not in named and root.is_dir()]


def ingest(
    settings: Settings,
    targets: Sequence[str] = (),
    *,
    rebuild: bool = False,
    progress: ProgressSink | None = None,
    on_wait: Callable[[BuildStatus | None], None] | None = None,
    stop: threading.Event | None = None,
) -> IngestReport:
    """Bring the index up to date with the target corpora (every configured one by default).

    When another ingestion is running on the data dir, this waits for it to finish; ``on_wait``
    is told so once, with how far that one is (None when it cannot tell). Setting ``stop``
    (from another thread) ends the wait or the build with :class:`IngestCancelled`.
    """
    with ingestion_lock(settings, on_wait, stop):
        record = BuildRecord(settings.data_dir)
        try:
            report = _ingest_locked(settings, targets, rebuild, _Watched([record, progress or SilentProgress()], stop))
        finally:
            record.clear()
        save_run_report(settings.data_dir, report.to_json())
        return report


def remove_corpora(
    settings: Settings, names: Sequence[str], *, on_wait: Callable[[BuildStatus | None], None] | None = None
) -> str | None:
    """Publish a generation without the corpora ``names``; returns its name, or None when the index
    holds none of them. Waits for a running ingestion as :func:`ingest` does."""
    with ingestion_lock(settings, on_wait, None):
        layout = IndexLayout(settings.index_dir)
        _drop_vectors_of(settings, layout.remove_stale())
        current = layout.current()
        if current is None:
            return None
        manifest = read_manifest(current)
        settings, _ = adopt_recorded(settings, manifest.settings)  # what is kept stays as it was indexed
        previous = DocumentStore(current / "docstore.sqlite", read_only=True)
        doomed = [c.name for c in previous.corpora() if c.name in names]
        previous.close()
        if not doomed:
            return None
        models, _ = models_of_index(settings, manifest)
        name = new_generation_name()
        collection = server_collection_name(name) if settings.chroma_url is not None else None
        staging = layout.stage(name, copy_current=True, skip=("chroma",) if collection else ())
        vectors = _staging_vectors(staging, collection, current, manifest, models, settings)
        docstore = DocumentStore(staging / "docstore.sqlite")
        keywords = WhooshIndex(staging / "whoosh")
        try:
            for corpus in doomed:
                docstore.remove_corpus(corpus)
                vectors.remove_corpus(corpus)
                keywords.remove_corpus(corpus)
                models.forget(corpus)
            docstore.commit()
        finally:
            docstore.close()
            vectors.close()
            keywords.close()
        return _publish(layout, staging, name, models, collection, settings).generation


@contextmanager
def ingestion_lock(
    settings: Settings, on_wait: Callable[[BuildStatus | None], None] | None, stop: threading.Event | None
) -> Iterator[None]:
    """Hold the data dir's ingestion lock, waiting for another holder first (until ``stop`` is set)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(settings.data_dir / "ingest.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if on_wait is not None:
            on_wait(read_build_status(settings.data_dir))
        while True:
            if stop is not None and stop.is_set():
                raise IngestCancelled("stopped while waiting for another ingestion") from None
            try:
                lock.acquire(timeout=LOCK_POLL_S)
                break
            except Timeout:
                continue
    try:
        yield
    finally:
        lock.release()


class _Watched:
    """Progress to several sinks, stopping the ingestion (IngestCancelled) at the first report after ``stop``."""

    def __init__(self, sinks: Sequence[ProgressSink], stop: threading.Event | None) -> None:
        self._sinks = sinks
        self._stop = stop

    def start(self, phase: str, total: int) -> None:
        self._check()
        for sink in self._sinks:
            sink.start(phase, total)

    def advance(self, amount: int) -> None:
        self._check()
        for sink in self._sinks:
            sink.advance(amount)

    def detail(self, text: str) -> None:
        self._check()
        for sink in self._sinks:
            sink.detail(text)

    def _check(self) -> None:
        if self._stop is not None and self._stop.is_set():
            raise IngestCancelled("ingestion stopped")


def _ingest_locked(settings: Settings, targets: Sequence[str], rebuild: bool, progress: ProgressSink) -> IngestReport:
    started = time.perf_counter()
    layout = IndexLayout(settings.index_dir)
    _drop_vectors_of(settings, layout.remove_stale())
    current = layout.current()
    current_manifest = read_manifest(current) if current is not None else None
    notes: list[str] = []
    if current_manifest is not None and not rebuild:  # a rebuild asked for records this process's settings
        settings, note = adopt_recorded(settings, current_manifest.settings)
        notes += [note] if note else []
    known: dict[str, Path] = {}
    stored_fingerprints: dict[str, dict[str, str]] = {}
    stored_skips: dict[str, dict[str, StoredSkip]] = {}
    stored_corpora: dict[str, StoredCorpus] = {}
    stored_unindexed: dict[str, list[tuple[str, str]]] = {}
    # Vectors move to a Chroma server by copying; back from one, they are rebuilt (from the embedding cache).
    backend_changed = current_manifest is not None and (
        (current_manifest.vector_collection is not None) != (settings.chroma_url is not None)
    )
    rebuild = rebuild or (backend_changed and settings.chroma_url is None)
    rebuild = rebuild or (current_manifest is not None and current_manifest.layout != STORE_LAYOUT)
    if current is not None and current_manifest is not None:
        previous = DocumentStore(current / "docstore.sqlite", read_only=True)
        known = {c.name: Path(c.root) for c in previous.corpora()}
        if not rebuild:
            stored_corpora = {c.name: c for c in previous.corpora()}
            stored_fingerprints = {name: previous.fingerprints(name) for name in known}
            stored_skips = {name: previous.skips(name) for name in known}
            stored_unindexed = previous.unindexed()
        previous.close()
        if rebuild:
            current = current_manifest = None
    models, note = models_of_index(settings, current_manifest)
    notes += [note] if note else []

    configs = resolve_targets(settings, targets, known)
    if rebuild:  # a fresh index still holds every corpus it held: only `ragmcp corpus remove` drops one
        configs += _kept_corpora(configs, known)
    fingerprints = FingerprintCache(settings.fingerprint_cache_path)
    try:
        plans = [
            _plan(cfg, stored_fingerprints.get(cfg.name, {}), stored_skips.get(cfg.name, {}), fingerprints, settings)
            for cfg in configs
        ]
    finally:
        fingerprints.close()
    corpora_changed = any(stored_corpora.get(cfg.name) != _stored_corpus(cfg) for cfg in configs)
    corpora_changed = corpora_changed or any(stored_unindexed.get(p.config.name, []) != p.unindexed() for p in plans)
    reports = [plan.report for plan in plans]
    if current_manifest is not None and current_manifest.pipeline != PIPELINE_VERSION and any(r.changed for r in reports):
        notes.append(_pipeline_note(current_manifest.pipeline))
    unchanged = not corpora_changed and not backend_changed and not any(p.has_changes for p in plans)
    if current is not None and unchanged:
        return IngestReport(corpora=reports, generation=None, seconds=time.perf_counter() - started, notes=notes)

    # Before staging anything: the model must answer (a server may be down), with the index's dimension.
    dimension = models.dimension
    if current_manifest is not None:
        current_manifest.check_dimension(models.identity, dimension)
    name = new_generation_name()
    collection = server_collection_name(name) if settings.chroma_url is not None else None
    staging = layout.stage(name, copy_current=current is not None, skip=("chroma",) if collection else ())
    vectors = _staging_vectors(staging, collection, current, current_manifest, models, settings)
    report = _build(staging, configs, plans, vectors, models, settings, progress)
    report.corpora, report.notes = reports, notes + report.notes
    report.generation = _publish(layout, staging, name, models, collection, settings).generation
    report.seconds = time.perf_counter() - started
    return report


def _pipeline_note(recorded: str | None) -> str:
    """Why every file of an index built by another version of ragmcp is read again."""
    built_by = f"pipeline {recorded}" if recorded is not None else "an older pipeline"
    return (
        f"the index was built by {built_by} and this version of ragmcp reads files differently (pipeline "
        f"{PIPELINE_VERSION}), so every file is read again once; embeddings of unchanged text come from the cache"
    )


def _publish(
    layout: IndexLayout, staging: Path, name: str, models: CorpusModels, collection: str | None, settings: Settings
) -> Manifest:
    """Publish the built ``staging`` directory as generation ``name``, then remove stale generations."""
    docstore = DocumentStore(staging / "docstore.sqlite", read_only=True)
    counts = docstore.counts()
    docstore.close()
    manifest = Manifest(
        generation=name,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        embedding_model=models.identity,
        dimension=models.dimension,
        documents=sum(d for d, _ in counts.values()),
        chunks=sum(c for _, c in counts.values()),
        vector_collection=collection,
        layout=STORE_LAYOUT,
        settings=settings.index_settings(),
        corpus_models=models.recorded(),
        pipeline=PIPELINE_VERSION,
    )
    layout.publish(staging, manifest)
    _drop_vectors_of(settings, layout.remove_stale())
    return manifest


def _staging_vectors(
    staging: Path,
    collection: str | None,
    current: Path | None,
    current_manifest: Manifest | None,
    models: CorpusModels,
    settings: Settings,
) -> ChromaStore:
    """The new generation's vector store: the staged copy of ``chroma/``, or a new collection on
    the Chroma server holding a copy of the current generation's vectors."""
    if collection is None or settings.chroma_url is None:
        return ChromaStore.embedded(staging / "chroma", models)
    store = ChromaStore.on_server(settings.chroma_url, collection, models, create=True)
    if current is not None and current_manifest is not None:
        previous = open_generation_vectors(current, current_manifest.vector_collection, settings.chroma_url, models)
        try:
            store.copy_from(previous)
        except BaseException:
            store.close()
            raise
        finally:
            previous.close()
    return store


def _drop_vectors_of(settings: Settings, generations: Sequence[str]) -> None:
    """Drop the Chroma server collections of removed generations (their directories are gone)."""
    if settings.chroma_url is not None:
        drop_server_collections(settings.chroma_url, generations)


@dataclass
class _Plan:
    config: CorpusConfig
    report: CorpusReport
    to_load: list[SourceFile]  # added and changed documents
    forgotten: list[str] = field(default_factory=list)  # refused files no longer refused as they were

    @property
    def has_changes(self) -> bool:
        return bool(self.report.added or self.report.changed or self.report.deleted)

    def unindexed(self) -> list[tuple[str, str]]:
        """The corpus's files left out of the index, as the docstore lists them for clients."""
        return [(skip.source, skip.reason) for skip in self.report.skipped]


def _plan(
    config: CorpusConfig,
    stored: dict[str, str],
    skips: dict[str, StoredSkip],
    fingerprints: FingerprintCache,
    settings: Settings,
) -> _Plan:
    """What to do for one corpus. A file refused before and unchanged since is reported again, not re-read;
    a file whose size and modification time are those in ``fingerprints`` is not read at all."""
    scan = scan_corpus(config, int(settings.reading.max_file_mb * 1_048_576), settings.data_dir)
    report = CorpusReport(name=config.name, skipped=scan.skipped, hidden=scan.hidden, other_types=scan.other_types)
    to_load: list[SourceFile] = []
    files = []
    root = config.root.resolve()
    cached = fingerprints.under(root)
    fresh: list[tuple[str, str, str]] = []
    tag, now, limits = _pipeline_tag(config), time.time_ns(), reading_limits(settings)
    for source in scan.files:
        path = str(source.path)
        stat = f"{source.size}:{source.mtime_ns}:{source.change_ns}:{source.inode}{tag}"
        recorded = cached.get(path)
        if recorded is not None and recorded[0] == stat:
            fingerprint = recorded[1]
        else:
            try:
                fingerprint = file_fingerprint(read_inside(source.path, root, limits.max_file_bytes), config)
            except IngestError as error:
                report.skipped.append(SkippedFile(source.relpath, _reason(error, source)))
                continue
            if now - source.mtime_ns > SETTLED_NS:
                fresh.append((path, stat, fingerprint))
        files.append(source)
        refused = skips.get(source.doc_id)
        if refused is not None and refused.fingerprint == _skip_key(fingerprint, limits):
            report.skipped.append(SkippedFile(source.relpath, refused.reason))
            continue
        if source.doc_id not in stored:
            report.added.append(source.doc_id)
        elif stored[source.doc_id] != fingerprint:
            report.changed.append(source.doc_id)
        else:
            report.unchanged += 1
            continue
        to_load.append(source)
    fingerprints.update(fresh, cached.keys() - {str(f.path) for f in files})
    present = {f.doc_id for f in files}
    report.deleted = sorted(doc_id for doc_id in stored if doc_id not in present)
    report.skipped.sort(key=lambda skip: skip.source)
    forgotten = [doc_id for doc_id in skips if doc_id not in present]
    return _Plan(config=config, report=report, to_load=to_load, forgotten=forgotten)


def _reason(error: IngestError, source: SourceFile) -> str:
    """A refusal's message without the file's path, which the report puts in front of it."""
    return str(error).removeprefix(str(source.path)).lstrip(": ")


def _stored_corpus(config: CorpusConfig) -> StoredCorpus:
    return StoredCorpus(
        name=config.name, description=config.description, language=config.language, root=str(config.root.resolve())
    )


def _build(
    staging: Path,
    configs: Sequence[CorpusConfig],
    plans: Sequence[_Plan],
    vectors: ChromaStore,
    models: CorpusModels,
    settings: Settings,
    progress: ProgressSink,
) -> IngestReport:
    """Apply the plans to the staged stores (``vectors`` included, which this closes).

    Stale chunks (of deleted and changed documents) leave every store first. Then the
    documents to load stream through in batches of about :data:`BATCH_CHUNKS` chunks: each
    batch is stored, embedded (from the cache where it can be) and written to the vector and
    keyword stores before the next is read, so memory does not grow with the corpus.

    A corpus whose model is not settled yet (``auto``, a corpus new to the index) gets it from its
    declared language at once, or else from its first :data:`SAMPLE_CHARS` characters of text: its
    first documents are held, read but not yet cut to a model's window, until then.

    ``progress`` counts a document once its batch is written, and hears in between which
    document is being read (and its pages) and how far the embedding of a batch is.
    """
    docstore = DocumentStore(staging / "docstore.sqlite")
    caches = _Caches(settings.embedding_cache_path)
    reader = DocumentReader(lambda file, page, pages: progress.detail(f"reading {file.path.name}: page {page} of {pages}"))
    keyword_writer: KeywordWriter | None = None
    report = IngestReport(corpora=[], generation=None)
    try:
        for cfg in configs:
            docstore.put_corpus(_stored_corpus(cfg))
        for plan in plans:
            for doc_id in plan.forgotten:
                docstore.forget_skip(plan.config.name, doc_id)
        deleted = [(p.config.name, d) for p in plans for d in p.report.deleted]
        for corpus, doc_id in deleted:
            docstore.delete_document(corpus, doc_id)
        stale = deleted + [(p.config.name, d) for p in plans for d in p.report.changed]
        for corpus in {c for c, _ in stale}:
            vectors.delete_documents(corpus, [d for c, d in stale if c == corpus])
        keywords = WhooshIndex(staging / "whoosh")
        try:
            keywords.update([f"{c}:{d}" for c, d in stale], [])
        finally:
            keywords.close()

        documents = sum(len(p.to_load) for p in plans)
        keyword_writer = writer = open_keyword_writer(staging / "whoosh", documents)
        progress.start(INDEXING_PHASE, documents)
        batch: list[_PreparedChunk] = []
        loaded = 0  # documents read since the last batch was written

        def store(plan: _Plan, read: _Read) -> None:
            nonlocal batch, loaded
            window = model_window(models.of(plan.config.name))
            batch.extend(_store_document(docstore, plan, read, window, settings))
            loaded += 1
            if len(batch) >= BATCH_CHUNKS:
                report.add(_write_batch(batch, caches, models, vectors, writer, settings, progress))
                progress.advance(loaded)
                batch, loaded = [], 0

        def settle_and_store(plan: _Plan, held: Sequence[_Read]) -> None:
            report.notes.extend(_settle_model(models, plan.config, held))
            for read in held:
                store(plan, read)

        for plan in plans:
            held: list[_Read] = []  # read before the corpus's model is settled
            held_chars = 0
            for source in plan.to_load:
                progress.detail(f"reading {source.path.name}")
                read = _read_document(docstore, plan, source, reader, settings)
                if read is None:
                    loaded += 1
                    continue
                held.append(read)
                held_chars += len(read.text)
                if models.knows(plan.config.name) or plan.config.language is not None or held_chars >= SAMPLE_CHARS:
                    settle_and_store(plan, held)
                    held, held_chars = [], 0
            if held:
                settle_and_store(plan, held)
        if batch:
            report.add(_write_batch(batch, caches, models, vectors, writer, settings, progress))
        if loaded:
            progress.advance(loaded)
        for plan in plans:
            docstore.set_unindexed(plan.config.name, plan.unindexed())
        keyword_writer.finish(progress)
        keyword_writer = None
        docstore.commit()
    finally:
        if keyword_writer is not None:
            keyword_writer.abort()
        reader.close()
        docstore.close()
        caches.close()
        vectors.close()
    return report


def _settle_model(models: CorpusModels, config: CorpusConfig, held: Sequence[_Read]) -> list[str]:
    """Give the corpus ``config`` names the model ``auto`` chooses for it (its declared language, else the
    text ``held``), unless it has one; returns the lines that tell the user which model and why."""
    if models.knows(config.name):
        return []
    sample = "\n".join(read.text[:SAMPLE_CHARS] for read in held)[:SAMPLE_CHARS]
    spec, problem = auto_spec(config.language, sample)
    embedder = models.choose(config.name, spec)
    if problem is not None:
        return [f"{config.name}: {problem}"]
    if spec == ENGLISH_MODEL:
        return []
    why = f"its corpus.toml declares language {config.language!r}" if config.language else "its text is mostly CJK"
    return [f"{config.name}: embedded with {spec} ({embedder.name}), as {why}"]


class _Caches:
    """The embedding cache, opened once per model that embeds in this run."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._open: dict[str, EmbeddingCache] = {}

    def of(self, embedder: Embedder) -> EmbeddingCache:
        if embedder.name not in self._open:
            self._open[embedder.name] = EmbeddingCache(self._path, embedder.name, embedder.dimension)
        return self._open[embedder.name]

    def close(self) -> None:
        for cache in self._open.values():
            cache.close()


def model_window(embedder: Embedder) -> TokenWindow | None:
    """How many tokens ``embedder`` reads and how it counts them, when it says (ONNX models do; servers do not)."""
    if embedder.count_tokens is None or embedder.max_tokens is None:
        return None
    return TokenWindow(embedder.count_tokens, embedder.max_tokens)


def _write_batch(
    batch: Sequence[_PreparedChunk],
    caches: _Caches,
    models: CorpusModels,
    vectors: ChromaStore,
    keywords: KeywordWriter,
    settings: Settings,
    progress: ProgressSink,
) -> _Written:
    """Embed ``batch`` (each chunk by its corpus's model) and write it to the vector and keyword stores."""
    embeddings: dict[int, npt.NDArray[np.float32]] = {}
    computed, seconds = 0, 0.0
    for embedder, corpora in models.groups({c.corpus for c in batch}):
        positions = [i for i, c in enumerate(batch) if c.corpus in corpora]
        vectors_of, n, took = _embed([batch[i] for i in positions], caches.of(embedder), embedder, settings, progress)
        embeddings.update(zip(positions, vectors_of))
        computed, seconds = computed + n, seconds + took
    vectors.add(
        [
            VectorRecord(DocumentRef(c.corpus, c.doc_id, c.chunk).store_key, c.corpus, c.doc_id, c.chunk, embeddings[i])
            for i, c in enumerate(batch)
        ]
    )
    keywords.add(
        [
            KeywordRecord(DocumentRef(c.corpus, c.doc_id, c.chunk).store_key, c.corpus, c.doc_id, c.keyword_text)
            for c in batch
        ]
    )
    return _Written(len(batch), computed, seconds)


@dataclass(frozen=True)
class _Read:
    """A document read and parsed, not yet cut to a model's window nor stored."""

    source: SourceFile
    fingerprint: str
    file: FileInput
    extracted: Extracted

    @property
    def text(self) -> str:
        return self.extracted.document.text


def _read_document(
    docstore: DocumentStore, plan: _Plan, source: SourceFile, reader: DocumentReader, settings: Settings
) -> _Read | None:
    """Read and parse one document, once, from inside its corpus folder (:mod:`mcp_server.documents.safe_open`);
    what is stored later - text and fingerprint - comes from those bytes, whatever the file is by now.
    A file that cannot be read, decoded or parsed, or is not worth indexing, is recorded as refused
    (:func:`_refuse`), and None returned."""
    config = plan.config
    limits = reading_limits(settings)
    fingerprint = ""
    try:
        data = read_inside(source.path, config.root.resolve(), limits.max_file_bytes)
        fingerprint = file_fingerprint(data, config)
        file = FileInput(data, source.path, limits, source.mtime_ns)
        return _Read(source, fingerprint, file, reader.read(file, config.chunking))
    except IngestError as error:
        _refuse(docstore, plan, source, fingerprint, error, limits)
        return None


def _refuse(
    docstore: DocumentStore,
    plan: _Plan,
    source: SourceFile,
    fingerprint: str,
    error: IngestError,
    limits: ReadingLimits,
) -> None:
    """Record ``source`` as refused (replacing what it was before) and report it in the plan."""
    reason = _reason(error, source)
    if fingerprint:
        skip = StoredSkip(source.doc_id, source.relpath, _skip_key(fingerprint, limits), reason)
        docstore.put_skip(plan.config.name, skip)
    plan.report.skipped.append(SkippedFile(source.relpath, reason))
    plan.report.skipped.sort(key=lambda skip: skip.source)
    if source.doc_id in plan.report.added:
        plan.report.added.remove(source.doc_id)
    elif source.doc_id in plan.report.changed:  # indexed before: now out of the index, in all stores
        plan.report.changed.remove(source.doc_id)
        plan.report.deleted.append(source.doc_id)


def _store_document(
    docstore: DocumentStore, plan: _Plan, read: _Read, window: TokenWindow | None, settings: Settings
) -> list[_PreparedChunk]:
    """Store a document read, and return its chunks ready to embed and index. Chunks longer than the
    model's ``window`` are cut again to fit it (:mod:`mcp_server.documents.window`); a document that then
    has too many chunks is refused instead (:func:`_refuse`) and yields none."""
    config, source, extracted = plan.config, read.source, read.extracted
    if window is not None:
        try:
            extracted = fit_to_window(extracted, config.chunking, window)
            check_chunk_cap(read.file, len(extracted.chunks))
        except IngestError as error:
            _refuse(docstore, plan, source, read.fingerprint, error, reading_limits(settings))
            return []
    loaded, chunks = extracted.document, extracted.chunks
    docstore.put_document(
        StoredDocument(
            corpus=config.name, doc_id=source.doc_id, source=source.relpath, title=loaded.title,
            category=loaded.category, tags=loaded.tags, date=loaded.date, url=loaded.url,
            extra=loaded.extra, fingerprint=read.fingerprint, text=loaded.text, page_kind=loaded.page_kind,
        ),
        [
            StoredChunk(
                c.index, c.char_start, c.char_end, c.section, c.location.page, c.location.page_end,
                c.location.line_start, c.location.line_end,
            )
            for c in chunks
        ],
        [StoredPage(*page) for page in extracted.pages],
    )
    prepared = []
    for c in chunks:
        text = loaded.text[c.char_start : c.char_end]
        prepared.append(
            _PreparedChunk(
                corpus=config.name, doc_id=source.doc_id, name=source.path.name, chunk=c.index, text=text,
                embed_text=embedding_text(loaded.title, text),
                keyword_text=f"{loaded.title}\n{c.section}\n{text}",
            )
        )
    return prepared


def _embed(
    chunks: Sequence[_PreparedChunk],
    cache: EmbeddingCache,
    embedder: Embedder,
    settings: Settings,
    progress: ProgressSink,
) -> tuple[list[npt.NDArray[np.float32]], int, float]:
    """Vectors for every chunk, from the cache where possible; returns (vectors, computed, seconds).

    After each request to the model, ``progress`` hears how many of the chunks to compute are done
    (``embedding manual.pdf: chunk 640 of 1,127``).
    """
    keys = [text_key(c.embed_text) for c in chunks]
    found = cache.get_many(keys)
    texts = {key: c.embed_text for key, c in zip(keys, chunks) if key not in found}
    todo = sorted(texts, key=lambda k: len(texts[k]))
    subject = _embedding_subject([c for key, c in zip(keys, chunks) if key in texts]) if todo else ""
    started = time.perf_counter()
    step = settings.embedding.batch_size
    for start in range(0, len(todo), step):
        batch = todo[start : start + step]
        vectors = embedder.embed([texts[k] for k in batch])
        cache.put_many(list(zip(batch, vectors)))
        found.update(zip(batch, vectors))
        progress.detail(f"embedding {subject}: chunk {start + len(batch):,} of {len(todo):,}")
    return [found[k] for k in keys], len(todo), time.perf_counter() - started


def _embedding_subject(chunks: Sequence[_PreparedChunk]) -> str:
    """Whose ``chunks`` (at least one) are being embedded: the one document's file name, or the name of
    the document with the most of them and how many others (``manual.pdf and 37 other documents``)."""
    counts: dict[tuple[str, str], int] = {}
    names: dict[tuple[str, str], str] = {}
    for c in chunks:
        counts[c.corpus, c.doc_id] = counts.get((c.corpus, c.doc_id), 0) + 1
        names[c.corpus, c.doc_id] = c.name
    others = len(counts) - 1
    name = names[max(counts, key=counts.__getitem__)]
    return name if not others else f"{name} and {others:,} other document{'s' if others > 1 else ''}"
