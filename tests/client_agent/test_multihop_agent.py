"""The offline agent on multi-hop questions, end to end: a real MCP server (in this process) over a small encyclopedia corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from client_agent.offline.backend import OfflineBackend
from client_agent.loop import Agent, RunResult
from client_agent.trace import read_trace
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from tests.client_agent.in_process import serve_in_process
from tests.helpers import write_doc

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ARTICLES = {
    "kiss-and-tell": ("Kiss and Tell (1945 film)", "Kiss and Tell is a 1945 American comedy film starring then "
                      "17-year-old Shirley Temple as Corliss Archer. It was directed by Richard Wallace."),
    "shirley-temple": ("Shirley Temple", "Shirley Temple Black was an American actress, singer, dancer and diplomat. "
                       "As an adult she served as Chief of Protocol of the United States."),
    "meet-corliss-archer": ("Meet Corliss Archer", "Meet Corliss Archer, a program from radio's Golden Age, ran "
                            "from January 7, 1943 to September 30, 1956."),
    "janet-waldo": ("Janet Waldo", "Janet Waldo was an American radio and voice actress, heard as the title "
                    "character of Meet Corliss Archer."),
    "lord-high-treasurer": ("Lord High Treasurer", "The Lord High Treasurer was an English government position."),
    "annie-morton": ("Annie Morton", "Annie Morton (born October 8, 1970) is an American model born in Pennsylvania."),
    "terry-richardson": ("Terry Richardson", "Terrence Richardson (born August 14, 1965) is an American fashion "
                         "and portrait photographer."),
    "richard-wallace": ("Richard Wallace (director)", "Richard Wallace was an American film director."),
}


@pytest.fixture(scope="module")
def encyclopedia(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("encyclopedia")
    corpus = root / "wiki"
    corpus.mkdir()
    (corpus / "corpus.toml").write_text(
        'name = "wiki"\ndescription = "Encyclopedia: short articles about films, actors and models. Use it for '
        'general-knowledge questions about them."\n', encoding="utf-8")
    for slug, (title, text) in ARTICLES.items():
        write_doc(corpus, f"{slug}.md", title, text)
    settings = Settings(data_dir=root / "data", corpora=[corpus])
    ingest(settings)
    return settings


async def ask(settings: Settings, question: str, trace: Path) -> RunResult:
    async with serve_in_process(settings) as server:
        return await Agent(server, OfflineBackend()).run(question, trace)


def searches(result: RunResult) -> list[str]:
    return [e["arguments"]["query"] for e in read_trace(result.trace) if e["event"] == "tool_call" and not e.get("refused")]


async def test_a_bridge_question_follows_the_name_its_first_document_mentions(encyclopedia: Settings,
                                                                              tmp_path: Path) -> None:
    question = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"
    result = await ask(encyclopedia, question, tmp_path / "trace.jsonl")
    queries = searches(result)
    assert queries[0] == question and any(q.startswith("Shirley Temple ") for q in queries[1:])
    assert set(result.evidence(2)) == {"wiki:kiss-and-tell", "wiki:shirley-temple"}
    # each document of the chain is quoted by its best sentence: the bridge document's shares no word with the
    # question, yet the relevance model reads "Chief of Protocol" as the government position asked for
    assert {c["doc_id"] for c in result.citations} == {"kiss-and-tell", "shirley-temple"}
    assert "starring then 17-year-old Shirley Temple" in result.answer and "served as Chief of Protocol" in result.answer
    assert result.state == "answered"
    assert result.verification["passed"] is True


async def test_a_comparison_searches_each_name_and_keeps_both_documents(encyclopedia: Settings, tmp_path: Path) -> None:
    result = await ask(encyclopedia, "Who is older, Annie Morton or Terry Richardson?", tmp_path / "trace.jsonl")
    assert searches(result)[1:] == ["Annie Morton older", "Terry Richardson older"]
    assert result.evidence(2) == ["wiki:annie-morton", "wiki:terry-richardson"]
    assert "1970" in result.answer and "1965" in result.answer
    assert result.totals.tool_calls == 3
