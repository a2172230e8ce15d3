"""The index records the settings that shape it, and a host's server and the CLI on one data dir index alike
(issue 27, item 2). Real ``ragmcp`` processes: the CLI, and a server over stdio as a desktop host starts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp_server.settings import INDEX_SETTINGS, Settings
from tests.helpers import wait_for
from tests.mcp_server.surface.test_stdio_lifecycle import serve  # noqa: F401  (the fixture)

LONG_LINE = "The pump manual says the seal must be replaced every 400 hours of running. "


def _ragmcp(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    settings = {"RAGMCP_DATA_DIR": str(home / "data"), "RAGMCP_CORPORA": str(home / "manuals"), "RAGMCP_DATABASE": "none"}
    return subprocess.run(
        [sys.executable, "-m", "mcp_server", *args], capture_output=True, text=True, check=True,
        env={**inherited, "HOME": str(home), **settings, **env, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )  # fmt: skip


def _folder(home: Path) -> Path:
    """A user's folder (no corpus.toml) with a 30 KB manual: over a 0.01 MB file limit, under the default."""
    folder = home / "manuals"
    folder.mkdir()
    (folder / "pump.md").write_text("# Pump\n\n" + LONG_LINE * 400, encoding="utf-8")
    (folder / "valve.md").write_text("# Valve\n\nThe valve opens at 3 bar.\n", encoding="utf-8")
    return folder


def _documents(home: Path) -> int:
    [corpus] = json.loads(_ragmcp(home, "corpus", "list", "--json").stdout)
    return int(corpus["documents"])


def test_an_ingestion_with_other_limits_keeps_what_the_index_holds_and_says_so(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    _ragmcp(tmp_path, "ingest")  # the defaults: both files indexed
    with (folder / "pump.md").open("a", encoding="utf-8") as f:
        f.write("Check the seal after a dry run.\n")

    changed = _ragmcp(tmp_path, "ingest", RAGMCP_MAX_FILE_MB="0.01")

    assert "manuals: 0 added, 1 changed, 0 deleted, 1 unchanged" in changed.stderr
    [note] = [line for line in changed.stderr.splitlines() if "the index was built with" in line]
    assert note.startswith("the index was built with RAGMCP_MAX_FILE_MB=50, this process has RAGMCP_MAX_FILE_MB=0.01")
    assert note.endswith("RAGMCP_MAX_FILE_MB=0.01 ragmcp ingest --rebuild")
    assert _documents(tmp_path) == 2


def test_a_rebuild_records_new_settings_and_later_ingestions_keep_them(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    rebuilt = _ragmcp(tmp_path, "ingest", "--rebuild", RAGMCP_MAX_FILE_MB="0.01", RAGMCP_OCR="off")
    assert "skipped pump.md" in rebuilt.stderr and "the index was built with" not in rebuilt.stderr
    (folder / "pump.md").write_text("# Pump\n\n" + LONG_LINE * 401, encoding="utf-8")

    again = _ragmcp(tmp_path, "ingest")  # the defaults, as a host's entry without those variables

    assert "skipped pump.md" in again.stderr
    assert "this process has RAGMCP_MAX_FILE_MB=50 RAGMCP_OCR=auto" in again.stderr
    assert _documents(tmp_path) == 1
    status = json.loads(_ragmcp(tmp_path, "status", "--json").stdout)
    assert status["index_settings"]["max_file_mb"] == 0.01 and status["index_settings"]["ocr"] == "off"
    assert set(status["index_settings"]) == set(INDEX_SETTINGS)
    assert "indexed with: RAGMCP_MAX_FILE_MB=0.01" in _ragmcp(tmp_path, "status").stdout


def test_a_desktop_hosts_server_indexes_with_the_settings_the_cli_recorded(tmp_path: Path, serve: Any) -> None:
    folder = _folder(tmp_path)
    _ragmcp(tmp_path, "ingest", "--rebuild", RAGMCP_MAX_FILE_MB="0.01")  # the shell: pump.md is too large
    (folder / "valve.md").write_text("# Valve\n\nThe valve opens at 4 bar.\n", encoding="utf-8")

    server = serve(Settings(data_dir=tmp_path / "data", corpora=[folder], database="none"))  # the defaults
    server.peer.initialize()
    assert wait_for(lambda: "now serving index" in server.log.read_text(encoding="utf-8"), 120)
    log = server.stop()

    assert "manuals: 0 added, 1 changed" in log
    assert "this process has RAGMCP_MAX_FILE_MB=50: indexing with the index's settings" in log
    assert "skipped pump.md" in log
    assert _documents(tmp_path) == 1
