"""Sizes a host pays for: the tool list (in the model's context on every turn) and one result, within what is stated."""

from __future__ import annotations

import json

import pytest
from mcp import Client
from mcp.server import MCPServer

from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.sql.demo import open_database
from mcp_server.surface.server import build_server
from mcp_server.surface.tools import RetrievalTools
from tests.helpers import make_settings, write_doc
from tests.mcp_server.surface.mcp_contract import call_checked, list_checked_tools, text_of

pytestmark = pytest.mark.anyio

TOOL_LIST_CHARS = 35_000
"""The most characters of JSON one tools/list result may take with one corpus and the demo database (50,118
before issue 37; 32,393 before citations carried their boxes on the page, issue 34, which add 2,281 to the five
output schemas that hold a citation). Its six output schemas take about 19,800 of them."""
MODEL_FACING_CHARS = 15_000
"""The most characters of what hosts hand their model of the six tools: name, title, description, input schema
(21,457 before issue 37)."""


@pytest.fixture(scope="module")
def server(acme: Retriever, server_settings: Settings) -> MCPServer:
    return build_server(server_settings, RetrievalTools(acme, open_database(server_settings), server_settings))


async def test_the_tool_list_is_compact(server: MCPServer, acme: Retriever) -> None:
    async with Client(server) as client:
        await list_checked_tools(client)  # six tools, each with a valid output schema
        result = (await client.list_tools()).model_dump(mode="json", by_alias=True, exclude_none=True)
    listing, tools = json.dumps(result), result["tools"]
    assert len(listing) <= TOOL_LIST_CHARS
    facing = [{key: tool[key] for key in ("name", "title", "description", "inputSchema")} for tool in tools]
    assert len(json.dumps(facing)) <= MODEL_FACING_CHARS
    (corpus,) = acme.corpora()
    assert listing.count(json.dumps(corpus.description)[1:-1]) == 1  # the corpora are described once
    for tool in tools:  # a property's title repeats its name ('Char Start'), and says nothing a result needs
        assert '"title": "Char' not in json.dumps(tool["outputSchema"]), tool["name"]
    sql = next(tool for tool in tools if tool["name"] == "sql_query")
    assert "employees(id, name, email, department_id," in sql["description"]  # the columns, not what a row holds:
    assert "One row per employee" not in sql["description"] and "ragmcp://sql/schema" in sql["description"]


@pytest.fixture(scope="module")
def long_chunks(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """60 documents of about 1,900 characters under long titles and headings, each chunked as long as the
    embedding model reads (two chunks of about 850 characters: 256 MiniLM tokens with the title)."""
    root = tmp_path_factory.mktemp("long-chunks")
    folder = root / "manuals"
    folder.mkdir()
    (folder / "corpus.toml").write_text(
        'name = "manuals"\ndescription = "Widget service manuals."\n'
        "[chunking]\ntarget_tokens = 600\nmax_tokens = 700\noverlap_tokens = 40\n",
        encoding="utf-8",
    )
    for number in range(60):
        sentences = [
            f"Widget model {number} needs maintenance step {step}: clean filter {step} of unit {number} and "
            f"check that its pressure stays below {number + step} bar before restarting the widget."
            for step in range(12)
        ]
        title = f"Widget model {number} service manual for field technicians and regional maintenance teams"
        body = f"# {title}\n\n## Routine maintenance of the widget and its filters\n\n" + " ".join(sentences)
        write_doc(folder, f"manuals/widget-{number:02}.md", title, body)
    settings = make_settings(root / "data", folder)
    ingest(settings)
    return settings


async def test_a_50_hit_search_keeps_to_the_size_its_description_states(long_chunks: Settings) -> None:
    tools = RetrievalTools.open(long_chunks)
    try:
        async with Client(build_server(long_chunks, tools)) as client:
            listed = await list_checked_tools(client, {"hybrid_search", "vector_search", "keyword_search",
                                                       "get_document", "check_answer"})  # fmt: skip
            limit = long_chunks.calls.max_result_chars
            for name in ("hybrid_search", "vector_search", "keyword_search"):
                result = await call_checked(client, listed, name, {"query": "widget maintenance filter", "top_k": 50})
                found = result.structured_content
                assert found is not None and found["omitted"] > 0 and len(found["hits"]) > 1
                assert all(len(hit["text"]) > 800 for hit in found["hits"])  # long chunks
                assert len(text_of(result)) <= limit
                assert len(json.dumps(found, ensure_ascii=False, separators=(",", ":"))) <= limit
                assert sum(len(hit["text"]) for hit in found["hits"]) > limit / 2  # the room is used, not wasted
                stated = f"one result is at most {limit:,} characters, as text and as JSON"
                assert stated in (listed[name].description or "")
    finally:
        tools.close()

