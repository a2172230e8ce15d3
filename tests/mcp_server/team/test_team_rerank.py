"""Reranking on a team server over real HTTP: hybrid_search's hits come in the rerank server's order,
only the client's granted corpora reach that server, and a server gone down costs one stderr line."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from mcp_server.grants import Grant
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from mcp_server.team.tokens import ClientLimits, add_client
from tests.mcp_server.retrieval.rerank_server import RerankStandIn
from tests.mcp_server.team.test_auth import TeamServer, connect
from tests.mcp_server.team.test_http import HttpServer
from tests.mcp_server.team.test_isolation import build_corpora

# Words of team B's corpus (quokka, budget, lab door) and of team A's (badge, door).
QUERY = "quokka budget badge door"


@pytest.mark.slow
@pytest.mark.anyio
async def test_hybrid_search_is_reranked_from_the_clients_own_corpora_only(tmp_path: Path) -> None:
    folders = build_corpora(tmp_path)
    tokens_file = tmp_path / "tokens.json"
    unlimited = ClientLimits(rate_per_minute=100_000, burst=1_000)
    with RerankStandIn(prefer=["coffee", "paper badge"]) as reranker:
        settings = Settings.from_names(
            data_dir=tmp_path / "data", corpora=list(folders.values()), tokens_file=tokens_file,
            audit_log=tmp_path / "audit.jsonl", rerank_url=reranker.url, rerank_model="bge-reranker-v2-m3",
        )  # fmt: skip
        ingest(settings)
        tokens = {
            "team-a": add_client(tokens_file, "team-a", Grant(corpora=("handbook", "facilities"), sql=False), unlimited),
            "team-b": add_client(tokens_file, "team-b", Grant(corpora=("teamb",), sql=False), unlimited),
        }
        server = TeamServer(HttpServer(settings, tmp_path / "stderr.log"), tokens, tokens_file, tmp_path / "audit.jsonl")
        try:
            async with connect(server, "team-a") as client:
                tools = {tool.name: tool for tool in (await client.list_tools()).tools}
                reranked = await client.call_tool("hybrid_search", {"query": QUERY, "top_k": 5})
                reranker.stop()
                fallback = await client.call_tool("hybrid_search", {"query": QUERY, "top_k": 5})
        finally:
            assert server.http.stop() in (0, -signal.SIGTERM), server.http.log.read_text()

    sent = reranker.texts()
    assert len(sent) == 5  # every chunk team A may read, and nothing of team B's:
    assert not [text for text in sent if "quokka" in text.lower() or "42 million" in text]
    assert reranked.structured_content is not None and not reranked.is_error
    result = reranked.structured_content
    assert result["reranked_by"] == "bge-reranker-v2-m3" and result["retriever"] == "hybrid"
    assert [hit["citation"]["id"] for hit in result["hits"][:2]] == ["facilities:coffee#0", "handbook:visitors#0"]
    assert [hit["score"] for hit in result["hits"][:2]] == [0.99, 0.89]
    assert "(hybrid search, reranked by bge-reranker-v2-m3)" in reranked.content[0].text  # type: ignore[union-attr]
    min_score = tools["hybrid_search"].input_schema["properties"]["min_score"]["description"]
    assert "reranks hybrid hits with the model bge-reranker-v2-m3" in min_score

    assert fallback.structured_content is not None and not fallback.is_error
    assert fallback.structured_content["reranked_by"] is None
    assert fallback.structured_content["hits"][0]["citation"]["id"] != "facilities:coffee#0"
    lines = [line for line in server.http.log.read_text().splitlines() if "rerank server" in line]
    assert len(lines) == 1, lines
    assert lines[0].endswith(
        f"rerank server {reranker.url} failed: cannot reach it ([Errno 111] Connection refused); "
        "hybrid search returned the fused order and will not rerank for 30 s"
    )
