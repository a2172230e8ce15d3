"""The vector store: chunk embeddings in ChromaDB collections (cosine space), one per corpus.

Each corpus has a collection (and so an HNSW graph) of its own, named by a hash of the
corpus name (:func:`collection_name`) and holding the name in its metadata. A search
queries the collections of exactly the corpora it searches and merges their neighbours,
so which neighbours are found never depends on another corpus's vectors.

The collections are either embedded (a ``PersistentClient`` on the generation's ``chroma/``
directory, :meth:`ChromaStore.embedded`) or on a Chroma server (``chroma run``, reached
with an ``HttpClient``, :meth:`ChromaStore.on_server`), where each index generation has
collections of its own, their names starting with :func:`server_collection_name`.

ChromaDB writes into an embedded collection's directory even to read it (a row in its
SQLite file on open, the HNSW files when it loads them), so a published generation's
vectors are never opened in place: each reader queries a private copy
(:meth:`ChromaStore.private_copy`), which keeps the published files read-only and safe to
share between worker processes and hosts.
"""

from __future__ import annotations

import copy
import hashlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import chromadb
import numpy as np
import numpy.typing as npt
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import NotFoundError as ChromaNotFoundError

from mcp_server.embedding.choice import CorpusModels
from mcp_server.errors import BackendUnavailableError

EMBEDDED_PREFIX = "corpus"
SERVER_COLLECTION_PREFIX = "ragmcp-"
ADD_BATCH = 1000
CONFIGURATION: Any = {"hnsw": {"space": "cosine", "num_threads": 1}}  # one thread: the same graph every time


@dataclass(frozen=True)
class VectorRecord:
    """One chunk as the vector store keeps it: no text (the docstore has it, and Chroma would
    spend half its writing time and three quarters of its disk on a full-text index of it)."""

    id: str  # the citation id
    corpus: str
    doc_id: str
    chunk: int
    embedding: npt.NDArray[np.float32]


class ChromaStore:
    """Adds, deletes and queries chunk vectors in one collection per corpus; filters by document key."""

    def __init__(
        self, client: ClientAPI, prefix: str, models: CorpusModels, *, create: bool, scratch: Path | None = None
    ) -> None:
        """Open the collections named ``<prefix>-<hash>`` through ``client``, each with its corpus's model from
        ``models``; ``scratch`` is a directory to delete on close. A reader (``create=False``) requires at least
        one collection or ``prefix`` to be marked as present (see :meth:`on_server`)."""
        self._client = client
        self._scratch = scratch
        self._prefix = prefix
        self._models = models
        self._create = create
        self._collections: dict[str, Collection] = {}
        for collection in client.list_collections():
            if collection.name.startswith(f"{prefix}-") and collection.metadata and "corpus" in collection.metadata:
                corpus = str(collection.metadata["corpus"])
                self._collections[corpus] = client.get_collection(
                    collection.name, embedding_function=models.of(corpus).function  # type: ignore[arg-type]
                )

    @classmethod
    def embedded(cls, path: Path, models: CorpusModels) -> ChromaStore:
        """The collections in a generation's own ``chroma/`` directory (created if missing)."""
        client = chromadb.PersistentClient(path=str(path), settings=ChromaSettings(anonymized_telemetry=False))
        return cls(client, EMBEDDED_PREFIX, models, create=True)

    @classmethod
    def private_copy(cls, path: Path, models: CorpusModels) -> ChromaStore:
        """A copy of the embedded collections at ``path`` in the temporary directory, deleted on close."""
        scratch = Path(tempfile.mkdtemp(prefix="ragmcp-vectors-"))
        try:
            shutil.copytree(path, scratch, dirs_exist_ok=True)
            client = chromadb.PersistentClient(path=str(scratch), settings=ChromaSettings(anonymized_telemetry=False))
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        return cls(client, EMBEDDED_PREFIX, models, create=False, scratch=scratch)

    @classmethod
    def on_server(cls, url: str, prefix: str, models: CorpusModels, *, create: bool = False) -> ChromaStore:
        """The collections named ``<prefix>-<hash>`` on the Chroma server at ``url``."""
        return cls(connect_server(url), prefix, models, create=create)

    def close(self) -> None:
        self._client.close()  # type: ignore[attr-defined]  # in chromadb 1.x, missing from ClientAPI's stubs
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def corpora(self) -> list[str]:
        """The corpora with a collection, sorted."""
        return sorted(self._collections)

    def count(self) -> int:
        return sum(c.count() for c in self._collections.values())

    def _collection(self, corpus: str) -> Collection:
        """``corpus``'s collection, created on first use (a writer only)."""
        if corpus not in self._collections:
            if not self._create:
                raise RuntimeError(f"read-only vector store has no collection for corpus {corpus!r}")
            self._collections[corpus] = self._client.get_or_create_collection(
                collection_name(self._prefix, corpus), embedding_function=self._models.of(corpus).function,  # type: ignore[arg-type]
                configuration=copy.deepcopy(CONFIGURATION),  # Chroma adds the function to the dict it gets
                metadata={"corpus": corpus},
            )  # fmt: skip
        return self._collections[corpus]

    def copy_from(self, source: ChromaStore) -> None:
        """Add every record of ``source`` (ids, vectors, metadata) to this store, corpus by corpus."""
        for corpus, collection in source._collections.items():
            target = self._collection(corpus)
            for offset in range(0, collection.count(), ADD_BATCH):
                batch = collection.get(include=["embeddings", "metadatas"], limit=ADD_BATCH, offset=offset)
                target.add(ids=batch["ids"], embeddings=batch["embeddings"], metadatas=batch["metadatas"])

    def add(self, records: Sequence[VectorRecord]) -> None:
        by_corpus: dict[str, list[VectorRecord]] = {}
        for r in records:
            by_corpus.setdefault(r.corpus, []).append(r)
        for corpus, group in by_corpus.items():
            collection = self._collection(corpus)
            for start in range(0, len(group), ADD_BATCH):
                batch = group[start : start + ADD_BATCH]
                collection.add(
                    ids=[r.id for r in batch],
                    embeddings=np.stack([r.embedding for r in batch]),
                    metadatas=[{"doc_id": r.doc_id, "doc_key": f"{r.corpus}:{r.doc_id}", "chunk": r.chunk} for r in batch],
                )

    def delete_documents(self, corpus: str, doc_ids: Sequence[str]) -> None:
        collection = self._collections.get(corpus)
        if collection is None:
            return
        keys = [f"{corpus}:{d}" for d in doc_ids]
        for start in range(0, len(keys), ADD_BATCH):
            where: dict[str, Any] = {"doc_key": {"$in": keys[start : start + ADD_BATCH]}}
            collection.delete(where=where)

    def remove_corpus(self, corpus: str) -> None:
        """Drop ``corpus``'s collection (nothing to do when it has none)."""
        collection = self._collections.pop(corpus, None)
        if collection is not None:
            self._client.delete_collection(collection.name)

    def query(
        self,
        embedding: npt.NDArray[np.float32],
        k: int,
        *,
        corpora: Sequence[str] | None = None,
        doc_keys: set[str] | None = None,
    ) -> list[tuple[str, float]]:
        """(citation id, cosine similarity) of the ``k`` nearest chunks in ``corpora`` (None: all), best first
        (ties by id): the ``k`` nearest of each corpus's collection, merged."""
        names = self.corpora() if corpora is None else sorted(set(corpora) & set(self._collections))
        found: list[tuple[str, float]] = []
        for name in names:
            where: dict[str, Any] | None = None
            if doc_keys is not None:
                keys = sorted(key for key in doc_keys if key.startswith(f"{name}:"))
                if not keys:
                    continue
                where = {"doc_key": {"$in": keys}}
            result = self._collections[name].query(
                query_embeddings=[embedding], n_results=k, where=where, include=["distances"]  # type: ignore[arg-type]
            )
            ids, distances = result["ids"][0], (result["distances"] or [[]])[0]
            found.extend((i, 1.0 - float(d)) for i, d in zip(ids, distances))
        return sorted(found, key=lambda hit: (-hit[1], hit[0]))[:k]


