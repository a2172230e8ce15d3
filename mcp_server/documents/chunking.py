"""Heading-aware chunking of document text, and the token estimate that sizes chunks.

How a text is cut:

1. **Sections.** Markdown ATX headings (``#`` to ``######`` followed by a space, outside
   fenced code blocks) start sections. A section's label is its heading path joined with
   ``' > '``, e.g. ``'Annual leave > Entitlement'``; text before the first heading has
   the label ``''``. A loader may give other headings (reStructuredText, AsciiDoc, code) and
   page breaks, which end a section without changing its heading path; nothing merges
   across a page break, so a chunk of a paged document lies on one page.
2. **Small sections merge forward.** A section under ``SMALL_SECTION_TOKENS`` estimated
   tokens (or under half of ``target_tokens``, if that is smaller) - typically a heading
   followed at once by a subheading - is not emitted alone: it becomes the beginning of
   the next section, provided that one shares its parent (is a sibling or a descendant).
   The merged text is labelled with the section it was merged *into* when the small
   sections are its ancestors (``'## Annual leave'`` followed at once by ``'### Entitlement'``
   gives ``'Annual leave > Entitlement'``); when a small sibling was merged, it is labelled
   with the heading path both share, so no text carries a heading it is not under.
3. **One chunk per section when it fits.** A section (heading line included) of at most
   ``max_tokens`` is one chunk.
4. **Longer sections are split**, preferring, in order: paragraph breaks (a blank line),
   sentence ends (English ``.!?`` followed by a space, Chinese ``。！？；``) and line breaks,
   then spaces (and Chinese ``，、：``), and as a last resort any character. Each chunk
   aims at ``target_tokens`` (at least half of it, at most ``max_tokens``) and the next
   chunk of the same section starts by repeating up to ``overlap_tokens`` of its end:
   as many whole sentences as fit, or as many words when even the last sentence is longer.

Every chunk is a span of the text: ``text[chunk.char_start:chunk.char_end]`` is the chunk
text. Spans neither start nor end with whitespace, and together they cover every
non-whitespace character of the text. The result depends on the text and options only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from itertools import accumulate, takewhile
from typing import NamedTuple

from mcp_server.analyzer.scripts import CJK
from mcp_server.errors import IngestError

SECTION_SEPARATOR = " > "
SMALL_SECTION_TOKENS = 40

# CJK letters (the analyzer's range, mcp_server.analyzer.scripts) count one token per character;
# CJK and full-width punctuation too, and it is a chunking boundary.
_CJK_PUNCTUATION = "\u3001-\u303f\uff01-\uffef"
# A token: a Latin word (letters and digits), or any other single non-space character.
_TOKEN_RE = re.compile(rf"(?P<word>[^\W_{CJK}]+)|\S")
_ATOM_RE = re.compile(rf"[{CJK}{_CJK_PUNCTUATION}]|[^\s{CJK}{_CJK_PUNCTUATION}]+")
_LATIN_SENTENCE_END_RE = re.compile(r"[.!?][\"'”’)\]]*$")
_CJK_SENTENCE_ENDS = ("。", "！", "？", "；")
_CJK_CLAUSE_ENDS = ("，", "、", "：")
_BLOCK_LINE_START_RE = re.compile(r"[-*+|>#]|\d+[.)]")

_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")
_HEADING_START_RE = re.compile(r" {0,3}(#{1,6})[ \t]+")

# Strength of the boundary before an atom: where a chunk would rather end.
_CHARACTER, _WORD, _SENTENCE, _PARAGRAPH = range(4)


@dataclass(frozen=True)
class ChunkingOptions:
    """How documents are cut into chunks; all sizes in estimated tokens.

    ``target_tokens`` is the size a chunk aims at, ``max_tokens`` the size no chunk
    exceeds, and ``overlap_tokens`` roughly how much text consecutive chunks of one
    section share. Token counts come from ``chunking.estimate_tokens``.
    """

    target_tokens: int = 220
    max_tokens: int = 300
    overlap_tokens: int = 40

    def __post_init__(self) -> None:
        for option in fields(self):
            value = getattr(self, option.name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise IngestError(f"Chunking option {option.name} must be a positive integer, got {value!r}.")
        if not self.overlap_tokens < self.target_tokens <= self.max_tokens:
            raise IngestError(
                "Chunking options must satisfy overlap_tokens < target_tokens <= max_tokens, got "
                f"overlap_tokens={self.overlap_tokens}, target_tokens={self.target_tokens}, "
                f"max_tokens={self.max_tokens}."
            )


@dataclass(frozen=True)
class Chunk:
    """One chunk: its number in the document, its span of the text, its heading path."""

    index: int
    char_start: int
    char_end: int
    section: str


@dataclass(frozen=True)
class Heading:
    """An ATX heading outside fenced code: offset of its line, level (1-6) and title."""

    start: int
    level: int
    title: str


def estimate_tokens(text: str) -> int:
    """Approximate number of WordPiece tokens (as a MiniLM/BERT tokenizer would count them).

    Cheap and deterministic: a Latin word (a run of letters and digits) counts 1.3 tokens,
    or one token per 6 characters when longer (identifiers, hashes and URL parts break
    into many word pieces); each CJK character counts 1, and so does each punctuation
    mark or symbol (``_`` included). Whitespace counts nothing. The total is rounded up.
    """
    return -(-_tenths(text) // 10)


def find_headings(text: str) -> list[Heading]:
    """The ATX headings of a Markdown text, in order, skipping fenced code blocks."""
    headings: list[Heading] = []
    fence: str | None = None
    for start, line in lines_with_offsets(text):
        if fence is not None:
            fence = None if _closes_fence(line, fence) else fence
        elif opening := _FENCE_RE.match(line):
            fence = opening.group(1)
        elif heading := _atx_heading(line):
            headings.append(Heading(start, *heading))
    return headings


def _atx_heading(line: str) -> tuple[int, str] | None:
    """The level and text of an ATX heading line (``## Title ##``), else None; in time linear in the line.

    The closing run of ``#`` counts only after a space or tab; a heading of only ``#`` keeps them.
    """
    opening = _HEADING_START_RE.match(line)
    if opening is None:
        return None
    text = line[opening.end() :].removesuffix("\r").rstrip(" \t")
    unclosed = text.rstrip("#")
    if unclosed != text and unclosed.endswith((" ", "\t")):
        text = unclosed
    text = text.strip()
    return (len(opening.group(1)), text) if text else None


def split_into_chunks(
    text: str, options: ChunkingOptions, headings: Sequence[Heading] | None = None, breaks: Sequence[int] = ()
) -> list[Chunk]:
    """Cut ``text`` into heading-aware chunks (see the module docstring); ``[]`` for blank text.

    ``headings`` (in order, each starting a line) replace the Markdown headings of ``text``
    for texts whose sections are marked otherwise. ``breaks`` are offsets (page starts) that
    end a section like a heading does, without changing the heading path: no chunk spans
    one, however small the pieces on either side (a citation names exactly one page).
    """
    small = min(SMALL_SECTION_TOKENS, options.target_tokens // 2)
    chunks: list[Chunk] = []
    for section in _merge_small_sections(text, _broken(_sections(text, headings), breaks), small):
        run = _AtomRun(list(_atoms(text, section.start, section.end, options)))
        for first, stop in _pack(run, options):
            start, end = run.span(first, stop)
            chunks.append(Chunk(len(chunks), start, end, section.label))
    return chunks


def _tenths(text: str) -> int:
    """Ten times the token estimate, before rounding (so sums over pieces stay exact)."""
    return sum(_match_tenths(match) for match in _TOKEN_RE.finditer(text))


@lru_cache(maxsize=1 << 16)
def _atom_tenths(atom: str) -> int:
    """``_tenths`` of one atom; atoms (words, characters) repeat a lot, so they are cached."""
    return _tenths(atom)


def _match_tenths(match: re.Match[str]) -> int:
    word = match.group("word")
    return max(13, -(-10 * len(word) // 6)) if word else 10


def lines_with_offsets(text: str) -> Iterator[tuple[int, str]]:
    """Each line of ``text`` (without its newline) with the offset where it starts."""
    start = 0
    for line in text.split("\n"):
        yield start, line
        start += len(line) + 1


def _closes_fence(line: str, fence: str) -> bool:
    closing = _FENCE_RE.match(line)
    return (
        closing is not None
        and closing.group(1)[0] == fence[0]
        and len(closing.group(1)) >= len(fence)
        and not line[closing.end() :].strip()
    )


@dataclass(frozen=True)
class _Section:
    """A span of the text under one heading path (``path``: enclosing headings, outermost first)."""

    start: int
    end: int
    path: tuple[Heading, ...]
    at_break: bool = False
    """It starts at a page break: nothing before it merges into it."""

    @property
    def label(self) -> str:
        return SECTION_SEPARATOR.join(heading.title for heading in self.path)

    def shares_parent_with(self, following: _Section) -> bool:
        parent = self.path[:-1]
        return following.path[: len(parent)] == parent

    def absorbing(self, earlier: _Section) -> _Section:
        """This section extended back over ``earlier`` (which ends where it starts).

        It keeps its own heading path when ``earlier`` is one of its ancestors; otherwise
        the path both share, so that no text is labelled with a heading it is not under.
        """
        if self.path[: len(earlier.path)] == earlier.path:
            return _Section(earlier.start, self.end, self.path, earlier.at_break)
        shared = sum(1 for _ in takewhile(lambda pair: pair[0] == pair[1], zip(self.path, earlier.path, strict=False)))
        return _Section(earlier.start, self.end, self.path[:shared], earlier.at_break)


def sections(text: str, headings: Sequence[Heading] | None = None) -> list[tuple[int, int, str]]:
    """``(start, end, label)`` of the consecutive sections of ``text``, small ones not merged."""
    return [(section.start, section.end, section.label) for section in _sections(text, headings)]


def _sections(text: str, headings: Sequence[Heading] | None) -> list[_Section]:
    """Consecutive spans covering ``text``: one before the first heading, one per heading."""
    headings = find_headings(text) if headings is None else headings
    boundaries = [*(heading.start for heading in headings), len(text)]
    sections = [_Section(0, boundaries[0], ())] if boundaries[0] > 0 else []
    path: tuple[Heading, ...] = ()
    for heading, end in zip(headings, boundaries[1:], strict=True):
        path = (*(outer for outer in path if outer.level < heading.level), heading)
        sections.append(_Section(heading.start, end, path))
    return sections


def _broken(sections: list[_Section], breaks: Sequence[int]) -> list[_Section]:
    """``sections`` split at every offset of ``breaks`` inside one (the pieces keep its heading path)."""
    pieces = []
    starts = set(breaks)
    for section in sections:
        start = section.start
        for offset in sorted(b for b in breaks if section.start < b < section.end):
            pieces.append(_Section(start, offset, section.path, start in starts))
            start = offset
        pieces.append(_Section(start, section.end, section.path, start in starts))
    return pieces


def _merge_small_sections(text: str, sections: list[_Section], small_tokens: int) -> list[_Section]:
    """Sections with each small one folded into the start of the next one of the same parent."""
    merged: list[_Section] = []
    carried: _Section | None = None
    for index, section in enumerate(sections):
        following = sections[index + 1] if index + 1 < len(sections) else None
        current = section if carried is None else section.absorbing(carried)
        if (
            following is not None
            and not following.at_break
            and section.shares_parent_with(following)
            and estimate_tokens(text[current.start : current.end]) < small_tokens
        ):
            carried = current
        else:
            merged.append(current)
            carried = None
    return merged


class _Atom(NamedTuple):
    """The smallest piece a chunk boundary never cuts: a word, a CJK character or mark.

    ``boundary`` is the strength of the break just before it (``_CHARACTER`` ... ``_PARAGRAPH``).
    """

    start: int
    end: int
    tenths: int
    boundary: int


def _atoms(text: str, start: int, end: int, options: ChunkingOptions) -> Iterator[_Atom]:
    """The atoms of ``text[start:end]``; an atom over ``max_tokens`` is cut into small pieces."""
    previous: re.Match[str] | None = None
    for match in _ATOM_RE.finditer(text, start, end):
        gap = "" if previous is None else text[previous.end() : match.start()]
        boundary = _PARAGRAPH if previous is None else _boundary(previous[0], gap, match[0])
        tenths = _atom_tenths(match[0])
        if tenths <= 10 * options.max_tokens:
            yield _Atom(match.start(), match.end(), tenths, boundary)
        else:
            yield from _cut(text, match.start(), match.end(), boundary, 10 * max(1, options.overlap_tokens // 2))
        previous = match


def _boundary(previous: str, gap: str, following: str) -> int:
    """Strength of the break between the atoms ``previous`` and ``following``, ``gap`` apart.

    A single line break inside a paragraph is usually a soft wrap, so it counts as a
    sentence break only when the next line starts a list item, table row, quote or heading.
    """
    newlines = gap.count("\n")
    if newlines >= 2:
        return _PARAGRAPH
    if (
        (newlines and _BLOCK_LINE_START_RE.match(following))
        or previous.endswith(_CJK_SENTENCE_ENDS)
        or (gap and _LATIN_SENTENCE_END_RE.search(previous))
    ):
        return _SENTENCE
    return _WORD if gap or previous.endswith(_CJK_CLAUSE_ENDS) else _CHARACTER


def _cut(text: str, start: int, end: int, boundary: int, limit_tenths: int) -> Iterator[_Atom]:
    """``text[start:end]`` (one run without spaces) as pieces of at most ``limit_tenths``.

    The last-resort split: only for runs too long for any chunk, like a pasted hash.
    """
    while start < end:
        stop = _longest_prefix_end(text, start, end, limit_tenths)
        yield _Atom(start, stop, _tenths(text[start:stop]), boundary)
        start, boundary = stop, _CHARACTER


def _longest_prefix_end(text: str, start: int, end: int, limit_tenths: int) -> int:
    """The largest ``stop`` with ``_tenths(text[start:stop]) <= limit_tenths`` (at least one character)."""
    # Every character adds at least 10/6 tenths, so the prefix is never longer than this.
    low, high = start + 1, min(end, start + limit_tenths * 6 // 10 + 1)
    while low < high:
        middle = (low + high + 1) // 2
        if _tenths(text[start:middle]) <= limit_tenths:
            low = middle
        else:
            high = middle - 1
    return low


class _AtomRun:
    """The atoms of one section, with prefix sums for the token count of any range of them.

    Atoms split the text only where no token continues, so the count of a range is
    ``estimate_tokens`` of its span; for pieces of a cut run it is an upper bound.
    """

    def __init__(self, atoms: list[_Atom]) -> None:
        self._atoms = atoms
        self._prefix = list(accumulate((atom.tenths for atom in atoms), initial=0))

    def __len__(self) -> int:
        return len(self._atoms)

    def tokens(self, first: int, stop: int) -> int:
        return -(-(self._prefix[stop] - self._prefix[first]) // 10)

    def boundary(self, index: int) -> int:
        return self._atoms[index].boundary

    def span(self, first: int, stop: int) -> tuple[int, int]:
        return self._atoms[first].start, self._atoms[stop - 1].end


def _pack(run: _AtomRun, options: ChunkingOptions) -> Iterator[tuple[int, int]]:
    """Atom ranges ``[first, stop)`` of a section's chunks, consecutive ones overlapping."""
    first = new = 0
    while new < len(run):
        if run.tokens(first, new + 1) > options.max_tokens:
            first = new  # the overlap and the next atom do not fit together: drop the overlap
        stop = _chunk_stop(run, first, new, options)
        yield first, stop
        first, new = _overlap_start(run, first, stop, options), stop


def _chunk_stop(run: _AtomRun, first: int, new: int, options: ChunkingOptions) -> int:
    """Where a chunk starting at atom ``first`` (new text from ``new``) should end."""
    if run.tokens(first, len(run)) <= options.max_tokens:
        return len(run)
    fitting = []
    stop = new + 1
    while stop < len(run) and run.tokens(first, stop) <= options.max_tokens:
        fitting.append(stop)
        stop += 1
    large_enough = [stop for stop in fitting if run.tokens(first, stop) >= options.target_tokens // 2]
    if not large_enough:
        return fitting[-1] if fitting else new + 1
    return max(
        large_enough,
        key=lambda stop: (run.boundary(stop), -abs(run.tokens(first, stop) - options.target_tokens)),
    )


def _overlap_start(run: _AtomRun, first: int, stop: int, options: ChunkingOptions) -> int:
    """Where the chunk after ``[first, stop)`` starts, so that it repeats that chunk's end.

    The overlap is the most whole sentences that fit in ``overlap_tokens``, else as many
    words (or characters) as fit; it is never the whole previous chunk.
    """
    fitting = []
    start = stop - 1
    while start > first and run.tokens(start, stop) <= options.overlap_tokens:
        fitting.append(start)
        start -= 1
    sentence_starts = [start for start in fitting if run.boundary(start) >= _SENTENCE]
    if sentence_starts:
        return sentence_starts[-1]
    return fitting[-1] if fitting else stop
