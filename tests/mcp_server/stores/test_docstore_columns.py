"""A docstore written before pages, lines and refused files were stored still opens, and gains them when staged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mcp_server.stores.docstore import (
    DocumentStore,
    StoredChunk,
    StoredDocument,
    StoredSkip,
)

# The tables as the first release created them.
FIRST_RELEASE_SCHEMA = """
CREATE TABLE corpora (name TEXT PRIMARY KEY, description TEXT NOT NULL, language TEXT, root TEXT NOT NULL);
CREATE TABLE documents (
    corpus TEXT NOT NULL, doc_id TEXT NOT NULL, source TEXT NOT NULL, title TEXT NOT NULL, category TEXT,
    tags TEXT NOT NULL, date TEXT, url TEXT, extra TEXT NOT NULL, fingerprint TEXT NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (corpus, doc_id)
);
CREATE TABLE document_tags (corpus TEXT NOT NULL, doc_id TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (corpus, doc_id, tag));
CREATE TABLE chunks (
    corpus TEXT NOT NULL, doc_id TEXT NOT NULL, chunk INTEGER NOT NULL, char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL, section TEXT NOT NULL, PRIMARY KEY (corpus, doc_id, chunk)
);
INSERT INTO corpora VALUES ('c', 'd', NULL, '/c');
INSERT INTO documents VALUES ('c', 'old', 'old.md', 'Old', NULL, '[]', NULL, NULL, '{}', 'f0', 'Old text.');
INSERT INTO chunks VALUES ('c', 'old', 0, 0, 9, '');
"""


def _first_release_docstore(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(FIRST_RELEASE_SCHEMA)
    db.commit()
    db.close()
    return path


def _document(doc_id: str, page_kind: str | None) -> StoredDocument:
    return StoredDocument(
        corpus="c", doc_id=doc_id, source=f"{doc_id}.pdf", title=doc_id, category=None, tags=(), date=None, url=None,
        extra={}, fingerprint="f1", text="Page one.\n\nPage two.", page_kind=page_kind,  # type: ignore[arg-type]
    )  # fmt: skip


def test_an_old_docstore_reads_with_no_pages_or_lines(tmp_path: Path) -> None:
    store = DocumentStore(_first_release_docstore(tmp_path / "docstore.sqlite"), read_only=True)
    try:
        assert store.chunks("c", "old") == [StoredChunk(0, 0, 9, "")]
        document = store.document("c", "old")
        assert document is not None and document.page_kind is None and document.text == "Old text."
        assert store.skips("c") == {}
    finally:
        store.close()


def test_staging_an_old_docstore_adds_the_columns_and_keeps_its_rows(tmp_path: Path) -> None:
    path = _first_release_docstore(tmp_path / "docstore.sqlite")
    writer = DocumentStore(path)
    writer.put_document(_document("new", "page"), [StoredChunk(0, 0, 9, "", 1, None), StoredChunk(1, 11, 20, "", 2, None)])
    writer.put_skip("c", StoredSkip("bad", "bad.md", "f2", "is not valid UTF-8 (byte 3); save it as UTF-8."))
    writer.commit()
    writer.close()

    reader = DocumentStore(path, read_only=True)
    try:
        assert reader.chunks("c", "old") == [StoredChunk(0, 0, 9, "")]
        assert [(c.page, c.page_end) for c in reader.chunks("c", "new")] == [(1, None), (2, None)]
        assert reader.document("c", "new").page_kind == "page"  # type: ignore[union-attr]
        assert reader.skips("c") == {"bad": StoredSkip("bad", "bad.md", "f2", "is not valid UTF-8 (byte 3); save it as UTF-8.")}
    finally:
        reader.close()


def test_a_sheet_name_stays_text_and_a_slide_number_an_integer(tmp_path: Path) -> None:
    writer = DocumentStore(tmp_path / "docstore.sqlite")
    writer.put_document(_document("book", "sheet"), [StoredChunk(0, 0, 9, "2024", "2024", None, 1, 5)])
    writer.put_document(_document("deck", "slide"), [StoredChunk(0, 0, 9, "", 3, 4)])
    writer.commit()

    assert writer.chunks("c", "book") == [StoredChunk(0, 0, 9, "2024", "2024", None, 1, 5)]
    assert writer.chunks("c", "deck") == [StoredChunk(0, 0, 9, "", 3, 4)]
    writer.close()
