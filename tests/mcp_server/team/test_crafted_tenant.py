"""One team's crafted check_answer calls leave another team's hybrid search about as fast as when it is alone.

Issue 35, finding 4, measured as the red team did: over a real team server (one process, so the
teams share its interpreter), team A sends answers shaped to make the citation check costly (a
run of dots, full stops after abbreviations, lines of citation brackets, runs of combining
marks: no corpus content needed) from four threads at the default client limits, while team B
runs hybrid searches. B's median latency under that load stays within 1.5 times its median in the
quiet stretches between, measured in the same run. Before the fix one such answer cost up to 4 s of
CPU (the run of dots) and B's median search was 37 times slower.
"""

from __future__ import annotations

import signal
import statistics
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from mcp_server.grants import Grant
from mcp_server.settings import Settings
from mcp_server.team.tokens import ClientLimits, add_client
from tests.mcp_server.team.test_http import MCP_HEADERS, HttpServer

LATENCY_RATIO = 1.5
CRAFTED_ANSWERS = [  # each at most MAX_ANSWER_CHARS long, one sentence
    "a" + "." * 9_900 + "b",
    "e.g. " * 2_000,
    "x\n" + "[teama:badges#0]\n" * 580,
    "a" + "\u0301\u0316" * 4_990,
]


@pytest.fixture(scope="module")
def two_teams(teams_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServer, str, str]]:
    root = tmp_path_factory.mktemp("crafted-tenant")
    tokens_file = root / "tokens.json"
    crafter = add_client(tokens_file, "crafter", Grant(corpora=("teama",)), ClientLimits())  # the default limits
    searcher = add_client(tokens_file, "searcher", Grant(corpora=("teamb",)), ClientLimits(rate_per_minute=6000, burst=500))
    settings = teams_settings.updated(**{"tokens_file": tokens_file, "audit_log": root / "audit.jsonl"})
    running = HttpServer(settings, root / "stderr.log")
    yield running, crafter, searcher
    assert running.stop() in (0, -signal.SIGTERM), running.log.read_text()


def _call(client: httpx.Client, server: HttpServer, token: str, tool: str, arguments: dict[str, object]) -> httpx.Response:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    return client.post(f"{server.url}/mcp", json=call, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})


def _search_latencies(server: HttpServer, token: str, seconds: float) -> list[float]:
    took = []
    with httpx.Client(timeout=60) as client:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            started = time.monotonic()
            answer = _call(client, server, token, "hybrid_search", {"query": "when does project quokka launch"})
            took.append(time.monotonic() - started)
            assert answer.status_code == 200 and "quokka" in answer.text
    return took


class _Crafter:
    """Team A: four threads sending the crafted answers back to back while ``attacking`` is set, waiting as a 429's
    Retry-After says when over the default rate."""

    def __init__(self, server: HttpServer, token: str) -> None:
        self.server, self.token = server, token
        self.attacking, self.stopped = threading.Event(), threading.Event()
        self.in_flight = threading.Semaphore(4)
        self.checked: list[int] = []
        self.threads = [threading.Thread(target=self._run, args=(n,)) for n in range(4)]
        for thread in self.threads:
            thread.start()

    def _run(self, offset: int) -> None:
        with httpx.Client(timeout=60) as client:
            for n in range(offset, 10**6):
                while not self.attacking.wait(0.01):
                    if self.stopped.is_set():
                        return
                with self.in_flight:
                    answer = _call(client, self.server, self.token, "check_answer", {"answer": CRAFTED_ANSWERS[n % 4]})
                if answer.status_code == 429:
                    self.stopped.wait(float(answer.headers.get("retry-after", "1")))
                else:
                    self.checked.append(answer.status_code)

    def pause(self) -> None:
        """Stop sending, and wait for the calls in flight to end."""
        self.attacking.clear()
        for _ in range(4):
            self.in_flight.acquire()
        for _ in range(4):
            self.in_flight.release()

    def stop(self) -> None:
        self.pause()
        self.stopped.set()
        for thread in self.threads:
            thread.join()


@pytest.mark.slow
def test_crafted_check_answer_calls_leave_another_teams_search_fast(two_teams: tuple[HttpServer, str, str]) -> None:
    """Quiet and loaded stretches of 0.3 s alternate, so that the machine's other load weighs on both alike."""
    server, crafter, searcher = two_teams
    _search_latencies(server, searcher, 0.5)  # warm: the query's embedding, the index pages
    team_a = _Crafter(server, crafter)
    quiet: list[float] = []
    loaded: list[float] = []
    try:
        for _ in range(10):
            quiet += _search_latencies(server, searcher, 0.3)
            team_a.attacking.set()
            loaded += _search_latencies(server, searcher, 0.3)
            team_a.pause()
    finally:
        team_a.stop()
    assert len(team_a.checked) >= 8 and set(team_a.checked) == {200}, team_a.checked  # A's answers were checked
    ratio = statistics.median(loaded) / statistics.median(quiet)
    assert ratio <= LATENCY_RATIO, (ratio, statistics.median(loaded), statistics.median(quiet), len(team_a.checked))
