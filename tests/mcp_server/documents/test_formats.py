"""The loaders of Word, PowerPoint, Excel, CSV and plain-text formats, on files the real libraries write,
and where each chunk lies in its source (page, slide, sheet, lines)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx
import pytest

from mcp_server.documents.chunking import ChunkingOptions
from tests.document_fixtures import extract_path
from mcp_server.documents.loaders import load_path
from mcp_server.documents.sniff import check_has_words, decode_text
from mcp_server.errors import IngestError
from tests.document_fixtures import write_docx, write_pdf, write_pptx, write_xlsx

SMALL = ChunkingOptions(target_tokens=60, max_tokens=80, overlap_tokens=10)


def _sentences(topic: str, count: int) -> str:
    return " ".join(f"Sentence {n} about {topic} adds a detail." for n in range(count))


def test_word_headings_become_sections_and_properties_metadata(tmp_path: Path) -> None:
    path = write_docx(tmp_path / "guide.docx", "Leave guide", [
        ("Title", "Leave guide"),
        ("Heading 1", "Annual leave"),
        ("", "You get 25 days. " + _sentences("leave", 12)),
        ("List Bullet", "Carry over at most 5 days"),
        ("Heading 2", "Part time"),
        ("", "Pro rata. " + _sentences("part time", 12)),
    ])  # fmt: skip
    document = docx.Document(str(path))
    table = document.add_table(rows=2, cols=2)
    for row, cells in zip(table.rows, [("Grade", "Days"), ("Senior", "30")], strict=True):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    document.core_properties.keywords = "leave, hr"
    document.save(str(path))

    extracted = extract_path(path, SMALL, 100)

    loaded = extracted.document
    assert loaded.title == "Leave guide" and loaded.tags == ("leave", "hr") and loaded.page_kind is None
    assert loaded.text.startswith("# Leave guide\n\n## Annual leave\n\nYou get 25 days.")
    assert "\n\n- Carry over at most 5 days\n\n### Part time\n\nPro rata." in loaded.text
    assert loaded.text.endswith("\n\nGrade: Senior | Days: 30")  # a row carries its column names
    sections = {chunk.section for chunk in extracted.chunks}
    assert sections == {"Leave guide > Annual leave", "Leave guide > Annual leave > Part time"}


def test_slides_are_sections_numbered_as_pages_with_their_notes(tmp_path: Path) -> None:
    path = write_pptx(tmp_path / "deck.pptx", [
        ("Roadmap", "Launch the wombat app. " + _sentences("the roadmap", 10), "Mention the budget."),
        ("", "A slide without a title. " + _sentences("the gap", 10), ""),
        ("Risks", "Chips may come late.", ""),
    ])  # fmt: skip

    extracted = extract_path(path, SMALL, 100)

    assert extracted.document.page_kind == "slide" and extracted.document.title == "Roadmap"
    assert "Speaker notes: Mention the budget." in extracted.document.text
    located = [(c.section, c.location.page, c.location.page_end) for c in extracted.chunks]
    assert located[0] == ("Roadmap", 1, None)
    assert ("Slide 2", 2, None) in located
    assert located[-1] == ("Risks", 3, None)  # a small last slide stays on its own page


def test_sheet_rows_carry_their_header_and_chunks_never_cut_a_row(tmp_path: Path) -> None:
    rows = [("Item", "Cost", "Note")] + [(f"Item {n}", n * 1.5, "long note " * (n % 4)) for n in range(60)]
    path = write_xlsx(tmp_path / "book.xlsx", {"Costs": rows, "Empty": [], "Tiny": [("A",), ("x",)]})

    extracted = extract_path(path, SMALL, 1000)

    text = extracted.document.text
    assert extracted.document.page_kind == "sheet" and extracted.document.title == "Book"
    costs = [c for c in extracted.chunks if c.location.page == "Costs"]
    assert len(costs) > 3
    seen: list[str] = []
    for chunk in costs:
        lines = text[chunk.char_start : chunk.char_end].split("\n")
        records = [line for line in lines if not line.startswith("# ")]
        assert all(line.startswith("Item: Item ") and " | Cost: " in line for line in records), lines
        first_row = int(records[0].split(" | ")[0].removeprefix("Item: Item ")) + 2
        assert chunk.location.line_start in (first_row, 1)  # the first chunk starts with the heading: the header row
        assert chunk.location.line_end == first_row + len(records) - 1
        seen.extend(records)
    assert seen == [line for line in text.split("\n") if line.startswith("Item: ")]  # every row once, in order
    assert "Item: Item 2 | Cost: 3 | Note: long note long note" in text and "Item: Item 4 | Cost: 6\n" in text
    assert [(c.section, c.location.page) for c in extracted.chunks if c.location.page != "Costs"] == [("Tiny", "Tiny")]


def _with_cached_values(path: Path, replacements: dict[bytes, bytes]) -> None:
    """Rewrite the first sheet's XML as Excel saves it: formulas with the values they computed."""
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in members:
            if info.filename == "xl/worksheets/sheet1.xml":
                for old, new in replacements.items():
                    assert old in data
                    data = data.replace(old, new)
            archive.writestr(info, data)


