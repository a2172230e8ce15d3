"""The keyword store: BM25F over chunk text in Whoosh indexes, one index (a *shard*) per corpus.

A search opens the shards of exactly the corpora it searches as one Whoosh reader, so
BM25's statistics (document count, document frequencies, average length) and the IDF
mass that normalises scores are those of the union of the searched corpora: the same
numbers one index holding only those corpora would give, and nothing in any other corpus
changes them. They count live chunks only (:class:`LiveSearcher`): chunks an update deleted,
which stay in their segment until it merges, change nothing, so an updated index scores exactly
as one built afresh from the chunks it holds. A team-server client therefore
gets scores that depend only on the chunks it may read now, and a search touches no other
corpus's files.

Each chunk is indexed with its document title and heading path in front of its text,
so a query naming a policy or a section finds its chunks. Queries are never parsed as
Whoosh syntax: quoted phrases become phrase queries, every other word an OR'd term.

Scores are BM25 with Lucene's IDF by default (``log(1 + (N - df + 0.5) / (df + 0.5))``,
the IDF of Lucene, Anserini and bm25s), which measured better than Whoosh's own
``log(N / (df + 1)) + 1`` on SciFact train (nDCG@10 0.692 against 0.686). Hybrid search
asks for *normalised* scores: each divided by the query's IDF mass (see :meth:`WhooshIndex.search`).

Plain words (every query without a quoted phrase) are scored with numpy over the posting
lists read as arrays (:mod:`mcp_server.stores.bm25_arrays`): the same BM25, the same
scores, without Whoosh's per-posting loop in Python. Decoded posting lists are kept
between searches within a memory budget (``keyword_cache_mb``), and so are readers.
Queries with a phrase need positions and go to Whoosh's own search.

On a large index the cost of a long query is the posting lists of its common words. Words
in more than ``common_term_share`` of the searched chunks (and in more than
``common_term_min_chunks``) therefore only add to the score of chunks that hold a rarer
query word, as in Lucene's common-terms query: those score exactly as before, and chunks
with nothing but common words, which seldom rank, are left out (the cutoff is a share of
the searched corpora, so it too depends only on what the client may read).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from math import log
from pathlib import Path
from typing import Any, Literal

from whoosh import index, query, scoring
from whoosh.fields import ID, TEXT, Schema
from whoosh.reading import IndexReader, MultiReader
from whoosh.searching import Searcher

from mcp_server.settings.ranking import IdfFormula
from mcp_server.stores.analysis import analyze_query_terms, build_analyzer, build_keyword_query, plain_query_terms
from mcp_server.stores.bm25_arrays import SegmentArrays, bm25_top
from mcp_server.stores.posting_cache import PostingCache

CONTENT = "content"


class LuceneIdfBM25(scoring.BM25F):  # type: ignore[misc]  # whoosh ships no type hints
    """Whoosh's BM25F with Lucene's IDF, which never goes negative and separates rare terms more."""

    def idf(self, searcher: Searcher, fieldname: str, text: str) -> float:
        parent = searcher.get_parent()
        df = parent.doc_frequency(fieldname, text)
        return log(1 + (parent.doc_count_all() - df + 0.5) / (df + 0.5))


class LiveSearcher(Searcher):  # type: ignore[misc]  # whoosh ships no type hints
    """A Whoosh searcher whose statistics count live chunks only: the chunk count, each term's document
    frequency and the average content length (:class:`~mcp_server.stores.bm25_arrays.SegmentArrays`).

    Chunks an update deleted stay in their segment until it merges, and Whoosh's own statistics count
    them; BM25's IDF and length normalisation, the common-word cut and the IDF mass would then depend
    on text nobody can read any more. The searchers Whoosh makes for each segment ask this one, their
    parent, for every statistic."""

    def __init__(self, reader: IndexReader, *, arrays: SegmentArrays | None = None, **options: Any) -> None:
        super().__init__(reader, **options)
        self._arrays = arrays
        if arrays is not None:
            self._doccount = arrays.live_count
            self.doc_frequency = arrays.document_frequency

    def field_length(self, fieldname: str) -> float:
        if self._arrays is None or fieldname != CONTENT:
            return float(super().field_length(fieldname))
        return self._arrays.live_length


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
    """The keyword shards under one directory: ``<path>/<corpus name>/`` is that corpus's Whoosh index
    (with ``<path>/<corpus name>.<n>/`` for its further parts, if it has any)."""

    def __init__(
        self,
        path: Path,
        *,
        bm25_b: float = 0.75,
        bm25_k1: float = 1.2,
        idf: IdfFormula = "lucene",
        common_term_share: float = 1.0,
        common_term_min_chunks: int = 0,
        posting_cache_bytes: int = 0,
    ) -> None:
        """A query word in more than ``common_term_share`` of the searched chunks, and in more
        than ``common_term_min_chunks`` of them, only adds to the score of chunks holding a
        rarer query word (share 1.0: never; see :func:`~mcp_server.stores.bm25_arrays.bm25_top`). The second
        bound keeps small indexes exact: there every posting list is short anyway. Decoded posting
        lists are kept between searches up to ``posting_cache_bytes``."""
        if idf not in ("lucene", "whoosh"):
            raise ValueError(f"unknown IDF formula {idf!r}; use 'lucene' or 'whoosh'")
        model = LuceneIdfBM25 if idf == "lucene" else scoring.BM25F
        self.weighting = model(B=bm25_b, K1=bm25_k1)
        self._common_term_share = common_term_share
        self._common_term_min_chunks = common_term_min_chunks
        self._postings = PostingCache(posting_cache_bytes)
        self._path = path
        path.mkdir(parents=True, exist_ok=True)
        # A corpus's shard is one Whoosh index or several *parts* (``<corpus>``, ``<corpus>.1``, ...),
        # which a big ingestion writes in parallel; a search reads all parts as one.
        self._shards: dict[str, dict[int, index.Index]] = {}
        for folder in sorted(path.iterdir()):
            corpus, _, part = folder.name.partition(".")
            if folder.is_dir() and (not part or part.isdigit()) and index.exists_in(str(folder)):
                self._shards.setdefault(corpus, {})[int(part or 0)] = index.open_dir(str(folder))
        self._analyzer = _schema()[CONTENT].analyzer
        # Opening a reader costs about 80 ms on a 100k-chunk shard (bench/scale/keyword_cpu.py), so
        # readers are kept between searches: idle ones per set of searched corpora, each lent to one
        # search at a time (a Whoosh reader is not safe to share between threads). A change to any
        # shard bumps the version; readers opened before it are closed instead of kept.
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, ...], list[SegmentArrays]] = {}
        self._version = 0
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._drop_idle_readers()
        for part in self._parts():
            part.close()

    def _parts(self, names: Iterable[str] | None = None) -> list[index.Index]:
        """The part indexes of the shards of ``names`` (None: all)."""
        return [part for name in (self._shards if names is None else names) for part in self._shards[name].values()]

    def _drop_idle_readers(self) -> None:
        """Close the idle readers and make lent ones close on return (call with the lock held)."""
        self._version += 1
        for readers in self._idle.values():
            for arrays in readers:
                arrays.reader.close()
        self._idle.clear()

    @contextmanager
    def _reader(self, names: Sequence[str]) -> Iterator[SegmentArrays | None]:
        """A reader over the shards of ``names`` for one search, with its arrays (None when the shards are all empty)."""
        key = tuple(names)
        with self._lock:
            idle = self._idle.get(key)
            arrays = idle.pop() if idle else None
            version = self._version
        if arrays is None:
            opened = _union_reader(self._parts(names))
            arrays = None if opened is None else SegmentArrays(opened, CONTENT, self._postings)
        try:
            yield arrays
        finally:
            if arrays is not None:
                with self._lock:
                    keep = version == self._version and not self._closed
                    if keep:
                        self._idle.setdefault(key, []).append(arrays)
                if not keep:
                    arrays.reader.close()

    def corpora(self) -> list[str]:
        """The corpora with a shard, sorted."""
        return sorted(self._shards)

    def count(self) -> int:
        return sum(int(part.doc_count()) for part in self._parts())

    def update(self, deleted_doc_keys: Sequence[str], records: Sequence[KeywordRecord], *, part: int = 0) -> None:
        """Remove the chunks of ``deleted_doc_keys`` (``corpus:doc_id``) from every part of their shard,
        add ``records`` to part ``part`` of theirs; one commit per part changed."""
        deletions: dict[str, list[str]] = {}
        for key in deleted_doc_keys:
            deletions.setdefault(key.partition(":")[0], []).append(key)
        additions: dict[str, list[KeywordRecord]] = {}
        for r in records:
            additions.setdefault(r.corpus, []).append(r)
        with self._lock:
            self._drop_idle_readers()
        for corpus in sorted(set(deletions) | set(additions)):
            parts = dict(self._shards.get(corpus, {}))
            if additions.get(corpus) and part not in parts:
                parts[part] = self._create_part(corpus, part)
            for number, part_index in sorted(parts.items()):
                added = additions.get(corpus, []) if number == part else []
                if added or (deletions.get(corpus) and part_index.doc_count_all()):
                    _write(part_index, deletions.get(corpus, []), added)

    def part_writer(self, corpus: str, part: int) -> PartWriter:
        """A writer adding to part ``part`` of ``corpus``'s shard (created if need be), for records that
        arrive over time; searches see them once it commits."""
        with self._lock:
            self._drop_idle_readers()
        existing = self._shards.get(corpus, {}).get(part)
        return PartWriter(existing if existing is not None else self._create_part(corpus, part))

    def _create_part(self, corpus: str, part: int) -> index.Index:
        folder = self._path / (corpus if part == 0 else f"{corpus}.{part}")
        folder.mkdir()
        created = index.create_in(str(folder), _schema())
        self._shards.setdefault(corpus, {})[part] = created
        return created

    def remove_corpus(self, corpus: str) -> None:
        """Delete ``corpus``'s shard (nothing to do when it has none)."""
        with self._lock:
            self._drop_idle_readers()
        for number, part_index in self._shards.pop(corpus, {}).items():
            part_index.close()
            shutil.rmtree(self._path / (corpus if number == 0 else f"{corpus}.{number}"))

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
        """(citation id, BM25 score) of the ``k`` best chunks in ``corpora`` (None: all), with the
        statistics of exactly those corpora; raises ValueError for a query with no terms.

        Quoted phrases must match verbatim unless ``require_phrases`` is False (then their
        words are ordinary terms; see :func:`build_keyword_query`).

        With ``normalize`` each score is divided by the query's IDF mass: the sum of the IDF
        of its distinct terms that occur in the searched corpora. A chunk holding every such
        term once, at average length, then scores 1, and one holding a share of the query's
        weight about that share, whatever the query's length or the corpus. The scale is the
        same for every query, so a weak best match stays weak (min-max scaling would stretch it to 1).
        """
        terms = plain_query_terms(CONTENT, text, self._analyzer, require_phrases=require_phrases)
        if doc_keys is not None and not doc_keys:
            return []
        # Every searched corpus counts in the statistics, whether or not the filter leaves it a document,
        # so a filter changes which chunks are found but not how each one scores.
        names = self.corpora() if corpora is None else sorted(set(corpora) & set(self._shards))
        with self._reader(names) as arrays:
            if arrays is None:
                return []
            searcher = LiveSearcher(arrays.reader, arrays=arrays, weighting=self.weighting, closereader=False)
            if terms is None:
                hits = self._search_phrases(searcher, text, k, doc_keys, require_phrases)
            else:
                hits = self._search_terms(searcher, arrays, terms, k, doc_keys)
            scale = _idf_mass(searcher, analyze_query_terms(text, self._analyzer)) if normalize else 1.0
            return [(chunk_id, score / scale) for chunk_id, score in hits]

    def _search_terms(
        self, searcher: Searcher, arrays: SegmentArrays, terms: list[str], k: int, doc_keys: set[str] | None
    ) -> list[tuple[str, float]]:
        """Plain words: BM25 over posting arrays, common words pruned (see the module docstring)."""
        cutoff = max(self._common_term_share * searcher.doc_count_all(), self._common_term_min_chunks)
        top = bm25_top(
            arrays, CONTENT, terms, k,
            idf=lambda term: float(searcher.idf(CONTENT, term)), b=self.weighting.B, k1=self.weighting.K1,
            is_common=lambda term: self._common_term_share < 1.0 and searcher.doc_frequency(CONTENT, term) > cutoff,
            allowed=None if doc_keys is None else arrays.holding_any("doc_key", sorted(doc_keys)),
        )  # fmt: skip
        return [(arrays.stored_field(docnum, "id"), score) for docnum, score in top]

    def _search_phrases(
        self, searcher: Searcher, text: str, k: int, doc_keys: set[str] | None, require_phrases: bool
    ) -> list[tuple[str, float]]:
        """A query with a quoted phrase: Whoosh's own search, which has the positions."""
        parsed = build_keyword_query(CONTENT, text, self._analyzer, require_phrases=require_phrases)
        restriction = None if doc_keys is None else query.Or([query.Term("doc_key", key) for key in sorted(doc_keys)])
        return [(hit["id"], float(hit.score)) for hit in searcher.search(parsed, limit=k, filter=restriction)]


