"""Finding a quote in a document's text through the differences copying and extraction make.

:func:`find_quote` compares the quote and the text after normalising both the same way:

* Unicode compatibility forms folded (NFKC: ``ﬁ`` → ``fi``, full-width ``１２`` → ``12``,
  ``…`` → ``...``), case folded, curly quotes and primes made straight (``‘’`` → ``'``,
  ``“”`` → ``"``), every dash and minus made ``-``; soft hyphens and zero-width characters dropped.
* Every run of whitespace one space; a word hyphenated at a line break joined
  (``infor-\\nmation`` → ``information``, on either side).

A quote found verbatim after that is *exact* (ratio 1.0). Otherwise the passage most like it
is looked for, and it matches when its similarity — ``2 × matching characters / (quote length
+ passage length)`` over the normalised characters, difflib's ratio — is at least
:data:`MIN_RATIO`. That passes a typo or two, a dropped or doubled short word, or one word changed
in a sentence of a dozen words or more; a quote that differs more (another number or name in a
short sentence, a paraphrase) is not found.

The work is bounded whatever the document's length: up to :data:`MAX_SEEDS` short stretches of
the quote are looked up verbatim (``str.find``, at most :data:`MAX_SEED_HITS` places each; a
stretch found more often says nothing about where the quote is). Each place votes for where
the quote would start, and only the :data:`MAX_CANDIDATES` places with most votes are
compared character by character, each over a window the size of the quote and a fifth. So a
quote whose differences fall every few characters (no stretch of :data:`SEED_CHARS` left
intact) is not found, however similar overall. Quotes are at most :data:`MAX_QUOTE_CHARS` long.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher

MAX_QUOTE_CHARS = 1_000
"""Longest quote looked for: a sentence or a short paragraph."""
MIN_RATIO = 0.9
"""Least similarity (0 to 1, over normalised characters) of a passage that matches a quote."""
SEED_CHARS = 8
"""Length of the stretches of a quote looked up verbatim to find where it may be."""
MAX_SEEDS = 24
MAX_SEED_HITS = 64
MAX_CANDIDATES = 3
MAX_EXACT_OCCURRENCES = 1_000
"""Occurrences of an exact quote looked through for one inside the preferred span."""

_WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
_TO_SPACE = str.maketrans({ch: " " for ch in _WHITESPACE + "".join(map(chr, range(0x2000, 0x200B)))})
_FOLD = str.maketrans(
    {ch: "'" for ch in "‘’‚‛′‵ʼ"}
    | {ch: '"' for ch in "“”„‟″‶«»"}
    | {ch: "-" for ch in "‐‑‒–—―−﹘﹣"}
    | {ch: None for ch in "\u00ad\u200b\u200c\u200d\u2060\ufeff"}
)
_SPECIAL = re.compile(
    r"(?P<hyphen>(?<=[^\W\d_])[-\u00ad\u2010][ \t]*\r?\n\s*(?=[^\W\d_]))"
    r"|(?P<space>\s{2,})"
    r"|(?P<other>[\x21-\x7e]?[^\x00-\x7f\s]+)"
)
"""What normalising may change in length: a hyphenated line break, a run of whitespace, non-ASCII text
(with the character before it, which a combining mark may belong to)."""


@dataclass(frozen=True)
class QuoteMatch:
    """Where a quote is in a text: the span ``[start, end)`` of the text, and how close it is."""

    start: int
    end: int
    ratio: float
    """Similarity of the normalised quote and the normalised span, 0 to 1 (1.0 when exact)."""
    exact: bool
    """Whether the span is the quote itself once both are normalised."""


class _Normalised:
    """A text normalised as the module docstring says, with the way back to the original's offsets.

    The normalised text is built of pieces; a *linear* piece maps character for character onto
    the original, any other piece (a collapsed whitespace run, a folded character) onto the
    whole original span it came from.
    """

    def __init__(self, original: str) -> None:
        self.parts: list[str] = []
        self.starts: list[int] = []  # where each piece starts in the normalised text
        self.origins: list[tuple[int, int, bool]] = []  # its original span, and whether it is linear
        self._length = 0
        done = 0
        for match in _SPECIAL.finditer(original):
            self._linear(original, done, match.start())
            if match["space"] is not None:
                self._add(" ", match.start(), match.end(), linear=False)
            elif match["other"] is not None:
                self._fold(match["other"], match.start())
            done = match.end()
        self._linear(original, done, len(original))
        self.text = "".join(self.parts)

    def _add(self, part: str, start: int, end: int, *, linear: bool) -> None:
        if not part:
            return
        self.parts.append(part)
        self.starts.append(self._length)
        self.origins.append((start, end, linear))
        self._length += len(part)

    def _linear(self, original: str, start: int, end: int) -> None:
        # ASCII text and lone whitespace characters: lower-casing and spacing keep their length.
        self._add(original[start:end].translate(_TO_SPACE).lower(), start, end, linear=True)

    def _fold(self, run: str, offset: int) -> None:
        """Non-ASCII text, one character and its combining marks at a time; unchanged lengths stay linear."""
        i = 0
        while i < len(run):
            j = i + 1
            while j < len(run) and unicodedata.combining(run[j]):
                j += 1
            folded = unicodedata.normalize("NFKC", run[i:j]).casefold().translate(_FOLD)
            last = self.origins[-1] if self.origins else None
            if len(folded) == j - i == 1 and last is not None and last[2] and last[1] == offset + i:
                self.parts[-1] += folded  # extends the linear piece before it
                self.origins[-1] = (last[0], offset + j, True)
                self._length += 1
            else:
                self._add(folded, offset + i, offset + j, linear=len(folded) == j - i == 1)
            i = j

    def original_start(self, position: int) -> int:
        piece = bisect_right(self.starts, position) - 1
        start, _, linear = self.origins[piece]
        return start + (position - self.starts[piece]) if linear else start

    def original_end(self, position: int) -> int:
        """Where the original span ends whose normalised form ends at ``position`` (exclusive)."""
        piece = bisect_right(self.starts, position - 1) - 1
        start, end, linear = self.origins[piece]
        return start + (position - self.starts[piece]) if linear else end


def normalise(text: str) -> str:
    """``text`` as :func:`find_quote` compares it (see the module docstring)."""
    return _Normalised(text).text.strip()


def find_quote(quote: str, text: str, prefer: tuple[int, int] | None = None) -> QuoteMatch | None:
    """Where ``quote`` is in ``text``, exactly or closely (see the module docstring), or None.

    When ``quote`` is below :data:`MIN_RATIO` everywhere, the returned match is the closest
    passage found (``ratio`` below the threshold), or None when no stretch of the quote occurs
    in the text at all. An exact quote found several times is taken where it starts inside
    ``prefer`` (a span of ``text``), else at its first occurrence. ``quote`` must normalise to
    something non-empty.
    """
    needle = normalise(quote)
    if not needle:
        raise ValueError("the quote is empty once whitespace is removed")
    haystack = _Normalised(text)
    exact = _exact(needle, haystack, prefer)
    if exact is not None:
        return exact
    return _closest(needle, haystack)


def _exact(needle: str, haystack: _Normalised, prefer: tuple[int, int] | None) -> QuoteMatch | None:
    first = None
    position = haystack.text.find(needle)
    for _ in range(MAX_EXACT_OCCURRENCES):
        if position == -1:
            break
        match = _match(haystack, position, position + len(needle), 1.0, exact=True)
        if prefer is None or prefer[0] <= match.start < prefer[1]:
            return match
        first = first or match
        position = haystack.text.find(needle, position + 1)
    return first


def _closest(needle: str, haystack: _Normalised) -> QuoteMatch | None:
    best: QuoteMatch | None = None
    for start in _candidate_starts(needle, haystack.text):
        found = _align(needle, haystack, start)
        if found is not None and (best is None or found.ratio > best.ratio):
            best = found
    return best


def _candidate_starts(needle: str, text: str) -> list[int]:
    """Where in ``text`` the quote may start, by the votes of its stretches found verbatim (most first)."""
    size = max(3, min(SEED_CHARS, len(needle) // 3))
    last = len(needle) - size
    if last < 0:
        return []
    step = max(1, last // (MAX_SEEDS - 1))
    offsets = sorted({*range(0, last + 1, step), last})[:MAX_SEEDS]
    bin_width = max(16, len(needle) // 4)
    votes: Counter[int] = Counter()
    diagonals: dict[int, list[int]] = {}
    for offset in offsets:
        places = _places(text, needle[offset : offset + size])
        for place in places:
            diagonal = place - offset
            votes[diagonal // bin_width] += 1
            diagonals.setdefault(diagonal // bin_width, []).append(diagonal)
    ranked = sorted(votes, key=lambda b: (-(votes[b] + votes.get(b + 1, 0)), b))[:MAX_CANDIDATES]
    return [sorted(diagonals[b])[len(diagonals[b]) // 2] for b in ranked]


def _places(text: str, seed: str) -> list[int]:
    """Where ``seed`` occurs in ``text``; none when it occurs more than :data:`MAX_SEED_HITS` times."""
    places: list[int] = []
    position = text.find(seed)
    while position != -1:
        if len(places) == MAX_SEED_HITS:
            return []
        places.append(position)
        position = text.find(seed, position + 1)
    return places


def _align(needle: str, haystack: _Normalised, start: int) -> QuoteMatch | None:
    """The passage near ``start`` most like ``needle``: the run of matching blocks with the best ratio."""
    slack = len(needle) // 5 + SEED_CHARS
    low = max(0, start - slack)
    window = haystack.text[low : start + len(needle) + slack]
    blocks = [b for b in SequenceMatcher(None, needle, window, autojunk=False).get_matching_blocks() if b.size]
    if not blocks:
        return None

    def ratio(first: int, last: int) -> float:
        matched = sum(b.size for b in blocks[first : last + 1])
        span = blocks[last].b + blocks[last].size - blocks[first].b
        return 2 * matched / (len(needle) + span)

    first, last = 0, len(blocks) - 1
    while first < last:  # drop stray blocks at either end while that makes the passage closer
        if ratio(first + 1, last) > ratio(first, last):
            first += 1
        elif ratio(first, last - 1) > ratio(first, last):
            last -= 1
        else:
            break
    begin, end = low + blocks[first].b, low + blocks[last].b + blocks[last].size
    return _match(haystack, begin, end, ratio(first, last), exact=False)


def _match(haystack: _Normalised, start: int, end: int, ratio: float, *, exact: bool) -> QuoteMatch:
    while start < end and haystack.text[start] == " ":
        start += 1
    while end > start and haystack.text[end - 1] == " ":
        end -= 1
    return QuoteMatch(haystack.original_start(start), haystack.original_end(end), round(ratio, 4), exact)
