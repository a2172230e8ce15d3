"""The document store: documents, their chunk maps, metadata and content fingerprints (SQLite).

It is the index's source of truth for text and metadata: search hits are joined to it
for their citation records, metadata filters are resolved in it, and ingestion compares
fingerprints against it to find what changed. It also lists each corpus's files that are
not in the index with the reason (``unindexed_files``), for clients to tell their users.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from mcp_server.models import PageKind, SearchFilters

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
CREATE TABLE IF NOT EXISTS page_geometry (
    corpus TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (corpus, doc_id, char_start)
);
CREATE TABLE IF NOT EXISTS skipped_files (
    corpus TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    source TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (corpus, doc_id)
);
CREATE TABLE IF NOT EXISTS unindexed_files (
    corpus TEXT NOT NULL,
    source TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (corpus, source)
);
"""
# Columns added after the first release, so that a docstore built before gains them when staged
# (a generation's docstore is copied forward) and older generations still open for reading.
# ``page`` and ``page_end`` are declared without a type: a page or slide number stays an
# integer, a sheet name text.
ADDED_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "documents": (("page_kind", "TEXT"),),
    "chunks": (("page", ""), ("page_end", ""), ("line_start", "INTEGER"), ("line_end", "INTEGER")),
}


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
    page: int | str | None = None
    page_end: int | str | None = None
    line_start: int | None = None
    line_end: int | None = None


@dataclass(frozen=True)
class StoredPage:
    """Where a page's text is on the page (:func:`mcp_server.documents.geometry.encode_page`), for the
    text from ``char_start`` to ``char_end``."""

    char_start: int
    char_end: int
    data: bytes


@dataclass(frozen=True)
class StoredSkip:
    """A file whose content ingestion refused, remembered with its fingerprint so an unchanged
    file is not read again, and its reason reported again."""

    doc_id: str
    source: str
    fingerprint: str
    reason: str


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
    page_kind: PageKind | None = None


