"""Reranking by the user's own model server, over real HTTP against a scripted rerank server.

The client alone (each server's wire shape, the API key, malformed answers; a hostile server's
dripped, huge or redirected answer) and hybrid search with it (reordered as the server ranks,
and the fused order with one log line when the server is down, slow, drips or talks nonsense).
"""

from __future__ import annotations

import json
import logging
import time
import tracemalloc
from collections.abc import Iterator
from typing import Literal

import pytest
from pydantic import ValidationError

from mcp_server.retrieval.rerank import (
    Reranker, RerankError, RerankServer, answer_limit, parse_scores, reranker_for,
)  # fmt: skip
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from tests.mcp_server.retrieval.rerank_server import Kind, RerankStandIn, Reply

TEXTS = ["Apples are red.", "Bananas are yellow.", "Cherries are dark red."]
QUERY = "how far ahead should I book a train"
TIMEOUT_S = 0.5  # RAGMCP_RERANK_TIMEOUT_S in the tests of a slow or dripping server
SCORED = json.dumps([{"index": i, "score": 0.5} for i in range(len(TEXTS))])  # a valid answer for TEXTS


def test_reranking_is_off_by_default_and_with_an_empty_url(monkeypatch: pytest.MonkeyPatch) -> None:
    assert reranker_for(Settings()) is None
    monkeypatch.setenv("RAGMCP_RERANK_URL", "")
    monkeypatch.setenv("RAGMCP_RERANK_MODEL", "BAAI/bge-reranker-v2-m3")
    assert reranker_for(Settings()) is None


def test_the_rerank_settings_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"URL": "http://localhost:8001/v1/rerank", "MODEL": "BAAI/bge-reranker-v2-m3",
                        "API_KEY": "sk-1", "TIMEOUT_S": "2.5", "CANDIDATES": "20"}.items():  # fmt: skip
        monkeypatch.setenv(f"RAGMCP_RERANK_{name}", value)
    settings = Settings()
    assert settings.rerank.candidates == 20
    reranker = reranker_for(settings)
    assert reranker is not None
    assert reranker.server == RerankServer("http://localhost:8001/v1/rerank", "BAAI/bge-reranker-v2-m3", "sk-1", 2.5)
    assert "sk-1" not in repr(reranker.server)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"URL": "localhost:8001"}, "RAGMCP_RERANK_URL must be the rerank endpoint itself"),
        ({"URL": "http://localhost:8001"}, "RAGMCP_RERANK_URL must be the rerank endpoint itself"),
        ({"URL": "http://localhost:8001/v1/rerank"}, "RAGMCP_RERANK_URL is set but RAGMCP_RERANK_MODEL is not"),
        ({"TIMEOUT_S": "0"}, "rerank_timeout_s"),
        ({"CANDIDATES": "many"}, "rerank_candidates"),
    ],
)
def test_a_bad_rerank_setting_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(f"RAGMCP_RERANK_{name}", value)
    with pytest.raises(ValidationError, match=message):
        Settings()


@pytest.mark.parametrize("kind", ["vllm", "llamacpp", "infinity", "tei"])
def test_each_servers_wire_shape_gives_the_scores_in_the_order_sent(kind: Kind) -> None:
    with RerankStandIn(kind, prefer=["banana", "cherr"]) as server:
        reranker = Reranker(RerankServer(server.url, "BAAI/bge-reranker-v2-m3"))
        assert reranker.scores("fruit", TEXTS) == [0.01, 0.99, 0.89]
        assert reranker.scores("fruit", TEXTS[:2]) == [0.01, 0.99]
    last = server.received[-1].body
    if kind == "tei":
        assert last == {"query": "fruit", "texts": TEXTS[:2], "truncate": True}
    else:
        assert last == {"model": "BAAI/bge-reranker-v2-m3", "query": "fruit", "documents": TEXTS[:2], "top_n": 2}
    # Infinity serves a bare /rerank like TEI: its first request is refused once, then the shape is kept.
    assert len(server.received) == (3 if kind == "infinity" else 2)


def test_the_api_key_goes_as_a_bearer_token_and_no_key_sends_no_header() -> None:
    with RerankStandIn(prefer=["apple"]) as server:
        Reranker(RerankServer(server.url, "m", api_key="sk-local-123")).scores("q", TEXTS)
        Reranker(RerankServer(server.url, "m")).scores("q", TEXTS)
    assert server.received[0].headers["authorization"] == "Bearer sk-local-123"
    assert "authorization" not in server.received[1].headers


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("<html>Bad gateway</html>", "not JSON"),
        ('{"data": []}', 'no "results" list'),
        ('{"results": [{"index": 0, "relevance_score": 0.5}]}', "scored 1 texts of the 2 sent"),
        ('[{"score": 0.5}, {"index": 1, "score": 0.2}]', "no index between 0 and 1"),
        ('[{"index": 0, "score": 0.5}, {"index": 2, "score": 0.2}]', "no index between 0 and 1"),
        ('[{"index": 0, "score": 0.5}, {"index": true, "score": 0.2}]', "no index between 0 and 1"),
        ('[{"index": 0, "score": "high"}, {"index": 1, "score": 0.2}]', "no numeric relevance_score"),
        ('[{"index": 0, "score": NaN}, {"index": 1, "score": 0.2}]', "no numeric relevance_score"),
        ('[{"index": 0, "score": 0.5}, {"index": 0, "score": 0.2}]', "scored twice"),
    ],
)
def test_a_malformed_answer_is_refused_with_the_reason(answer: str, reason: str) -> None:
    with pytest.raises(RerankError, match=reason):
        parse_scores(answer, 2)


