"""``ragmcp serve`` over stdio, as a desktop host runs it: a real subprocess, the real SDK client."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest
from mcp import Client, StdioServerParameters

from mcp_server.settings import Settings
from tests.helpers import FIXTURES, subprocess_env
from tests.mcp_server.surface.mcp_contract import exercise_every_tool, text_of

pytestmark = pytest.mark.slow
SERVE = [sys.executable, "-m", "mcp_server", "serve"]
REPLY_TIMEOUT_S = 120
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}


class StdioPeer:
    """Newline-delimited JSON-RPC with a server process; every stdout line is kept for inspection."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.lines: list[bytes] = []
        self.notifications: list[str] = []  # methods of the notifications seen while waiting for replies
        self._queue: queue.Queue[bytes] = queue.Queue()
        assert process.stdout is not None
        threading.Thread(target=self._pump, args=(process.stdout,), daemon=True).start()

    def _pump(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.lines.append(line)
            self._queue.put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.send({"id": request_id, "method": method, "params": params})
        return self._next(lambda message: message.get("id") == request_id)

    def initialize(self) -> dict[str, Any]:
        """The handshake; returns the initialize result."""
        result = self.request(0, "initialize", INITIALIZE)["result"]
        self.send({"method": "notifications/initialized"})
        return result  # type: ignore[no-any-return]

    def wait_for_notification(self, method: str) -> None:
        """Return once the server has sent a notification ``method`` (at once if it already has)."""
        if method not in self.notifications:
            self._next(lambda message: message.get("method") == method)

    def _next(self, wanted: Any) -> dict[str, Any]:
        while True:
            message = json.loads(self._queue.get(timeout=REPLY_TIMEOUT_S))
            if "id" not in message:
                self.notifications.append(message["method"])
            if wanted(message):
                return message  # type: ignore[no-any-return]

    def close(self) -> int:
        """Close stdin as a host does and return the exit code."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=30)


def test_first_start_answers_at_once_builds_in_the_background_and_stdout_carries_only_protocol(tmp_path: Path, company_db: Path) -> None:
    corpus = shutil.copytree(FIXTURES / "corpora" / "acme", tmp_path / "acme")
    settings = Settings(data_dir=tmp_path / "data", corpora=[corpus], database=company_db)
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=subprocess_env(settings),
            cwd=tmp_path,
        )  # fmt: skip
    peer = StdioPeer(process)
    try:
        initialized = peer.initialize()
        assert initialized["serverInfo"]["name"] == "agentic-rag-mcp"
        assert initialized["capabilities"]["tools"]["listChanged"] is True
        listed = peer.request(2, "tools/list", {})
        assert len(listed["result"]["tools"]) == 6
        peer.wait_for_notification("notifications/tools/list_changed")  # the first generation is published
        called = peer.request(3, "tools/call", {"name": "keyword_search", "arguments": {"query": "ACME-E7731"}})
        assert called["result"]["structuredContent"]["hits"][0]["citation"]["id"].startswith("acme:engineering/")
    finally:
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    assert peer.lines and all(json.loads(line)["jsonrpc"] == "2.0" for line in peer.lines)
    logged = log.read_text(encoding="utf-8")
    assert "not indexed yet, building in the background: acme" in logged and "published gen-" in logged
    assert all(line.strip() for line in logged.splitlines())


@pytest.mark.anyio
async def test_sdk_client_over_stdio(server_settings: Settings, tmp_path: Path) -> None:
    server = StdioServerParameters(command=SERVE[0], args=SERVE[1:], env=subprocess_env(server_settings), cwd=tmp_path)
    async with Client(server) as client:
        await exercise_every_tool(client)
        refused = await client.call_tool("hybrid_search", {"query": "travel", "corpus": "hr"})
        assert refused.is_error and "unknown corpus 'hr'; available: acme" in text_of(refused)
        assert not (await client.call_tool("hybrid_search", {"query": "travel"})).is_error
