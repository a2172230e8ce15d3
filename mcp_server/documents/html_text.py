"""HTML as Markdown-like text: the reader of ``.html`` files, and of the chapters of an EPUB.

``h1``-``h6`` become ``#`` heading lines (so the chunker sees the sections), paragraphs and
other blocks are separated by blank lines, list items (``- ``), table rows and ``<br>`` end
lines, table cells are joined with `` | ``, and script, style, nav, noscript and template
content is dropped. ``<title>`` gives the title; ``<meta name="category|tags|date|source|url"
content="...">`` give the metadata fields of the same names.
"""

from __future__ import annotations

from html.parser import HTMLParser

_HTML_META_FIELDS = frozenset({"category", "tags", "date", "source", "url"})


class HtmlToText(HTMLParser):
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
