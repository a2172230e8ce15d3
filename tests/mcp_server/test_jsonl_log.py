"""The JSON-lines log under the audit log: rotation by size, and several processes sharing one file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def read_lines(path: Path) -> list[dict[str, object]]:
    files = [path, *sorted(path.parent.glob(path.name + ".*[0-9]"))]
    return [json.loads(line) for file in files for line in file.read_text(encoding="utf-8").splitlines()]


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
