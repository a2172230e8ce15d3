"""The keyword store: BM25F over chunk text in a Whoosh index.

Each chunk is indexed with its document title and heading path in front of its text,
so a query naming a policy or a section finds its chunks. Queries are never parsed as
Whoosh syntax: quoted phrases become phrase queries, every other word an OR'd term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from whoosh import index, query, scoring
from whoosh.fields import ID, TEXT, Schema

from mcp_server.stores.analysis import build_analyzer, build_keyword_query

CONTENT = "content"


@dataclass(frozen=True)
class KeywordRecord:
    id: str  # the citation id
    corpus: str
    doc_id: str
    content: str


def _schema() -> Schema:
    return Schema(
        id=ID(stored=True, unique=True),
        corpus=ID,
        doc_key=ID,
        content=TEXT(analyzer=build_analyzer(), phrase=True),
    )


class WhooshIndex:
    def __init__(self, path: Path, *, bm25_b: float = 0.75, bm25_k1: float = 1.2) -> None:
        if index.exists_in(str(path)):
            self._index = index.open_dir(str(path))
        else:
            path.mkdir(parents=True, exist_ok=True)
            self._index = index.create_in(str(path), _schema())
        self.weighting = scoring.BM25F(B=bm25_b, K1=bm25_k1)

    def close(self) -> None:
        self._index.close()

    def count(self) -> int:
        return int(self._index.doc_count())

    def update(self, deleted_doc_keys: Sequence[str], records: Sequence[KeywordRecord]) -> None:
        """Remove the chunks of ``deleted_doc_keys``, add ``records``, commit once."""
        writer = self._index.writer(limitmb=256)
        try:
            for key in deleted_doc_keys:
                writer.delete_by_term("doc_key", key)
            for r in records:
                writer.add_document(id=r.id, corpus=r.corpus, doc_key=f"{r.corpus}:{r.doc_id}", content=r.content)
        except BaseException:
            writer.cancel()
            raise
        writer.commit()

    def search(
        self, text: str, k: int, *, corpora: Sequence[str] | None = None, doc_keys: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """(citation id, BM25 score) of the ``k`` best chunks in ``corpora`` (None: all).

        Raises ValueError for a query with no terms.
        """
        parsed = build_keyword_query(CONTENT, text, self._index.schema[CONTENT].analyzer)
        if (doc_keys is not None and not doc_keys) or (corpora is not None and not corpora):
            return []
        restrictions: list[query.Query] = []
        if corpora is not None:
            restrictions.append(query.Or([query.Term("corpus", name) for name in corpora]))
        if doc_keys is not None:
            restrictions.append(query.Or([query.Term("doc_key", key) for key in sorted(doc_keys)]))
        restriction = query.And(restrictions) if restrictions else None
        with self._index.searcher(weighting=self.weighting) as searcher:
            results = searcher.search(parsed, limit=k, filter=restriction)
            return [(hit["id"], float(hit.score)) for hit in results]
