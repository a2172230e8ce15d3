"""One opened index generation: its lease, its stores, the background copy of its vectors, and scoping.

A process reading a generation holds a lease on it until closed, so ingestion running meanwhile
does not delete it (:class:`~mcp_server.indexing.generations.GenerationLease`).

Opening a generation's embedded vectors means copying its ``chroma/`` directory (2 GB at a
million chunks, seconds): a generation opened with ``vectors_in_background`` answers at once
and copies them on a thread; until the copy is done, a vector or hybrid search waits for it,
while keyword search, documents and counts need no vectors.

A generation serves the configured corpora only (:mod:`mcp_server.indexing.configured`):
another corpus it holds is left out exactly like one out of scope.

A caller may be limited to a *scope*, the set of corpora it may read (a team server's
token grant). Out of scope, a corpus behaves exactly as if it did not exist: it is not
listed, searched or readable, and naming it gets the same answer as an unknown name.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from concurrent.futures import Future
from pathlib import Path
from typing import Self

from mcp_server.embedding.choice import CorpusModels
from mcp_server.errors import BackendUnavailableError, IndexMissingError, NotFoundError
from mcp_server.indexing.configured import configured_names
from mcp_server.indexing.embedding_models import models_of_index
from mcp_server.indexing.generations import STORE_LAYOUT, GenerationLease, IndexLayout, Manifest
from mcp_server.models import MAX_LISTED_SKIPS, CorpusInfo, SkippedFileInfo
from mcp_server.settings import Settings
from mcp_server.stores.docstore import DocumentStore, StoredCorpus
from mcp_server.stores.keyword import WhooshIndex
from mcp_server.stores.vector import ChromaStore, open_generation_vectors


class OpenGeneration:
    """The stores of one leased index generation and the corpora each caller may read. Safe to share between threads."""

    def __init__(
        self, generation: Path, manifest: Manifest, models: CorpusModels, settings: Settings,
        lease: GenerationLease | None = None, *, vectors_in_background: bool = False,
    ) -> None:  # fmt: skip
        """Open ``generation``, whose corpora are embedded by ``models`` (its vectors on a thread if
        ``vectors_in_background``, see the module docstring); ``lease`` (if any) is released by :meth:`close`."""
        if manifest.layout != STORE_LAYOUT:
            raise IndexMissingError(
                f"index generation {generation.name} was built by an older version of ragmcp; "
                "update it (from the embedding cache): ragmcp ingest"
            )
        self.generation = generation
        self.manifest = manifest
        self.settings = settings
        self.models = models
        self._lease = lease
        self.docstore = DocumentStore(generation / "docstore.sqlite", read_only=True)
        self.keywords = WhooshIndex(
            generation / "whoosh", bm25_b=settings.bm25.b, bm25_k1=settings.bm25.k1, idf=settings.bm25.idf,
            common_term_share=settings.bm25.common_term_share,
            common_term_min_chunks=settings.bm25.common_term_min_chunks,
            posting_cache_bytes=settings.retrieval.keyword_cache_mb * 2**20,
        )  # fmt: skip
        stored = {c.name: c for c in self.docstore.corpora()}
        served = configured_names(settings)
        self.served = {name: c for name, c in stored.items() if name in served}
        self.unserved = sorted(set(stored) - served)
        """Corpora in the generation that are not configured: never searched, listed or read."""
        # A published generation never changes, so its counts are read once (a count of a 1M-chunk
        # table takes about 85 ms, too much for every search's listing of what is indexed).
        self._counts = self.docstore.counts()
        self._unindexed = self.docstore.unindexed()
        self._vectors_opened: Future[ChromaStore] = Future()
        if vectors_in_background:
            threading.Thread(target=self._open_vectors, name="open-vectors", daemon=True).start()
            return
        self._open_vectors()
        if self._vectors_opened.exception() is not None:
            self.close()
            self._vectors_opened.result()  # raises it

    def _open_vectors(self) -> None:
        """Open the vector store into ``_vectors_opened``: the store, or what opening it raised."""
        try:
            self._vectors_opened.set_result(self._checked_vectors())
        except BaseException as e:
            self._vectors_opened.set_exception(e)

    def _checked_vectors(self) -> ChromaStore:
        """The generation's vector store, checked to hold every corpus that has chunks."""
        vectors = open_generation_vectors(
            self.generation, self.manifest.vector_collection, self.settings.chroma_url, self.models
        )
        with_vectors = set(vectors.corpora())
        missing = sorted(name for name, (_, chunks) in self._counts.items() if chunks and name not in with_vectors)
        if missing:
            vectors.close()
            raise BackendUnavailableError(
                f"index generation {self.generation.name} has no vectors for corpora {', '.join(missing)}; "
                "rebuild the index: ragmcp ingest --rebuild"
            )
        return vectors

    @property
    def vectors(self) -> ChromaStore:
        """The vector store, once opened (see the module docstring); raises what opening it raised."""
        return self._vectors_opened.result()

    @classmethod
    def open(cls, settings: Settings, *, vectors_in_background: bool = False) -> Self:
        """Open (and lease) the current generation; raises IndexMissingError, EmbeddingModelMismatchError
        or BackendUnavailableError (with ``vectors_in_background``, a vector store's error comes with
        the first vector search instead)."""
        generation, manifest, lease = IndexLayout(settings.index_dir).lease_current()
        try:
            configured_names(settings)  # a missing configured folder: its clear error before the model loads
            models, _ = models_of_index(settings, manifest)
            return cls(generation, manifest, models, settings, lease, vectors_in_background=vectors_in_background)
        except BaseException:
            lease.release()
            raise

    def close(self) -> None:
        """Close the stores (waiting for the vectors to finish opening) and release the lease."""
        self.docstore.close()
        self.keywords.close()
        if self._vectors_opened.exception() is None:
            self._vectors_opened.result().close()
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    # -- corpora ---------------------------------------------------------------------------

    def corpora(self, scope: Collection[str] | None = None) -> list[CorpusInfo]:
        """The corpora within ``scope`` (None: all) with their document and chunk counts."""
        counts = self._counts
        return [
            CorpusInfo(
                name=c.name, description=c.description, language=c.language,
                documents=counts.get(c.name, (0, 0))[0], chunks=counts.get(c.name, (0, 0))[1],
                skipped_count=len(self._unindexed.get(c.name, [])),
                skipped=[
                    SkippedFileInfo(source=source, reason=reason)
                    for source, reason in self._unindexed.get(c.name, [])[:MAX_LISTED_SKIPS]
                ],
            )
            for c in self.readable(scope).values()
        ]

    def readable(self, scope: Collection[str] | None) -> dict[str, StoredCorpus]:
        """The corpora a caller limited to ``scope`` may read (None: every corpus)."""
        if scope is None:
            return self.served
        return {name: c for name, c in self.served.items() if name in scope}

    @staticmethod
    def check_corpus(corpus: str | None, readable: dict[str, StoredCorpus], scope: Collection[str] | None) -> None:
        if corpus is None or corpus in readable:
            return
        if scope is None:
            available = ", ".join(sorted(readable)) or "none (run: ragmcp ingest)"
            raise NotFoundError(f"unknown corpus {corpus!r}; available: {available}")
        # Unknown or not granted: the same answer, so a client cannot probe for other teams' corpora.
        raise NotFoundError(f"unknown corpus {corpus!r}; this client may read: {', '.join(sorted(readable)) or 'none'}")
