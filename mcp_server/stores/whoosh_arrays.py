"""Whoosh segments read as numpy arrays: a term's postings, the field-length column, the deleted documents.

The keyword store scores plain-word queries with numpy over these arrays instead of
Whoosh's per-posting matcher tree (see :mod:`mcp_server.stores.bm25_arrays`). Whoosh
stays the index; this module is the one place that knows how its ``W3`` codec lays a
segment out, and ``tests/mcp_server/stores/test_whoosh_arrays.py`` checks every reader
here against Whoosh's own public matcher and reader API.

* A posting list is stored in blocks of up to 128 postings. Each block is a pickled,
  zlib-compressed tuple of (document numbers as deltas from the block's start, weights
  — ``None`` when all are 1.0, one float when all are equal —, positions). The block's
  header tells its length, so a block is decoded whole and positions are never parsed.
* A field's lengths are a column of one byte per document (Whoosh's logarithmic
  ``length_to_byte`` code); :func:`field_lengths` decodes them through Whoosh's table,
  so a length here is exactly the one Whoosh's BM25 uses.
"""

from __future__ import annotations

import zlib
from pickle import loads

import numpy as np
import numpy.typing as npt
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3LeafMatcher
from whoosh.reading import SegmentReader
from whoosh.util.numeric import byte_to_length

from mcp_server.stores.posting_cache import Postings

_BYTE_TO_LENGTH = np.array([byte_to_length(code) for code in range(256)], dtype=np.float64)

Floats = npt.NDArray[np.float64]


def postings(leaf: SegmentReader, fieldname: str, text: str) -> Postings:
    """(document numbers, weights) of ``text`` in ``fieldname`` of one segment, deleted documents
    included (mask them with :func:`live_mask`); empty arrays when the term is absent. Weights are
    float32, as Whoosh stores them."""
    if (fieldname, text) not in leaf:
        return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float32)
    raw = leaf._terms.matcher(fieldname, leaf._text_to_bytes(fieldname, text), leaf.schema[fieldname].format)
    if not isinstance(raw, W3LeafMatcher):  # the W3 codec inlines no posting list of one posting or more
        raise TypeError(f"unexpected Whoosh posting reader {type(raw).__name__}: the keyword index needs the W3 codec")
    return _read_blocks(raw)


def _read_blocks(matcher: W3LeafMatcher) -> Postings:
    """Decode every block of a W3 posting list without Whoosh's per-posting calls."""
    ids: list[npt.NDArray[np.int32]] = []
    weights: list[npt.NDArray[np.float32]] = []
    postfile = matcher._postfile
    while not matcher._atend:
        count = matcher._blocklength
        data = postfile.get(matcher._dataoffset, matcher._nextoffset - matcher._dataoffset)
        deltas, block_weights, _positions = loads(zlib.decompress(data) if matcher._compression else data)
        ids.append(np.cumsum(np.array(deltas, dtype=np.int32), dtype=np.int32))
        if block_weights is None:
            weights.append(np.ones(count, dtype=np.float32))
        elif isinstance(block_weights, float):
            weights.append(np.full(count, block_weights, dtype=np.float32))
        else:
            weights.append(np.array(block_weights, dtype=np.float32))
        matcher._next_block()
    return np.concatenate(ids), np.concatenate(weights)


def field_lengths(leaf: SegmentReader, fieldname: str) -> Floats:
    """The length Whoosh's BM25 uses for ``fieldname`` of each document of one segment (1 where none is stored)."""
    count = leaf.doc_count_all()
    codes = np.zeros(count, dtype=np.uint8)
    column = leaf._perdoc._cached_reader(f"_{fieldname}_len", LENGTHS_COLUMN)
    if column is not None:
        stored = column._dbfile.get(column._basepos, column._count * column._fixedlen)
        codes[: column._count] = np.frombuffer(stored, dtype=np.uint8)
    lengths = _BYTE_TO_LENGTH[codes]
    lengths[codes == 0] = 1.0
    return lengths


def live_mask(leaf: SegmentReader) -> npt.NDArray[np.bool_]:
    """True for each document of one segment that is not deleted."""
    live = np.ones(leaf.doc_count_all(), dtype=np.bool_)
    deleted = leaf.deleted_docs_set
    if deleted:
        live[np.fromiter(deleted, dtype=np.int64, count=len(deleted))] = False
    return live
