"""Documents as people keep them: PDF sections, page-exact citations, scans read by OCR, big manuals.

PDFs are generated with reportlab (outlines, headings set larger than the body), decks with
python-pptx, scans with Pillow (English and Chinese text drawn in WenQuanYi Micro Hei).
"""

from __future__ import annotations

from pathlib import Path

from reportlab.pdfgen import canvas

from mcp_server.documents.chunking import ChunkingOptions
from tests.document_fixtures import extract_path, scan, write_pptx, write_scanned_pdf, write_sectioned_pdf

OPTIONS = ChunkingOptions(target_tokens=120, max_tokens=160, overlap_tokens=20)
FILLER = "The procedure is described in the operator guide and reviewed every spring by the safety team."


def _section_of(extracted: object, phrase: str) -> tuple[str, object]:
    """The section and page of the one chunk holding ``phrase``."""
    document = extracted.document  # type: ignore[attr-defined]
    holding = [c for c in extracted.chunks if phrase in document.text[c.char_start : c.char_end]]  # type: ignore[attr-defined]
    assert len(holding) == 1, [document.text[c.char_start : c.char_end] for c in holding]
    return holding[0].section, (holding[0].location.page, holding[0].location.page_end)


def test_pdf_outline_entries_become_sections_at_their_lines(tmp_path: Path) -> None:
    pages = [
        [("Installation", f"Unpack the unit. {FILLER} {FILLER} {FILLER}"),
         ("Wiring", f"Connect the red lead to terminal 4. {FILLER} {FILLER}")],
        [("Maintenance", f"Replace the filter every 90 days. {FILLER}")],
        [("Disposal", f"Return the battery to the dealer. {FILLER}")],
    ]
    path = write_sectioned_pdf(tmp_path / "manual.pdf", pages, outline=True)

    extracted = extract_path(path, OPTIONS, 100)

    assert _section_of(extracted, "terminal 4") == ("Wiring", (1, None))
    assert _section_of(extracted, "every 90 days") == ("Maintenance", (2, None))
    assert _section_of(extracted, "Return the battery") == ("Disposal", (3, None))
    assert extracted.document.title == "Installation"  # no /Title: the first heading


def test_pdf_without_outline_takes_headings_from_larger_type(tmp_path: Path) -> None:
    pages = [
        [("Overview", f"The X5 cleans two rooms per charge. {FILLER} {FILLER}")],
        [("Charging", f"A full charge takes 3 hours. {FILLER} {FILLER}")],
        [("Error codes", f"Code E7 means the brush is blocked. {FILLER} {FILLER}")],
    ]
    path = write_sectioned_pdf(tmp_path / "x5.pdf", pages, outline=False)

    extracted = extract_path(path, OPTIONS, 100)

    assert _section_of(extracted, "3 hours") == ("Charging", (2, None))
    assert _section_of(extracted, "brush is blocked") == ("Error codes", (3, None))


def test_a_fact_on_page_2_of_a_short_pdf_is_cited_on_page_2_under_its_heading(tmp_path: Path) -> None:
    pages = [[("Intro", "Welcome.")], [("Pricing", "The daily rate is 450 NOK.")], [("Next steps", "Call us.")]]
    path = write_sectioned_pdf(tmp_path / "short.pdf", pages, outline=False)

    extracted = extract_path(path, OPTIONS, 100)

    assert _section_of(extracted, "450 NOK") == ("Pricing", (2, None))


def test_a_fact_on_slide_2_of_a_deck_is_cited_on_slide_2_under_its_title(tmp_path: Path) -> None:
    path = write_pptx(
        tmp_path / "deck.pptx",
        [("Intro", "Who we are", ""), ("Pricing", "The daily rate is 450 NOK", "Mention the discount"),
         ("Next steps", "Sign by Friday", "")],
    )  # fmt: skip

    extracted = extract_path(path, OPTIONS, 100)

    assert _section_of(extracted, "450 NOK") == ("Pricing", (2, None))
    assert _section_of(extracted, "Mention the discount") == ("Pricing", (2, None))  # notes stay with their slide


def test_running_headers_footers_and_page_numbers_are_left_out_and_hyphenation_joined(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    pdf = canvas.Canvas(str(path))
    for number in range(1, 5):
        pdf.setFont("Helvetica", 9)
        pdf.drawString(72, 810, "Wonderlab Annual Report 2025 - Confidential")
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 700, f"Section {number} discusses the maintenance sched-")
        pdf.drawString(72, 686, f"ule of plant {number} in detail.")
        pdf.setFont("Helvetica", 9)
        pdf.drawString(290, 30, f"Page {number} of 4")
        pdf.showPage()
    pdf.save()

    text = extract_path(path, OPTIONS, 100).document.text

    assert "Confidential" not in text and "Page 2 of 4" not in text
    assert "maintenance schedule of plant 3" in " ".join(text.split())


def test_an_image_only_pdf_page_is_read_by_ocr_and_cited_on_its_page(tmp_path: Path) -> None:
    english = scan(["Invoice 4471", "The deductible is 2500 NOK per claim."])
    chinese = scan(["租赁合同", "月租金为一万二千元，押金三个月。"])
    path = write_scanned_pdf(tmp_path / "contract.pdf", ["Cover page of the signed contract bundle.", english, chinese])

    extracted = extract_path(path, OPTIONS, 100)

    document = extracted.document
    assert document.extra["ocr_pages"] == "2,3"
    assert _section_of(extracted, "2500 NOK per claim")[1] == (2, None)
    assert _section_of(extracted, "月租金为一万二千元")[1] == (3, None)


def test_a_picture_is_read_by_ocr(tmp_path: Path) -> None:
    path = tmp_path / "whiteboard.png"
    scan(["Ship the X5 firmware on 14 March", "会议记录：周五发布"]).save(path)

    extracted = extract_path(path, OPTIONS, 100)

    text = extracted.document.text
    assert "Ship the X5 firmware on 14 March" in text and "周五发布" in text
    assert extracted.chunks[0].location.page == 1 and extracted.document.extra["ocr_pages"] == "1"


def test_a_2000_page_pdf_is_indexed_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "reference.pdf"
    pdf = canvas.Canvas(str(path))
    for number in range(1, 2001):
        pdf.setFont("Helvetica", 10)
        for line in range(8):
            pdf.drawString(72, 760 - 14 * line, f"Register {number}.{line} holds the calibration value {number * 7 + line}.")
        pdf.showPage()
    pdf.save()

    extracted = extract_path(path, ChunkingOptions(), 100_000)

    assert {c.location.page for c in extracted.chunks} == set(range(1, 2001))
    assert _section_of(extracted, "Register 1234.5 holds")[1] == (1234, None)
