"""The offline agent reads questions the way people ask them: over real MCP servers (in this process), no model.

The issue's examples on the bundled knowledge, and a folder indexed without ``corpus.toml``
(a town's rules), whose questions must be searched although no description names them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from client_agent.backends.base import Exchange
from client_agent.offline.backend import OfflineBackend
from client_agent.loop import Agent, RunResult
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from tests.client_agent.conftest import AskFn
from tests.client_agent.in_process import serve_in_process
from tests.helpers import FIXTURES

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOWN = FIXTURES / "adhoc" / "riverton-town"


def _cited_and_checked(result: RunResult) -> None:
    assert result.citations and result.verification["passed"] is True, result.verification


async def test_percent_of_in_words_is_computed_without_a_search(ask_offline: AskFn) -> None:
    result = await ask_offline("How much is 15 percent of 240?")
    assert result.state == "answered" and "= 36" in result.answer and result.totals.tool_calls == 0


async def test_seven_years_of_service_get_the_five_year_tier_and_say_so(ask_offline: AskFn) -> None:
    result = await ask_offline(
        "I started at Wonderlab seven years ago. How many paid vacation days do I get each year?")
    assert result.state == "answered", result.answer
    assert "20 days" in result.answer and "10 days" not in result.answer
    assert "seven years" in result.answer and "After 5 years of service" in result.answer
    assert {c["id"].split("#")[0] for c in result.citations} == {"handbook:hr/leave-policy"}
    _cited_and_checked(result)


async def test_help_desk_software_is_found_as_service_cloud_and_its_top_plan_priced(ask_offline: AskFn) -> None:
    result = await ask_offline("What is the monthly price of the most expensive plan of the help-desk software?")
    assert result.state == "answered", result.answer
    assert "9,999" in result.answer and "Enterprise" in result.answer and "1,999" not in result.answer
    assert any(c["id"].startswith("products:service-cloud/pricing#") for c in result.citations)
    _cited_and_checked(result)


async def test_a_home_with_cats_gets_the_pet_features(ask_offline: AskFn) -> None:
    result = await ask_offline("Which vacuum suits a home with cats?")
    assert "X5" in result.answer and "pets" in result.answer, result.answer
    assert "firmware" not in result.answer.lower() and "map" not in result.answer.lower()
    assert any(c["id"].startswith("products:wonderclean/x5-spec-sheet#") for c in result.citations)
    _cited_and_checked(result)


async def test_how_do_i_fix_it_after_a_vpn_error_gets_the_numbered_steps(ask_offline: AskFn) -> None:
    first = "What does the VPN error ERR_VPN_AUTH_4012 mean?"
    earlier = await ask_offline(first)
    result = await ask_offline("how do I fix it?", history=[Exchange(first, earlier.answer)])
    lines = result.answer.splitlines()
    assert [line[:3] for line in lines] == ["1. ", "2. ", "3. "], result.answer
    assert "Renew VPN certificate" in result.answer and "Restart the WonderVPN client" in result.answer
    assert all(line.endswith("[handbook:it/vpn-troubleshooting#1]") for line in lines)
    _cited_and_checked(result)


async def test_no_database_tables_are_named_for_a_question_about_documents(ask_offline: AskFn) -> None:
    result = await ask_offline("Does Wonderlab sell a WonderClean X9 dishwasher?")
    assert result.state == "insufficient"
    assert "table" not in result.answer and "SQL" not in result.answer


@pytest.fixture(scope="module")
def town_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A fresh index of the town folder alone (no corpus.toml, so no description of what it holds)."""
    assert not (TOWN / "corpus.toml").exists()
    settings = Settings(data_dir=tmp_path_factory.mktemp("town"), corpora=[TOWN])
    ingest(settings)
    return settings


async def _ask_town(settings: Settings, question: str, trace: Path) -> RunResult:
    async with serve_in_process(settings) as server:
        assert [c.name for c in server.catalog.corpora] == ["riverton-town"]
        return await Agent(server, OfflineBackend()).run(question, trace)


async def test_a_folder_without_corpus_toml_is_searched_and_answers_with_a_citation(
        town_settings: Settings, tmp_path: Path) -> None:
    result = await _ask_town(town_settings, "Can I put cooked food in the compost bins?", tmp_path / "t.jsonl")
    assert result.state == "answered", result.answer
    assert "Cooked food" in result.answer and "must not go in the compost bins" in result.answer
    assert [c["id"].split("#")[0] for c in result.citations] == ["riverton-town:waste/compost-bins"]
    _cited_and_checked(result)


async def test_worded_arithmetic_next_to_an_undescribed_folder_is_computed_without_a_search(
        town_settings: Settings, tmp_path: Path) -> None:
    result = await _ask_town(town_settings, "What is 125 times 8?", tmp_path / "t.jsonl")
    assert result.state == "answered" and "125 × 8 = 1000" in result.answer
    assert result.totals.tool_calls == 0


async def test_general_knowledge_next_to_an_undescribed_folder_is_declined_after_searching_it(
        town_settings: Settings, tmp_path: Path) -> None:
    result = await _ask_town(town_settings, "Who wrote Hamlet?", tmp_path / "t.jsonl")
    assert result.state == "insufficient" and result.citations == []
    assert "general-knowledge" in result.answer and "riverton-town" in result.answer
    assert result.totals.tool_calls == 1  # the one search that ruled it out, no follow-ups


async def test_the_student_price_is_quoted_beside_the_membership_fee(town_settings: Settings, tmp_path: Path) -> None:
    result = await _ask_town(town_settings, "How much does membership cost for a student?", tmp_path / "t.jsonl")
    assert "Students pay half price" in result.answer and "30 euros" in result.answer, result.answer
    assert {c["id"].split("#")[0] for c in result.citations} == {"riverton-town:leisure/membership"}
    _cited_and_checked(result)



async def test_a_sentence_answering_two_parts_of_a_question_answers_both(ask_offline: AskFn) -> None:
    result = await ask_offline("Which embedding model does production use and how many dimensions do its vectors have?")
    assert result.state == "answered", result.answer
    assert "text-embedding-3-small, producing 1536-dimensional vectors" in result.answer
    assert "could not find" not in result.answer
    _cited_and_checked(result)


async def test_not_found_names_only_words_no_source_holds(town_settings: Settings, tmp_path: Path) -> None:
    result = await _ask_town(town_settings, "How long is the waiting list per person for the Riverton sauna?",
                             tmp_path / "t.jsonl")
    assert result.state == "insufficient"
    mentions = result.answer.split("mentions ", 1)[1].split(" (", 1)[0].rstrip(".").split(" or ")
    assert "sauna" in mentions and not {"long", "per", "Riverton"} & set(mentions), result.answer
