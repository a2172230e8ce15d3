"""The team server over real HTTP: bearer tokens, per-team grants, rate limits and the audit log.

One server on 127.0.0.1 serves two teams' corpora (teama, teamb) and the demo database to
clients from a tokens file; every client is driven by the real MCP SDK client or httpx.
"""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextResourceContents

from mcp_server.cli import main
from mcp_server.grants import Grant
from mcp_server.settings import Settings
from mcp_server.surface.server import CORPORA_URI
from mcp_server.surface.view import VIEW_URI
from mcp_server.team.tokens import ClientLimits, add_client, hash_token
from tests.mcp_server.surface.mcp_contract import text_of
from tests.mcp_server.team.test_http import MCP_HEADERS, HttpServer

TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
SEARCHES = ("hybrid_search", "vector_search", "keyword_search")

CLIENTS = {
    # team-a and team-b are the isolation tests' clients, not the limits': a session of the
    # isolation test alone makes about 20 requests, the default burst.
    "team-a": (Grant(corpora=("teama",), sql=False), ClientLimits(burst=200)),
    "team-b": (Grant(corpora=("teamb",), sql=True), ClientLimits(burst=200)),
    "limited": (Grant(corpora=("teama",), sql=False), ClientLimits(rate_per_minute=1, burst=2)),
    "auditor": (Grant(), ClientLimits()),
    "leaver": (Grant(corpora=("teama",), sql=False), ClientLimits()),
    "separators": (Grant(corpora=("teama",), sql=False), ClientLimits()),  # its own rate budget for one call
    "url-token": (Grant(corpora=("teama",), sql=False), ClientLimits()),  # likewise
    "listener": (Grant(corpora=("teama",), sql=False), ClientLimits()),  # likewise
    "prompt-no-sql": (Grant(corpora=("teama",), sql=False), ClientLimits()),  # likewise
    "prompt-sql": (Grant(corpora=("teamb",), sql=True), ClientLimits()),  # likewise
    "quoter": (Grant(corpora=("teama",), sql=False), ClientLimits()),  # likewise
}


@dataclass
class TeamServer:
    http: HttpServer
    tokens: dict[str, str]
    tokens_file: Path
    audit_log: Path


