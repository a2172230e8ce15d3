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

The work is linear in the text's length and bounded in the quote's. Normalising goes through the
text a stretch at a time (text that needs no folding character by character, most text, is
folded whole), at most :data:`_MAX_MARKS` combining marks go with one character (NFKC orders a
longer run in quadratic time), and it stops when the caller's deadline passes
(:mod:`mcp_server.grounding.deadline`). Up to :data:`MAX_SEEDS` short stretches of the quote
are looked up verbatim (``str.find``, at most :data:`MAX_SEED_HITS` places each; a stretch found
more often says nothing about where the quote is). Each place votes for where the quote would
start, and only the :data:`MAX_CANDIDATES` places with most votes are compared character by
character, each over a window the size of the quote and a fifth, and while
:data:`MAX_ALIGN_PAIRS` lasts (a quote of a few characters repeated is costly to compare). So a
quote whose differences fall every few characters (no stretch of :data:`SEED_CHARS` left
intact) is not found, however similar overall. Quotes are at most :data:`MAX_QUOTE_CHARS` long.
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import accumulate

from mcp_server.grounding.deadline import NO_DEADLINE, Deadline, current_deadline

MAX_QUOTE_CHARS = 1_000
"""Longest quote looked for: a sentence or a short paragraph."""
MIN_RATIO = 0.9
"""Least similarity (0 to 1, over normalised characters) of a passage that matches a quote."""
SEED_CHARS = 8
"""Length of the stretches of a quote looked up verbatim to find where it may be."""
MAX_SEEDS = 24
MAX_SEED_HITS = 64
MAX_CANDIDATES = 3
MAX_ALIGN_PAIRS = 120_000
"""Most pairs of equal characters (one in the quote, one in the passage) one search may compare: comparing
a passage character by character costs about as many steps, however the quote is made (a quote of a
few distinct characters has many)."""
MAX_EXACT_OCCURRENCES = 1_000
"""Occurrences of an exact quote looked through for one inside the preferred span."""

_WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
_TO_SPACE = str.maketrans({ch: " " for ch in _WHITESPACE + "".join(map(chr, range(0x2000, 0x200B)))})
_ASCII_TO_SPACE = str.maketrans({ch: " " for ch in _WHITESPACE if ch.isascii()})
_FOLD = str.maketrans(
    {ch: "'" for ch in "‘’‚‛′‵ʼ"}
    | {ch: '"' for ch in "“”„‟″‶«»"}
    | {ch: "-" for ch in "‐‑‒–—―−﹘﹣"}
    | {ch: None for ch in "\u00ad\u200b\u200c\u200d\u2060\ufeff"}
)
_FOLDED = re.compile("[" + "".join(map(chr, _FOLD)) + "]")
"""A character :data:`_FOLD` changes (finding none is much faster than translating)."""
_HYPHEN_BREAK = re.compile(r"[-\u00ad\u2010](?<=[^\W\d_].)[ \t]*\r?\n\s*(?=[^\W\d_])")
_SPACES = re.compile(r"\s{2,}")
_NON_ASCII = re.compile(r"[^\x00-\x7f\s]+")
_HYPHEN, _SPACE, _OTHER = range(3)
"""What normalising may change in length: a hyphenated line break, a run of whitespace, non-ASCII text
(with the printable ASCII character before it, which a combining mark may belong to)."""


def _special(text: str) -> Iterator[tuple[int, int, int]]:
    """(start, kind, end) of the stretches of ``text`` that normalising may change in length, in order.

    Each kind is found by a simple pattern of its own (scanning text for one alternation of all
    three would test every character against each): where two overlap, the one starting first
    wins, a hyphenated line break before a run of whitespace.
    """
    runs = ((_with_lead(text, m.start()), _OTHER, m.end()) for m in _NON_ASCII.finditer(text))
    found = heapq.merge(
        ((m.start(), _HYPHEN, m.end()) for m in _HYPHEN_BREAK.finditer(text)),
        ((m.start(), _SPACE, m.end()) for m in _SPACES.finditer(text)),
        runs,
    )
    done = 0
    for start, kind, end in found:
        if start >= done:
            yield start, kind, end
            done = end


