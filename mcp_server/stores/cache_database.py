"""The SQLite file behind a cache in the data dir (embeddings, file fingerprints)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def open_cache_database(path: Path, create_table: str) -> sqlite3.Connection:
    """Open (creating folder, file and table as needed) a cache file in WAL mode, so a reader never
    waits for the one writer; ``create_table`` is its ``CREATE TABLE IF NOT EXISTS`` statement."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(create_table)
    db.commit()
    return db