def collection_name(prefix: str, corpus: str) -> str:
    """The collection of ``corpus``: ``<prefix>-<12 hex digits of its name's SHA-256>`` (Chroma allows
    3-63 characters of a restricted alphabet, so the name itself may not fit)."""
    return f"{prefix}-{hashlib.sha256(corpus.encode()).hexdigest()[:12]}"


def server_collection_name(generation: str) -> str:
    """The prefix of the Chroma server collections holding the vectors of index generation ``generation``."""
    return f"{SERVER_COLLECTION_PREFIX}{generation}"


def connect_server(url: str) -> ClientAPI:
    """A client for the Chroma server at ``url`` (``http(s)://host:port``), checked with a heartbeat."""
    parts = urlsplit(url)
    try:
        client = chromadb.HttpClient(
            host=parts.hostname or "", port=parts.port or 8000,
            ssl=parts.scheme == "https", settings=ChromaSettings(anonymized_telemetry=False),
        )  # fmt: skip
        client.heartbeat()
    except Exception as e:  # noqa: BLE001 - chromadb raises several kinds for an unreachable server
        raise BackendUnavailableError(
            f"cannot reach the Chroma server at {url} ({e}); start it (chroma run --path DIR --port PORT) "
            "or fix RAGMCP_CHROMA_URL"
        ) from e
    return client


def drop_server_collections(url: str, generations: Sequence[str]) -> None:
    """Delete the server collections of removed generations (those that exist)."""
    if not generations:
        return
    client = connect_server(url)
    try:
        prefixes = tuple(f"{server_collection_name(g)}-" for g in generations)
        for collection in client.list_collections():
            if collection.name.startswith(prefixes):
                try:
                    client.delete_collection(collection.name)
                except ChromaNotFoundError:
                    pass  # deleted meanwhile by another run
    finally:
        client.close()  # type: ignore[attr-defined]


def open_generation_vectors(
    generation: Path, collection: str | None, chroma_url: str | None, models: CorpusModels
) -> ChromaStore:
    """The vector store of a published generation, to read: a private copy of its ``chroma/``
    directory, or its collection on the Chroma server."""
    if collection is None:
        return ChromaStore.private_copy(generation / "chroma", models)
    if chroma_url is None:
        raise BackendUnavailableError(
            f"index generation {generation.name} keeps its vectors in collection {collection!r} on a Chroma "
            "server; set RAGMCP_CHROMA_URL to that server's address (e.g. http://127.0.0.1:8000)"
        )
    return ChromaStore.on_server(chroma_url, collection, models)