def _with_lead(text: str, start: int) -> int:
    """Where non-ASCII text from ``start`` is folded from: the printable ASCII character before it, if there is
    one (a combining mark at ``start`` belongs to it), else ``start``."""
    return start - 1 if start > 0 and "\x21" <= text[start - 1] <= "\x7e" else start


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
    the original, any other piece (a collapsed whitespace run, a folded character with its
    combining marks) onto the whole original span it came from. Normal text takes few pieces
    and is folded a run of non-ASCII text at a time (see :meth:`_fold`); the work is linear in the
    text's length, and stops with DeadlineExceeded once ``deadline`` has passed.
    """

    def __init__(self, original: str, deadline: Deadline = NO_DEADLINE) -> None:
        self._deadline = deadline
        self._parts: list[str] = []
        self.starts = array("q")  # where each piece starts in the normalised text
        self._origin_starts = array("q")  # where it comes from in the original
        self._origin_ends = array("q")
        self._linear = bytearray()
        self._length = 0
        done = 0
        for count, (start, kind, end) in enumerate(_special(original)):
            if not count % _DEADLINE_EVERY:
                deadline.check()
            self._add_ascii(original, done, start)
            if kind == _SPACE:
                self._add(" ", start, end, linear=False)
            elif kind == _OTHER:
                for block_start, block_end in _blocks(original, start, end):
                    self._fold(original[block_start:block_end], block_start)
            done = end
        self._add_ascii(original, done, len(original))
        self.original = original
        self.text = "".join(self._parts)
        del self._parts

    def _add(self, part: str, start: int, end: int, *, linear: bool) -> None:
        """Append ``part``, from ``original[start:end]``; a linear part right after a linear piece extends it."""
        if not part:
            return
        self._parts.append(part)
        if linear and self._linear and self._linear[-1] and self._origin_ends[-1] == start:
            self._origin_ends[-1] = end
        else:
            self.starts.append(self._length)
            self._origin_starts.append(start)
            self._origin_ends.append(end)
            self._linear.append(linear)
        self._length += len(part)

    def _add_ascii(self, original: str, start: int, end: int) -> None:
        # ASCII text and lone whitespace characters: lower-casing and spacing keep their length.
        text = original[start:end]
        self._add(text.translate(_ASCII_TO_SPACE if text.isascii() else _TO_SPACE).lower(), start, end, linear=True)

    def _fold(self, run: str, offset: int) -> None:
        """Non-ASCII text (and the character before it, which a combining mark may belong to; a long run comes
        a block at a time, see :func:`_blocks`).

        Text that NFKC leaves as it is and whose case folding keeps every character one character
        (most text: CJK, Cyrillic, accented Latin) is folded whole, as one linear piece. Other text
        is folded a character and its combining marks (at most :data:`_MAX_MARKS`) at a time, each
        a piece of its own unless every character folds to one character.
        """
        self._deadline.check()
        if (folded := _one_to_one(run)) is not None:
            self._add(folded, offset, offset + len(run), linear=True)
            return
        bounds = _clusters(run)
        folds = _fold_each(run if len(bounds) == len(run) + 1 else _cut(run, bounds))  # characters, or clusters
        if set(map(len, folds)) == {1} and len(folds) == len(run):
            self._add("".join(folds), offset, offset + len(run), linear=True)
            return
        self._parts += folds
        self.starts.extend(accumulate(map(len, folds[:-1]), initial=self._length))
        self._origin_starts.extend(map(offset.__add__, bounds[:-1]))
        self._origin_ends.extend(map(offset.__add__, bounds[1:]))
        self._linear.extend(len(part) == end - start == 1 for part, start, end in zip(folds, bounds, bounds[1:]))
        self._length += sum(map(len, folds))

    def original_start(self, position: int) -> int:
        piece = bisect_right(self.starts, position) - 1
        start, linear = self._origin_starts[piece], self._linear[piece]
        return start + (position - self.starts[piece]) if linear else start

    def original_end(self, position: int) -> int:
        """Where the original span ends whose normalised form ends at ``position`` (exclusive)."""
        piece = bisect_right(self.starts, position - 1) - 1
        start, end, linear = self._origin_starts[piece], self._origin_ends[piece], self._linear[piece]
        return start + (position - self.starts[piece]) if linear else end


_DEADLINE_EVERY = 1024
"""Pieces of special text normalised between two looks at the deadline."""
_BLOCK_CHARS = 16_384
"""Length of the blocks a long run of non-ASCII text is folded in, a look at the deadline before each."""
_MAX_MARKS = 30
"""Most combining marks folded with one character (Unicode's stream-safe limit): NFKC orders a run of
marks in time quadratic in its length."""


def _one_to_one(text: str) -> str | None:
    """``text`` folded, when NFKC leaves it as it is and folding keeps every character one character; else None."""
    if not unicodedata.is_normalized("NFKC", text):
        return None
    folded = text.casefold()
    if len(folded) != len(text):
        return None
    if _FOLDED.search(folded):
        folded = folded.translate(_FOLD)
    return folded if len(folded) == len(text) else None


def _blocks(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """``text[start:end]`` in blocks of about :data:`_BLOCK_CHARS`, each ending before a character that is no
    combining mark (so that folding the blocks one by one folds every character with its marks)."""
    while end - start > _BLOCK_CHARS:
        cut = start + _BLOCK_CHARS
        while cut < end and cut - start < _BLOCK_CHARS + _MAX_MARKS and unicodedata.combining(text[cut]):
            cut += 1
        yield start, cut
        start = cut
    yield start, end


def _clusters(run: str) -> list[int]:
    """Where the characters of ``run``, each with the combining marks after it (at most :data:`_MAX_MARKS`),
    start, and its end."""
    marks = bytes(map(unicodedata.combining, run))
    if marks.count(0) == len(marks):
        return list(range(len(run) + 1))
    starts = [0, *(i for i in range(1, len(run)) if not marks[i])]
    bounds = [cut for start, end in zip(starts, [*starts[1:], len(run)]) for cut in range(start, end, _MAX_MARKS + 1)]
    return [*bounds, len(run)]


def _cut(text: str, bounds: list[int]) -> list[str]:
    return [text[start:end] for start, end in zip(bounds, bounds[1:])]


def _fold_each(clusters: Iterable[str]) -> list[str]:
    """Each of ``clusters`` (a character and its combining marks) folded by itself.

    They are folded together, a NUL between two (a character that neither composes nor reorders
    with another, and that no run of non-ASCII text holds), so that the work is done in C.
    """
    folded = unicodedata.normalize("NFKC", "\0".join(clusters)).casefold()
    return (folded.translate(_FOLD) if _FOLDED.search(folded) else folded).split("\0")


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
    deadline = current_deadline()
    haystack = _Normalised(text, deadline)
    exact = _exact(needle, haystack, prefer, deadline)
    if exact is not None:
        return exact
    return _closest(needle, haystack, deadline)


def _exact(needle: str, haystack: _Normalised, prefer: tuple[int, int] | None, deadline: Deadline) -> QuoteMatch | None:
    first = None
    position = haystack.text.find(needle)
    for _ in range(MAX_EXACT_OCCURRENCES):
        if position == -1:
            break
        deadline.check()
        match = _match(haystack, position, position + len(needle), 1.0, exact=True)
        if prefer is None or prefer[0] <= match.start < prefer[1]:
            return match
        first = first or match
        position = haystack.text.find(needle, position + 1)
    return first


def _closest(needle: str, haystack: _Normalised, deadline: Deadline) -> QuoteMatch | None:
    """The passage most like ``needle`` at the candidate places, compared while :data:`MAX_ALIGN_PAIRS` lasts."""
    best: QuoteMatch | None = None
    budget = MAX_ALIGN_PAIRS
    needle_counts = Counter(needle)
    for start in _candidate_starts(needle, haystack.text, deadline):
        deadline.check()
        slack = len(needle) // 5 + SEED_CHARS
        low = max(0, start - slack)
        window = haystack.text[low : start + len(needle) + slack]
        pairs = sum(count * window.count(ch) for ch, count in needle_counts.items())
        if pairs > budget:
            continue
        budget -= pairs
        found = _align(needle, haystack, low, window)
        if found is not None and (best is None or found.ratio > best.ratio):
            best = found
    return best


def _candidate_starts(needle: str, text: str, deadline: Deadline) -> list[int]:
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
        deadline.check()
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


def _align(needle: str, haystack: _Normalised, low: int, window: str) -> QuoteMatch | None:
    """The passage of ``window`` (``haystack.text[low:]``) most like ``needle``: the run of matching blocks
    with the best ratio."""
    blocks = [b for b in SequenceMatcher(None, needle, window, autojunk=False).get_matching_blocks() if b.size]
    if not blocks:
        return None
    matched_before = list(accumulate((b.size for b in blocks), initial=0))

    def ratio(first: int, last: int) -> float:
        matched = matched_before[last + 1] - matched_before[first]
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
    begin, finish = _whole_characters(haystack.original, haystack.original_start(start), haystack.original_end(end))
    return QuoteMatch(begin, finish, round(ratio, 4), exact)


def _whole_characters(text: str, start: int, end: int) -> tuple[int, int]:
    """``text[start:end]`` widened to whole characters: a combining mark goes with the character before it
    (text folded a stretch at a time maps a character and its marks one to one)."""
    for _ in range(_MAX_MARKS):
        if not (0 < start < len(text) and unicodedata.combining(text[start]) and not text[start - 1].isspace()):
            break
        start -= 1
    for _ in range(_MAX_MARKS):
        if not (end < len(text) and unicodedata.combining(text[end])):
            break
        end += 1
    return start, end
