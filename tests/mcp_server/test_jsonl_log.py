"""The JSON-lines log under the audit log: rotation by size keeping recent files, and several processes sharing
one file."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_server.jsonl_log import JsonlLog

WRITER = """
import sys
from pathlib import Path
from mcp_server.jsonl_log import JsonlLog
log = JsonlLog(Path(sys.argv[1]), max_bytes=4_000, backups=50)
for i in range(300):
    log.write({"client": sys.argv[2], "n": i, "padding": "x" * 40})
log.close()
"""


def log_files(path: Path) -> list[Path]:
    """The log at ``path`` and its backups, oldest first."""
    backups = sorted(path.parent.glob(path.name + ".*[0-9]"), key=lambda backup: int(backup.suffix[1:]))
    return [*reversed(backups), path]


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The records of the log at ``path`` and its backups, oldest first."""
    return [json.loads(line) for file in log_files(path) for line in file.read_text(encoding="utf-8").splitlines()]


def test_the_log_rotates_by_size_and_keeps_the_configured_backups(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "audit.jsonl"
    log = JsonlLog(path, max_bytes=10_000, backups=2)
    for i in range(300):
        log.write({"client": "a", "n": i})
    log.close()
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.endswith(".lock")) == [
        "audit.jsonl", "audit.jsonl.1", "audit.jsonl.2",
    ]  # fmt: skip
    assert all(p.stat().st_size <= 10_000 for p in path.parent.glob("audit.jsonl*"))
    newest = [json.loads(line)["n"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert newest[-1] == 299 and newest == list(range(newest[0], 300))
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert set(first) == {"time", "client", "n"} and first["time"].endswith("+00:00")


def test_processes_sharing_the_log_lose_no_line_across_rotations(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), name], env=env) for name in ("one", "two", "three")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    lines = read_lines(path)
    assert len(list(tmp_path.glob("audit.jsonl.*[0-9]"))) > 5  # it did rotate, many times
    for name in ("one", "two", "three"):
        assert sorted(int(str(line["n"])) for line in lines if line["client"] == name) == list(range(300))


def test_a_record_is_one_line_whatever_line_breaks_its_strings_hold(tmp_path: Path) -> None:
    breaks = "".join(chr(code) for code in range(0x110000) if len(f"a{chr(code)}b".splitlines()) > 1)
    assert set("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029") <= set(breaks)  # what Python's splitlines() knows
    record = {"query": f"hide{breaks}me", breaks: [breaks, {"nested": breaks}]}
    log = JsonlLog(tmp_path / "audit.jsonl", max_bytes=100_000, backups=1)
    log.write(record)
    log.close()
    text = (tmp_path / "audit.jsonl").read_text(encoding="utf-8")
    (line,) = text.splitlines()
    assert text == line + "\n" and text.encode("utf-8").count(b"\n") == 1
    written = json.loads(line)
    assert {key: value for key, value in written.items() if key != "time"} == record


def test_a_backup_younger_than_the_minimum_keep_time_is_not_deleted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "audit.jsonl"
    log = JsonlLog(path, max_bytes=10_000, backups=1, min_keep_s=3600)
    written = sum(log.write({"client": "a", "n": i, "padding": "x" * 100}) for i in range(300))
    assert written == path.stat().st_size + path.with_name("audit.jsonl.1").stat().st_size
    assert [line["n"] for line in read_lines(path)] == list(range(300))  # the file grew instead of rotating again
    assert path.stat().st_size > 20_000
    (warning,) = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert "audit.jsonl.1" in warning and "RAGMCP_AUDIT_MIN_KEEP_HOURS (1)" in warning

    grown_from = json_lines(path)[0]["n"]
    two_hours_ago = time.time() - 7200
    os.utime(path.with_name("audit.jsonl.1"), (two_hours_ago, two_hours_ago))
    log.write({"client": "a", "n": 300})  # rotates, the backup being old enough now
    log.close()
    assert [[line["n"] for line in json_lines(file)] for file in log_files(path)] == [list(range(grown_from, 300)), [300]]


def test_a_line_longer_than_the_file_gets_a_file_of_its_own_and_no_empty_backup(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = JsonlLog(path, max_bytes=10_000, backups=3)
    for i in range(3):
        log.write({"n": i, "padding": "x" * 20_000})
    log.close()
    assert [[line["n"] for line in json_lines(file)] for file in log_files(path)] == [[0], [1], [2]]


def json_lines(file: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]
