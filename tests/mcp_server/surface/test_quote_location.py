"""get_document with a quote, through a real stdio server: where the quote is, to the page and line."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from tests.document_fixtures import write_pdf
from tests.helpers import make_settings, subprocess_env
from tests.mcp_server.surface.mcp_contract import text_of

pytestmark = pytest.mark.slow
SERVE = [sys.executable, "-m", "mcp_server", "serve"]
SEAL_CHECK = "Check the seals for cracks once a month and"
PAGES = [
    "Installation\nMount the pump on a level floor and connect the inlet hose first.\nTighten the clamps by hand.",
    "Maintenance\nReplace the filter cartridge every 400 operating hours to keep the flow rate.\n"
    f"{SEAL_CHECK}\nreplace them when they are worn or brittle.",
    "Storage\nDrain the pump before winter and store it in a dry room away from frost.",
]


@pytest.fixture(scope="module")
def manuals(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("quotes")
    corpus = root / "manuals"
    corpus.mkdir()
    (corpus / "corpus.toml").write_text('name = "manuals"\ndescription = "Device manuals."\n', encoding="utf-8")
    write_pdf(corpus / "pump.pdf", "Pump manual", PAGES)
    (corpus / "service.md").write_text(
        "# Service\n\nThe service team needs infor-\nmation about every repair within two days.\n", encoding="utf-8"
    )
    settings = make_settings(root / "data", corpus)
    ingest(settings)
    return settings


@pytest.fixture
async def client(manuals: Settings, tmp_path: Path) -> AsyncIterator[Client]:
    server = StdioServerParameters(command=SERVE[0], args=SERVE[1:], env=subprocess_env(manuals), cwd=tmp_path)
    async with Client(server) as session:
        yield session


async def locate(client: Client, doc_id: str, quote: str, **more: Any) -> tuple[dict[str, Any], str]:
    result = await client.call_tool("get_document", {"doc_id": doc_id, "quote": quote, **more})
    assert not result.is_error, text_of(result)
    schema = {t.name: t for t in (await client.list_tools()).tools}["get_document"].output_schema
    jsonschema.validate(result.structured_content, schema)
    assert result.structured_content is not None
    return result.structured_content, text_of(result)


@pytest.mark.anyio
async def test_a_quote_from_page_2_is_located_on_page_2_with_its_chunk_and_lines(client: Client) -> None:
    whole = await client.call_tool("get_document", {"doc_id": "manuals:pump"})
    assert whole.structured_content is not None and whole.structured_content["quote"] is None
    (page_2,) = [c for c in whole.structured_content["chunks"] if c["page"] == 2]

    seals = "check the seals  for cracks ONCE a month and\nreplace them"
    document, rendered = await locate(client, "pump", seals, window=0)
    quote = document["quote"]
    assert quote["citation"]["id"] == page_2["citation_id"] and quote["end_citation"] is None
    assert (quote["page"], quote["page_end"], quote["page_kind"]) == (2, None, "page")
    assert (quote["line_start"], quote["line_end"], quote["lines"]) == (3, 4, "page")  # after the heading and line 2
    assert (quote["exact"], quote["ratio"]) == (True, 1.0)
    assert quote["text"] == SEAL_CHECK + "\nreplace them"
    text = whole.structured_content["text"]
    assert text[quote["char_start"] : quote["char_end"]] == quote["text"]
    assert [c["citation_id"] for c in document["chunks"]] == [page_2["citation_id"]]  # the chunk, window 0
    assert f"Quote found in [{page_2['citation_id']}] (p. 2, lines 3–4)" in rendered and "exact match" in rendered


@pytest.mark.anyio
async def test_hyphenation_whitespace_and_case_match_in_a_text_file_with_its_source_lines(client: Client) -> None:
    document, _ = await locate(client, "manuals:service", "NEEDS INFORMATION about   every repair")
    quote = document["quote"]
    assert quote["exact"] and quote["text"] == "needs infor-\nmation about every repair"
    assert (quote["line_start"], quote["line_end"], quote["lines"]) == (3, 4, "file")
    assert quote["citation"]["id"] == "manuals:service#0"


@pytest.mark.anyio
async def test_a_misquoted_sentence_matches_closely_and_shows_the_documents_words(client: Client) -> None:
    document, rendered = await locate(
        client, "manuals:pump#0", "Replace the filter cartridge every 500 operating hours to keep the flow rate."
    )
    quote = document["quote"]
    assert not quote["exact"] and 0.9 <= quote["ratio"] < 1 and quote["page"] == 2
    assert quote["text"] == "Replace the filter cartridge every 400 operating hours to keep the flow rate."
    assert "a close match (ratio 0.99)" in rendered and "every 400 operating hours" in rendered


@pytest.mark.anyio
async def test_a_quote_not_in_the_document_or_too_long_is_a_clear_error(client: Client) -> None:
    missing = await client.call_tool("get_document", {"doc_id": "pump", "quote": "The insurance deductible is 250 EUR"})
    assert missing.is_error
    assert "get_document: the quote was not found in document manuals:pump. Quote fewer words" in text_of(missing)
    assert "keyword_search" in text_of(missing)

    garbled = "Replace the hose clamp every 900 working days to keep the water pressure."
    near = await client.call_tool("get_document", {"doc_id": "pump", "quote": garbled})
    assert near.is_error and "the closest passage, in [manuals:pump#" in text_of(near)
    assert "(p. 2, lines 1–4)" in text_of(near) and "a match needs 0.90" in text_of(near)

    long = await client.call_tool("get_document", {"doc_id": "pump", "quote": "word " * 250})
    assert long.is_error and "the quote is 1249 characters long; locate at most 1000 at a time" in text_of(long)
