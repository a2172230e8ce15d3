"""Whoosh segments read as arrays agree with Whoosh's own public reader and matcher API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from whoosh.reading import IndexReader

from mcp_server.stores.keyword import CONTENT, KeywordRecord, WhooshIndex
from mcp_server.stores.whoosh_arrays import field_lengths, live_mask, postings


def _text(n: int) -> str:
    """Chunk ``n``: "common" in all, "often" 1-3 times, "rare" in every 7th, lengths varying."""
    words = ["common"] + ["often"] * (1 + n % 3) + (["rare"] if n % 7 == 0 else []) + [f"w{n}"] * (n % 11)
    return " ".join(words)


@pytest.fixture
def reader(tmp_path: Path) -> Iterator[IndexReader]:
    store = WhooshIndex(tmp_path / "whoosh")
    # Three commits (three segments), 300 chunks each, so posting lists span several 128-posting blocks.
    for batch in range(3):
        store.update([], [KeywordRecord(f"c:{n}#0", "c", str(n), _text(n)) for n in range(batch * 300, batch * 300 + 300)])
    store.update([f"c:{n}" for n in range(0, 900, 5)], [])  # deletions in every segment
    store.close()
    opened = WhooshIndex(tmp_path / "whoosh")
    with opened._reader(["c"]) as arrays:
        assert arrays is not None
        yield arrays.reader
    opened.close()


def test_postings_are_whooshs_for_every_term_and_segment(reader: IndexReader) -> None:
    leaves = [leaf for leaf, _ in reader.leaf_readers()]
    assert len(leaves) == 3
    for leaf in leaves:
        live = live_mask(leaf)
        for term in ("common", "often", "rare", "w10"):
            ids, weights = postings(leaf, CONTENT, term)
            if (CONTENT, term) not in leaf:  # "w10" is in the first segment only
                assert ids.size == 0 and weights.size == 0
                continue
            matcher = leaf.postings(CONTENT, term)  # Whoosh's matcher, which skips deleted documents
            expected_ids, expected_weights = [], []
            while matcher.is_active():
                expected_ids.append(matcher.id())
                expected_weights.append(matcher.weight())
                matcher.next()
            kept = live[ids]
            assert ids[kept].tolist() == expected_ids
            assert weights[kept].tolist() == expected_weights
            assert len(ids) == leaf.doc_frequency(CONTENT, term)  # deleted documents included, as in Whoosh's statistics
    assert len(postings(leaves[0], CONTENT, "common")[0]) == 300  # three blocks
    assert set(postings(leaves[0], CONTENT, "often")[1].tolist()) == {1.0, 2.0, 3.0}


def test_an_absent_term_has_no_postings(reader: IndexReader) -> None:
    leaf = next(iter(reader.leaf_readers()))[0]
    ids, weights = postings(leaf, CONTENT, "xylophone")
    assert ids.size == 0 and weights.size == 0


def test_field_lengths_and_deletions_are_whooshs(reader: IndexReader) -> None:
    for leaf, _ in reader.leaf_readers():
        lengths = field_lengths(leaf, CONTENT)
        live = live_mask(leaf)
        assert lengths.tolist() == [leaf.doc_field_length(d, CONTENT) for d in range(leaf.doc_count_all())]
        assert live.tolist() == [not leaf.is_deleted(d) for d in range(leaf.doc_count_all())]
        assert int(np.count_nonzero(~live)) == 60
