"""The posting cache: what it keeps, what it evicts first, and what never fits."""

from __future__ import annotations

from functools import partial

import numpy as np

from mcp_server.stores.posting_cache import PostingCache, Postings


def _postings(count: int) -> Postings:
    return np.arange(count, dtype=np.int32), np.ones(count, dtype=np.float32)  # 8 bytes a posting


class Reads:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def __call__(self, term: str, count: int) -> Postings:
        self.keys.append(term)
        return _postings(count)


def test_kept_postings_are_not_read_again_and_the_least_recent_go_first() -> None:
    cache, reads = PostingCache(budget_bytes=8 * 250), Reads()
    for term in ("a", "b", "a", "c"):  # 100 postings each: a and b fit, c evicts the least recent, b
        found = cache.get(("seg", "content", term), partial(reads, term, 100))
        assert found[0].tolist() == list(range(100))
    assert reads.keys == ["a", "b", "c"]
    assert cache.size_bytes == 8 * 200
    cache.get(("seg", "content", "a"), lambda: reads("a", 100))
    cache.get(("seg", "content", "b"), lambda: reads("b", 100))
    assert reads.keys == ["a", "b", "c", "b"]


def test_postings_larger_than_the_budget_are_returned_but_not_kept() -> None:
    cache, reads = PostingCache(budget_bytes=8 * 50), Reads()
    for _ in range(2):
        assert len(cache.get(("seg", "content", "big"), lambda: reads("big", 100))[0]) == 100
    assert reads.keys == ["big", "big"] and cache.size_bytes == 0
    off = PostingCache(budget_bytes=0)
    off.get(("seg", "content", "x"), lambda: reads("x", 1))
    off.get(("seg", "content", "x"), lambda: reads("x", 1))
    assert reads.keys[-2:] == ["x", "x"] and off.size_bytes == 0


def test_segments_and_fields_are_kept_apart() -> None:
    cache, reads = PostingCache(budget_bytes=8 * 1000), Reads()
    cache.get(("seg1", "content", "a"), lambda: reads("seg1", 3))
    cache.get(("seg2", "content", "a"), lambda: reads("seg2", 5))
    cache.get(("seg1", "doc_key", "a"), lambda: reads("doc_key", 7))
    assert len(cache.get(("seg2", "content", "a"), lambda: reads("again", 9))[0]) == 5
    assert reads.keys == ["seg1", "seg2", "doc_key"]
