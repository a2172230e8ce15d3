"""Loaders of plain-text formats whose sections are not Markdown headings, and of source code.

The text is the file's text (trimmed), so every chunk knows its lines. Sections come from
the structure each format has:

- **reStructuredText** (``.rst``): a title line underlined (and optionally overlined) with a
  repeated punctuation character; levels follow the order in which the styles first appear.
- **AsciiDoc** (``.adoc``, ``.asciidoc``): ``= Title``, ``== Section`` ... lines.
- **JSON** (``.json``): in a pretty-printed object, each top-level key starts a section.
- **Source code**: top-level definitions (at the start of a line) start sections -
  Python ``def``/``class`` (with their decorators), JavaScript/TypeScript ``function``/``class``,
  Go ``func``/``type``, Rust ``fn``/``struct``/``enum``/``trait``/``impl``/``mod``.
- Anything else (other code, ``.yaml``, files included by a corpus' ``[documents] include``):
  one run of text without sections (a ``#`` comment is not a heading).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from mcp_server.documents.chunking import Heading, lines_with_offsets
from mcp_server.documents.loaded import (
    LoadedDocument,
    Structure,
    make_document,
    read_text,
    trimmed_body,
)
from mcp_server.documents.limits import FileInput
from mcp_server.documents.locations import LineMark

_RST_ADORNMENT_RE = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*")
_ADOC_HEADING_START_RE = re.compile(r"(={1,6})[ \t]+")
_JSON_KEY_RE = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:')
_CODE_DEFINITIONS: dict[str, re.Pattern[str]] = {}
for _suffixes, _pattern in (
    ((".py", ".pyi"), r"(?:async[ \t]+)?def[ \t]+\w+|class[ \t]+\w+"),
    (
        (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx"),
        r"(?:export[ \t]+(?:default[ \t]+)?)?(?:async[ \t]+)?(?:function\*?[ \t]+\w+|class[ \t]+\w+)",
    ),
    ((".go",), r"func[ \t]+(?:\([^)]*\)[ \t]*)?\w+|type[ \t]+\w+"),
    ((".rs",), r"(?:pub(?:\([^)]*\))?[ \t]+)?(?:async[ \t]+)?(?:fn|struct|enum|trait|impl|mod)[ \t]+\w+"),
):
    for _suffix in _suffixes:
        _CODE_DEFINITIONS[_suffix] = re.compile(_pattern)

CODE_SUFFIXES = frozenset(
    {*_CODE_DEFINITIONS, ".java", ".kt", ".scala", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".rb", ".php",
     ".swift", ".sh", ".sql", ".r"}
)  # fmt: skip


def load_rst(file: FileInput) -> LoadedDocument:
    return _load(file, _rst_headings)


def load_asciidoc(file: FileInput) -> LoadedDocument:
    return _load(file, _asciidoc_headings)


def load_json(file: FileInput) -> LoadedDocument:
    return _load(file, _json_headings, titled_by_heading=False)


def load_code(file: FileInput) -> LoadedDocument:
    pattern = _CODE_DEFINITIONS.get(file.path.suffix.lower())
    find = (lambda text: _code_headings(text, pattern)) if pattern else _no_headings
    return _load(file, find, titled_by_heading=False)


def load_plain_text(file: FileInput) -> LoadedDocument:
    return _load(file, _no_headings)


def _load(file: FileInput, find: Callable[[str], list[Heading]], *, titled_by_heading: bool = True) -> LoadedDocument:
    """The trimmed file text, its lines from where it starts, and the sections ``find`` sees in it.

    Code and data are titled by their file name, other text by its first level-1 heading.
    """
    text, first_line = trimmed_body(read_text(file))
    structure = Structure(
        headings=find(text), lines=[LineMark(0, first_line)], titled_by_heading=titled_by_heading,
        fields={} if titled_by_heading else {"title": file.path.name},
    )  # fmt: skip
    return make_document(file.path, text, structure)


def _no_headings(text: str) -> list[Heading]:
    return []


def _rst_headings(text: str) -> list[Heading]:
    lines = list(lines_with_offsets(text))
    styles: list[tuple[str, bool]] = []
    headings: list[Heading] = []
    index = 1
    while index < len(lines):
        title, under = lines[index - 1][1], lines[index][1]
        adornment = _RST_ADORNMENT_RE.fullmatch(under)
        if adornment and title.strip() and not title[0].isspace() and len(under.rstrip()) >= len(title.rstrip()):
            above = lines[index - 2][1].rstrip() if index >= 2 else ""
            overlined = above == under.rstrip()
            style = (adornment.group(1), overlined)
            if style not in styles:
                styles.append(style)
            start = lines[index - 2][0] if overlined else lines[index - 1][0]
            headings.append(Heading(start, styles.index(style) + 1, title.strip()))
            index += 2
        else:
            index += 1
    return headings


def _asciidoc_headings(text: str) -> list[Heading]:
    headings = []
    for start, line in list(lines_with_offsets(text)):
        opening = _ADOC_HEADING_START_RE.match(line)
        title = line[opening.end() :].rstrip(" \t") if opening else ""
        if opening and title and not title[0].isspace():
            headings.append(Heading(start, len(opening.group(1)), title))
    return headings


def _json_headings(text: str) -> list[Heading]:
    """Top-level keys of a pretty-printed JSON object (none for other JSON, or invalid JSON)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # nested past Python's recursion: still text, without sections
        return []
    if not isinstance(value, dict):
        return []
    lines = list(lines_with_offsets(text))
    indents = [len(line) - len(line.lstrip()) for _, line in lines[1:] if line.strip()[:1] == '"']
    if not indents:
        return []
    indent = min(indents)
    headings = []
    for start, line in lines[1:]:
        match = _JSON_KEY_RE.match(line, indent) if len(line) - len(line.lstrip()) == indent else None
        if match:
            headings.append(Heading(start, 1, match.group(1)))
    return headings


def _code_headings(text: str, pattern: re.Pattern[str]) -> list[Heading]:
    lines = list(lines_with_offsets(text))
    return [
        Heading(_decorated_start(lines, index), 1, " ".join(match.group(0).split()))
        for index, (_, line) in enumerate(lines)
        if (match := pattern.match(line))
    ]


def _decorated_start(lines: list[tuple[int, str]], index: int) -> int:
    """Where the definition on line ``index`` starts, its ``@decorator`` lines included."""
    for above in range(index - 1, -1, -1):
        if not lines[above][1].startswith("@"):
            return lines[above + 1][0]
    return lines[0][0]
