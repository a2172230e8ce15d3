"""Decoded posting lists kept between keyword searches, least recently used first out, within a byte budget.

Decoding a Whoosh posting block (unpickling and decompressing it, positions and all) is
most of what a keyword search costs once the per-posting loop is gone, and the words
that cost most, the common ones, recur in query after query. A segment's postings never
change (a deletion marks documents, it does not rewrite postings), so an entry stays
valid for the segment's life; a segment merged away simply stops being asked for and
ages out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

Key = tuple[str, str, str]
"""(segment id, field name, term)."""

Postings = tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]
"""A segment's document numbers and weights for one term."""


class PostingCache:
    """Posting arrays by (segment, field, term), at most ``budget_bytes`` in all (0 keeps nothing)."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[Key, Postings] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, key: Key, read: Callable[[], Postings]) -> Postings:
        """The cached postings for ``key``, else ``read()``'s, kept if they fit."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
        read_postings = read()  # outside the lock: other searches go on meanwhile
        size = read_postings[0].nbytes + read_postings[1].nbytes
        if size > self.budget_bytes:
            return read_postings
        with self._lock:
            if key not in self._entries:
                self._entries[key] = read_postings
                self._bytes += size
                while self._bytes > self.budget_bytes:
                    _, (ids, weights) = self._entries.popitem(last=False)
                    self._bytes -= ids.nbytes + weights.nbytes
        return read_postings
