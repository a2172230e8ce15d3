"""HTML as Markdown-like text: the reader of ``.html`` files, of the chapters of an EPUB and of HTML e-mail.

``h1``-``h6`` become ``#`` heading lines (so the chunker sees the sections), paragraphs and
other blocks are separated by blank lines, list items (``- ``), table rows and ``<br>`` end
lines, table cells are joined with `` | ``, and script, style, nav, noscript and template
content is dropped. ``<title>`` gives the title; ``<meta name="category|tags|date|source|url"
content="...">`` give the metadata fields of the same names.

The markup is parsed by libxml2's HTML parser (through ``lxml``, in recovery mode, with no
network access), which takes time linear in the input however it is crafted: Python's own
``html.parser`` needs quadratic time on unclosed attribute quotes or comments (120 KB of
``<a b='`` took 27 s), which let one small file stall ingestion.
"""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

_HTML_META_FIELDS = frozenset({"category", "tags", "date", "source", "url"})


@dataclass(frozen=True)
class HtmlPage:
    """What a page says: its text as Markdown-like lines, its ``<title>`` and its metadata tags."""

    text: str
    title: str
    meta: dict[str, str]


def html_to_text(markup: str) -> HtmlPage:
    """The text, title and metadata of an HTML page (see the module docstring)."""
    collector = _Collector()
    parser = etree.HTMLParser(target=collector, recover=True, no_network=True)
    parser.feed(markup)
    parser.close()
    return HtmlPage(collector.text(), collector.title, collector.meta)


class _Collector:
    """The parser's target: collects a page's elements, as they open and close, into lines."""

    _SKIPPED = frozenset({"script", "style", "nav", "noscript", "template"})
    _HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
    _BLOCKS = frozenset(
        "p div section article main header footer aside blockquote pre hr ul ol dl table figure form address "
        "details summary".split()
    )
    _LINES = frozenset({"li", "tr", "br", "dt", "dd", "caption", "figcaption"})
    _CELLS = frozenset({"td", "th"})

    def __init__(self) -> None:
        self.title = ""
        self.meta: dict[str, str] = {}
        self._title_parts: list[str] | None = None
        self._lines: list[str] = []
        self._line: list[str] = []
        self._heading_level = 0
        self._skipped_depth = 0
        self._in_pre = False

    def text(self) -> str:
        """The collected text, once the whole page has been parsed."""
        self._end_line()
        return "\n".join(self._lines).strip()

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if tag in self._SKIPPED:
            self._skipped_depth += 1
        elif tag == "title":
            self._title_parts = []
        elif tag == "meta":
            self._read_meta(attrib)
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

    def end(self, tag: str) -> None:
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

    def data(self, data: str) -> None:
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

    def close(self) -> None:
        """Called by the parser at the end of the page; the text is read with :meth:`text`."""

    def _read_meta(self, attrs: dict[str, str]) -> None:
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
