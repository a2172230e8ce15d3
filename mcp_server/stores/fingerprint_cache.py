"""A cache of file fingerprints, keyed by path and the file's size and modification time.

Ingestion decides what changed by a fingerprint of each file's bytes; reading every file of
a corpus of half a million files takes longer than the rest of a run in which nothing
changed. A file whose size, modification time (nanoseconds) and chunking pipeline are those
recorded here gets the recorded fingerprint without being read.

A fingerprint is only recorded for a file last modified more than :data:`SETTLED_NS` before
it was read: a write within the clock tick of the read could leave size and time unchanged
(git's "racy" case), so such a file is read again next time. The cache belongs to the data
dir, not to an index generation: it says what a file's bytes were, whatever was indexed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from mcp_server.stores.cache_database import open_cache_database

SETTLED_NS = 2_000_000_000


class FingerprintCache:
    def __init__(self, path: Path) -> None:
        self._db = open_cache_database(
            path,
            "CREATE TABLE IF NOT EXISTS fingerprints (path TEXT PRIMARY KEY, stat TEXT NOT NULL,"
            " fingerprint TEXT NOT NULL)",
        )

    def close(self) -> None:
        self._db.close()

    def under(self, folder: Path) -> dict[str, tuple[str, str]]:
        """(stat, fingerprint) of each recorded file under ``folder``, by path."""
        prefix = str(folder).rstrip("/") + "/"
        rows = self._db.execute(
            "SELECT path, stat, fingerprint FROM fingerprints WHERE path >= ? AND path < ?",
            (prefix, prefix[:-1] + "0"),  # '0' follows '/': every path that starts with the prefix
        )
        return {path: (stat, fingerprint) for path, stat, fingerprint in rows}

    def update(self, records: Sequence[tuple[str, str, str]], forgotten: Iterable[str]) -> None:
        """Record (path, stat, fingerprint) rows and drop the rows of ``forgotten`` paths; one commit."""
        self._db.executemany("INSERT OR REPLACE INTO fingerprints VALUES (?, ?, ?)", records)
        self._db.executemany("DELETE FROM fingerprints WHERE path = ?", ((path,) for path in forgotten))
        self._db.commit()
