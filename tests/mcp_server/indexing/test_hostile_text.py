"""Crafted text files - the red team's second round: parsers that were quadratic, text read with no ceiling.

Each crafted file is generated here: a Markdown or AsciiDoc heading line padded with spaces (the heading
patterns backtracked over them), HTML of unclosed attribute quotes (Python's ``html.parser`` rescans
them), an e-mail whose ``Subject`` is thousands of encoded words (the standard library parses them in
quadratic time and memory). Costs are compared with an ordinary file of the same size, in CPU time of
the same process, never against a number of seconds.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_server.documents.limits import ReadingLimits
from mcp_server.documents.loaders import load_path
from mcp_server.errors import IngestError
from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from tests.helpers import subprocess_env, write_doc
from tests.mcp_server.indexing.test_hostile_files import MEASURED_INGEST
from tests.mcp_server.surface.mcp_contract import text_of
from tests.mcp_server.team.test_http import HttpServer

GOOD_FACT = "The harbour office opens at 07:30 on weekdays."
DEPOSIT = "The deposit for the flat is 900 euros, paid before the keys are handed over."
_WORDS = "the pump room is cleaned every Friday by the night shift and the logbook is signed ".split()


def ordinary_text(chars: int) -> str:
    """Prose with a heading every few paragraphs, about ``chars`` long."""
    paragraphs, length, number = [], 0, 0
    while length < chars:
        number += 1
        paragraph = (f"## Part {number}\n\n" if number % 5 == 1 else "") + " ".join(_WORDS * 3) + f" {number}."
        paragraphs.append(paragraph)
        length += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def crafted_markdown(chars: int) -> str:
    return "# a" + " " * chars + "b\n\n" + GOOD_FACT


def crafted_asciidoc(chars: int) -> str:
    return "= a" + " " * chars + "b\n\n" + GOOD_FACT


def crafted_html(chars: int) -> str:
    return f"<p>{GOOD_FACT}</p>" + "<a b='" * (chars // 6)


def ordinary_html(chars: int) -> str:
    return "<html><body>" + "".join(f"<p>{line}</p>" for line in ordinary_text(chars).split("\n\n")) + "</body></html>"


def email(subject: str, body: str) -> str:
    return (
        f"From: lettings@example.com\r\nTo: tenant@example.com\r\nSubject: {subject}\r\n"
        f"Date: Mon, 1 Dec 2025 10:00:00 +0000\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
    )


def crafted_email(chars: int) -> str:
    """A ``Subject`` of encoded words, ``chars`` long (the red team's 664 KB one took 13 GB)."""
    return email(" ".join(["=?utf-8?q?a=C3=A9?="] * (chars // 20)), DEPOSIT)


def ordinary_email(chars: int) -> str:
    return email("Your new flat", DEPOSIT + "\r\n\r\n" + ordinary_text(chars).replace("\n", "\r\n"))


def _cpu_to_load(path: Path, text: str) -> float:
    path.write_text(text, encoding="utf-8")
    started = time.process_time()
    load_path(path)
    return time.process_time() - started


@pytest.mark.parametrize(
    ("suffix", "crafted", "ordinary"),
    [
        (".md", crafted_markdown, ordinary_text),
        (".adoc", crafted_asciidoc, ordinary_text),
        (".html", crafted_html, ordinary_html),
        (".eml", crafted_email, ordinary_email),
    ],
)
def test_a_crafted_text_file_costs_no_more_than_an_ordinary_one_of_its_size(
    tmp_path: Path, suffix: str, crafted: Callable[[int], str], ordinary: Callable[[int], str]
) -> None:
    size = 100_000  # before: 100 s for the Markdown line, 19 s for the HTML, 250 MB for the e-mail
    baseline = min(_cpu_to_load(tmp_path / f"ordinary{suffix}", ordinary(size)) for _ in range(3))
    cost = _cpu_to_load(tmp_path / f"crafted{suffix}", crafted(size))
    assert cost < 5 * baseline + 0.05, f"crafted {suffix}: {cost:.3f} s of CPU, an ordinary file {baseline:.3f} s"


def test_an_email_subject_bomb_is_parsed_in_bounded_memory_and_its_body_kept(tmp_path: Path) -> None:
    path = tmp_path / "bomb.eml"
    path.write_text(crafted_email(100_000), encoding="utf-8")
    tracemalloc.start()
    try:
        document = load_path(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # before: 250 MB for this 100 KB message; now the Subject is parsed from its first 8 KB
    assert peak < 50 * path.stat().st_size, f"parsing a {path.stat().st_size} B message peaked at {peak} B"
    assert DEPOSIT in document.text and document.title.startswith("aéaé")


def test_text_formats_are_read_within_the_file_time_limit_like_every_other_format(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    write_doc(corpus, "good.md", "Harbour office", GOOD_FACT)
    (corpus / "long.md").write_text(ordinary_text(3_000_000), encoding="utf-8")

    report = ingest(Settings.from_names(data_dir=tmp_path / "data", corpora=[corpus], read_timeout_s=0.05))

    assert report.corpora[0].added == ["good"]
    [skipped] = report.corpora[0].skipped
    assert skipped.source == "long.md" and "longer than 0.05 s to read; raise RAGMCP_READ_TIMEOUT_S" in skipped.reason


def _write_crafted_folder(corpus: Path) -> None:
    """The red team's files, at their sizes, beside a good document."""
    write_doc(corpus, "good.md", "Harbour office", GOOD_FACT)
    (corpus / "heading.md").write_text(crafted_markdown(200_000), encoding="utf-8")
    (corpus / "heading.adoc").write_text(crafted_asciidoc(200_000), encoding="utf-8")
    (corpus / "quotes.html").write_text(crafted_html(800_000), encoding="utf-8")
    (corpus / "lettings.eml").write_text(crafted_email(664_000), encoding="utf-8")


@pytest.mark.slow
def test_the_red_teams_text_files_beside_a_good_document_are_ingested_in_bounded_memory(tmp_path: Path) -> None:
    corpus = tmp_path / "shared"
    _write_crafted_folder(corpus)
    settings = Settings(data_dir=tmp_path / "data", corpora=[corpus])

    result = subprocess.run(
        [sys.executable, "-c", MEASURED_INGEST], env=subprocess_env(settings), capture_output=True, text=True,
        timeout=300,  # before: the HTML alone held ingestion for over 300 s, the e-mail took 6 GB in 15 s
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    peak_mb = int(result.stdout.split()[-1])
    assert peak_mb < 1_500, f"ingestion of the crafted folder peaked at {peak_mb} MB"
    retriever = Retriever.open(settings)
    try:
        assert retriever.searcher.search("harbour office weekdays", mode="keyword", top_k=1)[0].citation.doc_id == "good"
        assert retriever.searcher.search("deposit flat keys", mode="keyword", top_k=1)[0].citation.doc_id == "lettings"
    finally:
        retriever.close()


def _peak_rss_mb(pid: int) -> int:
    """The process' peak resident memory (``VmHWM``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM line")


async def _search_seconds(client: Client, query: str) -> tuple[float, str]:
    started = time.perf_counter()
    result = await client.call_tool("keyword_search", {"query": query, "top_k": 3})
    assert not result.is_error, text_of(result)
    return time.perf_counter() - started, text_of(result)


@pytest.mark.slow
@pytest.mark.anyio
async def test_crafted_files_dropped_into_a_watched_folder_leave_searches_answering(
    tmp_path: Path, tiny_corpus: Path
) -> None:
    settings = Settings.from_names(data_dir=tmp_path / "data", corpora=[tiny_corpus], reload_interval_s=0.2)
    server = HttpServer(settings, tmp_path / "stderr.log", "--watch")
    try:
        async with Client(f"{server.url}/mcp") as client:
            assert "tiny:alpha#0" in (await _search_seconds(client, "zebraword"))[1]
            quiet = sorted([(await _search_seconds(client, "zebraword"))[0] for _ in range(20)])[10]
            memory_before = _peak_rss_mb(server.process.pid)

            _write_crafted_folder(tiny_corpus / "dropped")
            slowest = 0.0
            with anyio.fail_after(240):
                while True:
                    seconds, text = await _search_seconds(client, "deposit flat keys")
                    slowest = max(slowest, seconds)
                    if "tiny:dropped/lettings#0" in text:
                        break
                    await anyio.sleep(0.05)
            # before: the 200 KB heading held the server's interpreter, searches waited minutes
            assert slowest < max(1.0, 20 * quiet), f"slowest search {slowest:.2f} s, quiet median {quiet:.3f} s"
            grown = _peak_rss_mb(server.process.pid) - memory_before
            assert grown < 500, f"the watching server grew by {grown} MB reading the crafted files"
    finally:
        assert server.stop() in (0, -signal.SIGTERM), server.log.read_text()


def test_each_frame_of_a_picture_is_size_checked_before_it_is_decoded(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "frames.tif"
    small = Image.new("1", (64, 64), 1)
    huge = Image.new("1", (10_000, 7_000), 1)  # 70 M pixels, a few KB compressed
    small.save(path, save_all=True, append_images=[huge], compression="group4")

    with pytest.raises(IngestError, match=r"frame 2\), over the limit of 60M"):
        load_path(path)


def blank_pdf(path: Path, pages: int) -> Path:
    """A PDF of ``pages`` empty pages (100,000 of them are 10 MB)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    objects.append(f"<< /Type /Pages /Kids [{' '.join(f'{3 + n} 0 R' for n in range(pages))}] /Count {pages} >>".encode())
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>"] * pages
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    table = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{table}\n%%EOF\n".encode()
    path.write_bytes(out)
    return path


def _cpu_to_read(path: Path, limits: ReadingLimits) -> float:
    started = time.process_time()
    load_path(path, limits)
    return time.process_time() - started


@pytest.mark.slow
def test_every_blank_page_ocr_tries_counts_against_the_page_cap(tmp_path: Path) -> None:
    limits = ReadingLimits(ocr_max_pages=1)
    one = _cpu_to_read(blank_pdf(tmp_path / "two.pdf", 2), limits)  # one page tried, and the OCR engine made
    many = _cpu_to_read(blank_pdf(tmp_path / "many.pdf", 600), limits)
    # before: OCR went on until it had found text on a page - here on all 600 (the red team's 100,000)
    assert many < 3 * one, f"600 blank pages took {many:.2f} s of CPU, 2 blank pages {one:.2f} s"


def looping_epub(path: Path, repeats: int) -> Path:
    """An EPUB whose spine names its one chapter ``repeats`` times."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr("mimetype", "application/epub+zip")
        book.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" '
                      'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile '
                      'full-path="book.opf" media-type="application/oebps-package+xml"/></rootfiles></container>')
        spine = '<itemref idref="c"/>' * repeats
        book.writestr("book.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
                      '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Loop</dc:title></metadata>'
                      f'<manifest><item id="c" href="c.xhtml" media-type="application/xhtml+xml"/></manifest>'
                      f"<spine>{spine}</spine></package>")
        book.writestr("c.xhtml", f"<html><body><h1>Tides</h1><p>{GOOD_FACT}</p>{ordinary_html(20_000)}</body></html>")
    return path


def test_a_chapter_the_spine_names_again_and_again_is_read_once(tmp_path: Path) -> None:
    path = looping_epub(tmp_path / "loop.epub", 2_000)
    assert path.stat().st_size < 30_000

    document = load_path(path)

    # before: the chapter was read 2,000 times (40 MB of text from a 20 KB file; the red team's ran for minutes)
    assert document.text.count(GOOD_FACT) == 1
