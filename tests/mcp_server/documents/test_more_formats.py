"""OpenDocument, EPUB and e-mail files, generated with odfpy, zipfile and the email package, read and indexed;
and their hostile variants (a million repeated rows, an entity bomb, a zip bomb) refused or read safely."""

from __future__ import annotations

import zipfile
from email.message import EmailMessage
from pathlib import Path

import pytest
from odf.opendocument import OpenDocumentPresentation, OpenDocumentSpreadsheet, OpenDocumentText
from odf.draw import Frame, Page, TextBox
from odf.namespaces import PRESENTATIONNS
from odf.style import MasterPage, PageLayout
from odf.table import Table, TableCell, TableRow
from odf.text import H, List, ListItem, P

from mcp_server.documents.chunking import ChunkingOptions
from mcp_server.errors import IngestError
from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from tests.document_fixtures import extract_path

OPTIONS = ChunkingOptions(target_tokens=120, max_tokens=160, overlap_tokens=20)


def write_odt(path: Path) -> Path:
    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="Fleet handbook"))
    document.text.addElement(P(text="Every van is inspected on Mondays."))
    document.text.addElement(H(outlinelevel=2, text="Fuel"))
    items = List()
    for text in ("Use diesel only", "Keep the receipt"):
        item = ListItem()
        item.addElement(P(text=text))
        items.addElement(item)
    document.text.addElement(items)
    table = Table(name="Fees")
    for cells in (("Item", "Fee (NOK)"), ("Lost key", "300")):
        row = TableRow()
        for value in cells:
            cell = TableCell()
            cell.addElement(P(text=value))
            row.addElement(cell)
        table.addElement(row)
    document.text.addElement(table)
    document.save(str(path))
    return path


def write_ods(path: Path, rows: list[tuple[str, ...]], repeated_empty_rows: int = 0) -> Path:
    document = OpenDocumentSpreadsheet()
    table = Table(name="Costs")
    for cells in rows:
        row = TableRow()
        for value in cells:
            cell = TableCell(valuetype="string")
            cell.addElement(P(text=value))
            row.addElement(cell)
        table.addElement(row)
    if repeated_empty_rows:
        table.addElement(TableRow(numberrowsrepeated=repeated_empty_rows))
        row = TableRow()
        cell = TableCell(valuetype="string")
        cell.addElement(P(text="after the gap"))
        row.addElement(cell)
        table.addElement(row)
    document.spreadsheet.addElement(table)
    document.save(str(path))
    return path


def write_odp(path: Path) -> Path:
    document = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="master", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    for title, body in (("Intro", "Who we are"), ("Pricing", "The daily rate is 450 NOK")):
        page = Page(masterpagename=master)
        for cls, text in (("title", title), ("outline", body)):
            frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
            frame.setAttrNS(PRESENTATIONNS, "class", cls)
            box = TextBox()
            box.addElement(P(text=text))
            frame.addElement(box)
            page.addElement(frame)
        document.presentation.addElement(page)
    document.save(str(path))
    return path


def write_epub(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("mimetype", "application/epub+zip")
        book.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" '
                      'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile '
                      'full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>')
        book.writestr("OEBPS/content.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                      'version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Tide Tables'
                      '</dc:title><dc:date>2024-05-01</dc:date></metadata><manifest><item id="c2" href="two.xhtml" '
                      'media-type="application/xhtml+xml"/><item id="c1" href="one.xhtml" media-type="application/xhtml+xml"/>'
                      '</manifest><spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>')
        book.writestr("OEBPS/one.xhtml", "<html><body><h1>High water</h1><p>High water at Bergen is at 06:12.</p></body></html>")
        book.writestr("OEBPS/two.xhtml", "<html><body><h1>Low water</h1><p>Low water follows six hours later.</p></body></html>")
    return path


def write_eml(path: Path) -> Path:
    message = EmailMessage()
    message["Subject"] = "Insurance deductible"
    message["From"] = "Kari <kari@example.com>"
    message["To"] = "team@example.com"
    message["Date"] = "Tue, 04 Nov 2025 09:30:00 +0100"
    message.set_content("Hi all,\n\nThe insurance deductible is 2,500 NOK per claim.\n\nKari")
    message.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="policy.pdf")
    path.write_bytes(bytes(message))
    return path


def test_odt_headings_lists_and_tables(tmp_path: Path) -> None:
    extracted = extract_path(write_odt(tmp_path / "fleet.odt"), OPTIONS, 100)

    text = extracted.document.text
    assert text.startswith("# Fleet handbook\n\nEvery van is inspected on Mondays.\n\n## Fuel\n\n- Use diesel only")
    assert "Item: Lost key | Fee (NOK): 300" in text
    assert {c.section for c in extracted.chunks} == {"Fleet handbook > Fuel"}  # small sections merged into the last


