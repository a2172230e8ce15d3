"""``ragmcp serve --transport http``: a real uvicorn server in a subprocess, driven by the SDK client and httpx."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp import Client

from mcp_server.cli import main
from mcp_server.grants import Grant
from mcp_server.settings import Settings
from mcp_server.team import http_app
from mcp_server.team.http_app import GRACEFUL_SHUTDOWN_S, transport_security
from mcp_server.surface.view import VIEW_URI
from mcp_server.team.tokens import ClientLimits, add_client
from tests.helpers import subprocess_env
from tests.mcp_server.surface.mcp_contract import CALLS, exercise_every_tool, text_of
from tests.mcp_server.surface.test_view import apps_host

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
}  # fmt: skip
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class HttpServer:
    """``ragmcp serve --transport http`` on a free loopback port, its stderr in a log file."""

    def __init__(self, settings: Settings, log: Path, *options: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = [sys.executable, "-m", "mcp_server", "serve", "--transport", "http", "--port", str(self.port)]
        with log.open("wb") as stderr:
            self.process = subprocess.Popen(
                [*command, *options], stdout=subprocess.DEVNULL, stderr=stderr, env=subprocess_env(settings)
            )
        self._wait_until_healthy()

    def _wait_until_healthy(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        raise AssertionError(f"no healthy server after {timeout_s} s:\n{self.log.read_text()}")

    def stop(self) -> int:
        """SIGTERM, then the exit code once in-flight work has drained."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=GRACEFUL_SHUTDOWN_S + 10)
        finally:
            if self.process.poll() is None:
                self.process.kill()


@pytest.fixture(scope="module")
def server(server_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """Two stateless workers over one index; SIGTERM at the end must drain and exit cleanly."""
    running = HttpServer(server_settings, tmp_path_factory.mktemp("http") / "stderr.log", "--workers", "2")
    yield running
    assert running.stop() == 0, running.log.read_text()


@pytest.mark.slow
@pytest.mark.anyio
async def test_sdk_client_over_http(server: HttpServer) -> None:
    async with Client(f"{server.url}/mcp") as client:
        await exercise_every_tool(client)
        refused = await client.call_tool("keyword_search", {"query": "x", "top_k": 10_000})
        assert refused.is_error and "top_k must be between 1 and 50" in text_of(refused)


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_apps_host_over_http_is_shown_the_evidence_view_and_can_read_it(server: HttpServer) -> None:
    async with Client(f"{server.url}/mcp", extensions=[apps_host()]) as client:  # stateless: told on every request
        named = {tool.name for tool in (await client.list_tools()).tools if (tool.meta or {}).get("ui")}
        (page,) = (await client.read_resource(VIEW_URI)).contents
    assert named == {"hybrid_search", "vector_search", "keyword_search", "get_document", "check_answer"}
    assert page.mime_type == "text/html;profile=mcp-app"


@pytest.mark.slow
def test_healthz_reports_the_index_from_every_worker(server: HttpServer) -> None:
    responses = [httpx.get(f"{server.url}/healthz") for _ in range(6)]
    assert {response.status_code for response in responses} == {200}
    health = responses[0].json()
    assert all(response.json() == health for response in responses)
    assert health["status"] == "ok" and health["generation"].startswith("gen-")
    assert health["embedding_model"] == "auto"  # each corpus its model (RAGMCP_EMBEDDING_MODEL=auto)
    assert health["corpora"] == {"acme": {"documents": 6, "chunks": health["chunks"]}}
    log = server.log.read_text()
    assert log.count("Started server process") == 2
    assert "died" not in log and "was not ready in time" not in log  # no worker was killed while starting


@pytest.mark.slow
@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example"}, 421),
        ({"Host": "evil.example:80"}, 421),
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "http://127.0.0.1.evil.example"}, 403),
        ({"Origin": "null"}, 403),
    ],
)
def test_foreign_host_or_origin_is_refused_everywhere(server: HttpServer, headers: dict[str, str], status: int) -> None:
    assert httpx.post(f"{server.url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers}).status_code == status
    assert httpx.get(f"{server.url}/healthz", headers=headers).status_code == status


@pytest.mark.slow
def test_loopback_origin_and_host_are_accepted(server: HttpServer) -> None:
    headers = {**MCP_HEADERS, "Host": f"localhost:{server.port}", "Origin": f"http://localhost:{server.port}"}
    response = httpx.post(f"{server.url}/mcp", json=INITIALIZE, headers=headers)
    assert response.status_code == 200 and response.json()["result"]["serverInfo"]["name"] == "agentic-rag-mcp"


@pytest.mark.slow
def test_oversized_body_is_refused(server: HttpServer) -> None:
    body = b'{"jsonrpc": "2.0", "padding": "' + b"a" * 2_000_000 + b'"}'
    assert httpx.post(f"{server.url}/mcp", content=body, headers=MCP_HEADERS).status_code == 413
    assert httpx.get(f"{server.url}/healthz").status_code == 200


@pytest.mark.slow
@pytest.mark.anyio
async def test_twenty_concurrent_clients_calling_mixed_tools_get_no_errors(server: HttpServer) -> None:
    deadline = time.monotonic() + 30  # the soak: 30 s of mixed calls from 20 clients
    completed: list[int] = []
    failures: list[str] = []

    async def use(offset: int) -> None:
        async with Client(f"{server.url}/mcp") as client:
            done = 0
            for turn in range(500):  # bounded even if the deadline never comes
                if time.monotonic() > deadline:
                    break
                name, arguments = CALLS[(offset + turn) % len(CALLS)]
                result = await client.call_tool(name, arguments)
                if result.is_error:
                    failures.append(f"{name}: {text_of(result)}")
                done += 1
            completed.append(done)

    async with anyio.create_task_group() as group:
        for offset in range(20):
            group.start_soon(use, offset)
    assert failures == []
    assert len(completed) == 20 and min(completed) >= 1


# --- the serve command and its settings, without a server ----------------------------------------------


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, server_settings: Settings) -> list[tuple[Settings, int]]:
    """Runs of ``serve --transport http`` recorded instead of started."""
    for name, value in server_settings.to_env().items():
        monkeypatch.setenv(name, value)
    runs: list[tuple[Settings, int]] = []
    monkeypatch.setattr(http_app, "serve_http", lambda settings, workers: runs.append((settings, workers)))
    return runs


