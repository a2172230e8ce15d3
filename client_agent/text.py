"""Small text analysis the agent shares: content terms, numbers and identifiers, in English and Chinese.

These are deliberately simple and deterministic — the offline back-end, the conflict
detector and the near-duplicate check need "which words carry the meaning" and "which
numbers are claimed", not linguistics. They read with the server's analyzer
(:mod:`mcp_server.analyzer`), as the keyword index and the citation check do: English words
are lower-cased, taken back to their dictionary form and Porter2-stemmed, so "approves" and
"approval" meet "approve" and "paid" meets "pay"; Chinese,
Japanese and Korean text becomes overlapping character bigrams, the usual unit for CJK
matching without a segmenter; a block of text is cut into sentences by the analyzer's splitter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mcp_server.analyzer.scripts import CJK_RUN
from mcp_server.analyzer.sentences import split_sentences
from mcp_server.analyzer.stems import root
from mcp_server.analyzer.words import STOPWORDS, cjk_bigrams

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*[A-Za-z0-9]|[A-Za-z]")
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\d])")
_IDENTIFIER = re.compile(r"\b(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9]+(?:[_\-][A-Za-z0-9]+)*\b")
_UNIT_GLUED = re.compile(r"\d+(?:GB|MB|TB|KB|ms|s|h|min|K|M|Pa|dB|d|x|st|nd|rd|th)|\d+-[a-z]+", re.IGNORECASE)


def content_terms(text: str) -> list[str]:
    """The meaning-bearing terms of ``text``, in order, unique: stems of non-stopwords, CJK bigrams, identifiers."""
    terms: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        if _grade_letter(word, text, match.start()):
            terms.append(word.lower())
            continue
        if word.lower() in STOPWORDS or (len(word) < 3 and not any(c.isdigit() for c in word)):
            continue
        terms.append(word.lower() if identifier_like(word) else root(word.lower()))
    for run in CJK_RUN.findall(text):
        terms.extend(cjk_bigrams(run))
    return list(dict.fromkeys(terms))


def _grade_letter(word: str, text: str, start: int) -> bool:
    """A capital letter used as a name ("an A rating", "Rating: A"), not "I" and not a sentence's first word."""
    return len(word) == 1 and word.isupper() and word != "I" and bool(text[:start].strip()) and (
        not text[:start].rstrip().endswith((".", "!", "?")))


def identifier_like(word: str) -> bool:
    """True for codes and model names such as ``X3``, ``ERR_VPN_AUTH_4012`` or ``CHG-2025-0612-03``."""
    return bool(_IDENTIFIER.fullmatch(word))


def identifiers(text: str) -> list[str]:
    """Codes and model names in ``text``, unique, in order."""
    return list(dict.fromkeys(m.group(0) for m in _IDENTIFIER.finditer(text)))


def numbers(text: str) -> list[float]:
    """The numbers written in ``text`` (thousands separators allowed), in order.

    Digits inside codes and model names (``X3``, ``CHG-2025-0612-03``) are not numbers;
    a number with a unit glued on (``8GB``, ``500ms``, ``1536-dimensional``, ``180-minute``) is.
    """
    masked = _IDENTIFIER.sub(lambda m: m.group(0) if _UNIT_GLUED.fullmatch(m.group(0)) else " ", text)
    values = []
    for match in _NUMBER.finditer(masked):
        whole = match.group(1).replace(",", "")
        values.append(float(f"{whole}.{match.group(2)}" if match.group(2) else whole))
    return values


def original_words(text: str, terms: Iterable[str]) -> list[str]:
    """The words of ``text`` behind the content ``terms``, as written there (not stemmed); unknown terms as they are."""
    words: dict[str, str] = {}
    for word in re.findall(r"[A-Za-z0-9_\-]+", text):
        for term in content_terms(word):
            words.setdefault(term, word)
    return [words.get(term, term) for term in terms]


def overlap(a: list[str], b: list[str]) -> float:
    """Jaccard similarity of two term lists."""
    left, right = set(a), set(b)
    return len(left & right) / len(left | right) if left | right else 1.0


_BLOCK_START = re.compile(r"\s*(?:[-*+•]\s|\d{1,3}[.)]\s|#{1,6}\s|\||>)")
_RECORD = re.compile(r"^[^|:]{1,80}: [^|]*(?: \| [^|:]{1,80}: [^|]*)+$")
"""A table row as the server writes it, each cell with its column name: ``Item: E-bike | Daily rate (NOK): 650``."""
SHORT_LINE = 45
"""A line this short that does not end a sentence, followed by one opening in a capital, is an item of its own
(a slide's bullet, a line of notes), not a wrapped line of a paragraph: prose wraps near the full width."""
_MARKER = re.compile(r"^\s*(?:[-*+•>]|\d{1,3}[.)]|#{1,6})\s+")


def sentences(text: str, headings: bool = True) -> list[str]:
    """``text`` split into sentences.

    Wrapped lines of a paragraph are joined; list items and headings stand alone without
    their markers (headings are left out with ``headings=False``); a table row becomes
    "Header: cell, Header: cell" so it reads as a statement, and so does each record line of
    a spreadsheet, CSV or Word table as the server writes it (``Item: E-bike | Daily rate:
    650``), one sentence per row; a short line followed by a capitalised one (a slide's bullets,
    :data:`SHORT_LINE`) stands alone; fenced code blocks are left out (logs and commands are
    not answers).
    """
    blocks: list[str] = []
    joinable = in_fence = False
    header: list[str] | None = None
    last_line = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence or not stripped or stripped.startswith(("```", "~~~")):
            joinable, header = False, None
            continue
        if stripped.startswith("|"):
            cells = [cell.strip() for cell in stripped.strip("|").split("|")]
            if header is None:
                header = cells
            elif not all(set(cell) <= set(":- ") for cell in cells):
                blocks.append(", ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=False)) + ".")
            joinable = False
            continue
        header = None
        record = bool(_RECORD.match(stripped))
        if joinable and not _BLOCK_START.match(line) and not record and not _stands_alone(last_line, stripped):
            blocks[-1] += " " + stripped
        elif headings or not stripped.startswith("#"):
            blocks.append(_MARKER.sub("", line).strip())
        joinable = not stripped.startswith("#") and not record
        last_line = stripped
    return [sentence for block in blocks for sentence in split_sentences(block)]


def _stands_alone(previous: str, line: str) -> bool:
    """Whether ``line`` starts a new item after the line ``previous`` (see :data:`SHORT_LINE`)."""
    return len(previous) < SHORT_LINE and line[:1].isupper() and not previous.endswith((",", ";", ":", "-"))
