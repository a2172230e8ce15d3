"""``rag-agent ask`` (offline back-end) answers from a file whose name has spaces, citing it by its escaped id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from client_agent.cli import main
from tests.helpers import subprocess_env
from tests.mcp_server.surface.test_file_name_ids import odd_names_index

pytestmark = pytest.mark.slow


def test_the_offline_agent_cites_a_spaced_file_name(tmp_path: Path) -> None:
    settings = odd_names_index(tmp_path)
    env = {**subprocess_env(settings), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    result = CliRunner().invoke(
        main, ["ask", "--json", "When does the fire drill start?"], env=env, catch_exceptions=False
    )
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    assert "10:15" in answer["answer"] and answer["state"] == "answered", answer
    assert "[mydocs:Fire%20drill%20on%20Thursday#0]" in answer["answer"]
    assert [c["doc_id"] for c in answer["citations"]] == ["Fire drill on Thursday"]
