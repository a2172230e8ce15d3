"""Scans, pictures and PDFs through ``ragmcp ingest`` and search: found by their text, cited on their page,
read in the reading process without a word of library output reaching the terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from tests.document_fixtures import scan, write_scanned_pdf
from tests.helpers import subprocess_env

OUR_LINE_PREFIXES = ("indexing documents", "writing the keyword index", "scans:", "published", "no SQL database")


@pytest.mark.slow
def test_scans_and_pictures_are_indexed_by_ocr_and_cited_on_their_page(tmp_path: Path) -> None:
    corpus = tmp_path / "scans"
    corpus.mkdir()
    write_scanned_pdf(
        corpus / "contract.pdf",
        ["Cover page of the signed contract bundle.", scan(["Invoice 4471", "The deductible is 2500 NOK per claim."]),
         scan(["租赁合同", "月租金为一万二千元，押金三个月。"])],
    )  # fmt: skip
    scan(["Ship the X5 firmware on 14 March"]).save(corpus / "whiteboard.jpg")
    (corpus / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    settings = Settings(data_dir=tmp_path / "data", corpora=[corpus])

    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", "ingest"], env=subprocess_env(settings), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if not line.startswith(OUR_LINE_PREFIXES)] == []
    assert "scans: skipped broken.png: is not a readable picture" in result.stderr
    retriever = Retriever.open(settings)
    try:
        deductible = retriever.searcher.search("deductible per claim", mode="keyword", top_k=1)[0].citation
        assert (deductible.doc_id, deductible.page) == ("contract", 2)
        rent = retriever.searcher.search("月租金", mode="keyword", top_k=1)[0].citation
        assert (rent.doc_id, rent.page) == ("contract", 3)
        firmware = retriever.searcher.search("X5 firmware", mode="hybrid", top_k=1)[0].citation
        assert (firmware.doc_id, firmware.page) == ("whiteboard", 1)
        assert retriever.documents.get_document("scans:contract").metadata["ocr_pages"] == "2,3"
    finally:
        retriever.close()
