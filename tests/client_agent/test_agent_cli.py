"""``rag-agent ask``: stdout carries the answer and its sources (or one JSON object), stderr the progress."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from client_agent.cli import main
from client_agent.trace import read_trace
from mcp_server.settings import Settings
from tests.helpers import subprocess_env, write_doc

pytestmark = pytest.mark.slow


def run(settings: Settings, *args: str) -> tuple[int, str, str]:
    env = {**subprocess_env(settings), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_json_result_totals_match_the_trace_file(bundled_settings: Settings, tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    code, out, err = run(bundled_settings, "ask", "--json", "--trace", str(trace),
                         "How many days of annual leave do I get after 5 years of service?")
    assert code == 0, err
    result = json.loads(out)
    assert set(result) >= {"answer", "state", "citations", "verification", "totals", "trace"}
    assert result["trace"] == str(trace) and "offline mode" in err
    events = read_trace(trace)
    calls = [e for e in events if e["event"] == "tool_call" and not e.get("refused")]
    models = [e for e in events if e["event"] == "model_call"]
    totals = result["totals"]
    assert totals["tool_calls"] == len(calls) > 0
    assert totals["input_tokens"] == sum(e["input_tokens"] for e in models)
    assert totals["output_tokens"] == sum(e["output_tokens"] for e in models)
    assert totals == events[-1]["totals"] and totals["steps"] >= 1
    assert "20" in result["answer"]
    assert {c["id"] for c in result["citations"]} <= {i for e in calls for i in e["evidence"]}
    for citation in result["citations"]:
        assert {"id", "corpus", "doc_id", "chunk", "title", "source", "section", "char_start", "char_end"} <= set(citation)


def test_text_output_lists_the_cited_sources_and_progress_goes_to_stderr(bundled_settings: Settings) -> None:
    code, out, err = run(bundled_settings, "ask", "What does the VPN error E1042 mean?")
    assert code == 0, err
    answer, _, sources = out.partition("\nSources:\n")
    assert "E1042" in answer and "handbook:it/vpn-troubleshooting#" in sources
    assert "searching" in err and "searching" not in out


def test_quiet_prints_nothing_but_the_answer(tmp_path: Path) -> None:
    folder = tmp_path / "garden"
    write_doc(folder, "notes.md", "Garden notes", "The greenhouse key hangs behind door 7.")
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("RAGMCP_", "RAG_AGENT_"))}
    env = {**inherited, "HOME": str(tmp_path), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": "",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    command = [sys.executable, "-c", "from client_agent.cli import main; main()", "ask", "--quiet", "--corpus",
               str(folder), "Where does the greenhouse key hang?"]

    for run_number in (1, 2):  # the first builds the index, the second finds it up to date
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and done.stderr == "", (run_number, done.stderr)
        answer, _, sources = done.stdout.partition("\nSources:\n")
        assert "door 7" in answer and "[garden:notes#0] Garden notes" in sources


def test_quiet_shows_the_servers_lines_when_it_fails(tmp_path: Path) -> None:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("RAGMCP_", "RAG_AGENT_"))}
    env = {**inherited, "HOME": str(tmp_path), "RAGMCP_MAX_TOP_K": "0", "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "",
           "OPENAI_BASE_URL": "", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", "from client_agent.cli import main; main()", "ask", "--quiet", "key?"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "invalid settings: max_top_k" in done.stderr


def test_empty_question_is_refused_with_an_example(bundled_settings: Settings) -> None:
    code, _, err = run(bundled_settings, "ask", "   ")
    assert code == 2 and "question is empty" in err


def test_chat_resolves_a_follow_up_against_the_previous_question(bundled_settings: Settings) -> None:
    env = {**subprocess_env(bundled_settings), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    questions = "What does the VPN error E1042 mean?\nHow do I fix it?\n"
    result = CliRunner().invoke(main, ["chat", "--quiet"], input=questions, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    first, _, second = result.stdout.partition("\nSources:\n")
    assert "E1042" in first
    # Alone, "How do I fix it?" names nothing in the knowledge base and would be declined.
    assert "general-knowledge" not in second and "E1042" in second.split("\nSources:\n")[0]


def test_anthropic_backend_without_a_key_says_what_to_set(bundled_settings: Settings) -> None:
    code, out, err = run(bundled_settings, "ask", "--backend", "anthropic", "How much annual leave do I get?")
    assert code == 1 and out == ""
    assert "ANTHROPIC_API_KEY" in err and "--backend offline" in err and "Traceback" not in err


def test_eval_reports_process_quality_and_cost_for_a_question_set(bundled_settings: Settings, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(q) for q in [
        {"id": "leave", "kind": "single", "question": "How many days of annual leave do I get after 3 years of service?",
         "expected_answer": "15 days", "expected_sources": ["handbook:hr/leave-policy"]},
        {"id": "calc", "kind": "no-retrieval", "question": "What is 1024 / 32?", "expected_answer": "32"},
        {"id": "x9", "kind": "unanswerable", "question": "What is the X9's battery life?", "expected_state": "insufficient"},
    ]) + "\n")
    report_path = tmp_path / "report.json"
    code, out, err = run(bundled_settings, "eval", str(questions), "--output", str(report_path), "--quiet")
    assert code == 0, err
    report = json.loads(report_path.read_text())
    assert report["runs"] == 3 and report["process"]["states"] == {"answered": 2, "insufficient": 1}
    assert report["quality"]["answer_match"] == 1.0 and report["quality"]["state_match"] == 1.0
    assert report["by_kind"]["single"]["source_recall"] == 1.0
    assert report["by_kind"]["single"]["citation_recall"] == 1.0
    by_id = {q["id"]: q for q in report["questions"]}
    assert by_id["calc"]["tools"] == {} and sum(by_id["x9"]["tools"].values()) >= 2
    assert report["process"]["tool_calls_per_run"] == round(sum(sum(q["tools"].values()) for q in by_id.values()) / 3, 3)
    assert "| single | 1 | 100% |" in out and (tmp_path / "report-traces" / "leave.jsonl").is_file()


def test_eval_refuses_a_malformed_question_set_naming_the_line(bundled_settings: Settings, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text('{"question": "ok"}\n{"question": ""}\n')
    code, _, err = run(bundled_settings, "eval", str(questions))
    assert code == 2 and "questions.jsonl:2" in err and "question" in err
