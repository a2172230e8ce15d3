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
from html.parser import HTMLParser
from pathlib import Path

import yaml
import yaml.composer

from mcp_server.documents import office, tables, textformats
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
_HTML_META_FIELDS = frozenset({"category", "tags", "date", "source", "url"})


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
    return load_document(FileInput(read_inside(path, root, limits.max_file_bytes), path, limits))


def _load_markdown(file: FileInput) -> LoadedDocument:
    raw = read_text(file)
    front_matter = _FRONT_MATTER_RE.match(raw)
    text, first_line = trimmed_body(raw, front_matter.end() if front_matter else 0)
    fields = _parse_front_matter(front_matter.group(1) or "", file.path) if front_matter else {}
    return make_document(file.path, text, Structure(lines=[LineMark(0, first_line)], fields=fields))


def _load_html(file: FileInput) -> LoadedDocument:
    parser = _HtmlToText()
    parser.feed(read_text(file))
    parser.close()
    fields: dict[str, object] = dict(parser.meta)
    if parser.title:
        fields["title"] = parser.title
    return make_document(file.path, parser.text(), Structure(fields=fields))


LOADERS: dict[str, Callable[[FileInput], LoadedDocument]] = {
    ".md": _load_markdown,
    ".markdown": _load_markdown,
    ".txt": _load_markdown,
    ".html": _load_html,
    ".htm": _load_html,
    ".docx": office.load_docx,
    ".pptx": office.load_pptx,
    ".xlsx": office.load_xlsx,
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
RISKY_SUFFIXES = frozenset({*PAGED_LOADERS, ".docx", ".pptx", ".xlsx"})
"""Suffixes whose parsers (compiled libraries, zip archives, OCR) run in a reading process with a memory
ceiling and time limits (:mod:`mcp_server.documents.reader_process`); text formats are read in place."""


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


class _HtmlToText(HTMLParser):
    """Collects an HTML page as Markdown-like lines, with its ``<title>`` and metadata tags."""

    _SKIPPED = frozenset({"script", "style", "nav", "noscript", "template"})
    _HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
    _BLOCKS = frozenset(
        "p div section article main header footer aside blockquote pre hr ul ol dl table figure form address "
        "details summary".split()
    )
    _LINES = frozenset({"li", "tr", "br", "dt", "dd", "caption", "figcaption"})
    _CELLS = frozenset({"td", "th"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.meta: dict[str, str] = {}
        self._title_parts: list[str] | None = None
        self._lines: list[str] = []
        self._line: list[str] = []
        self._heading_level = 0
        self._skipped_depth = 0
        self._in_pre = False

    def text(self) -> str:
        """The collected text, once the whole page has been fed."""
        self._end_line()
        return "\n".join(self._lines).strip()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIPPED:
            self._skipped_depth += 1
        elif tag == "title":
            self._title_parts = []
        elif tag == "meta":
            self._read_meta(dict(attrs))
        elif tag in self._HEADINGS:
            self._end_block()
            self._heading_level = int(tag[1])
        elif tag in self._BLOCKS:
            self._end_block()
            self._in_pre = tag == "pre"
        elif tag in self._LINES:
            self._end_line()
            if tag == "li":
                self._line.append("- ")
        elif tag in self._CELLS and self._line:
            self._line.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIPPED:
            self._skipped_depth = max(0, self._skipped_depth - 1)
        elif tag == "title" and self._title_parts is not None:
            self.title = _collapse_spaces("".join(self._title_parts))
            self._title_parts = None
        elif tag in self._HEADINGS or tag in self._BLOCKS:
            self._end_block()
            self._heading_level = 0
            self._in_pre = False
        elif tag in self._LINES:
            self._end_line()

    def handle_data(self, data: str) -> None:
        if self._skipped_depth:
            return
        if self._title_parts is not None:
            self._title_parts.append(data)
        elif self._in_pre:
            first, *others = data.split("\n")
            self._line.append(first)
            for line in others:
                self._end_line()
                self._line.append(line)
        else:
            self._line.append(data)

    def _read_meta(self, attrs: dict[str, str | None]) -> None:
        name, content = (attrs.get("name") or "").strip().lower(), attrs.get("content")
        if name in _HTML_META_FIELDS and content is not None:
            self.meta[name] = content

    def _end_line(self) -> None:
        line = _collapse_spaces("".join(self._line))
        self._line = []
        if line:
            self._lines.append(f"{'#' * self._heading_level} {line}" if self._heading_level else line)

    def _end_block(self) -> None:
        self._end_line()
        if self._lines and self._lines[-1]:
            self._lines.append("")


def _collapse_spaces(text: str) -> str:
    return " ".join(text.split())
