"""BM25 top-k with numpy over the segments of one Whoosh reader: how keyword search scores plain words.

Whoosh scores an ``Or`` of terms by walking a tree of matchers posting by posting in
Python; on a big index that loop is most of a search (``bench/scale/keyword_cpu.py``
profiles it). Here each query term's posting list is read as arrays
(:mod:`mcp_server.stores.whoosh_arrays`) and scored in one vector expression, with the
same formula, statistics and stored lengths as Whoosh's ``BM25F`` under
:class:`~mcp_server.stores.keyword.LiveSearcher`: the live documents' count, frequencies and
average field length, the weighting's IDF, and Whoosh's tie order (equal scores by document
number). Scores match Whoosh's to the last few bits; only the order in which a chunk's
per-term scores are added differs.

Common query words work as in :func:`~mcp_server.stores.analysis.build_keyword_query`'s
description of Lucene's common-terms query: they only add to chunks that hold a rarer
query word, which score exactly as with every word; chunks holding only common words are
not hits. Quoted phrases need positions and stay with Whoosh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial

import numpy as np
import numpy.typing as npt
from whoosh.reading import IndexReader

from mcp_server.stores.posting_cache import PostingCache
from mcp_server.stores.whoosh_arrays import Floats, field_lengths, live_mask, postings

Ids = npt.NDArray[np.int64]


class SegmentArrays:
    """The segments of one reader laid end to end (document numbers as the reader numbers them),
    with each document's field length and whether it is live; built once per reader."""

    def __init__(self, reader: IndexReader, fieldname: str, cache: PostingCache) -> None:
        self.reader = reader
        self._cache = cache
        self._leaves = list(reader.leaf_readers())
        self._segment_ids = [leaf.segment().segment_id() for leaf, _ in self._leaves]
        self._offsets = np.array([offset for _, offset in self._leaves], dtype=np.int64)
        self.lengths = np.concatenate([field_lengths(leaf, fieldname) for leaf, _ in self._leaves])
        self.live = np.concatenate([live_mask(leaf) for leaf, _ in self._leaves])
        # Statistics of the live chunks: a deleted one stays in its segment until the segment merges.
        self.live_count = int(self.live.sum())
        self._has_deleted = self.live_count < len(self.live)
        # Summed from each live chunk's stored length (kept to a byte, as BM25 reads it), so an updated index and one
        # built afresh from the same chunks agree exactly; the segments' own totals count deleted chunks.
        self.live_length = float(self.lengths[self.live].sum())
        self.average_length = self.live_length / (self.live_count or 1) or 1.0

    def document_frequency(self, fieldname: str, text: str) -> int:
        """How many live documents hold ``text`` in ``fieldname`` (the reader's own count when none is deleted)."""
        if not self._has_deleted:
            return int(self.reader.doc_frequency(fieldname, text))
        ids, _ = self.postings(fieldname, text)
        return int(self.live[ids].sum())

    def postings(self, fieldname: str, text: str) -> tuple[Ids, Floats]:
        """(document numbers, weights) of a term over all segments, deleted documents included."""
        parts = [
            self._cache.get((segment, fieldname, text), partial(postings, leaf, fieldname, text))
            for (leaf, _), segment in zip(self._leaves, self._segment_ids, strict=True)
        ]
        ids = np.concatenate([ids.astype(np.int64) + offset for (ids, _), offset in zip(parts, self._offsets, strict=True)])
        return ids, np.concatenate([weights for _, weights in parts]).astype(np.float64)

    def holding_any(self, fieldname: str, texts: Iterable[str]) -> npt.NDArray[np.bool_]:
        """True for each document that holds at least one of ``texts`` in ``fieldname``."""
        mask = np.zeros(len(self.live), dtype=np.bool_)
        for text in texts:
            mask[self.postings(fieldname, text)[0]] = True
        return mask

    def stored_field(self, docnum: int, name: str) -> str:
        """Stored field ``name`` of a document, by the reader's numbering."""
        leaf = int(np.searchsorted(self._offsets, docnum, side="right")) - 1
        reader, offset = self._leaves[leaf]
        return str(reader.stored_fields(docnum - int(offset))[name])


def bm25_top(
    arrays: SegmentArrays,
    fieldname: str,
    terms: Sequence[str],
    k: int,
    *,
    idf: Callable[[str], float],
    b: float,
    k1: float,
    is_common: Callable[[str], bool] = lambda term: False,
    allowed: npt.NDArray[np.bool_] | None = None,
) -> list[tuple[int, float]]:
    """(document number, BM25 score) of the ``k`` best live documents holding a query term,
    best first, equal scores by document number; only ``allowed`` documents when given.

    Terms for which ``is_common`` holds only add to documents holding another term
    (unless every term is common)."""
    common = [term for term in terms if is_common(term)]
    rare = [term for term in terms if term not in common]
    if not rare:
        rare, common = common, []
    scores = np.zeros(len(arrays.live), dtype=np.float64)
    matched = np.zeros(len(arrays.live), dtype=np.bool_)
    for term in rare:
        ids, weights = arrays.postings(fieldname, term)
        scores[ids] += _bm25(idf(term), weights, arrays.lengths[ids], arrays.average_length, b, k1)
        matched[ids] = True
    for term in common:
        ids, weights = arrays.postings(fieldname, term)
        keep = matched[ids]
        ids = ids[keep]
        scores[ids] += _bm25(idf(term), weights[keep], arrays.lengths[ids], arrays.average_length, b, k1)
    eligible = matched & arrays.live if allowed is None else matched & arrays.live & allowed
    candidates = np.flatnonzero(eligible)
    if len(candidates) > k > 0:
        # Keep every candidate tied with the k-th score, so the tie order below is Whoosh's.
        kth = np.partition(scores[candidates], len(candidates) - k)[len(candidates) - k]
        candidates = candidates[scores[candidates] >= kth]
    order = np.lexsort((candidates, -scores[candidates]))[:k]
    return [(int(candidates[i]), float(scores[candidates[i]])) for i in order]


def _bm25(idf: float, tf: Floats, length: Floats, average: float, b: float, k1: float) -> Floats:
    """Whoosh's ``scoring.bm25``, term for term in the same order of operations."""
    result: Floats = idf * ((tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * length / average)))
    return result