def test_a_formula_saved_without_its_value_reads_as_not_computed(tmp_path: Path) -> None:
    rows = [("Item", "Amount", "Size"), ("Pump", 30, '=IF(B2>50,"big","")'), ("Valve", 12), ("Total", "=SUM(B2:B3)")]
    path = write_xlsx(tmp_path / "book.xlsx", {"Costs": rows})  # openpyxl writes no values for formulas

    text = extract_path(path, SMALL, 100).document.text

    assert "Item: Total | Amount: =SUM(B2:B3), not computed" in text.splitlines()
    assert 'Item: Pump | Amount: 30 | Size: =IF(B2>50,"big",""), not computed' in text.splitlines()
    with pytest.raises(IngestError, match="has more than 8 cells"):  # read twice, within the one cell limit
        extract_path(path, SMALL, 100, max_sheet_cells=8)
    _with_cached_values(path, {  # as Excel saves them: a number, and the empty text the IF gave
        b'<c r="B4"><f>SUM(B2:B3)</f><v></v></c>': b'<c r="B4"><f>SUM(B2:B3)</f><v>42</v></c>',
        b'<c r="C2"><f>': b'<c r="C2" t="str"><f>',
    })  # fmt: skip
    text = extract_path(path, SMALL, 100).document.text
    assert "Item: Total | Amount: 42" in text.splitlines() and "Item: Pump | Amount: 30" in text.splitlines()
    assert "not computed" not in text


