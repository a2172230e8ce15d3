"""A stateful session answers every call with an event stream; its client's --max-concurrent still holds (real server).

The server runs in this process (uvicorn on a loopback port, the team app with a tokens file,
``stateless_http`` off), so the searches can be counted where they run: each one waits until
the test lets it go, one at a time, and the most running at once must be the client's limit.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from mcp_server.grants import Grant
from mcp_server.settings import Settings
from mcp_server.surface.tools import RetrievalTools, SearchResult
from mcp_server.team.http_app import build_http_app
from mcp_server.team.tokens import ClientLimits, add_client
from tests.mcp_server.team.test_http import INITIALIZE, MCP_HEADERS

LIMIT = 2
CALLS = 6
WAIT_S = 30.0


class HeldSearches:
    """Stands in for :meth:`RetrievalTools.search`: counts the searches running at once, and holds each until let go."""

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0
        self.go = threading.Semaphore(0)
        self._lock = threading.Lock()

    def search(self, query: str, **options: Any) -> SearchResult:
        with self._lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            self.go.acquire(timeout=WAIT_S)
        finally:
            with self._lock:
                self.running -= 1
        return SearchResult(query=query, corpus=None, retriever=options["mode"], hits=[], omitted=0)


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "the server did not get there"
        time.sleep(0.01)


@pytest.fixture
def stateful_server(
    teams_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, dict[str, str], HeldSearches]]:
    """The team server in stateful mode, in a thread; its URL, a client's headers and the held searches."""
    tokens_file = tmp_path / "tokens.json"
    token = add_client(tokens_file, "team", Grant(corpora=("teama",)), ClientLimits(max_concurrent=LIMIT, burst=50))
    settings = teams_settings.updated(**{
        "tokens_file": tokens_file, "audit_log": tmp_path / "audit.jsonl", "stateless_http": False,
        "max_concurrent_calls": CALLS,  # the process's own limit is not the one under test
    })  # fmt: skip
    held = HeldSearches()
    monkeypatch.setattr(RetrievalTools, "search", held.search)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(
        build_http_app(settings), host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=5,
    ))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started)
        yield f"http://127.0.0.1:{port}/mcp", {**MCP_HEADERS, "Authorization": f"Bearer {token}"}, held
    finally:
        held.go.release(CALLS)  # nothing stays held, whatever the test did
        server.should_exit = True
        thread.join(timeout=WAIT_S)


@pytest.mark.slow
def test_a_stateful_session_runs_no_more_calls_at_once_than_its_clients_limit(
    stateful_server: tuple[str, dict[str, str], HeldSearches],
) -> None:
    url, headers, held = stateful_server
    opened = httpx.post(url, json=INITIALIZE, headers=headers, timeout=WAIT_S)
    assert opened.status_code == 200, opened.text
    session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(url, json=initialized, headers=session, timeout=WAIT_S).status_code == 202
    answers: list[httpx.Response] = []

    def call(number: int) -> None:
        search = {"name": "hybrid_search", "arguments": {"query": "wombat badge"}}
        request = {"jsonrpc": "2.0", "id": 10 + number, "method": "tools/call", "params": search}
        answers.append(httpx.post(url, json=request, headers=session, timeout=WAIT_S))

    callers = [threading.Thread(target=call, args=(number,)) for number in range(CALLS)]
    for caller in callers:
        caller.start()
    for answered in range(CALLS):  # let the searches go one by one, each once as many run as may
        wait_until(lambda: held.running >= min(LIMIT, CALLS - answered))
        held.go.release()
        wait_until(lambda: len(answers) > answered)
    for caller in callers:
        caller.join()
    assert held.peak == LIMIT
    assert all(a.status_code == 200 and a.headers["content-type"].startswith("text/event-stream") for a in answers)
    assert all('"isError":false' in a.text.replace(" ", "") for a in answers), answers[0].text
