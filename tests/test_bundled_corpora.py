"""The README's promises on the bundled demo corpora, checked against a freshly built index."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server.ingest import ingest
from mcp_server.retrieval import Retriever
from mcp_server.settings import Settings, bundled_corpus_dirs


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Retriever]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("bundled"))
    assert settings.corpora == bundled_corpus_dirs() and settings.corpora
    ingest(settings)
    retriever = Retriever.open(settings)
    yield retriever
    retriever.close()


def test_readme_question_finds_the_leave_request_rule_first(bundled: Retriever) -> None:
    hit = bundled.search("how far ahead must I request annual leave")[0]
    assert hit.citation.id.startswith("handbook:hr/leave-policy#")
    assert "5 working days" in hit.text
    document = bundled.get_document(hit.citation.id.split("#")[0])
    assert document.text[hit.citation.char_start : hit.citation.char_end] == hit.text


def test_chinese_question_finds_the_chinese_policy(bundled: Retriever) -> None:
    hit = bundled.search("报销需要在费用发生后多少天内提交")[0]
    assert hit.citation.doc_id == "zh/expense-policy" and "30天内" in hit.text


@pytest.mark.parametrize("code", ["ERR_VPN_AUTH_4012", "E1042"])
def test_keyword_mode_finds_exact_error_codes(bundled: Retriever, code: str) -> None:
    hit = bundled.search(code, mode="keyword")[0]
    assert hit.citation.doc_id == "it/vpn-troubleshooting" and code in hit.text


def test_every_bundled_corpus_has_a_routing_description(bundled: Retriever) -> None:
    for corpus in bundled.corpora():
        assert corpus.documents > 0 and corpus.chunks >= corpus.documents
        assert "when" in corpus.description.lower() or "use" in corpus.description.lower()


@pytest.mark.slow
def test_wheel_carries_the_corpora_and_the_tokenizer(tmp_path: Path) -> None:
    """A non-editable install (what a desktop host runs) must find the demo knowledge and the model."""
    repo = Path(__file__).parent.parent
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(repo)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("agentic_rag_mcp-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "mcp_server/corpora/handbook/corpus.toml" in names
    assert "mcp_server/corpora/database/schema.json" in names and "mcp_server/corpora/database/orders.csv" in names
    assert "mcp_server/embedding/assets/minilm-tokenizer.json" in names
    assert "mcp_server/embedding/assets/NOTICE" in names
    assert {"mcp_server/py.typed", "client_agent/py.typed"} <= names