def test_ods_rows_carry_headers_and_repeated_empty_rows_are_not_expanded(tmp_path: Path) -> None:
    path = write_ods(tmp_path / "costs.ods", [("Item", "Cost"), ("Laptop", "1200")], repeated_empty_rows=1_048_000)

    extracted = extract_path(path, OPTIONS, 100)

    assert "Item: Laptop | Cost: 1200" in extracted.document.text
    assert "after the gap" in extracted.document.text
    assert extracted.chunks[-1].location.line_end == 1_048_003  # the row number counts the gap


def test_odp_one_slide_one_page(tmp_path: Path) -> None:
    extracted = extract_path(write_odp(tmp_path / "deck.odp"), OPTIONS, 100)

    holding = [c for c in extracted.chunks if "450 NOK" in extracted.document.text[c.char_start : c.char_end]]
    assert [(c.location.page, c.location.page_end, c.section) for c in holding] == [(2, None, "Pricing")]


def test_epub_chapters_in_spine_order(tmp_path: Path) -> None:
    document = extract_path(write_epub(tmp_path / "tides.epub"), OPTIONS, 100).document

    assert document.title == "Tide Tables" and str(document.date) == "2024-05-01"
    assert document.text.index("High water at Bergen") < document.text.index("Low water follows")


def test_eml_subject_body_and_attachment_names(tmp_path: Path) -> None:
    document = extract_path(write_eml(tmp_path / "deductible.eml"), OPTIONS, 100).document

    assert document.title == "Insurance deductible" and str(document.date) == "2025-11-04"
    assert "The insurance deductible is 2,500 NOK per claim." in document.text
    assert document.text.endswith("Attachments: policy.pdf") and document.extra["from"] == "Kari <kari@example.com>"


def _rewritten(source: Path, target: Path, member: str, data: bytes) -> Path:
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for item in original.infolist():
            out.writestr(item, data if item.filename == member else original.read(item))
    return target


def test_an_entity_bomb_and_a_zip_bomb_in_opendocument_are_refused(tmp_path: Path) -> None:
    source = write_odt(tmp_path / "base.odt")
    laughs = '<!DOCTYPE l [<!ENTITY a "lol">' + "".join(
        f'<!ENTITY {chr(98 + n)} "{("&" + chr(97 + n) + ";") * 10}">' for n in range(9)
    ) + "]>"
    entity = _rewritten(source, tmp_path / "laughs.odt", "content.xml",
                        f'<?xml version="1.0"?>{laughs}<office:document-content xmlns:office="urn:oasis:names:tc:'
                        f'opendocument:xmlns:office:1.0">&j;</office:document-content>'.encode())  # fmt: skip
    bomb = _rewritten(source, tmp_path / "bomb.odt", "content.xml", b" " * 300_000_000)

    with pytest.raises(IngestError, match="laughs.odt is not a readable OpenDocument text"):
        extract_path(entity, OPTIONS, 100)
    with pytest.raises(IngestError, match="bomb.odt is a zip bomb"):
        extract_path(bomb, OPTIONS, 100)


@pytest.mark.slow
def test_opendocument_epub_and_email_are_indexed_and_found(tmp_path: Path) -> None:
    corpus = tmp_path / "mixed"
    corpus.mkdir()
    write_odt(corpus / "fleet.odt")
    write_ods(corpus / "costs.ods", [("Item", "Cost"), ("Laptop", "1200")])
    write_odp(corpus / "deck.odp")
    write_epub(corpus / "tides.epub")
    write_eml(corpus / "deductible.eml")
    (corpus / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0 legacy")
    settings = Settings(data_dir=tmp_path / "data", corpora=[corpus])

    report = ingest(settings)

    assert sorted(report.corpora[0].added) == ["costs", "deck", "deductible", "fleet", "tides"]
    assert [(s.source, s.reason) for s in report.corpora[0].skipped] == [
        ("old.doc", "a legacy binary Word file; open it and save it as .docx to index it")
    ]
    retriever = Retriever.open(settings)
    try:
        for query, doc_id in (("inspected on Mondays", "fleet"), ("Laptop", "costs"), ("daily rate", "deck"),
                              ("Bergen", "tides"), ("deductible per claim", "deductible")):  # fmt: skip
            assert retriever.searcher.search(query, mode="keyword", top_k=1)[0].citation.doc_id == doc_id, query
    finally:
        retriever.close()
