"""Loaders: Markdown/text with front matter, HTML, PDF, and their errors."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from reportlab.lib.pdfencrypt import StandardEncryption
from reportlab.pdfgen import canvas

from mcp_server.documents.corpus import SUPPORTED_SUFFIXES
from mcp_server.documents.loaders import LoadedDocument, load_path
from mcp_server.documents.locations import LineMark
from mcp_server.documents.ocr import IMAGE_SUFFIXES
from mcp_server.errors import IngestError
from scripts.text_pdf import write_text_pdf

FIXTURE_CORPUS = Path(__file__).parents[2] / "fixtures" / "corpora" / "acme"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- Markdown and plain text ---------------------------------------------------------


def test_markdown_front_matter_becomes_metadata_and_leaves_the_text(tmp_path: Path) -> None:
    path = write(
        tmp_path / "leave-policy.md",
        "---\n"
        "title: Leave Policy\n"
        "category: hr-policy\n"
        "date: 2024-01-15\n"
        "tags: [leave, hr]\n"
        "source: https://intranet.example/leave\n"
        "owner: People Ops\n"
        "Version: 3\n"
        "reviewers: [Ann, Bo]\n"
        "---\n"
        "\n"
        "# Leave\n"
        "\n"
        "Ten days.\n",
    )

    assert load_path(path) == LoadedDocument(
        text="# Leave\n\nTen days.",
        title="Leave Policy",
        category="hr-policy",
        tags=("leave", "hr"),
        date=datetime.date(2024, 1, 15),
        url="https://intranet.example/leave",
        extra={"owner": "People Ops", "version": "3", "reviewers": "Ann, Bo"},
        lines=(LineMark(0, 12),),  # the text starts on line 12 of the file
    )


def test_fixture_markdown_document() -> None:
    document = load_path(FIXTURE_CORPUS / "policies" / "travel.md")

    assert document.title == "Travel Policy"
    assert document.category == "policy"
    assert document.tags == ("travel", "expenses")
    assert document.date == datetime.date(2024, 1, 15)
    assert document.url == "https://wiki.acme.example/policies/travel"
    assert document.extra == {"reviewed_by": "Finance"}
    assert document.text.startswith("# Travel Policy\n")


def test_chinese_document_keeps_its_text() -> None:
    document = load_path(FIXTURE_CORPUS / "zh" / "年假制度.md")

    assert document.title == "年假制度"
    assert document.tags == ("年假", "leave")
    assert "每年享有5天带薪年假" in document.text


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ("tags: leave, hr , ,leave", ("leave", "hr")),
        ("tags: [leave, 2024, '']", ("leave", "2024")),
        ("tags: single", ("single",)),
        ("tags:", ()),
        ("other: x", ()),
    ],
)
def test_tags_as_list_or_comma_separated_string(tmp_path: Path, tags: str, expected: tuple[str, ...]) -> None:
    path = write(tmp_path / "a.md", f"---\n{tags}\n---\ntext\n")

    assert load_path(path).tags == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-03-01", datetime.date(2024, 3, 1)),
        ("'2024-03-01'", datetime.date(2024, 3, 1)),
        ("2024-03-01T23:30:00+08:00", datetime.date(2024, 3, 1)),
        ("2024-03-01 10:00", datetime.date(2024, 3, 1)),
        ("''", None),
        ("", None),
    ],
)
def test_date_forms(tmp_path: Path, value: str, expected: datetime.date | None) -> None:
    path = write(tmp_path / "a.md", f"---\ndate: {value}\n---\ntext\n")

    assert load_path(path).date == expected


@pytest.mark.parametrize("value", ["2024-02-30", "March 2024", "20240301x", "[2024]", "20240301"])
def test_invalid_date_names_the_file_and_the_value(tmp_path: Path, value: str) -> None:
    path = write(tmp_path / "bad-date.md", f"---\ndate: {value}\n---\ntext\n")

    with pytest.raises(IngestError, match="bad-date.md: date .* is not a valid date") as error:
        load_path(path)
    assert value.strip("[]") in str(error.value)


def test_url_wins_over_source_which_then_stays_in_extra(tmp_path: Path) -> None:
    path = write(tmp_path / "a.md", "---\nsource: HR team\nurl: https://x.example/a\n---\ntext\n")

    document = load_path(path)

    assert document.url == "https://x.example/a"
    assert document.extra == {"source": "HR team"}


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("# Real Title\n\nBody", "Real Title"),
        ("---\ntitle: ''\n---\n# From Heading #\n", "From Heading"),
        ("## Second level\n\n# First level\n", "First level"),
        ("```\n# not a heading\n```\nplain", "Year end bonus"),
        ("no headings", "Year end bonus"),
    ],
)
def test_title_falls_back_to_first_h1_then_file_name(tmp_path: Path, text: str, title: str) -> None:
    assert load_path(write(tmp_path / "year_end-bonus.md", text)).title == title


def test_plain_text_file(tmp_path: Path) -> None:
    document = load_path(FIXTURE_CORPUS / "notes" / "office-hours.txt")

    assert document.title == "Office hours"
    assert (document.category, document.tags, document.date, document.url, document.extra) == (None, (), None, None, {})
    assert document.text.startswith("Acme office hours\n\nThe Berlin office")


def test_text_file_may_have_front_matter_too(tmp_path: Path) -> None:
    path = write(tmp_path / "notes.txt", "---\ncategory: notes\n---\nbody\n")

    assert (load_path(path).category, load_path(path).text) == ("notes", "body")


def test_bom_crlf_and_blank_lines_are_normalised(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"\xef\xbb\xbf---\r\ntitle: T\r\n---\r\n\r\n  indented\r\nline\rnext\r\n\r\n")

    document = load_path(path)

    assert (document.title, document.text) == ("T", "  indented\nline\nnext")


def test_empty_front_matter_and_unclosed_rule(tmp_path: Path) -> None:
    assert load_path(write(tmp_path / "a.md", "---\n---\nbody")).text == "body"
    assert load_path(write(tmp_path / "b.md", "---\nnot closed\n")).text == "---\nnot closed"


def test_empty_file_has_empty_text(tmp_path: Path) -> None:
    document = load_path(write(tmp_path / "empty.md", ""))

    assert (document.text, document.title) == ("", "Empty")


@pytest.mark.parametrize(
    ("front_matter", "message"),
    [("title: [unclosed", "not valid YAML"), ("- a\n- b", "must be 'key: value' lines")],
)
def test_malformed_front_matter_is_refused(tmp_path: Path, front_matter: str, message: str) -> None:
    path = write(tmp_path / "a.md", f"---\n{front_matter}\n---\ntext\n")

    with pytest.raises(IngestError, match=message):
        load_path(path)


def test_undecodable_text_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes("Caf\xe9 menu".encode("latin-1"))

    with pytest.raises(IngestError, match=r"latin1.md is not valid UTF-8 \(byte 3\)"):
        load_path(path)


def test_damaged_file_and_missing_file_are_refused_other_suffixes_read_as_text(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"a.docx is not a readable Word \(.docx\) file"):
        load_path(write(tmp_path / "a.docx", "x"))
    assert load_path(write(tmp_path / "notes.org", "* plain")).text == "* plain"
    with pytest.raises(IngestError, match="cannot be read"):
        load_path(tmp_path / "missing.md")


def test_every_discovered_text_suffix_reads_its_text(tmp_path: Path) -> None:
    """Binary formats, e-mail and tables have tests of their own (test_formats.py, test_more_formats.py)."""
    binary = {".docx", ".pptx", ".xlsx", ".odt", ".ods", ".odp", ".epub", ".eml", ".csv", ".tsv"}
    for suffix in SUPPORTED_SUFFIXES - binary - IMAGE_SUFFIXES:
        path = tmp_path / f"doc{suffix}"
        if suffix == ".pdf":
            write_text_pdf(path, "Doc", ["hello"])
        else:
            write(path, "hello")
        assert load_path(path).text == "hello", suffix


# --- HTML ----------------------------------------------------------------------------


def test_html_becomes_markdown_like_text_with_metadata() -> None:
    document = load_path(FIXTURE_CORPUS / "products" / "widget-faq.html")

    assert document.text == (
        "# Widget FAQ\n"
        "\n"
        "## Battery\n"
        "\n"
        "The Widget Pro battery lasts 18 hours on a full charge and charges to 80% in 40 minutes.\n"
        "\n"
        "## Warranty & repairs\n"
        "\n"
        "Every Widget comes with a 2-year warranty.\n"
        "Repairs outside warranty cost a flat 49 EUR.\n"
        "\n"
        "- Send it in with the prepaid label.\n"
        "- Expect it back within 10 days."
    )
    assert document.title == "Widget FAQ"
    assert document.category == "product"
    assert document.tags == ("widget", "faq")
    assert document.date == datetime.date(2024, 4, 10)
    assert document.url == "https://www.acme.example/widget/faq"
    assert document.extra == {}


def test_html_tables_pre_and_title_fallback(tmp_path: Path) -> None:
    path = write(
        tmp_path / "page.htm",
        "<body><style>p {}</style><h1>Main &amp; only</h1>"
        "<table><tr><th>Plan</th><th>Price</th></tr><tr><td>Basic</td><td>9 &euro;</td></tr></table>"
        "<pre>line one\n  line two</pre><div>tail\n   text</div>"
        "<meta name='Source' content='https://x.example/page'></body>",
    )

    document = load_path(path)

    assert document.title == "Main & only"
    assert document.url == "https://x.example/page"
    assert document.text == "# Main & only\n\nPlan | Price\nBasic | 9 €\n\nline one\nline two\n\ntail text"


def test_html_invalid_meta_date_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "page.html", '<meta name="date" content="soon"><p>x</p>')

    with pytest.raises(IngestError, match="page.html: date 'soon'"):
        load_path(path)


# --- PDF -----------------------------------------------------------------------------


def test_pdf_text_and_title(tmp_path: Path) -> None:
    path = tmp_path / "manual.pdf"
    write_text_pdf(path, "Widget Manual (v2)", ["Chapter one.\nCharge it for 2 hours.", "Chapter two."])

    document = load_path(path)

    assert document.title == "Widget Manual (v2)"
    assert document.text == "Chapter one.\nCharge it for 2 hours.\n\nChapter two."


def test_pdf_without_title_uses_file_name(tmp_path: Path) -> None:
    path = tmp_path / "release-notes.pdf"
    write_text_pdf(path, "", ["Notes"])

    assert load_path(path).title == "Release notes"


def test_unreadable_pdf_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\nthis is not really a pdf")

    with pytest.raises(IngestError, match="broken.pdf is not a readable PDF"):
        load_path(path)


def test_encrypted_pdf_is_refused(tmp_path: Path) -> None:
    encrypted = tmp_path / "secret.pdf"
    page = canvas.Canvas(str(encrypted), encrypt=StandardEncryption("password", canPrint=0))
    page.drawString(72, 720, "classified")
    page.save()

    with pytest.raises(IngestError, match="secret.pdf is an encrypted PDF"):
        load_path(encrypted)