def test_both_answer_shapes_are_read_whichever_request_was_sent() -> None:
    assert parse_scores('[{"index": 1, "score": 0.5}, {"index": 0, "score": -2}]', 2) == [-2.0, 0.5]
    cohere = {"results": [{"index": 1, "relevance_score": 3, "document": {"text": "b"}}, {"index": 0, "score": 1.5}]}
    assert parse_scores(json.dumps(cohere), 2) == [1.5, 3.0]


def test_after_a_failure_the_server_is_left_alone_for_a_while() -> None:
    with RerankStandIn(replies=[Reply(503, "overloaded")]) as server:
        reranker = Reranker(RerankServer(server.url, "m"))
        with pytest.raises(RerankError, match="HTTP 503: overloaded"):
            reranker.scores("q", TEXTS)
    assert reranker.paused()


# --- a hostile server ---------------------------------------------------------------------------------


@pytest.mark.parametrize("drip", ["all", "body"])
def test_a_dripping_answer_is_given_up_at_the_deadline(drip: Literal["all", "body"]) -> None:
    # Each byte comes well within the timeout; the whole answer would take over 10 times as long.
    reply = Reply(200, SCORED, drip_s=TIMEOUT_S / 5, drip=drip)
    assert len(SCORED) * reply.drip_s > 10 * TIMEOUT_S
    with RerankStandIn(replies=[reply]) as server:
        reranker = Reranker(RerankServer(server.url, "m", timeout_s=TIMEOUT_S))
        started = time.monotonic()
        with pytest.raises(RerankError, match=r"no complete answer within 0\.5 s \(RAGMCP_RERANK_TIMEOUT_S\)"):
            reranker.scores("q", TEXTS)
        assert time.monotonic() - started < 3 * TIMEOUT_S


def test_the_deadline_covers_the_second_request_of_a_refused_shape() -> None:
    # Each request alone answers within the timeout; the two together take 1.6 s longer than it.
    timeout = 4 * TIMEOUT_S
    slow = 0.9 * timeout
    replies = [Reply(422, "missing field `texts`", delay_s=slow), Reply(200, SCORED, delay_s=slow)]
    with RerankStandIn("infinity", replies=replies) as server:
        reranker = Reranker(RerankServer(server.url, "m", timeout_s=timeout))
        started = time.monotonic()
        with pytest.raises(RerankError, match="no complete answer within"):
            reranker.scores("q", TEXTS)
        assert time.monotonic() - started < 2 * slow


@pytest.mark.parametrize("sized", [True, False], ids=["content-length", "until-closed"])
def test_a_huge_answer_is_dropped_unread_past_the_limit(sized: bool) -> None:
    padding = 64 * 2**20  # spaces after a valid answer: still valid JSON, 64 MiB of it
    limit = answer_limit(len(TEXTS))
    assert padding > 100 * limit
    with RerankStandIn(replies=[Reply(200, SCORED, padding=padding, sized=sized)]) as server:
        reranker = Reranker(RerankServer(server.url, "m"))
        tracemalloc.start()
        try:
            with pytest.raises(RerankError, match=f"its answer is over {limit:,} bytes"):
                reranker.scores("q", TEXTS)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        (sent,) = server.wait_sent()
    assert peak < 4 * limit  # the client held about the limit, not the answer
    assert sent < padding / 4  # and stopped reading: what got out is the limit and the sockets' buffers


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_key_never_reaches_the_other_host(status: int) -> None:
    with RerankStandIn() as elsewhere, RerankStandIn(replies=[Reply(status, headers={"location": elsewhere.url})]) as server:
        reranker = Reranker(RerankServer(server.url, "m", api_key="sk-local-123"))
        with pytest.raises(RerankError) as refused:
            reranker.scores("q", TEXTS)
    assert server.received[0].headers["authorization"] == "Bearer sk-local-123"
    assert elsewhere.received == []
    assert f"HTTP {status} redirect to {elsewhere.url}: redirects are not followed" in str(refused.value)


# --- hybrid search ---------------------------------------------------------------------------------------


@pytest.fixture
def stand_in() -> Iterator[RerankStandIn]:
    # Of the travel policy's chunks #2 holds "per diem", #1 "loyalty points"; #0, the fused best, neither.
    with RerankStandIn(prefer=["per diem", "loyalty points"]) as server:
        yield server


def reranking(settings: Settings, url: str, **more: object) -> Iterator[Retriever]:
    retriever = Retriever.open(settings.updated(**{"rerank_url": url, "rerank_model": "bge-m3", **more}))
    try:
        yield retriever
    finally:
        retriever.close()


