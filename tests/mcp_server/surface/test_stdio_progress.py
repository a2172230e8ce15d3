"""The index build's progress over stdio (issue 37): a corpus tool called with a progressToken while the first
build embeds one long document waits for the index, and the host gets the embedding's position as
``notifications/progress``; a call without a token is answered at once, as before.

Each test starts a real ``ragmcp serve`` process on a fresh data dir and speaks to it as a desktop host
does (newline-delimited JSON-RPC, handshake version 2025-06-18), or with the MCP SDK's client.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from mcp_server.settings import Settings
from tests.helpers import subprocess_env
from tests.mcp_server.indexing.test_build_progress import BATCH, POSITION, chunk_positions, long_manual
from tests.mcp_server.surface.mcp_contract import text_of
from tests.mcp_server.surface.test_stdio import SERVE, StdioPeer

pytestmark = pytest.mark.slow

LONG = 1_000
"""Chunks in the manual: its embedding takes seconds even on a fast machine, so the build record (written
every 0.5 s) shows the embedding's position more than once (200 chunks took 1.2 s on CI's machine)."""


def test_a_call_waiting_for_the_first_build_gets_the_embedding_of_one_long_document_as_progress(tmp_path: Path) -> None:
    settings = Settings.from_names(
        data_dir=tmp_path / "data", corpora=[long_manual(tmp_path, LONG)], database="none", embedding_batch_size=BATCH
    )
    with (tmp_path / "stderr.log").open("wb") as stderr:
        process = subprocess.Popen(
            SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=subprocess_env(settings),
            cwd=tmp_path,
        )  # fmt: skip
    peer = StdioPeer(process)
    try:
        peer.initialize()
        at_once = peer.request(1, "tools/call", {"name": "keyword_search", "arguments": {"query": "valve 17"}})
        assert at_once["result"]["isError"] and "The index is being built" in at_once["result"]["content"][0]["text"]
        assert "notifications/progress" not in peer.notifications  # no token, no progress: answered at once
        arguments = {"query": "valve 17 pressure"}
        reply = peer.request(2, "tools/call", {"name": "hybrid_search", "arguments": arguments,
                                               "_meta": {"progressToken": "first-build"}})  # fmt: skip
    finally:
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    assert "result" in reply, reply
    result = reply["result"]
    assert not result.get("isError") or "The index is being built" in result["content"][0]["text"]
    sent = [json.loads(line) for line in peer.lines]
    assert all(message["jsonrpc"] == "2.0" for message in sent)  # stdout: the protocol only
    progress = [m["params"] for m in sent if m.get("method") == "notifications/progress"]
    assert progress and all(p["progressToken"] == "first-build" for p in progress)
    steps = [p["progress"] for p in progress]
    assert steps == sorted(set(steps))  # each notification's progress is greater than the last
    messages = [p["message"] for p in progress]
    embedding = [m for m in messages if chunk_positions(m)]
    assert len(embedding) >= 2, messages
    assert all(m.startswith(f"building the index ({POSITION}") for m in embedding)
    positions = [chunk_positions(m)[0] for m in embedding]
    assert [n for n, _ in positions] == sorted(n for n, _ in positions) and len({m for _, m in positions}) == 1


@pytest.mark.anyio
async def test_the_sdk_client_hears_the_embedding_through_its_progress_callback(tmp_path: Path) -> None:
    settings = Settings.from_names(
        data_dir=tmp_path / "data", corpora=[long_manual(tmp_path, LONG)], database="none", embedding_batch_size=BATCH
    )
    server = StdioServerParameters(command=SERVE[0], args=SERVE[1:], env=subprocess_env(settings), cwd=tmp_path)
    heard: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, message))

    async with Client(server) as client:  # the SDK's own protocol version (2026-07-28: no handshake)
        result = await client.call_tool("keyword_search", {"query": "valve 17"}, progress_callback=on_progress)
    assert not result.is_error or "The index is being built" in text_of(result)
    assert [p for p, _ in heard] == sorted({p for p, _ in heard})
    positions = [chunk_positions(message)[0] for _, message in heard if message and chunk_positions(message)]
    assert len(positions) >= 2, heard
    assert [n for n, _ in positions] == sorted(n for n, _ in positions)
