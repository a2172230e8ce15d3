"""``rag-agent`` on model back-ends: the real CLI, the real SDKs, scripted model servers on 127.0.0.1,
and a real stdio MCP server on a small ingested corpus.

The scripted models cite ids the tiny corpus really has (``tiny:alpha#0``), so the citation
check the CLI runs is the real one. Each command line is what docs/agent.md shows for a local server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from client_agent.cli import main
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from tests.client_agent.fake_anthropic import FakeAnthropic, message, text, tool_use
from tests.client_agent.fake_openai import FakeOpenAI, completion, tool_call
from tests.helpers import subprocess_env

pytestmark = pytest.mark.slow

QUESTION = "What fuel does the alpha reactor use?"
ANSWER = "The alpha reactor runs on zebraword fuel at 451 kelvin [tiny:alpha#0]."
VERDICT = '{"sufficient": true, "missing": [], "next_queries": []}'
NO_KEYS = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": "", "ANTHROPIC_BASE_URL": "",
           "RAG_AGENT_MODEL": ""}


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("backend-cli")
    corpus = root / "tiny"
    corpus.mkdir()
    (corpus / "corpus.toml").write_text('name = "tiny"\ndescription = "Reactor notes."\n', encoding="utf-8")
    (corpus / "alpha.md").write_text("---\ntitle: Alpha\n---\n# Alpha\n\nThe alpha reactor runs on zebraword fuel "
                                     "at 451 kelvin.\n", encoding="utf-8")
    (corpus / "beta.md").write_text("---\ntitle: Beta\n---\n# Beta\n\nBeta teams meet every Tuesday.\n",
                                    encoding="utf-8")
    settings = Settings(data_dir=root / "data", corpora=[corpus])
    ingest(settings)
    return settings


def run(settings: Settings, *args: str, **env: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env={**subprocess_env(settings), **NO_KEYS, **env},
                                catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def openai_script() -> list[dict[str, Any]]:
    return [
        completion("Searching the reactor notes.",
                   tool_call("call_1", "hybrid_search", {"query": "alpha reactor fuel", "corpus": "tiny"})),
        completion(VERDICT),
        completion(ANSWER),
    ]


def anthropic_script(refused_once: bool = False) -> list[dict[str, Any]]:
    """Decide, reflect, answer; ``refused_once``: a reply for the reflection the server refuses (its first
    request with search results), used up by the refusal."""
    refused = [message(text("refused: never used"))] if refused_once else []
    return [
        message(text("Searching the reactor notes."),
                tool_use("toolu_1", "hybrid_search", {"query": "alpha reactor fuel", "corpus": "tiny"})),
        *refused,
        message(text(VERDICT)),
        message(text(ANSWER)),
    ]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=("qwen3:8b",)) as server:
        yield server


def test_ask_on_an_openai_compatible_server_answers_with_checked_citations(
    tiny_index: Settings, openai_server: FakeOpenAI
) -> None:
    openai_server.enqueue(*openai_script())
    code, out, err = run(tiny_index, "ask", "--backend", "openai", "--base-url", openai_server.base_url,
                         "--model", "qwen3:8b", QUESTION)
    assert code == 0, err
    answer, _, sources = out.partition("\n\nSources:\n")
    assert answer == ANSWER
    assert sources.startswith("  [tiny:alpha#0] Alpha — alpha.md")
    assert "searching tiny for 'alpha reactor fuel'" in err and "(answered;" in err
    assert [b["model"] for b in openai_server.bodies] == ["qwen3:8b"] * 3
    tool_message = openai_server.bodies[1]["messages"][3]
    assert tool_message["role"] == "tool" and "[tiny:alpha#0] Alpha\n" in tool_message["content"]


def test_auto_picks_the_openai_backend_from_openai_base_url_and_the_json_shape_is_the_offline_one(
    tiny_index: Settings, openai_server: FakeOpenAI, tmp_path: Path
) -> None:
    openai_server.enqueue(*openai_script())
    code, out, err = run(tiny_index, "ask", "--json", "--trace", str(tmp_path / "model.jsonl"), QUESTION,
                         OPENAI_BASE_URL=openai_server.base_url)
    assert code == 0, err
    assert "back-end: openai (OPENAI_BASE_URL is set)" in err
    assert "model: qwen3:8b (the first the server lists" in err
    model_run = json.loads(out)
    code, out, err = run(tiny_index, "ask", "--json", "--trace", str(tmp_path / "offline.jsonl"), QUESTION)
    assert code == 0, err and "offline mode" in err
    offline_run = json.loads(out)

    assert model_run["answer"] == ANSWER and model_run["state"] == "answered"
    assert model_run["verification"]["checked"] is True and model_run["verification"]["passed"] is True
    assert set(model_run) == set(offline_run)
    assert set(model_run["totals"]) == set(offline_run["totals"])
    assert set(model_run["verification"]) <= set(offline_run["verification"]) | {"revisions"}
    assert model_run["totals"]["input_tokens"] == 300 and offline_run["totals"]["input_tokens"] == 0
    assert {c["id"] for c in model_run["citations"]} == {"tiny:alpha#0"}


def test_ask_on_a_messages_server_that_rejects_search_results_falls_back_to_cited_text(
    tiny_index: Settings
) -> None:
    with FakeAnthropic(rejects_search_results=True) as server:
        server.enqueue(*anthropic_script(refused_once=True))
        code, out, err = run(tiny_index, "ask", "--backend", "anthropic", "--base-url", server.url,
                             "--model", "qwen3-coder", QUESTION)
    assert code == 0, err
    assert out.partition("\n\nSources:\n")[0] == ANSWER
    assert err.count("does not accept search_result blocks") == 1
    decide, refused, reflect, answer = server.bodies
    assert '"search_result"' in json.dumps(refused)
    assert all('"search_result"' not in json.dumps(body) for body in (reflect, answer))
    assert "[tiny:alpha#0] Alpha\n" in reflect["messages"][2]["content"][0]["content"]


def test_eval_compares_back_ends_with_tokens_and_cost_and_keeps_the_citation_fallback_across_questions(
    tiny_index: Settings, tmp_path: Path
) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(q) for q in [
        {"id": "fuel", "question": QUESTION, "expected_answer": "zebraword", "expected_sources": ["tiny:alpha"]},
        {"id": "again", "question": "And the alpha reactor's fuel, once more?", "expected_answer": "zebraword"},
    ]) + "\n")  # fmt: skip
    report_path = tmp_path / "report.json"
    with FakeAnthropic(rejects_search_results=True) as server:
        server.enqueue(*anthropic_script(refused_once=True), *anthropic_script())
        code, out, err = run(tiny_index, "eval", str(questions), "--output", str(report_path), "--backend",
                             "anthropic", "--base-url", server.url, "--model", "qwen3-coder", "--input-price", "2",
                             "--output-price", "10")
    assert code == 0, err
    assert len(server.requests) == 7  # one refused request in all: the second run starts with cited text
    assert err.count("does not accept search_result blocks") == 1
    report = json.loads(report_path.read_text())
    assert (report["backend"], report["models"]) == ("anthropic", ["claude-test"])
    assert report["quality"]["answer_match"] == 1.0 and report["quality"]["citation_recall"] == 1.0
    assert report["cost"]["input_tokens_per_answered"] == 300 and report["cost"]["output_tokens_per_answered"] == 60
    assert report["cost"]["usd_per_answered"] == pytest.approx((300 * 2 + 60 * 10) / 1e6)
    assert report["cost"]["usd_total"] == pytest.approx(2 * (300 * 2 + 60 * 10) / 1e6)
    assert out.startswith("Back-end: anthropic (claude-test).") and "Dollars: 0.0012 per answered question" in out


def test_a_server_url_without_the_mcp_path_is_named_with_a_hint(tiny_index: Settings) -> None:
    with FakeOpenAI() as server:  # an HTTP server that is not MCP: 404 on every other path
        code, out, err = run(tiny_index, "ask", "--server-url", server.url, QUESTION)
    assert code == 1 and out == ""
    assert f"Could not connect to the retrieval server at {server.url}" in err
    assert f"ragmcp serves MCP at the path /mcp: try --server-url {server.url}/mcp" in err
    assert "Traceback" not in err


def test_a_server_url_nobody_listens_on_is_named(tiny_index: Settings) -> None:
    code, _, err = run(tiny_index, "ask", "--server-url", "http://127.0.0.1:9/mcp", QUESTION)
    assert code == 1
    assert "Could not connect to the retrieval server at http://127.0.0.1:9/mcp" in err
    assert "ragmcp serve --transport http" in err
