"""What ``rag-agent`` shows when a run fails (issue 36): an error the user can act on is one line saying
what to do, with ``--debug`` too; a bug is one line that says it is one and how to see more, and
``--debug`` shows its traceback.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

import client_agent.cli
from client_agent.cli import main
from tests.client_agent.test_agent_first_hour import RAG_AGENT, _env


@pytest.mark.parametrize("debug", [[], ["--debug"]], ids=["plain", "debug"])
def test_a_server_that_cannot_be_reached_is_one_line_naming_it(tmp_path: Path, debug: list[str]) -> None:
    result = subprocess.run(
        [*RAG_AGENT, *debug, "ask", "--server-url", "http://127.0.0.1:9/mcp", "anything"],
        env=_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert "http://127.0.0.1:9/mcp" in line and "bug" not in line


@asynccontextmanager
async def _broken_connection(*_: object) -> AsyncIterator[None]:
    raise KeyError("catalog")  # a bug where the agent meets its server
    yield


def test_a_bug_is_one_line_saying_so_and_debug_shows_where(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_agent.cli, "connect", _broken_connection)
    plain = CliRunner().invoke(main, ["ask", "--backend", "offline", "anything"])
    assert plain.exit_code == 1 and "Traceback" not in plain.stderr
    assert "KeyError: 'catalog'" in plain.stderr and "probably a bug" in plain.stderr and "--debug" in plain.stderr

    debugged = CliRunner().invoke(main, ["--debug", "ask", "--backend", "offline", "anything"])
    assert isinstance(debugged.exception, KeyError)  # raised through, so Python prints its traceback
