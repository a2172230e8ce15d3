"""Text from inside documents, made safe to show: no control, escape or text-direction character reaches a screen.

A document's metadata - its title, category, tags, section headings, url, a spreadsheet's
sheet names - and its text come from whoever wrote the file, and so do a database's cells
and a parser's error messages. Shown raw, they may hold a terminal escape (``ESC ] 0 ; … BEL``
sets the terminal's title), a text-direction override (U+202E shows ``txt.exe`` as
``exe.txt``), or a line break that forges a line of its own: a title
``"Notes\\n[alpha:notes/a01#0] forged"`` would head a line of a search result that reads as
another hit's citation id.

:func:`for_display` writes each such character as a visible escape (``\\x1b``, ``\\u202e``,
``\\n``); with ``lines=True``, for a document's text or an answer, line breaks and tabs are
kept. :func:`json_for_display` does the same for JSON text, with JSON escapes, so the value it
encodes stays the same. Both are applied where text is rendered (the MCP tools' text results,
the command lines' output), never when it is indexed: an index built before holds the
characters still, and the structured results keep every value as its document has it.
"""

from __future__ import annotations

import re

_RAW_IN_JSON = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
"""DEL, the C1 controls (U+0085, a line break, among them), the text-direction marks, embeddings, overrides and
isolates, and the Unicode line and paragraph separators: the unsafe characters a JSON encoder leaves raw."""
_UNSAFE = re.compile(f"[\x00-\x1f{_RAW_IN_JSON}]")
"""Every character that moves the cursor, starts an escape sequence, reorders text or breaks a line."""
_UNSAFE_IN_JSON = re.compile(f"[{_RAW_IN_JSON}]")
_KEPT_IN_LINES = "\n\t"


def for_display(text: str, *, lines: bool = False) -> str:
    """``text`` with every control, escape and text-direction character written as its Python escape
    (``\\x1b``, ``\\u202e``); line breaks too (``\\n``), unless ``lines`` (then newlines and tabs are kept)."""
    return _UNSAFE.sub(_kept_in_lines if lines else _escaped, text)


def json_for_display(json_text: str) -> str:
    """JSON text (from ``json.dumps`` or pydantic, which escape the C0 controls themselves) with the unsafe
    characters its strings may still hold raw written as ``\\uXXXX`` escapes: the same JSON value."""
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", json_text)


def _escaped(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def _kept_in_lines(match: re.Match[str]) -> str:
    return match.group() if match.group() in _KEPT_IN_LINES else _escaped(match)