class PartWriter:
    """An open writer on one part of one corpus's shard: deletions and additions, then one commit (a new segment)."""

    def __init__(self, part: index.Index) -> None:
        self._writer = part.writer(limitmb=256)
        self.added = 0

    def delete(self, doc_keys: Iterable[str]) -> None:
        for key in doc_keys:
            self._writer.delete_by_term("doc_key", key)

    def add(self, records: Iterable[KeywordRecord]) -> None:
        for r in records:
            self._writer.add_document(id=r.id, corpus=r.corpus, doc_key=f"{r.corpus}:{r.doc_id}", content=r.content)
            self.added += 1

    def commit(self) -> None:
        self._writer.commit()

    def cancel(self) -> None:
        self._writer.cancel()


def _write(part: index.Index, deleted_doc_keys: Iterable[str], records: Iterable[KeywordRecord]) -> None:
    """Delete, then add, in one commit of ``part``."""
    writer = PartWriter(part)
    try:
        writer.delete(deleted_doc_keys)
        writer.add(records)
    except BaseException:
        writer.cancel()
        raise
    writer.commit()


def _union_reader(shards: Sequence[index.Index]) -> IndexReader | None:
    """One reader over the segments of ``shards`` (their statistics summed), or None when all are empty."""
    leaves: list[IndexReader] = []
    for shard in shards:
        reader = shard.reader()
        if reader.doc_count_all() == 0:
            reader.close()
            continue
        leaves.extend(leaf for leaf, _ in reader.leaf_readers())
    if not leaves:
        return None
    return leaves[0] if len(leaves) == 1 else MultiReader(leaves)


def _idf_mass(searcher: Searcher, terms: Sequence[str]) -> float:
    """Sum of the IDF of the ``terms`` that occur in the index (1.0 when none does)."""
    present = [term for term in terms if searcher.doc_frequency(CONTENT, term) > 0]
    return sum(searcher.idf(CONTENT, term) for term in present) or 1.0
