"""Ingesting a folder of real-world files: Office formats, a paged PDF, and files that must be skipped.

One run over a folder holding good documents of every new format and bad files of every
kind finishes, indexes every good document (searchable, with its page, slide or sheet),
names each bad file once with its reason, and leaves the three stores consistent.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client
from PIL import Image

from mcp_server.cli import main
from mcp_server.embedding.choice import CorpusModels
from mcp_server.embedding.loading import load_embedder
from mcp_server.settings.embedding import ENGLISH_MODEL
from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.stores.docstore import DocumentStore
from mcp_server.stores.keyword import WhooshIndex
from mcp_server.stores.vector import ChromaStore
from mcp_server.surface.rendering import render_document, render_search
from mcp_server.surface.server import build_server
from mcp_server.surface.tools import RetrievalTools
from tests.document_fixtures import write_docx, write_pdf, write_pptx, write_xlsx
from tests.helpers import write_doc
from tests.mcp_server.surface.mcp_contract import TOOL_NAMES, call_checked, list_checked_tools

MAX_FILE_MB = 0.25  # the Office files are 10-40 kB; the oversized file is 300 kB


def _sentences(topic: str, count: int) -> str:
    return " ".join(f"Sentence {n} about the {topic} explains one more detail of the matter." for n in range(count))


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def mixed_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "corpus.toml").write_text('name = "mixed"\ndescription = "Files of every kind."\n', encoding="utf-8")
    write_doc(folder, "notes.md", "Notes", "# Notes\n\nThe heron committee meets on Fridays.")
    write_docx(folder / "handbook.docx", "Staff handbook", [
        ("Title", "Staff handbook"),
        ("Heading 1", "Annual leave"),
        ("", "Every employee receives a wombat allowance of 27 days of annual leave. " + _sentences("leave", 4)),
        ("Heading 1", "Expenses"),
        ("", "Quokka receipts must be filed within 30 days. " + _sentences("expenses", 4)),
    ])  # fmt: skip
    write_pptx(folder / "deck.pptx", [
        ("Roadmap", "The roadmap for next year. " + _sentences("roadmap", 4), ""),
        ("Risks", "The platypus supplier may deliver late. " + _sentences("risks", 4), "Ask finance about it."),
        ("Budget", "The budget grows. " + _sentences("budget", 4), ""),
    ])  # fmt: skip
    write_xlsx(folder / "budget.xlsx", {
        "Summary": [("Year", "Total"), (2024, 1000), (2025, 1200)],
        "Costs": [("Item", "Cost", "Owner")] + [(f"Item {n}", n * 10, "Ann") for n in range(40)]
        + [("Narwhal licences", 999, "Bo")],
    })  # fmt: skip
    (folder / "contacts.csv").write_text(
        "name,city,role\n" + "".join(f"Person {n},Berlin,clerk\n" for n in range(30)) + "Ocelot Smith,Oslo,chief\n",
        encoding="utf-8",
    )
    write_pdf(folder / "report.pdf", "Annual report", [
        "Page one is the introduction.\n" + _sentences("introduction", 12),
        "Page two: the pelican harbour project has a budget of 7 million euros.\n" + _sentences("harbour", 12),
        "Page three is the outlook.\n" + _sentences("outlook", 12),
    ])  # fmt: skip
    (folder / "latin1.md").write_bytes("Caf\xe9 menu with cr\xeape".encode("latin-1"))
    (folder / "picture.md").write_bytes(_png())
    (folder / "zeros.txt").write_bytes(b"\x00" * 4096)
    (folder / "huge.txt").write_text("lorem ipsum " * 25_000, encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nNot part of the corpus.", encoding="utf-8")
    (folder / "leak.md").symlink_to(outside / "secret.md")
    (folder / "loop.md").symlink_to(folder / "loop.md")
    (folder / ".cache").mkdir()
    (folder / ".cache" / "tmp.md").write_text("# Hidden\n", encoding="utf-8")
    return folder


BAD_FILES = {
    "huge.txt": "over the size limit of 0.25 MB; raise RAGMCP_MAX_FILE_MB",
    "latin1.md": "is not valid UTF-8 (byte 3); save it as UTF-8",
    "leak.md": "outside the corpus folder",
    "loop.md": "symlink loop",
    "picture.md": "holds binary data (NUL bytes), not text",
    "zeros.txt": "holds binary data (NUL bytes), not text",
}
GOOD_DOCUMENTS = ["budget", "contacts", "deck", "handbook", "notes", "report"]


@pytest.fixture
def settings(tmp_path: Path, mixed_folder: Path) -> Settings:
    return Settings.from_names(data_dir=tmp_path / "data", corpora=[mixed_folder], max_file_mb=MAX_FILE_MB)


def _cli(settings: Settings, *args: str) -> tuple[int, str, str]:
    env = {"RAGMCP_DATA_DIR": str(settings.data_dir), "RAGMCP_CORPORA": str(settings.corpora[0]),
           "RAGMCP_MAX_FILE_MB": str(MAX_FILE_MB)}  # fmt: skip
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def _store_counts(settings: Settings) -> tuple[int, int, int]:
    """Chunks in the docstore, the keyword index and the vector store of the current generation."""
    generation = IndexLayout(settings.index_dir).current()
    assert generation is not None
    docstore = DocumentStore(generation / "docstore.sqlite", read_only=True)
    keywords = WhooshIndex(generation / "whoosh")
    vectors = ChromaStore.embedded(generation / "chroma", CorpusModels.one(load_embedder(ENGLISH_MODEL)))
    try:
        return sum(c for _, c in docstore.counts().values()), keywords.count(), vectors.count()
    finally:
        docstore.close()
        keywords.close()
        vectors.close()


def test_run_finishes_indexes_the_good_files_and_names_each_bad_one_once(settings: Settings) -> None:
    code, _, err = _cli(settings, "ingest")

    assert code == 0, err
    for source, reason in BAD_FILES.items():
        lines = [line for line in err.splitlines() if f"skipped {source}:" in line]
        assert len(lines) == 1 and reason in lines[0], (source, err)
    assert "mixed: 1 hidden files or folders not indexed (names starting with '.'): .cache" in err
    assert f"mixed: {len(GOOD_DOCUMENTS)} added, 0 changed, 0 deleted, 0 unchanged, {len(BAD_FILES)} skipped" in err
    retriever = Retriever.open(settings)
    try:
        assert [c.documents for c in retriever.corpora()] == [len(GOOD_DOCUMENTS)]
        for query, doc_id in [("heron committee", "notes"), ("wombat allowance", "handbook"),
                              ("platypus supplier", "deck"), ("narwhal licences", "budget"),
                              ("ocelot", "contacts"), ("pelican harbour", "report")]:  # fmt: skip
            assert retriever.searcher.search(query, mode="keyword", top_k=1)[0].citation.doc_id == doc_id, query
    finally:
        retriever.close()
    docstore_chunks, keyword_chunks, vector_chunks = _store_counts(settings)
    assert docstore_chunks == keyword_chunks == vector_chunks > len(GOOD_DOCUMENTS)


def test_strict_fails_the_run_but_publishes_and_a_rerun_reports_the_skips_again(settings: Settings) -> None:
    code, _, err = _cli(settings, "ingest", "--strict")

    assert code == 1 and f"{len(BAD_FILES)} files skipped (--strict)" in err
    assert IndexLayout(settings.index_dir).current() is not None
    code, _, err = _cli(settings, "ingest", "--strict")  # nothing changed: the refusals are remembered, not redone
    assert code == 1 and "index is up to date; nothing to do" in err
    assert sum(f"skipped {source}:" in err for source in BAD_FILES) == len(BAD_FILES)
    code, out, err = _cli(settings, "status")
    assert code == 0, err
    assert "last ingest: " in out and f"{len(BAD_FILES)} files skipped:" in out
    assert "mixed: skipped latin1.md: is not valid UTF-8 (byte 3)" in out


def test_files_of_types_not_indexed_are_counted_in_the_summary_and_in_status(mixed_folder: Path) -> None:
    for name in ("server.log", "old/server.log", "budget.xlsx.bak", "LICENSE"):
        (mixed_folder / name).parent.mkdir(exist_ok=True)
        (mixed_folder / name).write_text("not a document\n", encoding="utf-8")
    (mixed_folder / "data").mkdir()
    (mixed_folder / "data" / "index.sqlite").write_bytes(b"\0")  # the data dir inside the folder: not counted
    settings = Settings.from_names(data_dir=mixed_folder / "data", corpora=[mixed_folder], max_file_mb=MAX_FILE_MB)
    line = ("mixed: 4 files of types not indexed: .log ×2, .bak, no suffix (to have a type read as text, list it in "
            "the folder's corpus.toml: [documents] include = [\".log\"])")

    code, _, err = _cli(settings, "ingest")

    assert code == 0, err
    assert line in err.splitlines()
    assert f"mixed: {len(GOOD_DOCUMENTS)} added, 0 changed, 0 deleted, 0 unchanged, {len(BAD_FILES)} skipped" in err
    code, out, _ = _cli(settings, "status")
    assert f"{len(BAD_FILES)} files skipped, 4 of types not indexed:" in out and f"  {line}" in out.splitlines()


def test_a_document_that_turns_bad_leaves_every_store(settings: Settings, mixed_folder: Path) -> None:
    ingest(settings)
    (mixed_folder / "notes.md").write_bytes(b"\xff\xfe broken now")

    report = ingest(settings)

    assert report.corpora[0].deleted == ["notes"] and report.corpora[0].changed == []
    assert [skip.source for skip in report.corpora[0].skipped] == sorted([*BAD_FILES, "notes.md"])
    docstore_chunks, keyword_chunks, vector_chunks = _store_counts(settings)
    assert docstore_chunks == keyword_chunks == vector_chunks
    retriever = Retriever.open(settings)
    try:
        assert retriever.searcher.search("heron committee", mode="keyword") == []
    finally:
        retriever.close()
    (mixed_folder / "notes.md").write_text("# Notes\n\nThe heron committee is back.", encoding="utf-8")
    assert ingest(settings).corpora[0].added == ["notes"]


def test_chunk_cap_skips_a_document_that_would_cost_too_much(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    write_doc(folder, "short.md", "Short", "# Short\n\nA short note.")
    write_doc(folder, "long.md", "Long", "# Long\n\n" + _sentences("length", 200))
    settings = Settings.from_names(data_dir=tmp_path / "data", corpora=[folder], max_document_chunks=3)

    report = ingest(settings)

    assert report.corpora[0].added == ["short"]
    [skip] = report.corpora[0].skipped
    assert skip.source == "long.md"
    assert "chunks, over the cap of 3 per document; split the file or raise RAGMCP_MAX_DOCUMENT_CHUNKS" in skip.reason


def test_hits_carry_their_page_slide_and_sheet(settings: Settings) -> None:
    ingest(settings)
    tools = RetrievalTools.open(settings)
    try:
        pdf = tools.search("pelican harbour budget", mode="keyword", corpus="mixed", top_k=1, filters=None)
        slide = tools.search("platypus supplier", mode="keyword", corpus="mixed", top_k=1, filters=None)
        sheet = tools.search("narwhal licences", mode="keyword", corpus="mixed", top_k=1, filters=None)
        csv_hit = tools.search("ocelot", mode="keyword", corpus="mixed", top_k=1, filters=None)
        report = tools.get_document("mixed:report", corpus=None, chunk=None, window=0)
        deck = tools.get_document("mixed:deck", corpus=None, chunk=None, window=0)
    finally:
        tools.close()
    citation = pdf.hits[0].citation
    assert (citation.doc_id, citation.page, citation.page_kind, citation.page_end) == ("report", 2, "page", None)
    assert pdf.hits[0].text.startswith("Page two: the pelican harbour project")
    assert (slide.hits[0].citation.page, slide.hits[0].citation.page_kind) == (2, "slide")
    assert slide.hits[0].citation.section == "Risks" and "Speaker notes: Ask finance about it." in slide.hits[0].text
    citation = sheet.hits[0].citation
    assert (citation.page, citation.page_kind, citation.line_end) == ("Costs", "sheet", 42)  # the last of 42 rows
    assert "Item: Narwhal licences | Cost: 999 | Owner: Bo" in sheet.hits[0].text
    csv_citation = csv_hit.hits[0].citation
    assert (csv_citation.page, csv_citation.line_end) == (None, 32) and csv_hit.hits[0].text.endswith(
        "name: Ocelot Smith | city: Oslo | role: chief"
    )
    assert [span.page for span in report.chunks] == [1, 2, 3]
    assert [span.page for span in deck.chunks] == [1, 2, 3] and deck.page_kind == "slide"
    assert "Annual report — report.pdf, p. 2" in render_search(pdf)
    assert "— deck.pptx, slide 2" in render_search(slide)
    assert "— budget.xlsx, sheet Costs, rows " in render_search(sheet)
    assert f"[{report.chunks[1].citation_id}] (p. 2, lines 1–2)\nPage two:" in render_document(report)


def test_cli_search_and_doc_print_pages_and_lines(settings: Settings) -> None:
    ingest(settings)

    code, out, err = _cli(settings, "search", "pelican harbour", "--mode", "keyword", "-k", "1")
    assert code == 0, err
    assert "— report.pdf (chars " in out and ", p. 2, lines 1–2)" in out  # lines as the page shows them
    code, out, err = _cli(settings, "doc", "mixed:notes")
    assert code == 0, err
    assert "[mixed:notes#0] chars 0-" in out and ", lines 4–6 Notes" in out


@pytest.mark.anyio
async def test_page_fields_are_in_the_output_schema_and_validate(settings: Settings) -> None:
    ingest(settings)
    tools = RetrievalTools.open(settings)
    try:
        async with Client(build_server(settings, tools)) as client:
            listed = await list_checked_tools(client, TOOL_NAMES - {"sql_query"})  # a user corpus: no database
            citation = listed["keyword_search"].output_schema["$defs"]["Citation"]["properties"]  # type: ignore[index]
            assert {"page", "page_end", "page_kind", "line_start", "line_end"} <= set(citation)
            result = await call_checked(client, listed, "keyword_search", {"query": "narwhal licences", "top_k": 1})
            assert result.structured_content is not None
            assert result.structured_content["hits"][0]["citation"]["page"] == "Costs"
            document = await call_checked(client, listed, "get_document", {"doc_id": "mixed:report"})
            assert [c["page"] for c in document.structured_content["chunks"]] == [1, 2, 3]  # type: ignore[index]
    finally:
        tools.close()
