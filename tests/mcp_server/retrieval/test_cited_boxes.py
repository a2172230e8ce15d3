"""Citations a reader can follow on a PDF: the lines the page shows, and boxes on the page, through the index.

The manual is drawn with reportlab at known places: on each page a running header (left out of
the text, but a line the page shows), paragraphs of three lines with a gap between them (a
blank line in the text, but none on the page) and a page-number footer. The body starts below the
top tenth of the page, where a line that recurs on every page would be taken for a running header.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from reportlab.pdfbase.pdfmetrics import getFont, stringWidth
from reportlab.pdfgen import canvas

from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from tests.helpers import make_settings

pytestmark = pytest.mark.slow  # ingests: a reading process and the embedding model
HEIGHT = 792.0
WORDS = ["pump", "valve", "filter", "hose", "seal", "quokka", "gasket", "clamp", "motor", "inlet", "outlet", "spring"]


def _body(page: int, line: int) -> str:
    """Body line ``line`` (from 1) of ``page``: each names its place and one word of WORDS, unique to it on its page."""
    return f"Page {page} body line {line} keeps the {WORDS[line - 1]} dry and ready for the yearly check."


def _baseline(line: int) -> float:
    """The baseline of body line ``line``: 14 pt apart, 20 pt more between paragraphs of three."""
    return 690 - 14 * (line - 1) - 20 * ((line - 1) // 3)


@pytest.fixture(scope="module")
def manual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Retriever]:
    root = tmp_path_factory.mktemp("boxes")
    corpus = root / "manuals"
    corpus.mkdir()
    (corpus / "corpus.toml").write_text('name = "manuals"\ndescription = "Pump manuals."\n', encoding="utf-8")
    pdf = canvas.Canvas(str(corpus / "pump.pdf"), pagesize=(612, HEIGHT))
    for page in (1, 2, 3):
        pdf.setFont("Helvetica", 9)
        pdf.drawString(72, 770, "ACME P-100 pump manual")
        pdf.drawString(300, 30, str(page))
        pdf.setFont("Helvetica", 11)
        for line in range(1, 13):
            pdf.drawString(72, _baseline(line), _body(page, line))
        pdf.showPage()
    pdf.save()
    settings = make_settings(root / "data", corpus)
    ingest(settings)
    retriever = Retriever.open(settings)
    yield retriever
    retriever.close()


def test_a_quote_is_on_the_line_the_page_shows(manual: Retriever) -> None:
    """Body line 9 of page 2 is the page's 10th line: the running header is line 1, the gaps are no lines.

    (Before, it was reported as line 11: the blank lines between paragraphs counted, the header did not.)
    """
    quote = "2 body line 9 keeps the motor dry"  # from mid-line: after 'Page '

    located = manual.documents.get_document("manuals:pump", quote=quote).quote

    assert located is not None
    assert located.exact and (located.page, located.line_start, located.line_end, located.lines) == (2, 10, 10, "page")
    (box,) = located.boxes or []
    line = _body(2, 9)
    x0 = 72 + stringWidth(line[: line.index(quote)], "Helvetica", 11)
    assert box.page == 2 and abs(box.x0 - x0) <= 0.2
    assert abs(box.x1 - x0 - stringWidth(quote, "Helvetica", 11)) <= 0.2
    assert box.y0 < HEIGHT - _baseline(9) < box.y1  # the baseline, counted from the top, is inside it


def test_a_quote_across_a_page_break_has_boxes_on_both_pages(manual: Retriever) -> None:
    quote = "for the yearly check.\n\nPage 2 body line 1 keeps"

    located = manual.documents.get_document("manuals:pump", quote=quote).quote

    assert located is not None and located.exact and (located.page, located.page_end) == (1, 2)
    first, second = located.boxes or []
    line = _body(1, 12)
    assert (first.page, first.x0) == (1, round(72 + stringWidth(line[: line.index("for the")], "Helvetica", 11), 1))
    assert (second.page, second.x0) == (2, 72.0)
    assert second.y0 < HEIGHT - _baseline(1) < second.y1
    assert located.end_citation is not None and {box.page for box in located.end_citation.boxes or []} == {2}


def test_search_hits_over_a_pdf_cite_their_lines_and_boxes(manual: Retriever) -> None:
    (hit,) = manual.searcher.search('"keeps the quokka dry"', mode="keyword", top_k=1)

    citation = hit.citation
    assert citation.page is not None and citation.line_start is not None and citation.line_end is not None
    boxes = citation.boxes or []
    assert len(boxes) == citation.line_end - citation.line_start + 1  # one box per line of the chunk
    assert {box.page for box in boxes} == {citation.page}
    assert all(box.x0 == 72.0 for box in boxes)  # every body line starts at the margin
    tops = [box.y0 for box in boxes]
    assert tops == sorted(tops) and len(set(tops)) == len(tops)
    quokka_line = 6 + 1  # body line 6, after the header
    top = HEIGHT - _baseline(6) - getFont("Helvetica").face.ascent * 11 / 1000  # the font's ascent above the baseline
    assert citation.line_start <= quokka_line <= citation.line_end
    assert any(abs(box.y0 - top) <= 0.5 for box in boxes)
