"""Office file names (spaces, commas, brackets, '#', quotes, a semicolon, CJK, an emoji) give ids that round-trip:
check_answer supports a sentence citing them and get_document opens them, over stdio and HTTP and on the CLI."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from mcp_server.cli import main
from mcp_server.indexing.ingest import ingest
from mcp_server.models import DocumentView, Hit
from mcp_server.settings import Settings
from tests.helpers import make_settings, subprocess_env
from tests.mcp_server.surface.mcp_contract import text_of
from tests.mcp_server.team.test_http import HttpServer

pytestmark = pytest.mark.slow

FACTS = {
    "Fire drill on Thursday": "The fire drill on Thursday starts at 10:15 at the north gate with warden Okonkwo",
    "Q3, facilities [draft] #2": "The Q3 facilities budget is 48,200 EUR for the aquarium repairs",
    "Bob's \"notes\"; final": "Bob keeps the spare server room key in drawer 14 of the quokka cabinet",
    "消防演习": "消防演习在周四下午三点举行，集合地点是停车场",
    "🔥 plan": "The evacuation plan names Tamsin Reyes as floor marshal for level 3",
}
"""Each file's one fact, by doc_id (the file name without its extension)."""
SUFFIXES = {"Bob's \"notes\"; final": ".txt"}
SPACED = "Fire drill on Thursday"


def odd_names_index(root: Path) -> Settings:
    """The corpus 'mydocs' of one file per name in ``FACTS``, ingested into ``root/data``."""
    folder = root / "mydocs"
    folder.mkdir()
    description = "Office notes: fire drills, facilities budgets, keys and evacuation plans."
    (folder / "corpus.toml").write_text(f'name = "mydocs"\ndescription = "{description}"\n', encoding="utf-8")
    for doc_id, fact in FACTS.items():
        (folder / f"{doc_id}{SUFFIXES.get(doc_id, '.md')}").write_text(f"{fact}.\n", encoding="utf-8")
    settings = make_settings(root / "data", folder)
    ingest(settings)
    return settings


@pytest.fixture(scope="module")
def odd_names(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return odd_names_index(tmp_path_factory.mktemp("odd-names"))


@pytest.fixture(scope="module")
def http_server(odd_names: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    running = HttpServer(odd_names, tmp_path_factory.mktemp("odd-names-http") / "stderr.log")
    yield running
    assert running.stop() in (0, -signal.SIGTERM), running.log.read_text()


async def _every_id_round_trips(client: Client) -> None:
    found = await client.call_tool("hybrid_search", {"query": "drill budget key marshal 消防演习", "top_k": 10})
    hits = [Hit.model_validate(hit) for hit in (found.structured_content or {})["hits"]]
    assert sorted(hit.citation.doc_id for hit in hits) == sorted(FACTS)
    answer = "\n".join(f"- {FACTS[hit.citation.doc_id]} [{hit.citation.id}]." for hit in hits)
    checked = await client.call_tool("check_answer", {"answer": answer})
    verdicts = (checked.structured_content or {})["sentences"]
    assert [v["status"] for v in verdicts] == ["supported"] * len(FACTS), text_of(checked)
    for hit in hits:
        opened = await client.call_tool("get_document", {"doc_id": hit.citation.id})
        assert not opened.is_error, text_of(opened)
        view = DocumentView.model_validate(opened.structured_content)
        assert (view.doc_id, view.chunks[0].citation_id) == (hit.citation.doc_id, hit.citation.id)
        assert FACTS[view.doc_id] in view.text and f"[{hit.citation.id}]" in text_of(opened)

    spaced = next(hit.citation for hit in hits if hit.citation.doc_id == SPACED)
    assert spaced.id == "mydocs:Fire%20drill%20on%20Thursday#0"
    as_written = await client.call_tool("check_answer", {"answer": f"{FACTS[SPACED]} [mydocs:{SPACED}#0]."})
    assert (as_written.structured_content or {})["passed"], text_of(as_written)
    document = await client.read_resource(f"doc://mydocs/{quote(SPACED)}")
    assert FACTS[SPACED] in "".join(getattr(part, "text", "") for part in document.contents)


@pytest.mark.anyio
async def test_ids_of_odd_file_names_round_trip_over_stdio(odd_names: Settings, tmp_path: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_server", "serve"], env=subprocess_env(odd_names), cwd=tmp_path
    )
    async with Client(server) as client:
        await _every_id_round_trips(client)


@pytest.mark.anyio
async def test_ids_of_odd_file_names_round_trip_over_http(http_server: HttpServer) -> None:
    async with Client(f"{http_server.url}/mcp") as client:
        await _every_id_round_trips(client)


def test_the_cli_prints_ids_that_ragmcp_doc_opens(odd_names: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMCP_DATA_DIR", str(odd_names.data_dir))
    monkeypatch.setenv("RAGMCP_CORPORA", str(odd_names.corpora[0]))
    searched = CliRunner().invoke(main, ["search", "drill budget key marshal 消防演习", "-k", "10"])
    assert searched.exit_code == 0, searched.output
    ids = [line.split("]")[0][1:] for line in searched.stdout.splitlines() if line.startswith("[mydocs:")]
    assert len(ids) == len(FACTS) and "mydocs:Fire%20drill%20on%20Thursday#0" in ids
    for cid in ids:
        shown = CliRunner().invoke(main, ["doc", cid])
        assert shown.exit_code == 0, shown.output
        assert f"[{cid}]" in shown.stdout and any(fact in shown.stdout for fact in FACTS.values())
