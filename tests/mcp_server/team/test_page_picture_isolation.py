"""On a team server, a picture of another team's page is refused exactly as one of a page that does not exist.

Over real HTTP, team A asks for pictures of a document of team B's corpus before it exists;
the document is added, the index rebuilt and served, team B sees its picture, and team A's
raw JSON-RPC replies to the very same requests must be the same bytes as before.
"""

from __future__ import annotations

import base64
import json
import signal
import time
from pathlib import Path

import httpx
import pytest

from mcp_server.grants import Grant
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from mcp_server.surface.links import page_uri
from mcp_server.team.tokens import ClientLimits, add_client
from tests.helpers import write_doc
from tests.mcp_server.documents.test_page_drawing import write_line_pdf
from tests.mcp_server.team.test_http import MCP_HEADERS, HttpServer
from tests.mcp_server.team.test_reindex import served_generations

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
B_PAGES = [
    page_uri("teamb", "leave", chunk=0),
    page_uri("teamb", "leave", quote="twenty five days"),
    page_uri("teamb", "leave", page=1),
    page_uri("teamb", "leave"),
]


def read_resource(server: HttpServer, token: str, uri: str) -> bytes:
    """The raw body of a ``resources/read`` of ``uri`` sent with ``token``."""
    request = {"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": uri}}
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    return httpx.post(f"{server.url}/mcp", json=request, headers=headers, timeout=60).content


def png_of(body: bytes) -> bytes:
    (contents,) = json.loads(body)["result"]["contents"]
    assert contents["mimeType"] == "image/png"
    return base64.b64decode(contents["blob"])


@pytest.mark.slow
def test_an_ungranted_page_is_answered_byte_for_byte_as_a_missing_one(tmp_path: Path) -> None:
    folders = {name: tmp_path / name for name in ("teama", "teamb")}
    for name, folder in folders.items():
        folder.mkdir()
        (folder / "corpus.toml").write_text(f'name = "{name}"\ndescription = "{name} files."\n', encoding="utf-8")
    write_line_pdf(folders["teama"] / "leave.pdf")
    write_doc(folders["teamb"], "notes.md", "Notes", "# Notes\n\nThe launch budget is kept elsewhere.")
    tokens_file = tmp_path / "tokens.json"
    settings = Settings.from_names(
        data_dir=tmp_path / "data", corpora=list(folders.values()), database="none", ocr="off",
        reload_interval_s=0.2, tokens_file=tokens_file, audit_log=tmp_path / "audit.jsonl",
    )  # fmt: skip
    ingest(settings)
    tokens = {
        team: add_client(tokens_file, team, Grant(corpora=(team,), sql=False), ClientLimits(burst=100))
        for team in folders
    }
    server = HttpServer(settings, tmp_path / "stderr.log")
    try:
        assert png_of(read_resource(server, tokens["teama"], page_uri("teama", "leave", chunk=0))).startswith(PNG_SIGNATURE)
        before = [read_resource(server, tokens["teama"], uri) for uri in B_PAGES]
        missing = [read_resource(server, tokens["teamb"], uri) for uri in B_PAGES]

        write_line_pdf(folders["teamb"] / "leave.pdf")
        second = ingest(settings).generation
        deadline = time.monotonic() + 60
        while served_generations(server, probes=1, token=tokens["teama"]) != {second}:
            assert time.monotonic() < deadline, "the rebuilt index was not served"
            time.sleep(0.2)

        assert all(png_of(read_resource(server, tokens["teamb"], uri)).startswith(PNG_SIGNATURE) for uri in B_PAGES)
        after = [read_resource(server, tokens["teama"], uri) for uri in B_PAGES]
    finally:
        assert server.stop() in (0, -signal.SIGTERM), server.log.read_text()

    assert after == before
    errors = [json.loads(body)["error"] for body in before]
    assert all(error["message"].startswith("unknown corpus 'teamb'; this client may read: teama") for error in errors)
    assert all("unknown corpus" not in body.decode() for body in missing)  # B was told its document is missing
    assert all("no document" in json.loads(body)["error"]["message"] for body in missing)
