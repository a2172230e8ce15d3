"""``rag-agent`` as a new user meets it (issue 27): ``--corpus`` serves your own folder, and the
server's routine log lines stay out of the answer's way. A real
``rag-agent`` process spawning a real stdio server, with a fresh HOME and data dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import write_doc

RAG_AGENT = [sys.executable, "-c", "from client_agent.cli import main; main()"]


def _env(home: Path) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("RAGMCP_", "RAG_AGENT_"))}
    return {**inherited, "HOME": str(home), "RAGMCP_DATA_DIR": str(home / "data"), "ANTHROPIC_API_KEY": "",
            "OPENAI_API_KEY": "", "OPENAI_BASE_URL": "", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def test_corpus_option_serves_the_given_folders(tmp_path: Path) -> None:
    folders = []
    for name, fact in (("garden", "The greenhouse key hangs behind door 7."), ("kitchen", "The oven is cleaned on Fridays.")):
        folder = tmp_path / name
        folder.mkdir()
        write_doc(folder, "notes.md", f"{name} notes", fact)
        folders += ["--corpus", str(folder)]
    result = subprocess.run(
        [*RAG_AGENT, "ask", "--json", "--quiet", *folders, "Where does the greenhouse key hang?"],
        env=_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    cited = json.dumps(answer)
    assert "door 7" in answer["answer"] and "garden:" in cited
    assert " INFO " not in result.stderr  # the server the agent spawns logs its warnings only


def test_corpus_option_with_server_url_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [*RAG_AGENT, "ask", "--corpus", str(tmp_path), "--server-url", "http://127.0.0.1:9/mcp", "anything"],
        env=_env(tmp_path), capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2 and "--corpus" in result.stderr and "RAGMCP_CORPORA" in result.stderr


def test_a_refused_token_is_told_from_a_refused_connection(tmp_path: Path) -> None:
    from mcp_server.settings import Settings
    from tests.mcp_server.team.test_http import HttpServer

    folder = tmp_path / "garden"
    folder.mkdir()
    write_doc(folder, "notes.md", "garden notes", "The greenhouse key hangs behind door 7.")
    settings = Settings.from_names(data_dir=tmp_path / "data", corpora=[folder], tokens_file=tmp_path / "tokens.json")
    env = {**_env(tmp_path), **settings.to_env()}
    subprocess.run([sys.executable, "-m", "mcp_server", "token", "add", "gardener", "--corpora", "garden"],
                   env=env, capture_output=True, check=True)
    server = HttpServer(settings, tmp_path / "server.log")
    try:
        for token_args, said in ((["--token", "rmcp_wrong"], "was refused"), ([], "is missing")):
            result = subprocess.run([*RAG_AGENT, "ask", "--server-url", f"{server.url}/mcp", *token_args, "key?"],
                                    env=_env(tmp_path), capture_output=True, text=True, timeout=60)
            assert result.returncode == 1
            assert "answered 401" in result.stderr and said in result.stderr and "RAG_AGENT_TOKEN" in result.stderr
            assert "Could not connect" not in result.stderr
    finally:
        server.stop()
    refused = subprocess.run([*RAG_AGENT, "ask", "--server-url", f"{server.url}/mcp", "--token", "x", "key?"],
                             env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert "Could not connect" in refused.stderr and "answered 401" not in refused.stderr  # (the port may hold 401)
