"""What a new user reads in the first hour (issue 27, item 7): real ``ragmcp`` processes, a fresh HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import write_doc


def _ragmcp(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    return subprocess.run(
        [sys.executable, "-m", "mcp_server", *args], capture_output=True, text=True, check=True,
        env={**inherited, "HOME": str(home), **env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


def test_a_tilde_in_path_settings_means_the_home_folder(tmp_path: Path) -> None:
    write_doc(tmp_path / "notes", "a.md", "A", "Alpha.")
    listed = _ragmcp(tmp_path, "corpus", "list", "--json", RAGMCP_CORPORA="~/notes", RAGMCP_DATA_DIR="~/data",
                     RAGMCP_DATABASE="none")
    [state] = json.loads(listed.stdout)
    assert Path(state["folder"]) == tmp_path / "notes"
    assert not (Path.cwd() / "~").exists()


def test_install_print_says_nothing_was_written(tmp_path: Path) -> None:
    printed = _ragmcp(tmp_path, "install", "claude-desktop", "--print")
    assert "mcpServers" in json.loads(printed.stdout)
    assert "nothing was written" in printed.stderr
    assert "restart Claude Desktop to start the server" not in printed.stderr
    assert not any(tmp_path.rglob("claude_desktop_config.json"))


def test_ingesting_an_unconfigured_folder_says_nothing_about_the_demo_database(tmp_path: Path) -> None:
    write_doc(tmp_path / "legal", "a.md", "A", "Alpha.")
    ingested = _ragmcp(tmp_path, "ingest", str(tmp_path / "legal"), RAGMCP_DATA_DIR=str(tmp_path / "data"))
    assert "legal: 1 added" in ingested.stderr and "database" not in ingested.stderr
