"""Reading settings stays cheap: every process reads them (the CLI, host servers, spawned keyword
writers and document readers), and none of those should pay for ChromaDB or a model to do so."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("chromadb", "onnxruntime", "openai")


def test_settings_load_neither_chromadb_nor_a_model_runtime() -> None:
    probe = (
        "import sys; from mcp_server.settings import Settings; Settings(); "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == ""
