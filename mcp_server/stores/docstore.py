"""The document store: documents, their chunk maps, metadata and content fingerprints (SQLite).

It is the index's source of truth for text and metadata: search hits are joined to it
for their citation records, metadata filters are resolved in it, and ingestion compares
fingerprints against it to find what changed.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from mcp_server.models import SearchFilters

SCHEMA = """
CREATE TABLE IF NOT EXISTS corpora (
    name TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    language TEXT,
    root TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    corpus TEXT NOT NULL REFERENCES corpora(name),
    doc_id TEXT NOT NULL,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    category TEXT,
    tags TEXT NOT NULL,
    date TEXT,
    url TEXT,
    extra TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (corpus, doc_id)
);
CREATE TABLE IF NOT EXISTS document_tags (
    corpus TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    tag TEXT NOT NULL,
    PRIMARY KEY (corpus, doc_id, tag)
);
CREATE TABLE IF NOT EXISTS chunks (
    corpus TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    chunk INTEGER NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    section TEXT NOT NULL,
    PRIMARY KEY (corpus, doc_id, chunk)
);
"""


@dataclass(frozen=True)
class StoredCorpus:
    name: str
    description: str
    language: str | None
    root: str


@dataclass(frozen=True)
class StoredChunk:
    chunk: int
    char_start: int
    char_end: int
    section: str


@dataclass(frozen=True)
class StoredDocument:
    corpus: str
    doc_id: str
    source: str
    title: str
    category: str | None
    tags: tuple[str, ...]
    date: date | None
    url: str | None
    extra: dict[str, str]
    fingerprint: str
    text: str


class DocumentStore:
    """One SQLite file; safe to share between threads (calls are serialised by a lock)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        if read_only:
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        else:
            self._db = sqlite3.connect(path, check_same_thread=False)
            self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    # -- writing (ingestion) -------------------------------------------------------------

    def commit(self) -> None:
        with self._lock:
            self._db.commit()

    def put_corpus(self, corpus: StoredCorpus) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO corpora VALUES (?, ?, ?, ?)",
                (corpus.name, corpus.description, corpus.language, corpus.root),
            )

    def remove_corpus(self, name: str) -> None:
        with self._lock:
            for table in ("chunks", "document_tags", "documents"):
                self._db.execute(f"DELETE FROM {table} WHERE corpus = ?", (name,))
            self._db.execute("DELETE FROM corpora WHERE name = ?", (name,))

    def put_document(self, document: StoredDocument, chunks: Iterable[StoredChunk]) -> None:
        """Insert or replace a document with its chunk map (call ``commit`` afterwards)."""
        with self._lock:
            self._delete_document(document.corpus, document.doc_id)
            self._db.execute(
                "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    document.corpus, document.doc_id, document.source, document.title,
                    document.category, json.dumps(list(document.tags)),
                    document.date.isoformat() if document.date else None, document.url,
                    json.dumps(document.extra), document.fingerprint, document.text,
                ),
            )
            self._db.executemany(
                "INSERT INTO document_tags VALUES (?, ?, ?)",
                [(document.corpus, document.doc_id, tag) for tag in set(document.tags)],
            )
            self._db.executemany(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?)",
                [(document.corpus, document.doc_id, c.chunk, c.char_start, c.char_end, c.section) for c in chunks],
            )

    def delete_document(self, corpus: str, doc_id: str) -> None:
        with self._lock:
            self._delete_document(corpus, doc_id)

    def _delete_document(self, corpus: str, doc_id: str) -> None:
        for table in ("chunks", "document_tags", "documents"):
            self._db.execute(f"DELETE FROM {table} WHERE corpus = ? AND doc_id = ?", (corpus, doc_id))

    # -- reading -------------------------------------------------------------------------

    def corpora(self) -> list[StoredCorpus]:
        with self._lock:
            rows = self._db.execute("SELECT name, description, language, root FROM corpora ORDER BY name")
            return [StoredCorpus(*row) for row in rows]

    def counts(self) -> dict[str, tuple[int, int]]:
        """Documents and chunks per corpus."""
        with self._lock:
            rows = self._db.execute(
                "SELECT c.name, (SELECT count(*) FROM documents d WHERE d.corpus = c.name),"
                " (SELECT count(*) FROM chunks k WHERE k.corpus = c.name) FROM corpora c"
            ).fetchall()
        return {name: (docs, chunks) for name, docs, chunks in rows}

    def fingerprints(self, corpus: str) -> dict[str, str]:
        with self._lock:
            rows = self._db.execute("SELECT doc_id, fingerprint FROM documents WHERE corpus = ?", (corpus,))
            return dict(rows.fetchall())

    def document(self, corpus: str, doc_id: str) -> StoredDocument | None:
        with self._lock:
            row = self._db.execute(
                "SELECT corpus, doc_id, source, title, category, tags, date, url, extra, fingerprint, text"
                " FROM documents WHERE corpus = ? AND doc_id = ?",
                (corpus, doc_id),
            ).fetchone()
        if row is None:
            return None
        return StoredDocument(
            corpus=row[0], doc_id=row[1], source=row[2], title=row[3], category=row[4],
            tags=tuple(json.loads(row[5])), date=date.fromisoformat(row[6]) if row[6] else None,
            url=row[7], extra=json.loads(row[8]), fingerprint=row[9], text=row[10],
        )

    def documents(self, corpus: str) -> Iterator[StoredDocument]:
        """Every document of a corpus, ordered by doc_id."""
        with self._lock:
            ids = [r[0] for r in self._db.execute("SELECT doc_id FROM documents WHERE corpus = ? ORDER BY doc_id", (corpus,))]
        for doc_id in ids:
            document = self.document(corpus, doc_id)
            if document is not None:
                yield document

    def chunks(self, corpus: str, doc_id: str) -> list[StoredChunk]:
        with self._lock:
            rows = self._db.execute(
                "SELECT chunk, char_start, char_end, section FROM chunks"
                " WHERE corpus = ? AND doc_id = ? ORDER BY chunk",
                (corpus, doc_id),
            )
            return [StoredChunk(*row) for row in rows]

    def doc_ids_with_prefix(self, corpora: Sequence[str], prefix: str) -> list[tuple[str, str]]:
        """(corpus, doc_id) pairs in ``corpora`` whose doc_id starts with ``prefix`` — for 'did you mean' hints."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT corpus, doc_id FROM documents WHERE corpus IN ({_placeholders(corpora)})"
                " AND substr(doc_id, 1, length(?)) = ? ORDER BY corpus, doc_id LIMIT 10",
                (*corpora, prefix, prefix),
            )
            return [(c, d) for c, d in rows]

    def document_page(
        self, corpora: Sequence[str], after: tuple[str, str] | None, limit: int
    ) -> list[tuple[str, str, str]]:
        """(corpus, doc_id, title) of at most ``limit`` documents in ``corpora``, in (corpus, doc_id) order,
        starting after the pair ``after`` (None: from the first)."""
        start = after or ("", "")
        with self._lock:
            rows = self._db.execute(
                f"SELECT corpus, doc_id, title FROM documents WHERE corpus IN ({_placeholders(corpora)})"
                " AND (corpus > ? OR (corpus = ? AND doc_id > ?)) ORDER BY corpus, doc_id LIMIT ?",
                (*corpora, start[0], start[0], start[1], limit),
            )
            return [(c, d, t) for c, d, t in rows]

    def matching_documents(self, corpora: Sequence[str] | None, filters: SearchFilters) -> set[str]:
        """Document keys (``corpus:doc_id``) in ``corpora`` (None: all) whose metadata satisfy every filter."""
        clauses, params = ["1 = 1"], []  # type: list[str], list[object]
        if corpora is not None:
            clauses.append(f"d.corpus IN ({_placeholders(corpora)})")
            params.extend(corpora)
        if filters.category is not None:
            clauses.append("d.category = ?")
            params.append(filters.category)
        for tag in filters.tags:
            clauses.append("EXISTS (SELECT 1 FROM document_tags t WHERE t.corpus = d.corpus AND t.doc_id = d.doc_id AND t.tag = ?)")
            params.append(tag)
        if filters.date_from is not None:
            clauses.append("d.date >= ?")
            params.append(filters.date_from.isoformat())
        if filters.date_to is not None:
            clauses.append("d.date <= ?")
            params.append(filters.date_to.isoformat())
        if filters.source_prefix is not None:
            clauses.append("substr(d.source, 1, length(?)) = ?")
            params.extend([filters.source_prefix, filters.source_prefix])
        sql = "SELECT d.corpus || ':' || d.doc_id FROM documents d WHERE " + " AND ".join(clauses)
        with self._lock:
            return {row[0] for row in self._db.execute(sql, params)}


def _placeholders(values: Sequence[object]) -> str:
    """``?, ?, ?`` for an SQL ``IN (...)`` list of ``values`` (``NULL`` for none, which matches nothing)."""
    return ", ".join("?" * len(values)) or "NULL"
