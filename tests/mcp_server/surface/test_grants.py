"""Servers built for a grant, in memory through the real SDK client: what each grant lists and refuses, and time limits."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from mcp import Client
from mcp.types import TextResourceContents

from mcp_server.grants import Grant
from mcp_server.settings import Settings
from mcp_server.surface.server import CORPORA_URI, SCHEMA_URI, build_server
from mcp_server.surface.tools import RetrievalTools
from tests.mcp_server.surface.mcp_contract import text_of

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def tools(teams_settings: Settings) -> Iterator[RetrievalTools]:
    opened = RetrievalTools.open(teams_settings)
    yield opened
    opened.close()


async def test_a_sql_only_grant_lists_no_search_and_refuses_it_clearly(tools: RetrievalTools) -> None:
    server = build_server(tools.settings, tools, grant=Grant(corpora=(), sql=True))
    async with Client(server) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == {"sql_query"}
        assert sorted(str(r.uri) for r in (await client.list_resources()).resources) == [CORPORA_URI, SCHEMA_URI]  # no doc
        (corpora,) = (await client.read_resource(CORPORA_URI)).contents
        assert isinstance(corpora, TextResourceContents) and json.loads(corpora.text) == []
        assert "Corpora" not in (client.instructions or "") and "SQL database (company)" in (client.instructions or "")
        refused = await client.call_tool("hybrid_search", {"query": "wombat"})
        assert refused.is_error and text_of(refused) == (
            "hybrid_search is not available to this client: its token grants none of the corpora this server serves. "
            "Ask the server's operator for a token that grants one of them, or use sql_query for records."
        )
        missing = await client.call_tool("no_such_tool", {})
        assert missing.is_error and "Unknown tool: no_such_tool" in text_of(missing)


async def test_a_grant_of_corpora_not_served_here_is_told_so_in_the_words_of_an_empty_grant(
    tools: RetrievalTools,
) -> None:
    server = build_server(tools.settings, tools, grant=Grant(corpora=("archive",), sql=False))
    async with Client(server) as client:
        refused = await client.call_tool("hybrid_search", {"query": "wombat"})
        assert refused.is_error and "grants none of the corpora this server serves" in text_of(refused)
        assert "grants no corpora" not in text_of(refused)


async def test_a_grant_of_every_corpus_covers_all_of_them(tools: RetrievalTools) -> None:
    server = build_server(tools.settings, tools, grant=Grant(corpora="*", sql=False))
    async with Client(server) as client:
        tools_listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "sql_query" not in tools_listed
        corpus = tools_listed["hybrid_search"].input_schema["properties"]["corpus"]
        assert {"type": "string", "enum": ["teama", "teamb"]} in corpus["anyOf"]
        found = await client.call_tool("keyword_search", {"query": "wombat quokka", "top_k": 10})
        assert found.structured_content is not None
        assert {hit["citation"]["corpus"] for hit in found.structured_content["hits"]} == {"teama", "teamb"}


async def test_a_call_past_the_time_limit_gets_a_tool_error_saying_what_to_do(tools: RetrievalTools) -> None:
    hurried = tools.settings.updated(**{"call_timeout_s": 1e-6})
    async with Client(build_server(hurried, tools)) as client:
        result = await client.call_tool("hybrid_search", {"query": "wombat badge"})
    assert result.is_error
    assert "did not finish within 1e-06 s, the server's limit per call" in text_of(result)
    assert "retry in a moment, or ask for less" in text_of(result)


async def test_check_answer_answers_an_id_of_another_teams_corpus_like_one_that_does_not_exist(
    tools: RetrievalTools,
) -> None:
    team_a = build_server(tools.settings, tools, grant=Grant(corpora=("teama",), sql=False))
    full = build_server(tools.settings, tools, grant=Grant(corpora="*", sql=False))
    launch = "Project quokka launches in March with a budget of 42 million [{}]."
    async with Client(team_a) as client, Client(full) as everything:
        granted = await everything.call_tool("check_answer", {"answer": launch.format("teamb:launch#0")})
        assert granted.structured_content is not None and granted.structured_content["passed"]
        other = await client.call_tool("check_answer", {"answer": launch.format("teamb:launch#0")})
        absent = await client.call_tool("check_answer", {"answer": launch.format("teamb:nothing#0")})
    assert other.structured_content is not None and other.structured_content["sentences"][0]["status"] == "unknown_id"
    swap = "teamb:nothing#0", "teamb:launch#0"
    assert text_of(other) == text_of(absent).replace(*swap)
    assert json.dumps(other.structured_content) == json.dumps(absent.structured_content).replace(*swap)