def test_binding_beyond_loopback_without_tokens_is_refused(served: list[tuple[Settings, int]]) -> None:
    result = CliRunner().invoke(main, ["serve", "--transport", "http", "--host", "0.0.0.0"])
    assert result.exit_code == 1 and "refusing to serve on 0.0.0.0 without authentication" in result.stderr
    assert "--tokens-file" in result.stderr and "--no-auth" in result.stderr
    assert served == []


def test_no_auth_beyond_loopback_warns_loudly(served: list[tuple[Settings, int]]) -> None:
    arguments = ["serve", "--transport", "http", "--host", "0.0.0.0", "--allowed-host", "rag.example:*", "--no-auth"]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 0, result.output
    assert "WARNING" in result.stderr and "NO authentication" in result.stderr
    ((settings, workers),) = served
    assert (settings.http.host, settings.http.allowed_hosts, settings.http.stateless_http, workers) == (
        "0.0.0.0", ["rag.example:*"], True, 1,
    )  # fmt: skip


def test_a_tokens_file_turns_authentication_on(served: list[tuple[Settings, int]], tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    add_client(tokens, "team-a", Grant(corpora=("acme",), sql=False), ClientLimits())
    arguments = ["serve", "--transport", "http", "--host", "0.0.0.0", "--tokens-file", str(tokens),
                 "--public-url", "https://rag.example", "--audit-log", str(tmp_path / "audit.jsonl")]  # fmt: skip
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 0, result.output
    assert "WARNING" not in result.stderr and f"bearer tokens of 1 clients in {tokens}" in result.stderr
    ((settings, _),) = served
    assert (settings.http.tokens_file, settings.http.public_url, settings.audit_path) == (
        tokens, "https://rag.example", tmp_path / "audit.jsonl",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tokens-file", "{tmp}/missing.json"], "does not exist; create it with: ragmcp token add"),
        (["--tokens-file", "{tmp}/tokens.json", "--no-auth"], "--no-auth contradicts the tokens file"),
    ],
)
def test_bad_auth_options_are_refused_before_serving(
    served: list[tuple[Settings, int]], tmp_path: Path, extra: list[str], message: str
) -> None:
    add_client(tmp_path / "tokens.json", "team-a", Grant(), ClientLimits())
    arguments = ["serve", "--transport", "http", *(item.format(tmp=tmp_path) for item in extra)]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 1 and message in result.stderr
    assert served == []


def test_loopback_serving_does_not_warn(served: list[tuple[Settings, int]]) -> None:
    result = CliRunner().invoke(main, ["serve", "--transport", "http", "--workers", "3", "--max-body-bytes", "65536"])
    assert result.exit_code == 0 and "WARNING" not in result.stderr
    ((settings, workers),) = served
    assert (settings.http.max_body_bytes, workers) == (65536, 3)


def test_several_workers_need_stateless_mode(served: list[tuple[Settings, int]]) -> None:
    result = CliRunner().invoke(main, ["serve", "--transport", "http", "--workers", "2", "--stateful"])
    assert result.exit_code == 1 and "needs --stateless" in result.stderr
    assert served == []


def test_workers_receive_the_parent_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    parent = Settings.from_names(
        data_dir=tmp_path, corpora=[tmp_path / "a", tmp_path / "b"], allowed_hosts=["a.example:*", "b.example"],
        stateless_http=False, sql_timeout_s=1.5, max_result_chars=5000,
    )  # fmt: skip
    for name in list(os.environ):
        if name.startswith("RAGMCP_"):
            monkeypatch.delenv(name)
    for name, value in parent.to_env().items():
        monkeypatch.setenv(name, value)
    assert Settings() == parent


def test_allow_lists_add_the_bound_address_but_never_a_wildcard() -> None:
    bound: Any = transport_security(Settings.from_names(http_host="10.1.2.3", allowed_origins=["https://app.example"]))
    assert {"10.1.2.3:*", "localhost:*", "127.0.0.1"} <= set(bound.allowed_hosts)
    assert {"http://10.1.2.3:*", "https://app.example"} <= set(bound.allowed_origins)
    wildcard = transport_security(Settings.from_names(http_host="0.0.0.0"))
    assert not any(host.startswith("0.0.0.0") for host in wildcard.allowed_hosts)