def test_csv_rows_are_cited_by_their_lines_even_across_quoted_newlines(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text('name;city\nAnn;Berlin\n"Bob\nJunior";Paris\n\nCid;Rome\n', encoding="utf-8")

    extracted = extract_path(path, ChunkingOptions(), 10)

    assert extracted.document.text == "name: Ann | city: Berlin\nname: Bob Junior | city: Paris\nname: Cid | city: Rome"
    [chunk] = extracted.chunks
    assert (chunk.location.line_start, chunk.location.line_end, chunk.location.page) == (2, 6, None)


def test_markdown_lines_are_lines_of_the_file(tmp_path: Path) -> None:
    body = "\n\n".join(f"## Part {n}\n\n{_sentences(f'part {n}', 8)}" for n in range(6))
    path = tmp_path / "doc.md"
    path.write_text(f"---\ntitle: Doc\n---\n\n{body}\n", encoding="utf-8")
    file_lines = path.read_text(encoding="utf-8").split("\n")

    extracted = extract_path(path, SMALL, 100)

    text = extracted.document.text
    for chunk in extracted.chunks:
        first, last = chunk.location.line_start, chunk.location.line_end
        assert first is not None and last is not None
        chunk_lines = text[chunk.char_start : chunk.char_end].split("\n")
        assert chunk_lines[0] in file_lines[first - 1] and chunk_lines[-1] in file_lines[last - 1]


def test_pdf_chunks_know_their_page_and_do_not_overlap_across_pages(tmp_path: Path) -> None:
    pages = [_sentences("page one", 20), "", "A short note.", _sentences("page four", 20)]
    path = write_pdf(tmp_path / "r.pdf", "R", pages)

    extracted = extract_path(path, SMALL, 100)

    located = [(c.location.page, c.location.page_end) for c in extracted.chunks]
    assert {page for page, _ in located} == {1, 3, 4}  # the blank second page has no text
    assert (3, None) in located  # the short third page is a chunk of its own: a citation names one page
    assert all(page_end is None for _, page_end in located)
    for chunk in extracted.chunks:
        words = extracted.document.text[chunk.char_start : chunk.char_end]
        assert ("page one" in words) + ("page four" in words) + ("short note" in words) == 1


@pytest.mark.parametrize(
    ("name", "content", "sections"),
    [
        ("a.rst", "Guide\n=====\n\nIntro.\n\nInstall\n-------\n\nSteps.\n\n=====\nOther\n=====\n\nMore.\n",
         ["Guide", "Guide > Install", "Guide > Install > Other"]),  # over- and underlined: a third style
        ("a.adoc", "= Guide\n\nIntro.\n\n== Install\n\nSteps.\n\n=== Linux\n\napt.\n",
         ["Guide", "Guide > Install", "Guide > Install > Linux"]),
        ("a.json", '{\n  "server": {\n    "port": 1\n  },\n  "client": "x"\n}\n', ["", "server", "client"]),
        ("a.py", "import os\n\n\n@cache\ndef load():\n    # not a heading\n    return 1\n\n\nclass Store:\n    pass\n",
         ["", "def load", "class Store"]),
        ("a.go", "package main\n\nfunc (s *S) Run() {\n}\n\ntype S struct{}\n", ["", "func (s *S) Run", "type S"]),
        ("a.yaml", "# comment, not a heading\nkey: value\n", [""]),
    ],
)  # fmt: skip
def test_plain_text_formats_use_their_own_headings(tmp_path: Path, name: str, content: str, sections: list[str]) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    tiny = ChunkingOptions(target_tokens=2, max_tokens=40, overlap_tokens=1)  # small sections are not merged

    extracted = extract_path(path, tiny, 100)

    assert [c.section for c in extracted.chunks] == sections
    assert extracted.chunks[0].location.line_start == 1
    titles = {"a.rst": "Guide", "a.adoc": "Guide", "a.yaml": "A"}  # code and data: the file name
    assert extracted.document.title == titles.get(name, name)


def test_python_definition_starts_at_its_decorator(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n\n@cache\n@other\ndef load():\n    return 1\n", encoding="utf-8")

    document = load_path(path)

    assert document.headings is not None and document.text[document.headings[0].start :].startswith("@cache\n@other\ndef")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00" * 100, r"holds binary data \(NUL bytes\)"),
        (b"text\x00more", r"holds binary data \(NUL bytes\)"),
        ("caf\xe9".encode("latin-1"), r"is not valid UTF-8 \(byte 3\)"),
        (b"ab\x01\x02\x03\x04 cd" * 10, "looks binary"),
    ],
)
def test_binary_content_is_refused_whatever_the_suffix(tmp_path: Path, data: bytes, message: str) -> None:
    with pytest.raises(IngestError, match=message):
        decode_text(data, tmp_path / "x.md")


def test_text_with_a_little_control_noise_is_text(tmp_path: Path) -> None:
    assert decode_text(b"\xef\xbb\xbfform\x0cfeed and a bell\x07 " + b"word " * 30, tmp_path / "x.md").startswith("form")


@pytest.mark.parametrize("text", ["", "   \n\t", "12 34 -- 56 // 7.8", "a 1 b 2"])
def test_text_without_words_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(IngestError, match="to index; add text to it"):
        check_has_words(text, tmp_path / "x.txt")


@pytest.mark.parametrize("text", ["ok", "年假", "x1 v2 ab"])
def test_one_word_is_enough(tmp_path: Path, text: str) -> None:
    check_has_words(text, tmp_path / "x.txt")


@pytest.mark.parametrize(("name", "kind"), [("a.docx", "Word"), ("a.pptx", "PowerPoint"), ("a.xlsx", "Excel")])
def test_damaged_office_files_are_refused_with_what_to_do(tmp_path: Path, name: str, kind: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"PK\x03\x04 not really a zip")

    with pytest.raises(IngestError, match=rf"{name} is not a readable {kind} .* save it again"):
        load_path(path)
