"""Zero-downtime reindex: ``ragmcp ingest`` runs while 16 clients query a 2-worker HTTP server,
and a team server keeps its tokens, grants, limits and audit log across the switch."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import httpx
import pytest
from mcp import Client

from mcp_server.grants import Grant
from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from mcp_server.team.tokens import ClientLimits, add_client
from tests.helpers import subprocess_env, write_doc
from tests.mcp_server.surface.mcp_contract import text_of
from tests.mcp_server.team.test_auth import TeamServer, connect, post_tools_list
from tests.mcp_server.team.test_http import HttpServer

CLIENTS = 16
FUELS = ["zebraword", "quaggaword", "okapiword"]  # what the alpha reactor runs on, version by version
CALLS = [
    ("keyword_search", {"query": "reactor fuel", "top_k": 1}),
    ("vector_search", {"query": "which fuel does the alpha reactor run on", "top_k": 1}),
]


def write_alpha(corpus: Path, fuel: str) -> None:
    write_doc(corpus, "alpha.md", "Alpha", f"# Alpha\n\nThe alpha reactor runs on {fuel} fuel at 451 kelvin.")


def run_ingest(settings: Settings) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_server", "ingest"], env=subprocess_env(settings), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    generation = IndexLayout(settings.index_dir).current_name()
    assert generation is not None
    return generation


def served_generations(server: HttpServer, probes: int = 12, token: str | None = None) -> set[str]:
    """The generations /healthz reports over several requests (they spread over the workers); with tokens in
    use it reports them to a request that carries one only."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return {httpx.get(f"{server.url}/healthz", headers=headers).json()["generation"] for _ in range(probes)}


@pytest.mark.slow
@pytest.mark.anyio
async def test_reingest_under_load_fails_no_request_and_switches_content(
    tmp_path: Path, tiny_corpus: Path, company_db: Path
) -> None:
    write_alpha(tiny_corpus, FUELS[0])
    settings = Settings.from_names(
        data_dir=tmp_path / "data", corpora=[tiny_corpus], database=company_db, reload_interval_s=0.2
    )  # fmt: skip
    ingest(settings)
    first = IndexLayout(settings.index_dir).current()
    assert first is not None
    server = HttpServer(settings, tmp_path / "stderr.log", "--workers", "2")
    seen: list[list[str]] = [[] for _ in range(CLIENTS)]  # per client, the fuel each answer named
    failures: list[str] = []
    stop = anyio.Event()

    async def query(index: int) -> None:
        async with Client(f"{server.url}/mcp") as client:
            turn = index
            while not stop.is_set():
                name, arguments = CALLS[turn % len(CALLS)]
                turn += 1
                try:
                    result = await client.call_tool(name, arguments)
                except Exception as e:  # noqa: BLE001 - any failure counts, whatever its kind
                    failures.append(f"{name}: {type(e).__name__}: {e}")
                    continue
                if result.is_error:
                    failures.append(f"{name}: {text_of(result)}")
                    continue
                seen[index].append(next((f for f in FUELS if f in text_of(result)), "no fuel in " + text_of(result)))

    try:
        async with anyio.create_task_group() as group:
            for index in range(CLIENTS):
                group.start_soon(query, index)
            with anyio.fail_after(60):
                while not all(seen):
                    await anyio.sleep(0.1)
            published = []
            for fuel in FUELS[1:]:
                write_alpha(tiny_corpus, fuel)
                published.append(await anyio.to_thread.run_sync(run_ingest, settings))
                await anyio.sleep(1)  # the clients keep querying across each switch
            with anyio.fail_after(30):
                while served_generations(server) != {published[-1]}:
                    await anyio.sleep(0.2)
            settled = [len(answers) for answers in seen]
            with anyio.fail_after(60):  # a few more answers per client, all from the newest index
                while any(len(answers) < count + 3 for answers, count in zip(seen, settled)):
                    await anyio.sleep(0.1)
            stop.set()
    finally:
        assert server.stop() == 0, server.log.read_text()

    assert failures == []
    assert all(answers[0] == FUELS[0] for answers in seen)
    assert all(set(answers[count:]) == {FUELS[-1]} for answers, count in zip(seen, settled))
    assert {fuel for answers in seen for fuel in answers} <= set(FUELS)
    assert not first.exists()  # released by the workers once drained, then removed by the last ingest
    assert "now serving index " + published[-1] in server.log.read_text()


