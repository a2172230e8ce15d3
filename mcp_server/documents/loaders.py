"""Loaders: one document file in, its text, metadata and structure out.

Which loader reads a file is chosen by its suffix (:data:`LOADERS`; a corpus may add or
remove suffixes in its ``corpus.toml``, see :mod:`mcp_server.documents.corpus`):

- **Markdown and plain text** (``.md``, ``.markdown``, ``.txt``) may open with YAML front
  matter between ``---`` lines: ``title``, ``category``, ``date`` (``YYYY-MM-DD``),
  ``url`` or ``source`` (the original URL; when both are given, ``url`` wins and
  ``source`` stays in ``extra``), ``tags`` (a list or a comma-separated string); other
  keys land in ``extra`` as strings. The front matter is not part of the text; chunks
  know their lines in the file.
- **HTML** (``.html``, ``.htm``) becomes Markdown-like text: ``h1``-``h6`` become ``#``
  heading lines (so the chunker sees the sections), paragraphs and other blocks are
  separated by blank lines, list items (``- ``), table rows and ``<br>`` end lines,
  table cells are joined with `` | ``, and script, style, nav, noscript and template
  content is dropped. ``<title>`` gives the title; ``<meta name="category|tags|date|
  source|url" content="...">`` give the metadata fields of the same names.
- **PDF** (PDFium): :mod:`mcp_server.documents.pdf` - text in reading order, sections from
  the outline or the font sizes, running headers and footers left out, every page its own
  span; pages without a text layer read by OCR.
- **Pictures** (``.png``, ``.jpg``, ``.tif``, ...): read by OCR, :mod:`mcp_server.documents.ocr`.
- **Word, PowerPoint, Excel** (``.docx``, ``.pptx``, ``.xlsx``): :mod:`mcp_server.documents.office`.
- **OpenDocument** (``.odt``, ``.ods``, ``.odp``): :mod:`mcp_server.documents.opendocument`.
- **EPUB** (``.epub``): :mod:`mcp_server.documents.epub`; **e-mail** (``.eml``): :mod:`mcp_server.documents.email_message`.
- **CSV** (``.csv``, ``.tsv``): :mod:`mcp_server.documents.tables`.
- **Other text** (``.rst``, ``.adoc``, ``.json``, source code, ...): :mod:`mcp_server.documents.textformats`.

Loaders read a :class:`~mcp_server.documents.limits.FileInput` - bytes read once, within
the limits of what a file may become - and never open a file themselves.
Text files must be UTF-8 (a byte-order mark is tolerated) and not binary
(:mod:`mcp_server.documents.sniff`); newlines become ``\\n``. Without a title, a document
is titled by its first level-1 heading, else by its file name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import yaml
import yaml.composer

from mcp_server.documents import email_message, epub, office, opendocument, tables, textformats
from mcp_server.documents.html_text import html_to_text
from mcp_server.documents.limits import MAX_FRONT_MATTER_BYTES, MAX_NESTING, FileInput, ReadingLimits
from mcp_server.documents.loaded import (
    LoadedDocument,
    Structure,
    make_document,
    read_text,
    trimmed_body,
)
from mcp_server.documents.locations import LineMark
from mcp_server.documents.ocr import IMAGE_SUFFIXES, PageReader, load_image
from mcp_server.documents.pdf import load_pdf
from mcp_server.documents.safe_open import read_inside
from mcp_server.errors import IngestError

_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\n(?:(.*?)\n)?---[ \t]*(?:\n|\Z)", re.DOTALL)


def load_document(file: FileInput, read_page: PageReader | None = None) -> LoadedDocument:
    """Read one document file's bytes, choosing the loader by its suffix (plain text for other suffixes).

    ``read_page`` is told of each page of a paged document (PDF, pictures) as it is read.

    :raises IngestError: the file cannot be decoded or parsed, is binary, would become more
        than its limits allow, or its metadata is invalid (e.g. a date that is not ``YYYY-MM-DD``).
    """
    suffix = file.path.suffix.lower()
    if suffix in PAGED_LOADERS:
        return PAGED_LOADERS[suffix](file, read_page)
    return LOADERS.get(suffix, textformats.load_plain_text)(file)


def load_path(path: Path, limits: ReadingLimits = ReadingLimits()) -> LoadedDocument:
    """:func:`load_document` of the file at ``path``, read through the bounded reader (its folder as root)."""
    root = path.resolve().parent
    data = read_inside(path, root, limits.max_file_bytes)
    return load_document(FileInput(data, path, limits, mtime_ns=path.stat().st_mtime_ns))


def _load_markdown(file: FileInput) -> LoadedDocument:
    raw = read_text(file)
    front_matter = _FRONT_MATTER_RE.match(raw)
    text, first_line = trimmed_body(raw, front_matter.end() if front_matter else 0)
    fields = _parse_front_matter(front_matter.group(1) or "", file.path) if front_matter else {}
    return make_document(file.path, text, Structure(lines=[LineMark(0, first_line)], fields=fields))


def _load_html(file: FileInput) -> LoadedDocument:
    page = html_to_text(read_text(file))
    fields: dict[str, object] = dict(page.meta)
    if page.title:
        fields["title"] = page.title
    return make_document(file.path, page.text, Structure(fields=fields))


LOADERS: dict[str, Callable[[FileInput], LoadedDocument]] = {
    ".md": _load_markdown,
    ".markdown": _load_markdown,
    ".txt": _load_markdown,
    ".html": _load_html,
    ".htm": _load_html,
    ".docx": office.load_docx,
    ".pptx": office.load_pptx,
    ".xlsx": office.load_xlsx,
    ".odt": opendocument.load_odt,
    ".ods": opendocument.load_ods,
    ".odp": opendocument.load_odp,
    ".epub": epub.load_epub,
    ".eml": email_message.load_eml,
    ".csv": tables.load_csv,
    ".tsv": tables.load_csv,
    ".rst": textformats.load_rst,
    ".adoc": textformats.load_asciidoc,
    ".asciidoc": textformats.load_asciidoc,
    ".json": textformats.load_json,
    **{suffix: textformats.load_code for suffix in sorted(textformats.CODE_SUFFIXES)},
}
"""The loader of each default document suffix; a suffix a corpus adds is read as plain text."""

PAGED_LOADERS: dict[str, Callable[[FileInput, PageReader | None], LoadedDocument]] = {
    ".pdf": load_pdf,
    **{suffix: load_image for suffix in sorted(IMAGE_SUFFIXES)},
}
"""Loaders of documents read page by page (PDF, pictures by OCR), which report each page as they go."""

DOCUMENT_SUFFIXES = frozenset({*LOADERS, *PAGED_LOADERS})


class _FrontMatterLoader(yaml.SafeLoader):
    """A safe YAML loader that leaves timestamps as strings, so dates are checked in one place, and
    refuses aliases and deep nesting (a few hundred bytes of aliases can expand to gigabytes)."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in front matter; write the value out",
                self.peek_event().start_mark,  # type: ignore[no-untyped-call]
            )  # fmt: skip
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_NESTING} levels",
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )  # fmt: skip
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_FrontMatterLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _parse_front_matter(source: str, path: Path) -> dict[str, object]:
    if len(source.encode()) > MAX_FRONT_MATTER_BYTES:
        raise IngestError(
            f"{path}: the front matter is over {MAX_FRONT_MATTER_BYTES // 1024} KB; keep metadata short and move "
            "the rest into the text."
        )
    try:
        fields = yaml.load(source, Loader=_FrontMatterLoader)
    except yaml.YAMLError as error:
        raise IngestError(f"{path}: the front matter is not valid YAML: {' '.join(str(error).split())}") from error
    if fields is None:
        return {}
    if not isinstance(fields, dict):
        raise IngestError(f"{path}: the front matter must be 'key: value' lines, got {str(fields)[:200]!r}.")
    return {str(key): value for key, value in fields.items()}
