"""The keyword store: BM25F over chunk text in a Whoosh index.

Each chunk is indexed with its document title and heading path in front of its text,
so a query naming a policy or a section finds its chunks. Queries are never parsed as
Whoosh syntax: quoted phrases become phrase queries, every other word an OR'd term.

Scores are BM25 with Lucene's IDF by default (``log(1 + (N - df + 0.5) / (df + 0.5))``,
the IDF of Lucene, Anserini and bm25s), which measured better than Whoosh's own
``log(N / (df + 1)) + 1`` on SciFact train (nDCG@10 0.692 against 0.686). Hybrid search
asks for *normalised* scores: each divided by the query's IDF mass (see :meth:`WhooshIndex.search`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import log
from pathlib import Path
from typing import Literal

from whoosh import index, query, scoring
from whoosh.fields import ID, TEXT, Schema
from whoosh.searching import Searcher

from mcp_server.stores.analysis import analyze_query_terms, build_analyzer, build_keyword_query

CONTENT = "content"

IdfFormula = Literal["lucene", "whoosh"]
"""``lucene``: ``log(1 + (N - df + 0.5) / (df + 0.5))``; ``whoosh``: ``log(N / (df + 1)) + 1``."""


class LuceneIdfBM25(scoring.BM25F):  # type: ignore[misc]  # whoosh ships no type hints
    """Whoosh's BM25F with Lucene's IDF, which never goes negative and separates rare terms more."""

    def idf(self, searcher: Searcher, fieldname: str, text: str) -> float:
        parent = searcher.get_parent()
        df = parent.doc_frequency(fieldname, text)
        return log(1 + (parent.doc_count_all() - df + 0.5) / (df + 0.5))


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
    def __init__(
        self, path: Path, *, bm25_b: float = 0.75, bm25_k1: float = 1.2, idf: IdfFormula = "lucene"
    ) -> None:
        if index.exists_in(str(path)):
            self._index = index.open_dir(str(path))
        else:
            path.mkdir(parents=True, exist_ok=True)
            self._index = index.create_in(str(path), _schema())
        if idf not in ("lucene", "whoosh"):
            raise ValueError(f"unknown IDF formula {idf!r}; use 'lucene' or 'whoosh'")
        model = LuceneIdfBM25 if idf == "lucene" else scoring.BM25F
        self.weighting = model(B=bm25_b, K1=bm25_k1)

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

    def delete_corpus(self, corpus: str) -> None:
        """Remove every chunk of ``corpus`` and commit."""
        writer = self._index.writer(limitmb=256)
        try:
            writer.delete_by_term("corpus", corpus)
        except BaseException:
            writer.cancel()
            raise
        writer.commit()

    def search(
        self,
        text: str,
        k: int,
        *,
        corpora: Sequence[str] | None = None,
        doc_keys: set[str] | None = None,
        normalize: bool = False,
        require_phrases: bool = True,
    ) -> list[tuple[str, float]]:
        """(citation id, BM25 score) of the ``k`` best chunks in ``corpora`` (None: all); raises
        ValueError for a query with no terms.

        Quoted phrases must match verbatim unless ``require_phrases`` is False (then their
        words are ordinary terms; see :func:`build_keyword_query`).

        With ``normalize`` each score is divided by the query's IDF mass: the sum of the IDF
        of its distinct terms that occur in the index. A chunk holding every such term once,
        at average length, then scores 1, and one holding a share of the query's weight about
        that share, whatever the query's length or the corpus. The scale is the same for every
        query, so a weak best match stays weak (min-max scaling would stretch it to 1).
        """
        if (doc_keys is not None and not doc_keys) or (corpora is not None and not corpora):
            return []
        analyzer = self._index.schema[CONTENT].analyzer
        parsed = build_keyword_query(CONTENT, text, analyzer, require_phrases=require_phrases)
        restrictions: list[query.Query] = []
        if corpora is not None:
            restrictions.append(query.Or([query.Term("corpus", name) for name in corpora]))
        if doc_keys is not None:
            restrictions.append(query.Or([query.Term("doc_key", key) for key in sorted(doc_keys)]))
        restriction = query.And(restrictions) if restrictions else None
        with self._index.searcher(weighting=self.weighting) as searcher:
            results = searcher.search(parsed, limit=k, filter=restriction)
            scale = _idf_mass(searcher, analyze_query_terms(text, analyzer)) if normalize else 1.0
            return [(hit["id"], float(hit.score) / scale) for hit in results]


def _idf_mass(searcher: Searcher, terms: Sequence[str]) -> float:
    """Sum of the IDF of the ``terms`` that occur in the index (1.0 when none does)."""
    present = [term for term in terms if searcher.doc_frequency(CONTENT, term) > 0]
    return sum(searcher.idf(CONTENT, term) for term in present) or 1.0
