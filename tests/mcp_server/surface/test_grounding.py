"""Grounding for hosts: ``check_answer`` (the agent's citation check on a draft answer) and ``min_score``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from mcp_server.grounding.verdict import check_answer
from mcp_server.settings import Settings
from mcp_server.surface.rendering import render_search
from mcp_server.surface.tools import RetrievalTools
from mcp_server.indexing.ingest import ingest
from tests.document_fixtures import write_pdf
from tests.helpers import make_settings, subprocess_env
from tests.mcp_server.surface.mcp_contract import text_of

pytestmark = pytest.mark.slow
SERVE = [sys.executable, "-m", "mcp_server", "serve"]
CID = "acme:policies/remote-work#0"


async def _check(client: Client, answer: str) -> tuple[dict[str, Any], str]:
    result = await client.call_tool("check_answer", {"answer": answer, "question": "remote work?"})
    assert not result.is_error, text_of(result)
    tools = {t.name: t for t in (await client.list_tools()).tools}
    jsonschema.validate(result.structured_content, tools["check_answer"].output_schema)
    assert result.structured_content is not None
    return result.structured_content, text_of(result)


@pytest.mark.anyio
async def test_check_answer_over_stdio(server_settings: Settings, tmp_path: Path) -> None:
    server = StdioServerParameters(command=SERVE[0], args=SERVE[1:], env=subprocess_env(server_settings), cwd=tmp_path)
    async with Client(server) as client:
        correct = (
            f"Employees may work remotely up to 3 days per week after their probation period [{CID}]. "
            f"Acme pays a one-time home office stipend of 500 EUR [{CID}]. Is that generous?"
        )
        good, rendered = await _check(client, correct)
        assert good["passed"] and (good["supported"], good["not_factual"]) == (2, 1)
        span = good["sentences"][1]["evidence"][0]
        assert span["citation"]["id"] == CID and "500 EUR" in span["quote"]
        assert span["line_start"] is not None and span["char_end"] > span["char_start"]
        assert rendered.startswith("All 2 factual sentences are supported")

        swapped, _ = await _check(client, f"Acme pays a one-time home office stipend of 750 EUR [{CID}].")
        assert swapped["sentences"][0]["status"] == "unsupported" and "750" in swapped["sentences"][0]["reason"]
        assert swapped["verdict"].startswith("1 of 1 factual sentences are not supported")

        uncited, _ = await _check(client, "Acme pays a one-time home office stipend of 500 EUR.")
        assert uncited["sentences"][0]["status"] == "uncited"

        missing, missing_text = await _check(client, "Acme pays a stipend of 500 EUR [acme:policies/nowhere#0].")
        other, other_text = await _check(client, "Acme pays a stipend of 500 EUR [hr:policies/nowhere#0].")
        assert missing["sentences"][0]["status"] == "unknown_id"
        assert (other["sentences"][0]["reason"], other_text) == (
            missing["sentences"][0]["reason"].replace("acme:", "hr:"), missing_text.replace("acme:", "hr:"))

        floored = await client.call_tool("hybrid_search", {"query": "home office stipend", "min_score": 5.0})
        assert floored.structured_content is not None and floored.structured_content["hits"] == []
        assert floored.structured_content["below_min_score"] == 5 and "5 scored below it" in text_of(floored)

        empty = await client.call_tool("check_answer", {"answer": "  "})
        assert empty.is_error and "answer is empty" in text_of(empty)


def test_the_agent_and_check_answer_give_the_same_verdicts(acme_index: Settings) -> None:
    """The agent checks against the hit texts of its run; the tool against the chunks the ids name."""
    tools = RetrievalTools.open(acme_index)
    try:
        hits = tools.search("home office stipend remote work", mode="hybrid", corpus=None, top_k=3, filters=None).hits
        evidence = {hit.citation.id: hit.text for hit in hits}
        first, second = list(evidence)[:2]
        answer = (
            f"Acme pays a one-time home office stipend of 500 EUR [{first}]. Acme pays 900 EUR [{first}]. "
            f"The stipend covers a desk [{second}]. It rains a lot in Oslo. Ask me anything? [{first}, acme:no#1]"
        )
        agent = [s.status if not s.unknown_ids else "unknown_id" for s in check_answer(answer, evidence).sentences]
        tool = [s.status for s in tools.check_answer(answer, None).sentences]
    finally:
        tools.close()
    assert tool == agent
    assert {"supported", "unsupported", "uncited", "unknown_id"} <= set(tool)


def test_a_supported_sentence_from_a_pdf_is_located_on_its_page(tmp_path: Path) -> None:
    corpus = tmp_path / "manuals"
    corpus.mkdir()
    (corpus / "corpus.toml").write_text('name = "manuals"\ndescription = "Device manuals."\n', encoding="utf-8")
    write_pdf(corpus / "pump.pdf", "Pump manual", [
        "Installation. Mount the pump on a level floor and connect the inlet hose first.",
        "Maintenance. Replace the filter cartridge every 400 operating hours to keep the flow rate.",
    ])  # fmt: skip
    settings = make_settings(tmp_path / "data", corpus)
    ingest(settings)
    tools = RetrievalTools.open(settings)
    try:
        hit = tools.search("filter cartridge", mode="keyword", corpus=None, top_k=1, filters=None).hits[0]
        check = tools.check_answer(f"Replace the filter cartridge every 400 operating hours [{hit.citation.id}].", None)
    finally:
        tools.close()
    (sentence,) = check.sentences
    assert sentence.status == "supported"
    (span,) = sentence.evidence
    # a chunk of a PDF lies on one page, so the evidence names exactly the page the sentence is on
    assert (span.citation.page, span.citation.page_end) == (2, None) and "400 operating hours" in span.quote
    assert span.char_start > span.citation.char_start


def test_min_score_leaves_out_low_hits_and_counts_them(acme_index: Settings) -> None:
    tools = RetrievalTools.open(acme_index)
    try:
        args: dict[str, Any] = {"mode": "hybrid", "corpus": None, "top_k": 5, "filters": None}
        everything = tools.search("home office stipend", **args)
        scores = [hit.score for hit in everything.hits]
        floor = (scores[0] + scores[-1]) / 2
        floored = tools.search("home office stipend", min_score=floor, **args)
        none_left = tools.search("home office stipend", min_score=scores[0] + 1, **args)
    finally:
        tools.close()
    kept = [s for s in scores if s >= floor]
    assert [hit.score for hit in floored.hits] == kept and 0 < len(kept) < len(scores)
    assert floored.below_min_score == len(scores) - len(kept)
    assert (none_left.hits, none_left.below_min_score) == ([], len(scores))
    assert "scored below it" in render_search(none_left)
