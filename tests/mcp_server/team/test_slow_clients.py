"""Slow clients cannot hold the server: request headers and bodies have deadlines (a real uvicorn server)."""

from __future__ import annotations

import signal
import threading
import socket
import statistics
import time
from collections.abc import Iterator

import httpx
import pytest

from mcp_server.grants import Grant
from mcp_server.settings import Settings
from mcp_server.team.tokens import ClientLimits, add_client
from tests.mcp_server.team.test_http import MCP_HEADERS, HttpServer

HEADER_TIMEOUT_S = 2.0
BODY_TIMEOUT_S = 3.0
TOOLS_LIST = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'


@pytest.fixture(scope="module")
def slow_server(teams_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServer, str]]:
    root = tmp_path_factory.mktemp("slow-clients")
    tokens_file = root / "tokens.json"
    token = add_client(tokens_file, "uploader", Grant(corpora=("teama",)), ClientLimits(max_concurrent=1))
    settings = teams_settings.updated(**{
        "tokens_file": tokens_file, "audit_log": root / "audit.jsonl",
        "http_header_timeout_s": HEADER_TIMEOUT_S, "http_body_timeout_s": BODY_TIMEOUT_S,
    })  # fmt: skip
    running = HttpServer(settings, root / "stderr.log")
    yield running, token
    assert running.stop() in (0, -signal.SIGTERM), running.log.read_text()


def is_closed(connection: socket.socket) -> bool:
    """True once the server has closed ``connection`` (whatever it sent first)."""
    connection.setblocking(False)
    try:
        while data := connection.recv(65536):
            assert data.startswith(b"HTTP/1.1 408") or not data.startswith(b"HTTP/"), data
        return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def stalled_upload(server: HttpServer, headers: dict[str, str]) -> socket.socket:
    """A connection that sends a request's headers and 10 bytes of its 100 kB body, then nothing."""
    stalled = socket.create_connection(("127.0.0.1", server.port))
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    stalled.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: 100000\r\n\r\n".encode())
    stalled.sendall(TOOLS_LIST[:10])
    return stalled


@pytest.mark.slow
def test_connections_sending_headers_slowly_are_closed_after_the_timeout(slow_server: tuple[HttpServer, str]) -> None:
    server, _ = slow_server
    connections = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(20)]
    started = time.monotonic()
    for connection in connections:
        connection.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    closed_after: dict[int, float] = {}
    while len(closed_after) < len(connections) and time.monotonic() - started < HEADER_TIMEOUT_S + 10:
        time.sleep(0.5)
        for number, connection in enumerate(connections):
            if number in closed_after:
                continue
            if is_closed(connection):
                closed_after[number] = time.monotonic() - started
                continue
            try:
                connection.sendall(b"X-Slow: one header line every half second\r\n")
            except OSError:
                closed_after[number] = time.monotonic() - started
    assert len(closed_after) == len(connections), f"still open after {HEADER_TIMEOUT_S + 10} s"
    assert min(closed_after.values()) >= HEADER_TIMEOUT_S - 0.1
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    assert "its request headers did not arrive within 2 s" in server.log.read_text()
    for connection in connections:
        connection.close()


@pytest.mark.slow
def test_a_stalled_upload_is_cut_off_and_releases_its_clients_slot(slow_server: tuple[HttpServer, str]) -> None:
    server, token = slow_server
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    stalled = stalled_upload(server, headers)  # ... and nothing more: the request holds the client's only slot
    time.sleep(0.5)
    started = time.monotonic()
    answer = httpx.post(f"{server.url}/mcp", content=TOOLS_LIST, headers=headers, timeout=BODY_TIMEOUT_S + 20)
    waited = time.monotonic() - started
    assert answer.status_code == 200 and "hybrid_search" in answer.text
    assert BODY_TIMEOUT_S - 1.5 <= waited < BODY_TIMEOUT_S + 5  # it waited for the stalled upload, then got its slot
    assert is_closed(stalled)
    stalled.close()
    assert "its request body did not arrive within 3 s" in server.log.read_text()



def _timed_post(server: HttpServer, call: dict[str, object], headers: dict[str, str]) -> float:
    """Seconds one MCP request took to be answered (it must be answered 200)."""
    started = time.monotonic()
    answer = httpx.post(f"{server.url}/mcp", json=call, headers=headers, timeout=30)
    assert answer.status_code == 200
    return time.monotonic() - started


