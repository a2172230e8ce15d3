"""``ragmcp ingest --rebuild`` in every form keeps every indexed corpus: only ``ragmcp corpus remove``
drops one (issue 27, item 1). Real ``ragmcp`` processes, a fresh HOME and data dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import write_doc


def _ragmcp(home: Path, env: dict[str, str], *args: str) -> str:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", *args], capture_output=True, text=True, check=True,
        env={**inherited, "HOME": str(home), **env, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    return result.stdout


def _corpus(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "corpus.toml").write_text(f'name = "{name}"\ndescription = "Notes about {name}."\n')
    write_doc(folder, "one.md", f"{name} one", f"The {name} guide says the code is 4711.")
    return folder


@pytest.mark.parametrize("rebuild_args", [("--rebuild",), ("legal", "--rebuild"), ("handbook", "--rebuild")])
def test_rebuild_keeps_configured_and_indexed_corpora(tmp_path: Path, rebuild_args: tuple[str, ...]) -> None:
    handbook = _corpus(tmp_path / "handbook", "handbook")
    legal = _corpus(tmp_path / "legal", "legal")
    env = {"RAGMCP_DATA_DIR": str(tmp_path / "data"), "RAGMCP_CORPORA": str(handbook), "RAGMCP_DATABASE": "none"}
    _ragmcp(tmp_path, env, "ingest")
    _ragmcp(tmp_path, env, "ingest", str(legal))  # indexed, not configured
    args = tuple(str(legal) if a == "legal" else a for a in rebuild_args)
    _ragmcp(tmp_path, env, "ingest", *args)
    states = {s["name"]: s for s in json.loads(_ragmcp(tmp_path, env, "corpus", "list", "--json"))}
    assert states["handbook"]["indexed"] and states["handbook"]["documents"] == 1
    assert states["legal"]["indexed"] and states["legal"]["documents"] == 1
