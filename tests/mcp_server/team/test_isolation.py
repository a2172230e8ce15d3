"""Tenant isolation is exact: nothing team A receives depends on a corpus it cannot read.

A team server over real HTTP serves three corpora; team A's token reads two of them (so
searches over several corpora are covered), team B's the third. Everything A can ask for
(tool listing, resources with the files that could not be read, every search tool with and
without corpus and filters, ``get_document``, error texts) is recorded, a document holding
A's query words and an unreadable file are added to B's corpus and the index rebuilt, and
A's record must be identical byte for byte.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from collections.abc import Awaitable
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from pydantic import BaseModel

from mcp_server.grants import Grant
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from mcp_server.surface.server import CORPORA_URI
from mcp_server.team.tokens import ClientLimits, add_client
from tests.helpers import write_doc
from tests.mcp_server.team.test_auth import TeamServer, connect
from tests.mcp_server.team.test_http import HttpServer
from tests.mcp_server.team.test_reindex import served_generations

QUERIES = [
    "wombat badge north door",
    "when is lunch served in the canteen",
    "quokka launch budget",  # words only B's corpus holds (before and after)
    '"north door" canteen',
]
# The words of A's queries, in a document B adds: they change every IDF B's corpus sees.
B_ADDITION = "Wombat badge, north door, lunch at noon in the canteen: quokka's budget memo, served daily."


def build_corpora(root: Path) -> dict[str, Path]:
    folders = {name: root / name for name in ("handbook", "facilities", "teamb")}
    for name, folder in folders.items():
        folder.mkdir()
        (folder / "corpus.toml").write_text(f'name = "{name}"\ndescription = "{name} notes."\n', encoding="utf-8")
    handbook, facilities, teamb = folders.values()
    write_doc(handbook, "badges.md", "Badges", "# Badges\n\nThe wombat badge opens the north door.", category="security")
    write_doc(handbook, "visitors.md", "Visitors", "# Visitors\n\nVisitors get a paper badge at the front desk.")
    write_doc(handbook, "doors.md", "Doors", "# Doors\n\nThe north door closes at eight; the south door never.")
    write_doc(facilities, "lunch.md", "Lunch", "# Lunch\n\nLunch is served at noon in the canteen.", category="food")
    write_doc(facilities, "coffee.md", "Coffee", "# Coffee\n\nCoffee is free on the third floor near the canteen.")
    write_doc(teamb, "launch.md", "Launch", "# Launch\n\nProject quokka launches in March with a budget of 42 million.")
    write_doc(teamb, "door.md", "Door", "# Door\n\nThe quokka lab door has a badge reader.")
    return folders


def tool_calls() -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for tool in ("hybrid_search", "vector_search", "keyword_search"):
        for query in QUERIES:
            calls.append((tool, {"query": query, "top_k": 10}))
            calls.append((tool, {"query": query, "top_k": 3, "corpus": "handbook"}))
            calls.append((tool, {"query": query, "top_k": 10, "filters": {"category": "food"}}))
        calls.append((tool, {"query": "badge", "corpus": "teamb"}))  # not readable: an error
    calls += [
        ("get_document", {"doc_id": "handbook:badges#0"}),
        ("get_document", {"doc_id": "lunch", "window": 1}),
        ("get_document", {"doc_id": "handbook:badge"}),  # unknown: the error hints at similar ids
        ("get_document", {"doc_id": "do"}),
        ("get_document", {"doc_id": "teamb:launch#0"}),
        ("get_document", {"doc_id": "launch"}),
        ("get_document", {"doc_id": "handbook:badges", "quote": "the WOMBAT badge opens"}),
        ("get_document", {"doc_id": "handbook:badges", "quote": "The wombat badge opens the south gate"}),
        ("get_document", {"doc_id": "teamb:launch#0", "quote": "Project quokka launches"}),
    ]
    return calls


async def record(client: Client) -> str:
    """Everything the client receives, as one JSON text."""
    seen: dict[str, Any] = {
        "tools": [tool.model_dump(mode="json") for tool in (await client.list_tools()).tools],
        "resources": (await client.list_resources()).model_dump(mode="json"),
        "templates": (await client.list_resource_templates()).model_dump(mode="json"),
        "prompts": (await client.list_prompts()).model_dump(mode="json"),
    }
    seen["reads"] = [
        await answer(client.read_resource(uri))
        for uri in (CORPORA_URI, "doc://handbook/badges", "doc://teamb/launch", "doc://handbook/nothing")
    ]
    seen["calls"] = [await answer(client.call_tool(name, arguments)) for name, arguments in tool_calls()]
    return json.dumps(seen, sort_keys=True)


async def answer(request: Awaitable[BaseModel]) -> Any:
    """The result of a request, or the protocol error it got."""
    try:
        return (await request).model_dump(mode="json")
    except MCPError as e:
        return {"error": e.error.model_dump(mode="json")}


@pytest.mark.slow
@pytest.mark.anyio
async def test_adding_to_another_teams_corpus_changes_nothing_a_client_receives(
    tmp_path: Path, company_db: Path
) -> None:
    folders = build_corpora(tmp_path)
    tokens_file = tmp_path / "tokens.json"
    settings = Settings.from_names(
        data_dir=tmp_path / "data", corpora=list(folders.values()), database=company_db, reload_interval_s=0.2,
        tokens_file=tokens_file, audit_log=tmp_path / "audit.jsonl",
    )  # fmt: skip
    first = ingest(settings).generation
    unlimited = ClientLimits(rate_per_minute=100_000, burst=1_000)  # every answer a result, none a 429
    tokens = {
        "team-a": add_client(tokens_file, "team-a", Grant(corpora=("handbook", "facilities"), sql=False), unlimited),
        "team-b": add_client(tokens_file, "team-b", Grant(corpora=("teamb",), sql=False), unlimited),
    }
    server = TeamServer(HttpServer(settings, tmp_path / "stderr.log"), tokens, tokens_file, tmp_path / "audit.jsonl")
    try:
        async with connect(server, "team-a") as client:
            before = await record(client)
        async with connect(server, "team-b") as client:
            b_before = await record(client)

        write_doc(folders["teamb"], "memo.md", "Wombat badge memo", f"# Memo\n\n{B_ADDITION}")
        (folders["teamb"] / "budget.docx").write_bytes(b"PK\x03\x04 not a real Word file")  # listed for B only
        second = ingest(settings).generation
        assert second is not None and second != first
        with anyio.fail_after(30):
            while served_generations(server.http, probes=1, token=server.tokens["team-a"]) != {second}:
                await anyio.sleep(0.2)

        async with connect(server, "team-a") as client:
            after = await record(client)
        async with connect(server, "team-b") as client:
            b_after = await record(client)
    finally:
        assert server.http.stop() in (0, -signal.SIGTERM), server.http.log.read_text()

    assert "wombat badge opens the north door" in before and "42 million" not in before
    outcomes = [call.get("is_error", "protocol error") for call in json.loads(before)["calls"]]
    # the 3 + 4 refusals, a quote not in A's document and one in B's
    assert outcomes.count(True) == 9 and "protocol error" not in outcomes, outcomes
    assert b_after != b_before and "Wombat badge memo" in b_after  # B's own results did change
    b_listing = json.loads(json.loads(b_after)["reads"][0]["contents"][0]["text"])
    assert [(c["skipped_count"], [s["source"] for s in c["skipped"]]) for c in b_listing] == [(1, ["budget.docx"])]
    assert after == before
