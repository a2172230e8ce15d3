"""Hybrid fusion functions: convex score fusion and reciprocal-rank fusion."""

from __future__ import annotations

import pytest

from mcp_server.retrieval.fusion import (
    convex_fusion,
    keyword_weight_for,
    reciprocal_rank_fusion,
)


def test_convex_fusion_adds_weighted_scores() -> None:
    fused = dict(convex_fusion([("a", 0.8), ("b", 0.6)], [("b", 1.0), ("a", 0.2)], keyword_weight=0.25))
    assert fused["a"] == pytest.approx(0.75 * 0.8 + 0.25 * 0.2)
    assert fused["b"] == pytest.approx(0.75 * 0.6 + 0.25 * 1.0)


def test_convex_fusion_scores_missing_ids_at_the_vector_floor_and_zero_keyword() -> None:
    vector = [("a", 0.9), ("b", 0.5)]
    keyword = [("c", 0.8)]
    fused = dict(convex_fusion(vector, keyword, keyword_weight=0.5))
    assert fused["c"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.8)  # below every vector hit: scored as the lowest one
    assert fused["a"] == pytest.approx(0.5 * 0.9)  # no keyword match: 0
    assert [item for item, _ in convex_fusion(vector, keyword, keyword_weight=0.5)] == ["c", "a", "b"]


@pytest.mark.parametrize(("weight", "expected"), [(0.0, ["a", "b", "c"]), (1.0, ["c", "b", "a"])])
def test_convex_fusion_weight_zero_or_one_follows_one_retriever(weight: float, expected: list[str]) -> None:
    vector = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    keyword = [("c", 3.0), ("b", 2.0), ("a", 1.0)]
    assert [item for item, _ in convex_fusion(vector, keyword, weight)] == expected


def test_flat_vector_scores_leave_the_keyword_order_where_rank_fusion_overturns_it() -> None:
    """A model that finds every passage about equally similar (English MiniLM on Chinese) must not reorder keyword hits."""
    vector = [("wrong", 0.412), ("other", 0.411), ("right", 0.410)]
    keyword = [("right", 0.9), ("wrong", 0.7), ("other", 0.1)]
    assert convex_fusion(vector, keyword, keyword_weight=0.3)[0][0] == "right"
    assert reciprocal_rank_fusion([["wrong", "other", "right"], ["right", "wrong", "other"]], [1.0, 1.0], k=5)[0][0] == "wrong"


def test_convex_fusion_breaks_ties_by_best_rank_then_id() -> None:
    fused = convex_fusion([("z", 0.5), ("y", 0.5)], [("x", 0.0)], keyword_weight=0.0)
    assert [item for item, _ in fused] == ["x", "z", "y"]  # x and z are first in a list, y second; then by id
    assert [score for _, score in fused] == [0.5, 0.5, 0.5]


def test_convex_fusion_of_one_empty_list_keeps_the_other_order() -> None:
    assert [i for i, _ in convex_fusion([], [("a", 0.3), ("b", 0.2)], 0.3)] == ["a", "b"]
    assert [i for i, _ in convex_fusion([("a", 0.3), ("b", 0.2)], [], 0.3)] == ["a", "b"]
    assert convex_fusion([], [], 0.3) == []


@pytest.mark.parametrize("weight", [-0.1, 1.5])
def test_convex_fusion_refuses_a_weight_outside_zero_to_one(weight: float) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        convex_fusion([("a", 1.0)], [("a", 1.0)], weight)


def test_reciprocal_rank_fusion_sums_weighted_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], [1.0, 2.0], k=10)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 11 + 2 / 12)
    assert scores["c"] == pytest.approx(1 / 13 + 2 / 11)
    assert scores["b"] == pytest.approx(1 / 12)
    assert [item for item, _ in fused] == ["c", "a", "b"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [("annual leave policy", 0.3), ("年假需要提前几天申请", 0.7), ("VPN 怎么连", 0.5), ("東京タワー", 0.7), ("?!", 0.3)],
)
def test_keyword_weight_follows_the_share_of_cjk_characters_in_the_query(query: str, expected: float) -> None:
    assert keyword_weight_for(query, weight=0.3, cjk_weight=0.7) == pytest.approx(expected)
