"""``rag-agent ask`` names the page (or slide, sheet, lines) of each source it cites."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from client_agent.cli import main
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from tests.document_fixtures import write_pdf
from tests.helpers import subprocess_env

pytestmark = pytest.mark.slow


def test_sources_list_the_pdf_page(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "corpus.toml").write_text('name = "reports"\ndescription = "Annual reports."\n', encoding="utf-8")
    filler = " ".join(f"Paragraph {n} of the annual report restates the facts of the year." for n in range(12))
    write_pdf(folder / "annual.pdf", "Annual report 2024", [
        "Introduction.\n" + filler,
        "The pelican harbour project has a budget of 7 million euros.\n" + filler,
    ])  # fmt: skip
    settings = Settings(data_dir=tmp_path / "data", corpora=[folder])
    ingest(settings)
    env = {**subprocess_env(settings), "ANTHROPIC_API_KEY": ""}

    result = CliRunner().invoke(
        main, ["ask", "--backend", "offline", "According to the annual report, what budget does the pelican harbour project have?"], env=env,
        catch_exceptions=False,
    )  # fmt: skip

    assert result.exit_code == 0, result.stderr
    answer, _, sources = result.stdout.partition("\nSources:\n")
    assert "7 million" in answer
    assert "[reports:annual#1] Annual report 2024 — annual.pdf, p. 2" in sources
