"""Telling text from binary content and from text with nothing worth indexing, whatever the suffix.

A file named ``.md`` may hold a picture, a NUL-filled placeholder or a UTF-16 export. Such
content is refused with a reason a user can act on, instead of becoming junk chunks:

- **NUL bytes** anywhere: binary data (or UTF-16, which is not supported).
- **Not UTF-8**: the first undecodable byte is named.
- **Control characters** (other than tab, newline, carriage return and form feed) making up
  more than :data:`MAX_CONTROL_SHARE` of the characters: binary data that happens to decode.
- **No words**: no run of two letters and no CJK character (only digits, punctuation or space).
"""

from __future__ import annotations

import re
from pathlib import Path

from mcp_server.analyzer.scripts import CJK
from mcp_server.errors import IngestError

MAX_CONTROL_SHARE = 0.01
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")  # C0 and C1 controls but tab, LF, FF, CR
_WORD_RE = re.compile(rf"[^\W\d_]{{2,}}|[{CJK}]")


def decode_text(data: bytes, path: Path) -> str:
    """``data`` as text (UTF-8, a byte-order mark tolerated).

    :raises IngestError: the bytes hold NUL bytes, are not UTF-8, or are mostly control characters.
    """
    if b"\x00" in data:
        raise IngestError(
            f"{path} holds binary data (NUL bytes), not text; remove it from the corpus folder, "
            "or save it as UTF-8 text if it is a UTF-16 export."
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise IngestError(f"{path} is not valid UTF-8 (byte {error.start}); save it as UTF-8.") from error
    controls = len(_CONTROL_RE.findall(text))
    if text and controls / len(text) > MAX_CONTROL_SHARE:
        raise IngestError(
            f"{path} looks binary ({controls} control characters in {len(text)}); "
            "remove it from the corpus folder or convert it to text."
        )
    return text


def check_has_words(text: str, path: Path) -> None:
    """:raises IngestError: ``text`` has no words to index (empty, or only digits and symbols)."""
    if _WORD_RE.search(text) is None:
        what = "no text" if not text.strip() else "no words (only digits, symbols or spaces)"
        raise IngestError(
            f"{path} has {what} to index; add text to it (scanned pages are read by OCR unless RAGMCP_OCR=off: "
            "these gave none)."
        )
