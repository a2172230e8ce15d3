"""A persistent cache of embeddings, keyed by model identity and the hash of the embedded text.

The identity is the name the index records (for a server model it includes the server's URL),
and a vector of another length than the model's is never returned, so vectors of different
models never mix.

Ingestion looks every chunk up here before it embeds anything, and commits each new
batch at once. That is what makes re-ingestion cheap (unchanged text is never embedded
twice, even after a rebuild) and what lets a killed ingestion resume where it stopped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mcp_server.stores.cache_database import open_cache_database


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    def __init__(self, path: Path, model: str, dimension: int) -> None:
        self._db = open_cache_database(
            path,
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, text_key TEXT NOT NULL,"
            " vector BLOB NOT NULL, PRIMARY KEY (model, text_key))",
        )
        self.model = model
        self._blob_bytes = dimension * np.dtype(np.float32).itemsize

    def close(self) -> None:
        self._db.close()

    def get_many(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The cached vectors among ``keys`` (of the model's dimension); missing keys are simply absent."""
        found: dict[str, npt.NDArray[np.float32]] = {}
        for start in range(0, len(keys), 500):
            batch = list(keys[start : start + 500])
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(
                f"SELECT text_key, vector FROM vectors WHERE model = ? AND text_key IN ({marks})",
                [self.model, *batch],
            )
            for key, blob in rows:
                if len(blob) == self._blob_bytes:  # else computed by another model answering under this name
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> None:
        """Store vectors and commit, so they survive a crash right after."""
        self._db.executemany(
            "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
            [(self.model, key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in items],
        )
        self._db.commit()