def _flood_headers(port: int, until: float, answers: list[bytes]) -> None:
    """Stream an endless header, reconnecting whenever the server closes the connection, until ``until``."""
    while time.monotonic() < until:
        connection = socket.create_connection(("127.0.0.1", port))
        try:
            connection.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
            while time.monotonic() < until:
                connection.sendall(b"a" * 65_536)
        except OSError:
            pass
        try:
            connection.settimeout(1)
            answers.append(connection.recv(200))
        except OSError:
            pass
        finally:
            connection.close()


@pytest.mark.slow
def test_a_header_flood_from_two_unauthenticated_sockets_leaves_other_clients_searches_fast(
    slow_server: tuple[HttpServer, str],
) -> None:
    server, token = slow_server
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    search = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "keyword_search", "arguments": {"query": "alpha", "corpus": "teama"}}}  # fmt: skip
    quiet = [_timed_post(server, search, headers) for _ in range(5)]  # the same searches before the flood
    answers: list[bytes] = []
    until = time.monotonic() + 6
    flooders = [threading.Thread(target=_flood_headers, args=(server.port, until, answers)) for _ in range(2)]
    for flooder in flooders:
        flooder.start()
    time.sleep(1)
    took: list[float] = []
    while time.monotonic() < until - 0.5:
        took.append(_timed_post(server, search, headers))
        time.sleep(0.2)
    for flooder in flooders:
        flooder.join()

    # Before the header limits, two flooding sockets took such a search from 30 ms to 10.4 s (350 times).
    assert max(took) < max(1.0, 20 * statistics.median(quiet)), (took, quiet)
    assert any(answer.startswith(b"HTTP/1.1 431") for answer in answers), answers[:3]
    assert "refused the request from 127.0.0.1" in server.log.read_text()


@pytest.mark.slow
def test_a_request_with_too_many_header_fields_is_refused(slow_server: tuple[HttpServer, str]) -> None:
    server, _ = slow_server
    many = {f"X-Field-{n}": "1" for n in range(150)}
    assert httpx.post(f"{server.url}/mcp", content=TOOLS_LIST, headers={**MCP_HEADERS, **many}).status_code == 431
    assert httpx.get(f"{server.url}/healthz").status_code == 200


STREAM_LIFETIME_S = 2.0
QUEUE_TIMEOUT_S = 1.5


@pytest.fixture(scope="module")
def stream_server(teams_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServer, str]]:
    root = tmp_path_factory.mktemp("streams")
    tokens_file = root / "tokens.json"
    token = add_client(tokens_file, "listener", Grant(corpora=("teama",)), ClientLimits(max_concurrent=1))
    settings = teams_settings.updated(**{
        "tokens_file": tokens_file, "audit_log": root / "audit.jsonl", "http_stream_lifetime_s": STREAM_LIFETIME_S,
        "call_timeout_s": QUEUE_TIMEOUT_S, "http_body_timeout_s": 10.0,
    })  # fmt: skip
    running = HttpServer(settings, root / "stderr.log")
    yield running, token
    assert running.stop() in (0, -signal.SIGTERM), running.log.read_text()


@pytest.mark.slow
def test_a_listening_stream_holds_no_call_slot_and_ends_after_its_lifetime(
    stream_server: tuple[HttpServer, str],
) -> None:
    server, token = stream_server
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=30) as client:
        started = time.monotonic()
        with client.stream("GET", f"{server.url}/mcp", headers={**headers, "Accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
            call = httpx.post(f"{server.url}/mcp", content=TOOLS_LIST, headers=headers, timeout=30)
            assert call.status_code == 200 and "hybrid_search" in call.text  # the client's only slot is free
            for _ in stream.iter_bytes():
                pass
        lasted = time.monotonic() - started
    assert STREAM_LIFETIME_S - 0.5 <= lasted < STREAM_LIFETIME_S + 3


@pytest.mark.slow
def test_a_request_waiting_for_its_clients_slot_too_long_gets_a_clear_503(stream_server: tuple[HttpServer, str]) -> None:
    server, token = stream_server
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    stalled = stalled_upload(server, headers)  # holds the client's only slot until its body deadline (10 s)
    time.sleep(0.5)
    started = time.monotonic()
    answer = httpx.post(f"{server.url}/mcp", content=TOOLS_LIST, headers=headers, timeout=30)
    waited = time.monotonic() - started
    stalled.close()
    assert answer.status_code == 503 and QUEUE_TIMEOUT_S - 0.2 <= waited < QUEUE_TIMEOUT_S + 2
    assert "already has 1 requests running" in answer.json()["error_description"]
    assert "--max-concurrent" in answer.json()["error_description"]