def test_hybrid_hits_come_in_the_servers_order_with_its_scores(
    acme: Retriever, acme_index: Settings, stand_in: RerankStandIn
) -> None:
    fused = acme.searcher.search(QUERY, top_k=3)
    assert fused[0].citation.id == "acme:policies/travel#0"
    for retriever in reranking(acme_index, stand_in.url):
        ranking = retriever.searcher.ranking(QUERY, top_k=3)
    assert ranking.reranked_by == "bge-m3"
    hits = ranking.hits
    assert [h.citation.id for h in hits[:2]] == ["acme:policies/travel#2", "acme:policies/travel#1"]
    assert [h.score for h in hits] == [stand_in.score(h.text) for h in hits]
    assert [h.rank for h in hits] == [1, 2, 3] and {h.retriever for h in hits} == {"hybrid"}
    (request,) = stand_in.received
    assert request.body["query"] == QUERY  # and the best 50 fused candidates (the fixture has fewer), in order:
    assert request.body["documents"] == [h.text for h in acme.searcher.search(QUERY, top_k=50)]


def test_the_candidate_count_is_at_least_top_k_and_only_hybrid_search_reranks(
    acme_index: Settings, stand_in: RerankStandIn
) -> None:
    for retriever in reranking(acme_index, stand_in.url, rerank_candidates=4):
        assert len(retriever.searcher.search(QUERY, top_k=2)) == 2
        assert len(retriever.searcher.search(QUERY, top_k=6)) == 6
        retriever.searcher.search(QUERY, mode="vector")
        retriever.searcher.search("hotel", mode="keyword")
    assert [len(r.body["documents"]) for r in stand_in.received] == [4, 6]


@pytest.mark.parametrize(
    ("reply", "logged"),
    [
        (Reply(500, '{"error": "CUDA out of memory"}'), 'HTTP 500: {"error": "CUDA out of memory"}'),
        (Reply(200, "not json\nat all"), "the answer is not JSON: not json at all"),
        (Reply(200, '{"results": [{"index": 0, "relevance_score": 1}]}'), "it scored 1 texts of the 11 sent"),
        (Reply(200, "[]", delay_s=10 * TIMEOUT_S), "no complete answer within 0.5 s (RAGMCP_RERANK_TIMEOUT_S)"),
        (Reply(200, "[" + " " * 48 + "]", drip_s=TIMEOUT_S / 5),  # a byte per tenth of the timeout, 50 of them
         "no complete answer within 0.5 s (RAGMCP_RERANK_TIMEOUT_S)"),
    ],
    ids=["http-error", "not-json", "wrong-count", "slow", "dripping"],
)
def test_a_failing_server_costs_one_log_line_and_leaves_the_fused_order(
    acme: Retriever, acme_index: Settings, stand_in: RerankStandIn, caplog: pytest.LogCaptureFixture,
    reply: Reply, logged: str,
) -> None:  # fmt: skip
    stand_in.replies.append(reply)
    fused = acme.searcher.search(QUERY, top_k=5)
    for retriever in reranking(acme_index, stand_in.url, rerank_timeout_s=TIMEOUT_S):
        with caplog.at_level(logging.WARNING):
            started = time.monotonic()
            first = retriever.searcher.ranking(QUERY, top_k=5)
            elapsed = time.monotonic() - started
            again = retriever.searcher.ranking(QUERY, top_k=5)  # within the pause: no request, no line
    assert first.reranked_by is None and again.reranked_by is None
    assert first.hits == fused and again.hits == fused
    assert elapsed < 3 * TIMEOUT_S
    assert len(stand_in.received) == 1
    (line,) = [r.getMessage() for r in caplog.records if "rerank" in r.getMessage()]
    assert line == (
        f"rerank server {stand_in.url} failed: {logged}; hybrid search returned the fused order "
        "and will not rerank for 30 s"
    )


def test_a_server_that_is_down_costs_one_log_line_and_leaves_the_fused_order(
    acme: Retriever, acme_index: Settings, stand_in: RerankStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    stand_in.stop()
    for retriever in reranking(acme_index, stand_in.url):
        with caplog.at_level(logging.WARNING):
            ranking = retriever.searcher.ranking(QUERY, top_k=5)
    assert ranking.reranked_by is None and ranking.hits == acme.searcher.search(QUERY, top_k=5)
    (line,) = [r.getMessage() for r in caplog.records if "rerank" in r.getMessage()]
    assert line.startswith(f"rerank server {stand_in.url} failed: cannot reach it ([Errno 111] Connection refused)")


def test_the_pause_after_a_failure_is_per_tenant(acme_index: Settings, stand_in: RerankStandIn) -> None:
    # A failure on one grant's search must not change what another grant receives.
    stand_in.replies.append(Reply(500, "boom"))
    for retriever in reranking(acme_index, stand_in.url):
        assert retriever.searcher.ranking(QUERY, scope={"acme"}).reranked_by is None
        assert retriever.searcher.ranking(QUERY).reranked_by == "bge-m3"
        assert retriever.searcher.ranking(QUERY, scope={"acme"}).reranked_by is None
    assert len(stand_in.received) == 2