@pytest.fixture(scope="module")
def team_server(teams_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    root = tmp_path_factory.mktemp("team-server")
    tokens_file = root / "tokens.json"
    tokens = {name: add_client(tokens_file, name, grant, limits) for name, (grant, limits) in CLIENTS.items()}
    audit_log = root / "audit" / "audit.jsonl"
    settings = teams_settings.updated(**{"tokens_file": tokens_file, "audit_log": audit_log})
    running = HttpServer(settings, root / "stderr.log")
    yield TeamServer(running, tokens, tokens_file, audit_log)
    # One worker: uvicorn shuts down gracefully, then re-raises the SIGTERM it caught.
    assert running.stop() in (0, -signal.SIGTERM), running.log.read_text()
    assert "Application shutdown complete" in running.log.read_text()


@asynccontextmanager
async def connect(server: TeamServer, client: str) -> AsyncIterator[Client]:
    """An MCP SDK client session sending ``client``'s bearer token."""
    headers = {"Authorization": f"Bearer {server.tokens[client]}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(f"{server.http.url}/mcp", http_client=http)) as session:
            yield session


def post_tools_list(server: TeamServer, token: str | None = None, authorization: str | None = None) -> httpx.Response:
    headers = dict(MCP_HEADERS)
    if token is not None or authorization is not None:
        headers["Authorization"] = authorization if authorization is not None else f"Bearer {token}"
    return httpx.post(f"{server.http.url}/mcp", json=TOOLS_LIST, headers=headers, timeout=60)


# --- authentication -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "authorization", [None, "Bearer rmcp_not-a-real-token", "Bearer", "Basic dGVhbS1hOnNlY3JldA=="]
)
def test_requests_without_a_valid_token_get_401_naming_the_resource_metadata(
    team_server: TeamServer, authorization: str | None
) -> None:
    response = post_tools_list(team_server, authorization=authorization)
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    metadata_url = f"{team_server.http.url}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
    metadata = httpx.get(metadata_url).json()
    assert metadata["resource"] == f"{team_server.http.url}/mcp"
    assert metadata["bearer_methods_supported"] == ["header"] and metadata["authorization_servers"]


@pytest.mark.slow
def test_a_revoked_token_is_refused_from_the_next_request_without_a_restart(team_server: TeamServer) -> None:
    token = team_server.tokens["leaver"]
    assert post_tools_list(team_server, token).status_code == 200
    result = CliRunner().invoke(main, ["token", "--file", str(team_server.tokens_file), "revoke", "leaver"])
    assert result.exit_code == 0, result.output
    response = post_tools_list(team_server, token)
    assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer ")
    assert post_tools_list(team_server, team_server.tokens["team-a"]).status_code == 200


@pytest.mark.slow
def test_healthz_answers_without_a_token_but_names_no_corpus_and_counts_nothing(team_server: TeamServer) -> None:
    health = httpx.get(f"{team_server.http.url}/healthz").json()
    assert health["status"] == "ok" and health["embedding_model"]
    assert not {"corpora", "database", "documents", "chunks", "generation", "created"} & set(health)
    assert "teamb" not in json.dumps(health)
    authenticated = {"Authorization": f"Bearer {team_server.tokens['auditor']}"}
    assert httpx.get(f"{team_server.http.url}/healthz", headers=authenticated).json()["generation"].startswith("gen-")


# --- authorisation --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.anyio
async def test_team_a_neither_sees_nor_reads_team_b(team_server: TeamServer) -> None:
    async with connect(team_server, "team-a") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {*SEARCHES, "get_document", "check_answer"}
        for tool in tools.values():
            if tool.name != "check_answer":  # it takes no corpus: ids name theirs
                assert {"type": "string", "enum": ["teama"]} in tool.input_schema["properties"]["corpus"]["anyOf"]
        launch = "Project quokka launches in March with a budget of 42 million [{}]."
        other = await client.call_tool("check_answer", {"answer": launch.format("teamb:launch#0")})
        absent = await client.call_tool("check_answer", {"answer": launch.format("teamb:nothing#0")})
        swap = "teamb:nothing#0", "teamb:launch#0"
        assert text_of(other) == text_of(absent).replace(*swap) and "unknown_id" in text_of(other)
        listing = json.dumps([tool.model_dump(mode="json") for tool in tools.values()]) + (client.instructions or "")
        assert "teama" in listing and "Team A's onboarding handbook" in listing
        assert "teamb" not in listing and "launch plans" not in listing and "SQL database" not in listing

        resources = [str(r.uri) for r in (await client.list_resources()).resources]
        assert resources == [VIEW_URI, CORPORA_URI, "doc://teama/badges", "doc://teama/lunch"]  # its documents, no others
        (corpora,) = (await client.read_resource(CORPORA_URI)).contents
        assert isinstance(corpora, TextResourceContents)
        assert [c["name"] for c in json.loads(corpora.text)] == ["teama"]

        everything = await client.call_tool("hybrid_search", {"query": "quokka launch budget", "top_k": 10})
        assert not everything.is_error and everything.structured_content is not None
        assert {hit["citation"]["corpus"] for hit in everything.structured_content["hits"]} == {"teama"}
        assert "42 million" not in text_of(everything) and "four engineers" not in text_of(everything)

        for name in SEARCHES:
            refused = await client.call_tool(name, {"query": "quokka", "corpus": "teamb"})
            assert refused.is_error and "unknown corpus 'teamb'; this client may read: teama" in text_of(refused)
        unknown = await client.call_tool("keyword_search", {"query": "quokka", "corpus": "nosuch"})
        assert "unknown corpus 'nosuch'; this client may read: teama" in text_of(unknown)  # the same answer

        for ref in ("teamb:launch#0", "teamb:launch", "launch"):
            document = await client.call_tool("get_document", {"doc_id": ref})
            assert document.is_error and "no document" in text_of(document) and "quokka" not in text_of(document)
        with pytest.raises(MCPError, match="unknown corpus 'teamb'; this client may read: teama"):
            await client.read_resource("doc://teamb/launch")


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_quote_in_another_teams_document_is_answered_like_one_in_no_document(team_server: TeamServer) -> None:
    launch = "Project quokka launches in March"
    async with connect(team_server, "quoter") as client:
        own = await client.call_tool("get_document", {"doc_id": "teama:badges", "quote": "the WOMBAT badge opens"})
        answers = {
            ref: (await client.call_tool("get_document", {"doc_id": ref, "quote": launch})).model_dump(mode="json")
            for ref in ("teamb:launch#0", "teamb:nothing#0", "teamb:launch", "teamb:nothing")
        }
    assert not own.is_error and own.structured_content is not None
    assert own.structured_content["quote"]["citation"]["id"] == "teama:badges#0"
    for ref, twin in (("teamb:launch#0", "teamb:nothing#0"), ("teamb:launch", "teamb:nothing")):
        other, absent = json.dumps(answers[ref]), json.dumps(answers[twin])
        assert other == absent.replace(twin, ref) and answers[ref]["is_error"]
        assert "no document" in other and "quokka" not in other.replace(launch, "")


@pytest.mark.slow
@pytest.mark.anyio
async def test_team_b_reads_its_corpus_and_queries_sql(team_server: TeamServer) -> None:
    async with connect(team_server, "team-b") as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == {*SEARCHES, "get_document", "check_answer", "sql_query"}
        hits = await client.call_tool("keyword_search", {"query": "quokka"})
        assert hits.structured_content is not None
        assert {hit["citation"]["corpus"] for hit in hits.structured_content["hits"]} == {"teamb"}
        document = await client.call_tool("get_document", {"doc_id": "teamb:launch#0"})
        assert not document.is_error and "42 million" in text_of(document)
        rows = await client.call_tool("sql_query", {"sql": "SELECT count(*) AS n FROM employees"})
        assert not rows.is_error and rows.structured_content is not None and rows.structured_content["rows"][0][0] > 0


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_token_without_the_sql_grant_is_refused_clearly(team_server: TeamServer) -> None:
    async with connect(team_server, "team-a") as client:
        refused = await client.call_tool("sql_query", {"sql": "SELECT 1"})
    assert refused.is_error
    assert text_of(refused).startswith("sql_query is not available to this client: its token has no SQL grant.")


# --- limits ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_over_its_rate_a_client_gets_429_with_retry_after_and_others_carry_on(team_server: TeamServer) -> None:
    token = team_server.tokens["limited"]
    assert [post_tools_list(team_server, token).status_code for _ in range(2)] == [200, 200]  # the burst
    refused = post_tools_list(team_server, token)
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 60  # one request a minute
    assert "client 'limited' is over its limit of 1 requests per minute" in refused.json()["error_description"]
    assert post_tools_list(team_server, team_server.tokens["team-a"]).status_code == 200
    assert "client 'limited' is over its rate limit" in team_server.http.log.read_text()


@pytest.mark.slow
def test_an_oversized_body_is_refused_before_any_work(team_server: TeamServer) -> None:
    body = b'{"jsonrpc": "2.0", "padding": "' + b"a" * 2_000_000 + b'"}'
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {team_server.tokens['team-a']}"}
    assert httpx.post(f"{team_server.http.url}/mcp", content=body, headers=headers).status_code == 413


# --- audit log ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_audit_log_has_one_line_per_call_and_no_token_material(team_server: TeamServer) -> None:
    sql = "SELECT name FROM employees WHERE department_id = ? ORDER BY id"
    async with connect(team_server, "auditor") as client:
        await client.list_tools()  # not a call: no line
        await client.call_tool("hybrid_search", {"query": "wombat badge", "top_k": 2})
        await client.call_tool("sql_query", {"sql": sql, "params": [1], "max_rows": 3})
        await client.call_tool("get_document", {"doc_id": "teamb:nothing-here"})
        await client.call_tool("keyword_search", {"query": 5})
        await client.read_resource(CORPORA_URI)
    async with connect(team_server, "team-a") as client:
        await client.call_tool("sql_query", {"sql": "SELECT 1"})

    lines = [json.loads(line) for line in team_server.audit_log.read_text(encoding="utf-8").splitlines()]
    mine = [line for line in lines if line["client"] == "auditor"]
    assert [(line["method"], line.get("tool", line.get("uri")), line["outcome"], line["error"]) for line in mine] == [
        ("tools/call", "hybrid_search", "ok", None),
        ("tools/call", "sql_query", "ok", None),
        ("tools/call", "get_document", "error", "NotFoundError"),
        ("tools/call", "keyword_search", "error", "ToolError"),
        ("resources/read", CORPORA_URI, "ok", None),
    ]
    search, query = mine[0], mine[1]
    assert search["arguments"] == {"query": "wombat badge", "top_k": 2} and search["results"] == 2
    assert query["arguments"] == {"sql": sql, "params": [1], "max_rows": 3} and query["results"] == 3
    assert all(line["latency_ms"] >= 0 and line["time"].endswith("+00:00") for line in mine)
    assert search["result_chars"] > 0
    refusal = [line for line in lines if line["client"] == "team-a" and line.get("tool") == "sql_query"][-1]
    assert (refusal["outcome"], refusal["error"], refusal["arguments"]) == ("error", "NotGranted", {"sql": "SELECT 1"})

    everything_logged = team_server.audit_log.read_text(encoding="utf-8") + team_server.http.log.read_text()
    for token in team_server.tokens.values():
        assert token not in everything_logged and hash_token(token) not in everything_logged
    assert "rmcp_" not in everything_logged


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_token_in_the_url_or_in_arguments_reaches_no_log(team_server: TeamServer) -> None:
    token = team_server.tokens["url-token"]
    url = f"{team_server.http.url}/mcp?access_token={token}"
    assert httpx.post(url, json=TOOLS_LIST, headers=MCP_HEADERS).status_code == 401
    authorized = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    assert httpx.post(url, json=TOOLS_LIST, headers=authorized).status_code == 200
    assert httpx.get(f"{team_server.http.url}/healthz?token={token}&x=1").status_code == 200
    encoded = "%72" + token[1:]  # 'r' percent-encoded: the path still carries the token
    assert httpx.get(f"{team_server.http.url}/{encoded}", headers=MCP_HEADERS).status_code == 404
    assert httpx.get(f"{team_server.http.url}/%2572{token[1:]}", headers=MCP_HEADERS).status_code == 404
    async with connect(team_server, "url-token") as client:
        await client.call_tool("keyword_search", {"query": f"wombat {token} Bearer {token[5:]}"})

    stderr = team_server.http.log.read_text()
    everything_logged = team_server.audit_log.read_text(encoding="utf-8") + stderr
    assert token[5:17] not in everything_logged and token[-12:] not in everything_logged
    assert '"POST /mcp?[redacted] HTTP/1.1" 401' in stderr and '"GET /healthz?[redacted] HTTP/1.1" 200' in stderr


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_audit_record_holding_unicode_line_separators_is_one_line(team_server: TeamServer) -> None:
    query = "wombat\u2028badge\u2029north\x85door"
    async with connect(team_server, "separators") as client:
        await client.call_tool("hybrid_search", {"query": query, "top_k": 1})
    records = [json.loads(line) for line in team_server.audit_log.read_text(encoding="utf-8").splitlines()]
    (mine,) = [record for record in records if record.get("arguments", {}).get("query") == query]
    assert mine["arguments"] == {"query": query, "top_k": 1} and mine["outcome"] == "ok"


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_research_prompt_names_only_the_tools_the_client_has(team_server: TeamServer) -> None:
    async with connect(team_server, "prompt-no-sql") as no_sql, connect(team_server, "prompt-sql") as with_sql:
        without = (await no_sql.get_prompt("research", {"question": "Who leads quokka?"})).messages[0].content
        with_ = (await with_sql.get_prompt("research", {"question": "Who leads quokka?"})).messages[0].content
    assert "sql_query" not in without.text and "hybrid_search" in without.text  # type: ignore[union-attr]
    assert "sql_query" in with_.text  # type: ignore[union-attr]


@pytest.mark.slow
def test_a_subscription_to_another_teams_document_is_refused_like_reading_it(team_server: TeamServer) -> None:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {team_server.tokens['listener']}",
               "MCP-Protocol-Version": "2026-07-28"}  # fmt: skip
    envelope = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}

    def post(method: str, params: dict[str, Any]) -> Any:
        message = {"jsonrpc": "2.0", "id": 9, "method": method, "params": {**params, "_meta": envelope}}
        sent = {**headers, "Mcp-Method": method, **({"Mcp-Name": params["uri"]} if "uri" in params else {})}
        return httpx.post(f"{team_server.http.url}/mcp", json=message, headers=sent, timeout=30).json()

    granted = post("resources/read", {"uri": "doc://teama/badges"})
    assert "contents" in granted.get("result", {}), granted  # a well-formed request
    for uri in ("doc://teamb/launch", "doc://nosuchteam/launch"):
        read = post("resources/read", {"uri": uri})
        listen = post("subscriptions/listen", {"notifications": {"resourceSubscriptions": [uri]}})
        assert read["error"]["data"] == {"uri": uri} and listen["error"] == read["error"], (read, listen)
