"""Files that inflate, recurse, lie or move: each is skipped with its reason, the rest is indexed, nothing leaks.

The bombs are generated here: YAML front matter whose aliases expand to gigabytes, a self-referencing
alias, JSON nested past Python's recursion, a .docx whose document.xml inflates 1,000 times (one giant
text node), a .xlsx that declares the whole sheet; and files swapped for symlinks between the scan of
the folder and the read of the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from mcp_server.indexing import ingest as ingest_module
from mcp_server.indexing.ingest import ingest
from mcp_server.progress import SilentProgress
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from scripts.text_pdf import write_text_pdf
from tests.document_fixtures import scan, write_docx
from tests.helpers import subprocess_env, write_doc

GOOD_FACT = "The harbour office opens at 07:30 on weekdays."


def _alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return "---\ntitle: Bomb\n" + "\n".join(lines) + f"\nsummary: *a{levels - 1}\n---\nSome text about lol.\n"


def _zip_bomb_docx(path: Path, tmp_path: Path) -> None:
    """A real .docx whose document.xml holds one text node of 200 MB (it deflates about 1,000 times)."""
    write_docx(tmp_path / "base.docx", "Base", [("", "placeholder")])
    with zipfile.ZipFile(tmp_path / "base.docx") as base, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bomb:
        for item in base.infolist():
            if item.filename == "word/document.xml":
                xml = base.read(item).decode()
                head, tail = xml.split("placeholder")
                with bomb.open(item.filename, "w", force_zip64=True) as member:
                    member.write(head.encode())
                    block = b"A" * 1_048_576
                    for _ in range(200):
                        member.write(block)
                    member.write(tail.encode())
            else:
                bomb.writestr(item, base.read(item))


def _whole_sheet_xlsx(path: Path, tmp_path: Path) -> None:
    """A tiny workbook whose sheet claims every cell Excel allows (A1:XFD1048576)."""
    workbook = openpyxl.Workbook()
    workbook.active["A1"] = "Item"
    workbook.active["A2"] = "only cell"
    workbook.save(tmp_path / "small.xlsx")
    with zipfile.ZipFile(tmp_path / "small.xlsx") as small, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for item in small.infolist():
            data = small.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                text = data.decode()
                start = text.index("<dimension")
                end = text.index("/>", start) + 2
                data = (text[:start] + '<dimension ref="A1:XFD1048576"/>' + text[end:]).encode()
            out.writestr(item, data)


MEASURED_INGEST = (
    "import resource, subprocess, sys; "
    "code = subprocess.run([sys.executable, '-m', 'mcp_server', 'ingest']).returncode; "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024); sys.exit(code)"
)
"""``ragmcp ingest`` run by a parent that prints the peak RSS (MB) of the largest process below it."""


@pytest.mark.slow
def test_a_folder_of_bombs_beside_a_good_document_is_ingested_with_each_bomb_skipped(tmp_path: Path) -> None:
    corpus = tmp_path / "shared"
    write_doc(corpus, "good.md", "Harbour office", GOOD_FACT)
    (corpus / "aliases.md").write_text(_alias_bomb(), encoding="utf-8")
    (corpus / "self-alias.md").write_text("---\ntags: &t [*t]\n---\nA note about tags.\n", encoding="utf-8")
    (corpus / "deep.json").write_text('{"a": ' * 3_000 + '"deep value"' + "}" * 3_000, encoding="utf-8")
    _zip_bomb_docx(corpus / "giant.docx", tmp_path)
    _whole_sheet_xlsx(corpus / "sheet.xlsx", tmp_path)
    settings = Settings(data_dir=tmp_path / "data", corpora=[corpus])

    result = subprocess.run(
        [sys.executable, "-c", MEASURED_INGEST], env=subprocess_env(settings), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    skipped = {line.split("skipped ", 1)[1].split(":", 1)[0] for line in result.stderr.splitlines() if " skipped " in line}
    assert {"aliases.md", "self-alias.md", "giant.docx"} <= skipped, result.stderr
    assert "aliases (*name) are not allowed" in result.stderr and "zip bomb" in result.stderr
    assert "Traceback" not in result.stderr
    # The ceiling stated in the README: a bomb folder is read in well under 1.5 GB.
    peak_mb = int(result.stdout.split()[-1])
    assert peak_mb < 1_500, f"ingestion of the bomb folder peaked at {peak_mb} MB"
    retriever = Retriever.open(settings)
    try:
        hits = retriever.searcher.search("harbour office weekdays", mode="keyword", top_k=3)
        assert hits and hits[0].citation.doc_id == "good"
        # The deep JSON and the whole-sheet workbook are ordinary text and one row: read, not refused.
        assert retriever.searcher.search("deep value", mode="keyword", top_k=3)[0].citation.doc_id == "deep"
        assert retriever.searcher.search("only cell", mode="keyword", top_k=3)[0].citation.doc_id == "sheet"
    finally:
        retriever.close()


def _swap_after_scan(monkeypatch: pytest.MonkeyPatch, swaps: dict[Path, Path]) -> None:
    """Replace each file by a symlink to its target right after the folder was scanned."""
    real_scan = ingest_module.scan_corpus

    def scan_then_swap(*args: Any, **kwargs: Any) -> Any:
        scan = real_scan(*args, **kwargs)
        for path, target in swaps.items():
            path.unlink()
            path.symlink_to(target)
        swaps.clear()
        return scan

    monkeypatch.setattr(ingest_module, "scan_corpus", scan_then_swap)


def test_a_file_swapped_for_a_symlink_between_scan_and_read_never_yields_outside_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other_team = tmp_path / "team-a"
    secret = write_doc(other_team, "salaries.md", "Salaries", "The chief executive earns 9,999,999 crowns.")
    corpus = tmp_path / "team-b"
    write_doc(corpus, "notes.md", "Notes", "Team B notes about the quay.")
    swapped = write_doc(corpus, "swapped.md", "Swapped", "A harmless page about ferries.")
    device = write_doc(corpus, "device.md", "Device", "A harmless page about buses.")
    settings = Settings(data_dir=tmp_path / "data", corpora=[corpus])

    _swap_after_scan(monkeypatch, {swapped: secret, device: Path("/dev/zero")})
    report = ingest(settings)

    reasons = {skip.source: skip.reason for c in report.corpora for skip in c.skipped}
    assert "now leads outside the corpus folder" in reasons["swapped.md"]
    assert "not a regular file" in reasons["device.md"] or "outside the corpus folder" in reasons["device.md"]
    retriever = Retriever.open(settings)
    try:
        assert retriever.searcher.search("chief executive crowns", mode="keyword", top_k=5) == []
        assert retriever.searcher.search("quay", mode="keyword", top_k=5)[0].citation.doc_id == "notes"
    finally:
        retriever.close()

    # The harmless file comes back with the very size and modification time: it is read again, not trusted.
    swapped.unlink()
    write_doc(corpus, "swapped.md", "Swapped", "A harmless page about ferries.")
    os.utime(swapped, ns=(secret.stat().st_atime_ns, secret.stat().st_mtime_ns))
    ingest(settings)
    retriever = Retriever.open(settings)
    try:
        assert retriever.searcher.search("ferries", mode="keyword", top_k=5)[0].citation.doc_id == "swapped"
        assert retriever.searcher.search("chief executive crowns", mode="keyword", top_k=5) == []
    finally:
        retriever.close()


def test_a_refusal_under_a_limit_is_read_again_when_the_limit_is_raised(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    write_doc(corpus, "long.md", "Long", "\n\n".join(f"Paragraph {n} about the tide tables." * 30 for n in range(20)))
    data = tmp_path / "data"

    first = ingest(Settings.from_names(data_dir=data, corpora=[corpus], max_document_chunks=2))
    assert [skip.source for skip in first.corpora[0].skipped] == ["long.md"]
    assert "raise RAGMCP_MAX_DOCUMENT_CHUNKS" in first.corpora[0].skipped[0].reason

    raised = Settings(data_dir=data, corpora=[corpus])
    kept = ingest(raised)  # the limit the index was built with stays until a rebuild asks otherwise
    assert [skip.source for skip in kept.corpora[0].skipped] == ["long.md"]
    assert any("RAGMCP_MAX_DOCUMENT_CHUNKS=2" in note for note in kept.notes)

    second = ingest(raised, rebuild=True)

    assert second.corpora[0].skipped == [] and second.corpora[0].added == ["long"]


def test_file_names_with_control_or_direction_characters_are_skipped(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    write_doc(corpus, "plain.md", "Plain", "Plain words about lighthouses.")
    write_doc(corpus, "evil\nname.md", "Evil", "Forged lines.")
    write_doc(corpus, "invoice\u202egnp.md", "Bidi", "Reversed name.")

    report = ingest(Settings(data_dir=tmp_path / "data", corpora=[corpus]))

    corpus_report = report.corpora[0]
    assert corpus_report.added == ["plain"]
    assert sorted(skip.source for skip in corpus_report.skipped) == ["evil\\nname.md", "invoice\\u202egnp.md"]
    assert all("\n" not in line for line in report.lines())


@pytest.mark.slow
def test_a_file_over_the_reading_limits_is_skipped_and_the_next_one_read(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    scan(["A slow picture of a whiteboard"]).save(corpus / "a-slow.png")
    write_docx(corpus / "b-next.docx", "Next", [("", "The pier is painted every April.")])
    data = tmp_path / "data"

    slow = ingest(Settings.from_names(data_dir=data, corpora=[corpus], page_timeout_s=0.05))
    hungry = ingest(Settings.from_names(data_dir=data, corpora=[corpus], reader_memory_mb=1_024), rebuild=True)

    for report in (slow, hungry):
        assert report.corpora[0].added == ["b-next"]
    assert "took longer than 0.05 s on one page; raise RAGMCP_PAGE_TIMEOUT_S" in slow.corpora[0].skipped[0].reason
    assert "needs more memory to read than RAGMCP_READER_MEMORY_MB (1024 MB)" in hungry.corpora[0].skipped[0].reason


def test_progress_moves_by_page_inside_a_long_pdf(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    write_text_pdf(corpus / "manual.pdf", "Manual", [f"Page {n} of the pump manual." for n in range(1, 41)])
    details: list[str] = []

    class Recorded(SilentProgress):
        def detail(self, text: str) -> None:
            details.append(text)

    ingest(Settings(data_dir=tmp_path / "data", corpora=[corpus]), progress=Recorded())

    pages = [text for text in details if text.startswith("reading manual.pdf: page ")]  # not the embedding's
    assert pages[0] == "reading manual.pdf: page 1 of 40" and pages[-1] == "reading manual.pdf: page 40 of 40"
    assert len(pages) == 40