@pytest.mark.slow
@pytest.mark.anyio
async def test_after_a_reingest_a_team_token_still_reads_only_its_corpora_within_its_limits(
    tmp_path: Path, company_db: Path
) -> None:
    teama, teamb = tmp_path / "teama", tmp_path / "teamb"
    for folder in (teama, teamb):
        folder.mkdir()
        (folder / "corpus.toml").write_text(f'name = "{folder.name}"\ndescription = "{folder.name} notes."\n')

    def write_version(fuel: str) -> None:
        write_doc(teama, "alpha.md", "Alpha", f"# Alpha\n\nThe alpha reactor runs on {fuel} fuel.")
        write_doc(teamb, "quokka.md", "Quokka", f"# Quokka\n\nSecret project quokka also runs on {fuel} fuel.")

    write_version(FUELS[0])
    tokens_file, audit_log = tmp_path / "tokens.json", tmp_path / "audit.jsonl"
    settings = Settings.from_names(
        data_dir=tmp_path / "data", corpora=[teama, teamb], database=company_db, reload_interval_s=0.2,
        tokens_file=tokens_file, audit_log=audit_log,
    )  # fmt: skip
    ingest(settings)
    tokens = {
        "team-a": add_client(tokens_file, "team-a", Grant(corpora=("teama",), sql=False), ClientLimits()),
        "limited": add_client(
            tokens_file, "limited", Grant(corpora=("teama",), sql=False), ClientLimits(rate_per_minute=1, burst=2)
        ),
    }
    server = TeamServer(HttpServer(settings, tmp_path / "stderr.log"), tokens, tokens_file, audit_log)
    try:
        assert [post_tools_list(server, tokens["limited"]).status_code for _ in range(2)] == [200, 200]
        write_version(FUELS[1])
        published = run_ingest(settings)
        with anyio.fail_after(30):
            while served_generations(server.http, probes=1, token=tokens["team-a"]) != {published}:
                await anyio.sleep(0.2)
        health = httpx.get(f"{server.http.url}/healthz").json()
        assert "documents" not in health and "corpora" not in health and "teamb" not in json.dumps(health)

        assert post_tools_list(server, tokens["limited"]).status_code == 429  # its rate outlives the switch
        async with connect(server, "team-a") as client:
            (tool,) = [t for t in (await client.list_tools()).tools if t.name == "keyword_search"]
            assert {"type": "string", "enum": ["teama"]} in tool.input_schema["properties"]["corpus"]["anyOf"]
            found = await client.call_tool("keyword_search", {"query": "fuel", "top_k": 10})
            assert found.structured_content is not None
            assert {hit["citation"]["corpus"] for hit in found.structured_content["hits"]} == {"teama"}
            assert FUELS[1] in text_of(found) and FUELS[0] not in text_of(found) and "quokka" not in text_of(found)
            refused = await client.call_tool("keyword_search", {"query": "fuel", "corpus": "teamb"})
            assert refused.is_error and "unknown corpus 'teamb'; this client may read: teama" in text_of(refused)
    finally:
        assert server.http.stop() in (0, -signal.SIGTERM), server.http.log.read_text()

    audited = [json.loads(line) for line in audit_log.read_text(encoding="utf-8").splitlines()]
    assert [(line["client"], line["tool"], line["outcome"]) for line in audited] == [
        ("team-a", "keyword_search", "ok"), ("team-a", "keyword_search", "error"),
    ]
