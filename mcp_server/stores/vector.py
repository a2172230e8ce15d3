"""The vector store: chunk embeddings in a ChromaDB collection (cosine space).

The collection is either embedded (a ``PersistentClient`` on the generation's ``chroma/``
directory, :meth:`ChromaStore.embedded`) or on a Chroma server (``chroma run``, reached
with an ``HttpClient``, :meth:`ChromaStore.on_server`), where each index generation has a
collection of its own named by :func:`server_collection_name`.

ChromaDB writes into an embedded collection's directory even to read it (a row in its
SQLite file on open, the HNSW files when it loads them), so a published generation's
vectors are never opened in place: each reader queries a private copy
(:meth:`ChromaStore.private_copy`), which keeps the published files read-only and safe to
share between worker processes and hosts.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
import shutil
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import chromadb
import numpy as np
import numpy.typing as npt
from chromadb.api import ClientAPI
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import NotFoundError as ChromaNotFoundError

from mcp_server.embedding import Embedder
from mcp_server.errors import BackendUnavailableError

COLLECTION = "chunks"
SERVER_COLLECTION_PREFIX = "ragmcp-"
ADD_BATCH = 1000
CONFIGURATION: Any = {"hnsw": {"space": "cosine", "num_threads": 1}}  # one thread: the same graph every time


@dataclass(frozen=True)
class VectorRecord:
    """One chunk as the vector store keeps it."""

    id: str  # the citation id
    corpus: str
    doc_id: str
    chunk: int
    text: str
    embedding: npt.NDArray[np.float32]


class ChromaStore:
    """Adds, deletes and queries chunk vectors; all filtering is by corpus and document key."""

    def __init__(
        self, client: ClientAPI, collection: str, embedder: Embedder, *, create: bool, scratch: Path | None = None
    ) -> None:
        """Open ``collection`` through ``client``; ``scratch`` is a directory to delete on close."""
        self._client = client
        self._scratch = scratch
        try:
            if create:
                self._collection = client.get_or_create_collection(
                    collection, embedding_function=embedder.function,  # type: ignore[arg-type]
                    configuration=copy.deepcopy(CONFIGURATION),  # Chroma adds the function to the dict it gets
                )
            else:
                self._collection = client.get_collection(collection, embedding_function=embedder.function)  # type: ignore[arg-type]
        except ChromaNotFoundError as e:
            self.close()
            raise BackendUnavailableError(
                f"no vector collection {collection!r} for this index generation; "
                "rebuild the index: ragmcp ingest --rebuild"
            ) from e

    @classmethod
    def embedded(cls, path: Path, embedder: Embedder) -> ChromaStore:
        """The collection in a generation's own ``chroma/`` directory (created if missing)."""
        client = chromadb.PersistentClient(path=str(path), settings=ChromaSettings(anonymized_telemetry=False))
        return cls(client, COLLECTION, embedder, create=True)

    @classmethod
    def private_copy(cls, path: Path, embedder: Embedder) -> ChromaStore:
        """A copy of the embedded collection at ``path`` in the temporary directory, deleted on close."""
        scratch = Path(tempfile.mkdtemp(prefix="ragmcp-vectors-"))
        try:
            shutil.copytree(path, scratch, dirs_exist_ok=True)
            client = chromadb.PersistentClient(path=str(scratch), settings=ChromaSettings(anonymized_telemetry=False))
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        return cls(client, COLLECTION, embedder, create=False, scratch=scratch)

    @classmethod
    def on_server(cls, url: str, collection: str, embedder: Embedder, *, create: bool = False) -> ChromaStore:
        """A collection on the Chroma server at ``url``; a reader (``create=False``) requires it to exist."""
        return cls(connect_server(url), collection, embedder, create=create)

    def close(self) -> None:
        self._client.close()  # type: ignore[attr-defined]  # in chromadb 1.x, missing from ClientAPI's stubs
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def count(self) -> int:
        return self._collection.count()

    def copy_from(self, source: ChromaStore) -> None:
        """Add every record of ``source`` (ids, vectors, texts, metadata) to this store."""
        for offset in range(0, source.count(), ADD_BATCH):
            batch = source._collection.get(
                include=["embeddings", "documents", "metadatas"], limit=ADD_BATCH, offset=offset
            )
            self._collection.add(
                ids=batch["ids"], embeddings=batch["embeddings"], documents=batch["documents"],
                metadatas=batch["metadatas"],
            )  # fmt: skip

    def add(self, records: Sequence[VectorRecord]) -> None:
        for start in range(0, len(records), ADD_BATCH):
            batch = records[start : start + ADD_BATCH]
            self._collection.add(
                ids=[r.id for r in batch],
                embeddings=np.stack([r.embedding for r in batch]),
                documents=[r.text for r in batch],
                metadatas=[
                    {"corpus": r.corpus, "doc_id": r.doc_id, "doc_key": f"{r.corpus}:{r.doc_id}", "chunk": r.chunk}
                    for r in batch
                ],
            )

    def delete_documents(self, corpus: str, doc_ids: Sequence[str]) -> None:
        keys = [f"{corpus}:{d}" for d in doc_ids]
        for start in range(0, len(keys), ADD_BATCH):
            where: dict[str, Any] = {"doc_key": {"$in": keys[start : start + ADD_BATCH]}}
            self._collection.delete(where=where)

    def delete_corpus(self, corpus: str) -> None:
        """Remove every chunk of ``corpus``."""
        self._collection.delete(where={"corpus": corpus})

    def query(
        self,
        embedding: npt.NDArray[np.float32],
        k: int,
        *,
        corpora: Sequence[str] | None = None,
        doc_keys: set[str] | None = None,
    ) -> list[tuple[str, float]]:
        """(citation id, cosine similarity) of the ``k`` nearest chunks in ``corpora`` (None: all), best first."""
        if (doc_keys is not None and not doc_keys) or (corpora is not None and not corpora):
            return []
        conditions: list[dict[str, Any]] = []
        if corpora is not None:
            conditions.append({"corpus": corpora[0]} if len(corpora) == 1 else {"corpus": {"$in": list(corpora)}})
        if doc_keys is not None:
            conditions.append({"doc_key": {"$in": sorted(doc_keys)}})
        where: dict[str, Any] | None = None
        if len(conditions) == 1:
            where = conditions[0]
        elif conditions:
            where = {"$and": conditions}
        result = self._collection.query(
            query_embeddings=[embedding], n_results=k, where=where, include=["distances"]  # type: ignore[arg-type]
        )
        ids, distances = result["ids"][0], (result["distances"] or [[]])[0]
        return [(i, 1.0 - float(d)) for i, d in zip(ids, distances)]


def server_collection_name(generation: str) -> str:
    """The Chroma server collection holding the vectors of index generation ``generation``."""
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
        for name in map(server_collection_name, generations):
            try:
                client.delete_collection(name)
            except ChromaNotFoundError:
                pass  # an abandoned staging run may not have got as far as creating it
    finally:
        client.close()  # type: ignore[attr-defined]


def open_generation_vectors(
    generation: Path, collection: str | None, chroma_url: str | None, embedder: Embedder
) -> ChromaStore:
    """The vector store of a published generation, to read: a private copy of its ``chroma/``
    directory, or its collection on the Chroma server."""
    if collection is None:
        return ChromaStore.private_copy(generation / "chroma", embedder)
    if chroma_url is None:
        raise BackendUnavailableError(
            f"index generation {generation.name} keeps its vectors in collection {collection!r} on a Chroma "
            "server; set RAGMCP_CHROMA_URL to that server's address (e.g. http://127.0.0.1:8000)"
        )
    return ChromaStore.on_server(chroma_url, collection, embedder)
