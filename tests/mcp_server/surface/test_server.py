"""The MCP surface in memory, through the real SDK client: tools, schemas, citations, bad input, resources."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from urllib.parse import quote
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.server import MCPServer
from mcp.types import TextResourceContents

from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.sql.demo import open_database
from mcp_server.surface.server import (
    CORPORA_URI,
    DOCUMENT_URI,
    SCHEMA_URI,
    build_server,
)
from mcp_server.surface import listing
from mcp_server.surface.links import PAGE_URI
from mcp_server.surface.tools import RetrievalTools
from mcp_server.surface.view import VIEW_URI
from tests.mcp_server.surface.mcp_contract import (
    call_checked,
    exercise_every_tool,
    list_checked_tools,
    text_of,
)
from tests.mcp_server.sql.test_guard import HOSTILE, Bounded, snapshot

pytestmark = pytest.mark.anyio


def make_tools(acme: Retriever, settings: Settings, **changes: Any) -> RetrievalTools:
    """Tools over the shared acme retriever (never closed here) and the test database."""
    settings = settings.updated(**changes)
    return RetrievalTools(acme, open_database(settings), settings)


@pytest.fixture(scope="module")
def tools(acme: Retriever, server_settings: Settings) -> RetrievalTools:
    return make_tools(acme, server_settings)


@pytest.fixture(scope="module")
def server(tools: RetrievalTools, server_settings: Settings) -> MCPServer:
    return build_server(server_settings, tools)


@pytest.fixture
async def client(server: MCPServer):  # type: ignore[no-untyped-def]
    async with Client(server) as connected:
        yield connected


# --- listing and descriptions ------------------------------------------------------------------


async def test_every_tool_works_and_validates(client: Client) -> None:
    await exercise_every_tool(client)


async def test_corpus_parameter_enumerates_corpora_with_their_descriptions(client: Client, acme: Retriever) -> None:
    tools = await list_checked_tools(client)
    (corpus,) = acme.corpora()
    for name in ("hybrid_search", "vector_search", "keyword_search", "get_document"):
        parameter = tools[name].input_schema["properties"]["corpus"]
        assert {"type": "string", "enum": ["acme"]} in parameter["anyOf"]
        # Described once, under the default search; the other searches point there.
        assert (corpus.description in parameter["description"]) == (name == "hybrid_search")
        pointer = "hybrid_search's corpus parameter" in parameter["description"]
        assert pointer == (name in ("vector_search", "keyword_search"))
    search = tools["hybrid_search"].input_schema["properties"]
    assert (search["top_k"]["minimum"], search["top_k"]["maximum"]) == (1, 50)
    assert search["query"]["maxLength"] == 2000


async def test_descriptions_say_when_to_use_each_tool_and_the_limits(client: Client) -> None:
    tools = await list_checked_tools(client)
    assert "default search" in (tools["hybrid_search"].description or "")
    assert "error code" in (tools["keyword_search"].description or "")
    assert "paraphrase" in (tools["vector_search"].description or "")
    for name in ("hybrid_search", "vector_search", "keyword_search"):
        description = tools[name].description or ""
        assert "Do not use it" in description and "20,000 characters" in description
    sql = tools["sql_query"].description or ""
    assert "counts, sums" in sql and "At most max_rows rows" in sql
    max_rows = tools["sql_query"].input_schema["properties"]["max_rows"]
    assert "(default 20)" in max_rows["description"]
    assert {"type": "integer", "minimum": 1, "maximum": 20} in max_rows["anyOf"]
    # The tables with their columns' names; types, keys and what a row holds are a resource (or a query) away.
    assert "\nemployees(id, name, email, department_id, title, office, hire_date, manager_id," in sql
    assert "the ragmcp://sql/schema resource, or SELECT sql FROM sqlite_master WHERE name = '<table>'" in sql
    assert len(sql) < 2000


async def test_instructions_explain_routing_and_citation_format(client: Client) -> None:
    instructions = client.instructions or ""
    assert "[corpus:doc_id#chunk]" in instructions and "[sql:database:hash]" in instructions
    assert "Corpora: acme" in instructions and "general knowledge" in instructions


# --- results ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["hybrid_search", "vector_search", "keyword_search"])
@pytest.mark.parametrize("query", ["daily allowance for meals", "ACME-E7731 migration lock", "Widget battery"])
async def test_every_hit_citation_resolves_to_its_text(client: Client, tool: str, query: str) -> None:
    tools = await list_checked_tools(client)
    result = await call_checked(client, tools, tool, {"query": query, "top_k": 5})
    hits = result.structured_content["hits"]  # type: ignore[index]
    assert hits
    for hit in hits:
        citation = hit["citation"]
        document = await call_checked(
            client, tools, "get_document", {"doc_id": citation["doc_id"], "corpus": citation["corpus"]}
        )
        view = document.structured_content
        assert view is not None and view["text_offset"] == 0 and not view["truncated"]
        assert view["text"][citation["char_start"] : citation["char_end"]] == hit["text"]


async def test_search_filters_restrict_hits(client: Client) -> None:
    tools = await list_checked_tools(client)
    result = await call_checked(
        client, tools, "hybrid_search", {"query": "rules", "top_k": 10, "filters": {"source_prefix": "policies/"}}
    )
    assert {hit["citation"]["doc_id"] for hit in result.structured_content["hits"]} <= {  # type: ignore[index]
        "policies/travel", "policies/remote-work",
    }  # fmt: skip


async def test_get_document_marks_each_chunk_where_it_starts(client: Client) -> None:
    tools = await list_checked_tools(client)
    result = await call_checked(client, tools, "get_document", {"doc_id": "acme:policies/travel#2", "window": 0})
    view = result.structured_content
    assert view is not None and [c["chunk"] for c in view["chunks"]] == [2]
    assert view["citation"]["id"] == "acme:policies/travel#2"
    text = text_of(result)
    assert text.startswith("acme:policies/travel — Travel Policy — policies/travel.md")
    assert "[acme:policies/travel#2] (lines 29–" in text and ")\n## Daily allowance" in text  # line 29 of the file
    assert view["chunks"][0]["line_start"] == 29


async def test_large_results_are_cut_to_the_limit(acme: Retriever, server_settings: Settings) -> None:
    small = make_tools(acme, server_settings, max_result_chars=1000)
    async with Client(build_server(small.settings, small)) as client:
        tools = await list_checked_tools(client)
        assert "1,000 characters" in (tools["hybrid_search"].description or "")
        search = await call_checked(client, tools, "hybrid_search", {"query": "travel hotel allowance", "top_k": 20})
        found = search.structured_content
        assert found is not None and found["omitted"] > 0
        assert sum(len(hit["text"]) for hit in found["hits"]) <= 1000 or len(found["hits"]) == 1
        assert "more hits left out" in text_of(search)
        document = await call_checked(client, tools, "get_document", {"doc_id": "policies/travel"})
        view = document.structured_content
        assert view is not None and view["truncated"] and len(view["text"]) <= 1000
        assert view["next_chunk"] == len(view["chunks"])
        assert view["chunks"][-1]["char_end"] == len(view["text"])
        assert f"call get_document with chunk={view['next_chunk']}" in text_of(document)


# --- bad input ----------------------------------------------------------------------------------------

BAD_CALLS = [
    pytest.param("hybrid_search", {"query": "x", "corpus": "hr"}, "unknown corpus 'hr'; available: acme", id="corpus"),
    pytest.param("get_document", {"doc_id": "travel", "corpus": "hr"}, "unknown corpus 'hr'", id="doc-corpus"),
    pytest.param("vector_search", {"query": ""}, "the query is empty", id="empty-query"),
    pytest.param("keyword_search", {"query": " \n\t "}, "the query is empty", id="blank-query"),
    pytest.param("hybrid_search", {"query": "a" * 100_000}, "the limit is 2000", id="100kb-query"),
    pytest.param("hybrid_search", {"query": "x", "top_k": 0}, "top_k must be between 1 and 50, got 0", id="top-k-0"),
    pytest.param("vector_search", {"query": "x", "top_k": 10_000}, "between 1 and 50, got 10000", id="top-k-10000"),
    pytest.param("hybrid_search", {"query": "x", "top_k": "many"}, "top_k: expected an integer, got 'many'",
                 id="top-k-text"),
    pytest.param("hybrid_search", {"query": "x", "top_k": "5"}, "top_k: expected an integer, got '5'",
                 id="top-k-numeric-text"),
    pytest.param("keyword_search", {"query": "x", "top_k": True}, "top_k: expected an integer, got True", id="top-k-true"),
    pytest.param("vector_search", {"query": "x", "min_score": "0.5"}, "min_score: expected a number (or null), got '0.5'",
                 id="min-score-numeric-text"),
    pytest.param("get_document", {"doc_id": "policies/travel", "chunk": "0", "window": "1"},
                 "chunk: expected an integer (or null), got '0'", id="chunk-numeric-text"),
    pytest.param("sql_query", {"sql": "SELECT 1", "max_rows": "5"}, "max_rows: expected an integer (or null), got '5'",
                 id="max-rows-numeric-text"),
    pytest.param("hybrid_search", {"query": "x", "filters": {"tagz": ["a"]}},
                 "filters: unknown key 'tagz'; the keys are category, tags, date_from, date_to, source_prefix",
                 id="unknown-filter"),
    pytest.param("hybrid_search", {"query": "x", "filters": {"tags": [f"t{n}" for n in range(1_000)]}},
                 "filters.tags: at most 20", id="1000-tags"),
    pytest.param("keyword_search", {"query": "x", "topk": 3},
                 "unknown argument 'topk'; this tool takes query, corpus, top_k, filters, min_score", id="unknown-argument"),
    pytest.param("vector_search", {"top_k": 3}, "query: missing; expected a string", id="missing-query"),
    pytest.param("get_document", {"doc_id": 7}, "doc_id: expected a string, got 7", id="doc-id-number"),
    pytest.param("sql_query", {"sql": "SELECT ?", "params": "abc"},
                 "params: expected a list of strings, integers, numbers, booleans or nulls (or null), got 'abc'",
                 id="params-text"),
    pytest.param("keyword_search", {"query": "the of and"}, "use vector or hybrid search", id="stopwords-only"),
    pytest.param("hybrid_search", {"query": "x", "filters": {"date_from": "soon"}}, "date_from", id="bad-date"),
    pytest.param("get_document", {"doc_id": "policies/nope"}, "no document 'policies/nope'", id="unknown-doc"),
    pytest.param("get_document", {"doc_id": "../../etc/passwd"}, "no document '../../etc/passwd'", id="traversal"),
    pytest.param("get_document", {"doc_id": "acme:../../etc/passwd"}, "no document", id="traversal-corpus"),
    pytest.param("get_document", {"doc_id": "/etc/passwd"}, "no document '/etc/passwd'", id="absolute-path"),
    pytest.param("get_document", {"doc_id": "..\\..\\windows\\win.ini"}, "no document", id="traversal-backslash"),
    pytest.param("get_document", {"doc_id": ""}, "the document id is empty", id="empty-doc-id"),
    pytest.param("get_document", {"doc_id": "acme:policies/travel#99"}, "has no chunk #99", id="chunk-range"),
    pytest.param("get_document", {"doc_id": "policies/travel", "chunk": 0, "window": -1}, "window", id="window"),
    pytest.param("sql_query", {"sql": "SELECT 1", "max_rows": 10_000}, "max_rows must be an integer from 1 to 20",
                 id="max-rows"),
    pytest.param("no_such_tool", {}, "Unknown tool", id="unknown-tool"),
]  # fmt: skip


DOUBLED_PUNCTUATION = re.compile(r"(?<!\.)[.?!:;,] ?[.?!:;,](?!\.)")


def has_doubled_punctuation(message: str) -> bool:
    """'supplied.. Check', 'phrase.; keyword': one message ending inside another. Quoted input and
    ellipses do not count."""
    return DOUBLED_PUNCTUATION.search(re.sub(r"'[^']*'", "''", message)) is not None


@pytest.mark.parametrize(("tool", "arguments", "message"), BAD_CALLS)
async def test_bad_input_is_a_tool_error_and_the_server_keeps_serving(
    client: Client, tool: str, arguments: dict[str, Any], message: str
) -> None:
    result = await client.call_tool(tool, arguments)
    assert result.is_error and message in text_of(result)
    assert not has_doubled_punctuation(text_of(result)), text_of(result)
    assert not (await client.call_tool("keyword_search", {"query": "Widget"})).is_error


async def test_wrong_arguments_get_one_plain_line_each_not_a_validation_dump(client: Client) -> None:
    arguments = {"query": 5, "top_k": "many", "filters": {"date_from": "soon", "tagz": 1}, "topk": 3}
    result = await client.call_tool("hybrid_search", arguments)
    assert result.is_error
    assert text_of(result).splitlines() == [
        "Invalid arguments for hybrid_search:",
        "- unknown argument 'topk'; this tool takes query, corpus, top_k, filters, min_score",
        "- query: expected a string, got 5",
        "- top_k: expected an integer, got 'many'",
        "- filters.date_from: expected a date (YYYY-MM-DD) (or null), got 'soon'",
        "- filters: unknown key 'tagz'; the keys are category, tags, date_from, date_to, source_prefix",
    ]


async def test_a_whole_number_written_with_a_fraction_is_an_integer_as_in_json_schema(client: Client) -> None:
    result = await client.call_tool("keyword_search", {"query": "Widget", "top_k": 2.0, "min_score": 0})
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None and len(result.structured_content["hits"]) <= 2


async def test_error_messages_do_not_echo_huge_input(client: Client) -> None:
    result = await client.call_tool("hybrid_search", {"query": "x", "corpus": "h" * 100_000})
    assert result.is_error and "unknown corpus 'hhh" in text_of(result) and len(text_of(result)) < 1200


async def test_unexpected_failures_do_not_leak_internals(
    client: Client, tools: RetrievalTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret /srv/internal/path")

    monkeypatch.setattr(tools, "search", crash)
    result = await client.call_tool("hybrid_search", {"query": "travel"})
    assert result.is_error and text_of(result) == "Error executing tool hybrid_search"
    assert not (await client.call_tool("sql_query", {"sql": "SELECT 1"})).is_error


# Params the tool's input schema (a list of scalars) refuses before any SQL runs.
SCHEMA_REFUSES = {"param-dict-value", "param-list-value", "params-string", "params-number", "dict-for-positional",
                  "inject-named", "missing-named-param"}  # fmt: skip


# JSON has no bytes type, so the table's bytes-parameter case cannot be sent over MCP at all.
SENDABLE = [case for case in HOSTILE if case.id != "param-bytes"]


@pytest.mark.parametrize(("statement", "params", "expected"), SENDABLE)
async def test_hostile_sql_through_mcp_is_refused_or_bounded(
    request: pytest.FixtureRequest, client: Client, company_db: Path, tmp_path: Path,
    statement: str, params: object, expected: object,
) -> None:  # fmt: skip
    case = request.node.callspec.id
    pristine = snapshot(company_db)
    arguments: dict[str, Any] = {"sql": statement.replace("{tmp}", str(tmp_path))}
    if params is not None:
        arguments["params"] = params
    started = time.monotonic()
    result = await client.call_tool("sql_query", arguments)
    if isinstance(expected, Bounded) and case not in SCHEMA_REFUSES:
        assert not result.is_error, text_of(result)
        assert result.structured_content is not None and result.structured_content["row_count"] <= 20
    else:
        assert result.is_error
        phrase = "params" if case in SCHEMA_REFUSES else expected.phrase  # type: ignore[attr-defined]
        assert phrase in text_of(result) and not has_doubled_punctuation(text_of(result)), text_of(result)
    assert time.monotonic() - started < 5
    assert list(tmp_path.iterdir()) == []
    assert snapshot(company_db) == pristine
    assert not (await client.call_tool("sql_query", {"sql": "SELECT count(*) FROM employees"})).is_error


# --- resources and prompt ---------------------------------------------------------------------------


async def test_resources_list_corpora_schema_and_documents(client: Client, acme: Retriever) -> None:
    listed = (await client.list_resources()).resources
    documents = acme.documents.document_page(None, None, 1000)
    uris = [VIEW_URI, CORPORA_URI, SCHEMA_URI, *(f"doc://acme/{quote(d, safe='/')}" for _, d, _ in documents)]
    assert [str(r.uri) for r in listed] == uris
    assert len(documents) == 6 and "doc://acme/policies/travel" in {str(r.uri) for r in listed}
    for resource in listed[3:]:
        assert resource.name.startswith("acme:") and resource.title and resource.mime_type == "text/plain"
        assert f"[{resource.name}#0]" in _resource_text(await client.read_resource(str(resource.uri)))
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == [DOCUMENT_URI, PAGE_URI]

    corpora = json.loads(_resource_text(await client.read_resource(CORPORA_URI)))
    assert corpora == [{"name": "acme", "description": corpora[0]["description"], "language": "en",
                        "documents": 6, "chunks": corpora[0]["chunks"], "indexed": True, "skipped_count": 0, "skipped": []}]  # fmt: skip
    schema = json.loads(_resource_text(await client.read_resource(SCHEMA_URI)))
    assert [table["name"] for table in schema][:2] == ["departments", "employees"]
    document = _resource_text(await client.read_resource("doc://acme/policies/travel"))
    assert "[acme:policies/travel#0]" in document and "Daily allowance" in document


async def test_documents_are_listed_a_page_at_a_time(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "PAGE_SIZE", 4)
    first = await client.list_resources()
    fixed = [VIEW_URI, CORPORA_URI, SCHEMA_URI]
    assert [str(r.uri) for r in first.resources][:3] == fixed and len(first.resources) == 7
    assert first.next_cursor is not None
    second = await client.list_resources(cursor=first.next_cursor)
    assert len(second.resources) == 2 and second.next_cursor is None
    uris = [str(r.uri) for r in first.resources[3:] + second.resources]
    assert len(set(uris)) == 6 and uris == sorted(uris)
    with pytest.raises(MCPError, match="Invalid cursor"):
        await client.list_resources(cursor="not-a-cursor")


@pytest.mark.parametrize("uri", ["doc://acme/policies/nope", "doc://acme/../../etc/passwd", "doc://hr/travel"])
async def test_unknown_or_hostile_document_uris_are_refused(client: Client, uri: str) -> None:
    with pytest.raises(MCPError):
        await client.read_resource(uri)
    assert "[acme:policies/travel#0]" in _resource_text(await client.read_resource("doc://acme/policies/travel"))


async def test_research_prompt_carries_the_question(client: Client) -> None:
    prompt = await client.get_prompt("research", {"question": "How much is the daily allowance?"})
    (message,) = prompt.messages
    assert "How much is the daily allowance?" in message.content.text  # type: ignore[union-attr]
    assert "citation" in message.content.text  # type: ignore[union-attr]


def _resource_text(result: Any) -> str:
    (contents,) = result.contents
    assert isinstance(contents, TextResourceContents)
    return contents.text
