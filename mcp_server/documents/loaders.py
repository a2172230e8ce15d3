"""Loaders: one document file in, its text and metadata out.

- **Markdown and plain text** (``.md``, ``.markdown``, ``.txt``) may open with YAML front
  matter between ``---`` lines: ``title``, ``category``, ``date`` (``YYYY-MM-DD``),
  ``url`` or ``source`` (the original URL; when both are given, ``url`` wins and
  ``source`` stays in ``extra``), ``tags`` (a list or a comma-separated string); other
  keys land in ``extra`` as strings. The front matter is not part of the text.
- **HTML** (``.html``, ``.htm``) becomes Markdown-like text: ``h1``-``h6`` become ``#``
  heading lines (so the chunker sees the sections), paragraphs and other blocks are
  separated by blank lines, list items (``- ``), table rows and ``<br>`` end lines,
  table cells are joined with `` | ``, and script, style, nav, noscript and template
  content is dropped. ``<title>`` gives the title; ``<meta name="category|tags|date|
  source|url" content="...">`` give the metadata fields of the same names.
- **PDF**: the text of every page, pages separated by a blank line; the title comes from
  the PDF's /Title. Encrypted or unreadable files are refused.

Files are read as UTF-8 (a byte-order mark is tolerated) and newlines become ``\\n``.
Without a title, a document is titled by its first level-1 heading, else by its file
name. ``LoadedDocument.text`` is the text chunk offsets refer to.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import yaml
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from mcp_server.documents.chunking import find_headings
from mcp_server.errors import IngestError

_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\n(?:(.*?)\n)?---[ \t]*(?:\n|\Z)", re.DOTALL)
_LEADING_BLANK_LINES_RE = re.compile(r"\A(?:[ \t]*\n)+")
_HTML_META_FIELDS = frozenset({"category", "tags", "date", "source", "url"})


@dataclass(frozen=True)
class LoadedDocument:
    """A document's text (what chunk offsets refer to) and its metadata."""

    text: str
    title: str
    category: str | None
    tags: tuple[str, ...]
    date: datetime.date | None
    url: str | None
    extra: dict[str, str]


def load_document(path: Path) -> LoadedDocument:
    """Read one document file, choosing the loader by its suffix.

    :raises IngestError: the file cannot be read or decoded, its suffix is not supported,
        or its metadata is invalid (e.g. a date that is not ``YYYY-MM-DD``).
    """
    loader = _LOADERS.get(path.suffix.lower())
    if loader is None:
        raise IngestError(f"{path}: unsupported file type; supported suffixes are {', '.join(sorted(_LOADERS))}.")
    return loader(path)


def _load_markdown(path: Path) -> LoadedDocument:
    text = _read_text(path)
    front_matter = _FRONT_MATTER_RE.match(text)
    if front_matter is None:
        return _document(path, _trim(text), {})
    fields = _parse_front_matter(front_matter.group(1) or "", path)
    return _document(path, _trim(text[front_matter.end() :]), fields)


def _load_html(path: Path) -> LoadedDocument:
    parser = _HtmlToText()
    parser.feed(_read_text(path))
    parser.close()
    fields: dict[str, object] = dict(parser.meta)
    if parser.title:
        fields["title"] = parser.title
    return _document(path, parser.text(), fields)


def _load_pdf(path: Path) -> LoadedDocument:
    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise IngestError(f"{path} is an encrypted PDF; save a decrypted copy to index it.")
        pages = [page.extract_text() or "" for page in reader.pages]
        title = reader.metadata.title if reader.metadata else None
    except (PyPdfError, OSError, ValueError, KeyError, TypeError) as error:
        raise IngestError(f"{path} is not a readable PDF ({error}); check it or convert it to text.") from error
    text = "\n\n".join(page for page in (_trim(_normalise_newlines(page)) for page in pages) if page)
    return _document(path, text, {"title": title} if title else {})


_LOADERS: dict[str, Callable[[Path], LoadedDocument]] = {
    ".md": _load_markdown,
    ".markdown": _load_markdown,
    ".txt": _load_markdown,
    ".html": _load_html,
    ".htm": _load_html,
    ".pdf": _load_pdf,
}


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise IngestError(f"Cannot read {path}: {error}.") from error
    try:
        return _normalise_newlines(data.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        raise IngestError(f"{path} is not valid UTF-8 (byte {error.start}); save it as UTF-8.") from error


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _trim(text: str) -> str:
    """``text`` without leading blank lines and trailing whitespace (indentation is kept)."""
    return _LEADING_BLANK_LINES_RE.sub("", text).rstrip()


class _FrontMatterLoader(yaml.SafeLoader):
    """A safe YAML loader that leaves timestamps as strings, so dates are checked in one place."""


_FrontMatterLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _parse_front_matter(source: str, path: Path) -> dict[str, object]:
    try:
        fields = yaml.load(source, Loader=_FrontMatterLoader)
    except yaml.YAMLError as error:
        raise IngestError(f"{path}: the front matter is not valid YAML: {error}") from error
    if fields is None:
        return {}
    if not isinstance(fields, dict):
        raise IngestError(f"{path}: the front matter must be 'key: value' lines, got {fields!r}.")
    return {str(key): value for key, value in fields.items()}


def _document(path: Path, text: str, fields: Mapping[str, object]) -> LoadedDocument:
    """Assemble a document from its text and raw metadata fields (keys are case-insensitive)."""
    fields = {key.strip().lower(): value for key, value in fields.items()}
    url_key = "url" if "url" in fields else "source"
    used = {"title", "category", "tags", "date", url_key}
    return LoadedDocument(
        text=text,
        title=_text_value(fields.get("title")) or _first_title_heading(text) or _title_from_name(path),
        category=_text_value(fields.get("category")),
        tags=_tags(fields.get("tags")),
        date=_date(fields.get("date"), path),
        url=_text_value(fields.get(url_key)),
        extra={key: _stringify(value) for key, value in fields.items() if key not in used},
    )


def _text_value(value: object) -> str | None:
    text = "" if value is None else _stringify(value).strip()
    return text or None


def _stringify(value: object) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_stringify(item) for item in value)
    return "" if value is None else str(value)


def _tags(value: object) -> tuple[str, ...]:
    """Tags from a list or a comma-separated string: trimmed, blanks and repeats dropped."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list | tuple) else [value]
    tags = (_stringify(item).strip() for item in items)
    return tuple(dict.fromkeys(tag for tag in tags if tag))


def _date(value: object, path: Path) -> datetime.date | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            return datetime.datetime.fromisoformat(value.strip()).date()
        except ValueError:
            pass
    raise IngestError(f"{path}: date {value!r} is not a valid date; write it as YYYY-MM-DD, e.g. 2024-03-31.")


def _first_title_heading(text: str) -> str | None:
    return next((heading.title for heading in find_headings(text) if heading.level == 1), None)


def _title_from_name(path: Path) -> str:
    """``leave-policy.md`` -> ``Leave policy``."""
    words = re.sub(r"[-_\s]+", " ", path.stem).strip() or path.name
    return words[:1].upper() + words[1:]


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