class DocumentStore:
    """One SQLite file; safe to share between threads (calls are serialised by a lock)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        if read_only:
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        else:
            self._db = sqlite3.connect(path, check_same_thread=False)
            self._db.executescript(SCHEMA)
        present = {table: self._columns(table) for table in ADDED_COLUMNS}
        if not read_only:
            for table, columns in ADDED_COLUMNS.items():
                for name, declared in columns:
                    if name not in present[table]:
                        self._db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declared}".rstrip())
            present = {table: self._columns(table) for table in ADDED_COLUMNS}
        # Reading a docstore built before a column existed: the column reads as NULL.
        self._added = {
            table: ", ".join(name if name in present[table] else f"NULL AS {name}" for name, _ in columns)
            for table, columns in ADDED_COLUMNS.items()
        }
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        self._has_skips = "skipped_files" in tables
        self._has_unindexed = "unindexed_files" in tables
        self._has_geometry = "page_geometry" in tables
        self._lock = threading.Lock()

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}

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
            for table in ("chunks", "document_tags", "documents", "skipped_files", "unindexed_files", "page_geometry"):
                self._db.execute(f"DELETE FROM {table} WHERE corpus = ?", (name,))
            self._db.execute("DELETE FROM corpora WHERE name = ?", (name,))

    def put_document(
        self, document: StoredDocument, chunks: Iterable[StoredChunk], pages: Iterable[StoredPage] = ()
    ) -> None:
        """Insert or replace a document with its chunk map and its pages' geometry (call ``commit`` afterwards)."""
        with self._lock:
            self._delete_document(document.corpus, document.doc_id)
            self._forget_skip(document.corpus, document.doc_id)
            self._db.execute(
                "INSERT INTO documents (corpus, doc_id, source, title, category, tags, date, url, extra,"
                " fingerprint, text, page_kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    document.corpus, document.doc_id, document.source, document.title,
                    document.category, json.dumps(list(document.tags)),
                    document.date.isoformat() if document.date else None, document.url,
                    json.dumps(document.extra), document.fingerprint, document.text, document.page_kind,
                ),
            )
            self._db.executemany(
                "INSERT INTO document_tags VALUES (?, ?, ?)",
                [(document.corpus, document.doc_id, tag) for tag in set(document.tags)],
            )
            self._db.executemany(
                "INSERT INTO chunks (corpus, doc_id, chunk, char_start, char_end, section, page, page_end,"
                " line_start, line_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (document.corpus, document.doc_id, c.chunk, c.char_start, c.char_end, c.section,
                     c.page, c.page_end, c.line_start, c.line_end)
                    for c in chunks
                ],
            )  # fmt: skip
            self._db.executemany(
                "INSERT INTO page_geometry VALUES (?, ?, ?, ?, ?)",
                [(document.corpus, document.doc_id, p.char_start, p.char_end, p.data) for p in pages],
            )

    def delete_document(self, corpus: str, doc_id: str) -> None:
        with self._lock:
            self._delete_document(corpus, doc_id)

    def _delete_document(self, corpus: str, doc_id: str) -> None:
        for table in ("chunks", "document_tags", "documents", "page_geometry"):
            self._db.execute(f"DELETE FROM {table} WHERE corpus = ? AND doc_id = ?", (corpus, doc_id))

    def put_skip(self, corpus: str, skip: StoredSkip) -> None:
        """Record a refused file in place of any document it was before (call ``commit`` afterwards)."""
        with self._lock:
            self._delete_document(corpus, skip.doc_id)
            self._forget_skip(corpus, skip.doc_id)
            self._db.execute(
                "INSERT INTO skipped_files VALUES (?, ?, ?, ?, ?)",
                (corpus, skip.doc_id, skip.source, skip.fingerprint, skip.reason),
            )

    def set_unindexed(self, corpus: str, files: Iterable[tuple[str, str]]) -> None:
        """Replace the list of a corpus's files left out of the index: (source, reason) pairs."""
        with self._lock:
            self._db.execute("DELETE FROM unindexed_files WHERE corpus = ?", (corpus,))
            self._db.executemany(
                "INSERT OR REPLACE INTO unindexed_files VALUES (?, ?, ?)", [(corpus, *file) for file in files]
            )

    def forget_skip(self, corpus: str, doc_id: str) -> None:
        with self._lock:
            self._forget_skip(corpus, doc_id)

    def _forget_skip(self, corpus: str, doc_id: str) -> None:
        self._db.execute("DELETE FROM skipped_files WHERE corpus = ? AND doc_id = ?", (corpus, doc_id))

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

    def skips(self, corpus: str) -> dict[str, StoredSkip]:
        """The refused files of a corpus by doc_id (none in a docstore built before they were kept)."""
        if not self._has_skips:
            return {}
        with self._lock:
            rows = self._db.execute(
                "SELECT doc_id, source, fingerprint, reason FROM skipped_files WHERE corpus = ?", (corpus,)
            ).fetchall()
        return {row[0]: StoredSkip(*row) for row in rows}

    def unindexed(self) -> dict[str, list[tuple[str, str]]]:
        """Every corpus's files left out of the index, as (source, reason) in path order."""
        if not self._has_unindexed:
            return {}
        listed: dict[str, list[tuple[str, str]]] = {}
        with self._lock:
            rows = self._db.execute("SELECT corpus, source, reason FROM unindexed_files ORDER BY corpus, source")
            for corpus, source, reason in rows:
                listed.setdefault(corpus, []).append((source, reason))
        return listed

    def document(self, corpus: str, doc_id: str) -> StoredDocument | None:
        with self._lock:
            row = self._db.execute(
                "SELECT corpus, doc_id, source, title, category, tags, date, url, extra, fingerprint, text, "
                f"{self._added['documents']} FROM documents WHERE corpus = ? AND doc_id = ?",
                (corpus, doc_id),
            ).fetchone()
        if row is None:
            return None
        return StoredDocument(
            corpus=row[0], doc_id=row[1], source=row[2], title=row[3], category=row[4],
            tags=tuple(json.loads(row[5])), date=date.fromisoformat(row[6]) if row[6] else None,
            url=row[7], extra=json.loads(row[8]), fingerprint=row[9], text=row[10], page_kind=row[11],
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
                f"SELECT chunk, char_start, char_end, section, {self._added['chunks']} FROM chunks"
                " WHERE corpus = ? AND doc_id = ? ORDER BY chunk",
                (corpus, doc_id),
            )
            return [StoredChunk(*row) for row in rows]

    def pages(self, corpus: str, doc_id: str, start: int, end: int) -> list[StoredPage]:
        """The stored geometry of the document's pages whose text overlaps ``[start, end)``, in text order
        (none in a docstore built before geometry was kept)."""
        if not self._has_geometry:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT char_start, char_end, data FROM page_geometry WHERE corpus = ? AND doc_id = ?"
                " AND char_start < ? AND char_end > ? ORDER BY char_start",
                (corpus, doc_id, end, start),
            )
            return [StoredPage(*row) for row in rows]

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
