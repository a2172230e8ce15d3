"""Write small, valid PDFs without a PDF library (for tests and the bundled demo report).

``write_text_pdf`` lays out ASCII text with the standard Helvetica font, one string per
line, and records the title in the document information dictionary, which is all
a PDF reader (PDFium) needs to extract the text and the title back. An empty line is written as a
single space, so that text extraction keeps it and paragraphs stay apart.
"""

from __future__ import annotations

from pathlib import Path

_FONT_SIZE = 12
_LEADING = 14


def write_text_pdf(path: Path, title: str, pages: list[str]) -> None:
    """Write a PDF with one page per item of ``pages`` (ASCII text, lines split on '\\n')."""
    page_ids = [4 + 2 * number for number in range(len(pages))]
    info_id = 4 + 2 * len(pages)
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % kid for kid in page_ids), len(pages)),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        info_id: b"<< /Title " + _pdf_string(title) + b" /Producer (scripts/text_pdf.py) >>",
    }
    for page_id, text in zip(page_ids, pages, strict=True):
        content = _content_stream(text)
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_id + 1)
        )
        objects[page_id + 1] = b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream"
    path.write_bytes(_assemble(objects, info_id))


def _pdf_string(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("ascii") + b")"


def _content_stream(text: str) -> bytes:
    lines = [b"BT", b"/F1 %d Tf" % _FONT_SIZE, b"%d TL" % _LEADING, b"72 720 Td"]
    for number, line in enumerate(text.split("\n")):
        lines.append((b"T* " if number else b"") + _pdf_string(line or " ") + b" Tj")
    lines.append(b"ET")
    return b"\n".join(lines)


def _assemble(objects: dict[int, bytes], info_id: int) -> bytes:
    """Header, numbered objects, cross-reference table with exact byte offsets, trailer."""
    output = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(output)
        output += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref_offset = len(output)
    size = max(objects) + 1
    output += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        output += b"%010d 00000 n \n" % offsets[number]
    output += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\n" % (size, info_id)
    output += b"startxref\n%d\n%%%%EOF\n" % xref_offset
    return bytes(output)
