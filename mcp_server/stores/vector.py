"""The vector store: chunk embeddings in a persistent ChromaDB collection (cosine space)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import numpy.typing as npt
from chromadb.config import Settings as ChromaSettings

from mcp_server.embedding import Embedder

COLLECTION = "chunks"
ADD_BATCH = 1000


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

    def __init__(self, path: Path, embedder: Embedder) -> None:
        self._client = chromadb.PersistentClient(
            path=str(path), settings=ChromaSettings(anonymized_telemetry=False)
        )
        self._collection = self._client.get_or_create_collection(
            COLLECTION,
            embedding_function=embedder.function,  # type: ignore[arg-type]
            configuration={"hnsw": {"space": "cosine", "num_threads": 1}},  # one thread: the same graph every time
        )

    def close(self) -> None:
        self._client.close()  # type: ignore[attr-defined]  # in chromadb 1.x, missing from ClientAPI's stubs

    def count(self) -> int:
        return self._collection.count()

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
