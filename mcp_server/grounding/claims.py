"""How an answer is read for the citation check: its citation brackets, its sentences, the claims in a text.

* **Citations.** :func:`citation_brackets` finds the square brackets that hold citation ids
  (``[handbook:hr/leave-policy#2]``, several separated by ``,`` or ``;``; an id written with its
  file name unescaped too, :mod:`mcp_server.citation_ids`), :func:`cited_ids` lists the ids, as
  the server writes them, and :func:`remove_citations` takes the brackets out of a text.
* **Sentences.** :func:`split_sentences` (and :func:`sentence_spans`, with offsets) cuts an
  answer into the sentences that are checked one by one, each keeping its citation brackets.
* **Claims.** :func:`claims_of` reads what a sentence asserts that can be looked up — numbers
  (with their scale: ``2.8 million``, ``2.8M``), identifiers, codes, dates and calendar names,
  and key terms (Chinese and Japanese text as character bigrams); :func:`index_cited_text`
  reads a cited text into everything such claims can be found as, and :func:`term_present`
  looks one key term up there. Words are stemmed by light suffix stripping with a shared-prefix
  fallback, deliberately not with :func:`client_agent.text.stem` (the agent's)'s Porter2.

Reading is linear in the text read, whatever its shape: the splitter goes from one terminator
or bracket to the next and never looks at a character again for each full stop after it; a
token is read once and remembered; a shared prefix is looked up (:class:`StemPrefixes`), not
compared with every stem; runs of more than 30 combining marks are cut for NFKC, which sorts
a run in quadratic time.

The rules these implement, and what the check does with them, are in :mod:`mcp_server.grounding.citations`.
"""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property, lru_cache
from typing import TypeVar, TypeVarTuple, Unpack

from mcp_server.citation_ids import canonical
from mcp_server.grounding.deadline import Deadline, current_deadline
from mcp_server.grounding.words import CJK_FUNCTION_CHARS, STOPWORDS, cjk_bigrams

# --------------------------------------------------------------------------- citation ids

_CORPUS = r"(?=[\w.-]*?[^\W\d_])[\w.-]+:"
"""A corpus name and its colon; with a letter, so that a time (``[10:30]``) is no citation."""
_CITATION_ID = re.compile(rf"{_CORPUS}[^\s\[\],;]+")
"""An id as the server writes it (:mod:`mcp_server.citation_ids`): a name, a colon, no spaces."""
_CORPUS_PREFIX = re.compile(rf"{_CORPUS}\S")

_BRACKET = re.compile(r"\[([^\[\]\n]+)\]")
_ID_SEPARATOR = re.compile(r"([,;])")


@dataclass(frozen=True)
class Bracket:
    """Where a citation bracket stands in its text, and the ids it holds (as the server writes them)."""

    start: int
    end: int
    ids: tuple[str, ...]


@lru_cache(maxsize=64)
def citation_brackets(text: str) -> tuple[Bracket, ...]:
    """Square brackets whose content is one or more citation ids (``[1]`` or ``[see above]`` are not).

    Ids may be separated by commas or semicolons and wrapped in backticks. Cached: checking one
    sentence reads its brackets several times (its ids, its text without them, its claims).
    """
    brackets = []
    for match in _BRACKET.finditer(text):
        if ids := _bracket_ids(match.group(1)):
            brackets.append(Bracket(match.start(), match.end(), ids))
    return tuple(brackets)


def _bracket_ids(content: str) -> tuple[str, ...]:
    """The ids a bracket's content cites, each as the server writes it, or () when it is no citation.

    An id written unescaped (``mydocs:Fire drill on Thursday#0``) counts when it has the shape of
    no ordinary bracketed note: a name and a colon, then no space, and a chunk number at the end.
    A comma or semicolon not followed by ``<corpus>:`` belongs to the file name of the id before it.
    """
    pieces = _ID_SEPARATOR.split(content)
    groups: list[list[str]] = []
    for at in range(0, len(pieces), 2):
        if groups and not _CORPUS_PREFIX.match(_bare(pieces[at])):
            groups[-1] += [pieces[at - 1], pieces[at]]
        elif _bare(pieces[at]):
            groups.append([pieces[at]])
    ids = [_cited("".join(group)) for group in groups]
    return tuple(cid for cid in ids if cid is not None) if ids and None not in ids else ()


def _bare(part: str) -> str:
    """``part`` without the spaces, backticks and trailing separators around it."""
    return part.strip().strip("`,;").strip()


def _cited(part: str) -> str | None:
    """The id ``part`` of a bracket cites, as the server writes it, or None when it is no id."""
    part = _bare(part)
    if not (_CITATION_ID.fullmatch(part) or _unescaped_chunk_id(part)):
        return None
    return canonical(part)


def _unescaped_chunk_id(text: str) -> bool:
    """``<corpus>:<doc_id>#<chunk>`` with the doc_id as the file name has it: starting and ending with no space."""
    body, separator, chunk = text.rpartition("#")
    return (
        bool(separator) and chunk.isascii() and chunk.isdigit() and body[-1:].strip() != ""
        and _CORPUS_PREFIX.match(body) is not None
    )  # fmt: skip


def unique(items: list[str]) -> list[str]:
    """``items`` without repeats, in order of first appearance."""
    return list(dict.fromkeys(items))


def remove_citations(text: str, replacement: str = "") -> str:
    """``text`` with every citation bracket replaced by ``replacement``."""
    parts, done = [], 0
    for bracket in citation_brackets(text):
        parts += [text[done : bracket.start], replacement]
        done = bracket.end
    return "".join(parts) + text[done:]


def cited_ids(answer: str) -> list[str]:
    """Every citation id in ``answer``, unique, in order of first appearance."""
    return unique([cid for bracket in citation_brackets(answer) for cid in bracket.ids])


# --------------------------------------------------------------------------- sentences

LINE_MARKER = r"(?:[-*+•·]|\d{1,3}[.)]|\([a-z]\)|[a-z]\)|>)"
"""A list item's bullet or number, or a quote's ">"."""
_LIST_MARKER = re.compile(rf"[ \t]*{LINE_MARKER}[ \t]+")
_HEADING_MARKER = re.compile(r"[ \t]*#{1,6}[ \t]+")
_FENCE = re.compile(r"[ \t]*(?:```|~~~)")
_TERMINATORS = ".!?"
_CJK_TERMINATORS = "。！？"
CLOSERS = "\"')»”’」』）*_"
_ABBREVIATIONS = {
    "e.g", "i.e", "cf", "vs", "approx", "incl", "excl", "esp", "resp", "viz", "mr", "mrs", "ms",
    "dr", "prof", "st", "jr", "sr", "ca", "dept", "ext", "min", "max",
}
"""Words whose full stop never ends a sentence."""
_ABBREVIATIONS_BEFORE_NUMBER = {"no", "nr", "fig", "p", "pp", "vol", "ch", "sec", "art", "v"}
"""Words whose full stop does not end a sentence when a number follows ("No. 5")."""
_LONGEST_ABBREVIATION = max(map(len, _ABBREVIATIONS | _ABBREVIATIONS_BEFORE_NUMBER | {"etc"}))
_NEXT_VISIBLE = re.compile(r"\s*(\S?)")
_STOP = re.compile(f"[{re.escape(_TERMINATORS + _CJK_TERMINATORS)}\\[]")
"""What may end a sentence, or start a citation bracket."""
_CJK_STOP = re.compile(f"[{_CJK_TERMINATORS}]")
_WORD_RUN = re.compile(r"[\w.]+")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class SentenceSpan:
    """Where a sentence stands in the answer, and whether it is a heading ("## Leave")."""

    start: int
    end: int
    heading: bool


class _Splitter:
    """Splits one answer into sentence spans; see :func:`split_sentences` for the rules."""

    def __init__(self, text: str) -> None:
        self.text = text
        brackets = citation_brackets(text)
        self.brackets = {b.start: b for b in brackets}
        self.bracket_ends = {b.end: b for b in brackets}
        self._content_ends: dict[int, int] = {}
        """Where a line's text ends once trailing citation brackets are stripped, by where the stripping began."""
        self._runs = [match.span() for match in _WORD_RUN.finditer(text)]
        self._run_starts = [run_start for run_start, _ in self._runs]
        self._first_letters: dict[int, int | None] = {}
        """Where the first letter of each run (by its number) is, once looked for."""

    def spans(self) -> list[SentenceSpan]:
        """The sentences, in order; stops with DeadlineExceeded once the current deadline has passed."""
        deadline = current_deadline()
        spans = []
        for start, end, heading in self._blocks(deadline):
            for s, e in self._sentences(start, end):
                deadline.check()
                while s < e and self.text[s].isspace():
                    s += 1
                while e > s and self.text[e - 1].isspace():
                    e -= 1
                if s < e:
                    spans.append(SentenceSpan(s, e, heading))
        return spans

    def _blocks(self, deadline: Deadline) -> list[tuple[int, int, bool]]:
        """Lines, list items, table rows and headings; a wrapped line continues an unfinished sentence.

        A line continues the previous one when that did not end its sentence and the line
        is not a list item, heading or table row, and does not start with a capital letter
        (unless the previous line ended with a comma): "… as it stands on\n31 December."
        """
        blocks: list[tuple[int, int, bool]] = []
        unfinished: str | None = None
        pos = 0
        for line in self.text.splitlines(keepends=True):
            deadline.check()
            start, pos = pos, pos + len(line)
            body = line.rstrip("\r\n")
            end = start + len(body)
            if not body.strip() or _FENCE.match(body):
                unfinished = None
                continue
            heading = _HEADING_MARKER.match(body)
            marker = heading or _LIST_MARKER.match(body)
            first = body.lstrip()[:1]
            table_row = first == "|"
            if unfinished and not marker and not table_row and (not first.isupper() or unfinished in ",;，；、"):
                blocks[-1] = (blocks[-1][0], end, False)
            else:
                blocks.append((start + (marker.end() if marker else 0), end, heading is not None))
            unfinished = None if heading or table_row else self._unfinished_tail(blocks[-1][0], end)
        return blocks

    def _unfinished_tail(self, start: int, end: int) -> str | None:
        """The last character of text[start:end] if it does not finish a sentence (or an intro ending in ":")."""
        tail = self._content_end(start, end)
        while tail > start and self.text[tail - 1] in CLOSERS + " \t":
            tail -= 1
        if tail == start or self.text[tail - 1] in _TERMINATORS + _CJK_TERMINATORS + ":：":
            return None
        return self.text[tail - 1]

    def _content_end(self, start: int, end: int) -> int:
        """Where text[start:end] ends without its trailing whitespace and citation brackets.

        Lines holding only brackets continue the line before them, so the stripping may run back
        over many lines; every position it passes is remembered, which keeps the whole answer's
        work linear.
        """
        passed = []
        position = end
        while (known := self._content_ends.get(position)) is None:
            passed.append(position)
            while position > start and self.text[position - 1].isspace():
                position -= 1
            bracket = self.bracket_ends.get(position)
            if bracket is None or bracket.start < start:
                known = position
                break
            position = bracket.start
        for position in passed:
            self._content_ends[position] = known
        return known

    def _sentences(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """The sentences of the block text[start:end], going from one terminator or bracket to the next.

        The end of the closing punctuation after a terminator is kept while later terminators fall
        inside it, so that a run of them ("!!!…") is not looked through again for each one.
        """
        text = self.text
        sentence_start = i = start
        closers_end = start
        while (stop := _STOP.search(text, i, end)) is not None:
            i = stop.start()
            if text[i] == "[":
                bracket = self.brackets.get(i)
                i = bracket.end if bracket is not None else i + 1
                continue
            closers_end = closers_end if i < closers_end else self._after_closers(i + 1, end)
            if text[i] in _CJK_TERMINATORS or self._ends_sentence(i, closers_end, start, end):
                boundary = self._after_citations(closers_end, end)
                yield sentence_start, boundary
                sentence_start = i = boundary
            elif not self._may_end(closers_end, end):  # "2.8", "...x": no terminator before it ends a sentence
                cjk = _CJK_STOP.search(text, i + 1, closers_end)
                i = cjk.start() if cjk else closers_end
            else:
                i += 1
        if sentence_start < end:
            yield sentence_start, end

    def _may_end(self, j: int, end: int) -> bool:
        """Whether a sentence may end before ``j``, where a terminator's closing punctuation ends: at the end of
        the block, or before a space or a citation bracket."""
        return j >= end or self.text[j].isspace() or j in self.brackets

    def _word_start(self, end: int) -> int | None:
        """Where the word ending at ``end`` starts: the first letter of the run of letters, digits, ``_`` and
        ``.`` holding text[end - 1] (None: no such run, or no letter in it before ``end``)."""
        run = bisect_right(self._run_starts, end - 1) - 1
        if run < 0 or self._runs[run][1] < end:
            return None
        if run not in self._first_letters:
            letter = _LETTER.search(self.text, *self._runs[run])
            self._first_letters[run] = letter.start() if letter else None
        first = self._first_letters[run]
        return first if first is not None and first < end else None

    def _after_closers(self, j: int, end: int) -> int:
        while j < end and self.text[j] in _TERMINATORS + _CJK_TERMINATORS + CLOSERS:
            j += 1
        return j

    def _after_citations(self, j: int, end: int) -> int:
        """Past citation brackets that follow a full stop: they belong to the sentence it ends."""
        k = j
        while True:
            while k < end and self.text[k] in " \t":
                k += 1
            bracket = self.brackets.get(k)
            if bracket is None or bracket.end > end:
                return j
            j = k = bracket.end

    def _ends_sentence(self, i: int, j: int, start: int, end: int) -> bool:
        """Whether the terminator at ``i`` of the block text[start:end], its closers running to ``j``, ends
        its sentence."""
        text = self.text
        if not self._may_end(j, end):
            return False  # "2.8", "v2.0", "example.com", "e.g" inside
        if text[i] != ".":
            return True
        word_end = i - 1 if i > start and text[i - 1] == "\n" else i  # a full stop opening a line ends its word
        word_start = self._word_start(word_end)
        if word_start is None or word_end - word_start > _LONGEST_ABBREVIATION:
            return True
        before = text[word_start:word_end].lower()
        visible = _NEXT_VISIBLE.match(text, j, end)
        following = visible[1] if visible else ""
        if before in _ABBREVIATIONS:
            return False
        if before in _ABBREVIATIONS_BEFORE_NUMBER and following.isdigit():
            return False
        return not (before == "etc" and following.islower())


def sentence_spans(answer: str) -> list[SentenceSpan]:
    """Where the sentences of :func:`split_sentences` stand in ``answer``."""
    return _Splitter(answer).spans()


def split_sentences(answer: str) -> list[str]:
    """The sentences of ``answer``, each with the citation brackets that belong to it.

    Lines, list items, table rows and headings are sentences of their own (list and heading
    markers are not part of the text; a wrapped line that does not start with a capital
    letter continues a line that did not finish its sentence; fenced code lines are lines).
    Inside a line, a sentence ends at ``.``, ``!`` or ``?`` followed by a space, or at
    ``。！？``; not at decimals ("2.8 million"), versions ("v2.0"), addresses, abbreviations
    ("e.g.", "No. 5") or inside citation brackets. Brackets right after a full stop belong
    to the sentence it ends ("… 150 minutes. [a:b#1]").
    """
    return [answer[span.start : span.end] for span in sentence_spans(answer)]


# --------------------------------------------------------------------------- claims in text

_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK_CHARS}]+)|(?P<word>[^\W_{_CJK_CHARS}]+(?:[-_./:][^\W_{_CJK_CHARS}]+)*)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_NUMBER_WITH_UNIT = re.compile(r"(\d+(?:\.\d+)?)([^\W\d_]{1,3})")
_DATE_OR_TIME = re.compile(r"\d{4}[-/.]\d{1,2}(?:[-/.]\d{1,2})?|\d{1,2}:\d{2}(?::\d{2})?|\d+(?:\.\d+){2,}")
_WORD_JOINERS = re.compile(r"[-./:]")
_CODE_PARTS = re.compile(r"[-_./:]")
_ISO_MONTH = re.compile(r"\d{4}-(\d{1,2})(?:-\d{1,2})?")
_SCALE_AFTER = re.compile(r"\s*(thousand|million|billion|trillion|mn|bn)\b|(百万|万|亿|千)", re.IGNORECASE)
_SCALES = {
    "k": 1_000, "thousand": 1_000, "千": 1_000, "万": 10_000, "m": 1_000_000, "mn": 1_000_000,
    "million": 1_000_000, "百万": 1_000_000, "亿": 100_000_000, "b": 1_000_000_000, "bn": 1_000_000_000,
    "billion": 1_000_000_000, "trillion": 1_000_000_000_000,
}
_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "hundred": 100, "dozen": 12, "half": 0.5,
}
_MONTHS = [
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
]
_CALENDAR = {m: m for m in _MONTHS} | {m[:3]: m for m in _MONTHS} | {"sept": "september"} | {
    d: d for d in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
}
"""Month and weekday names (and abbreviations) → canonical name: dates, so always required."""
_AMBIGUOUS_CALENDAR = {"may", "mar", "jan", "sat", "sun", "wed"}
"""Calendar words that are ordinary words in lower case ("may", "sun")."""

_STOPWORDS = STOPWORDS | frozenset(
    """
    according across additionally almost although always among another answer answers anyone
    anything aren around base cannot citation citations cite cited cites couldn currently d
    described describes didn document documentation documents doesn don either else enough even
    every evidence finds found furthermore gets getting given gives go goes going hasn haven hence
    however information isn knowledge least less like ll m made make makes mention mentioned
    mentions moreover neither note noted notes o often ok okay one onto others otherwise overall
    passage passages per perhaps quite rather re really result results retrieved s said say says
    shouldn shown shows since something source sources specifically state stated states summary sure
    t text therefore thing things though thus together toward towards upon use used uses using ve
    via wasn way well weren whatever whenever whether whose within without won wouldn y yes yet
    """.split()
)
"""The shared function words, plus hedges and words about the evidence itself: they carry no claim to check."""


@dataclass(frozen=True)
class Number:
    """A number as written, and every value it may stand for (``2.8 million``: 2.8 and 2,800,000)."""

    text: str
    values: frozenset[Decimal]


@dataclass(frozen=True)
class Term:
    """A key term as written, the key it is matched by, and its weight (capitalised names count double)."""

    text: str
    key: str
    """A stem for words, the bigram itself for CJK text."""
    weight: int
    number: Decimal | None = None
    """The value of a number word ("three"), which a digit in the cited text also matches."""


@dataclass
class Claims:
    """What a piece of text asserts that can be looked up: numbers, codes, key terms."""

    numbers: list[Number] = field(default_factory=list)
    codes: list[tuple[str, str]] = field(default_factory=list)
    """(as written, normalised) — identifiers, dates and calendar names; each must appear."""
    terms: list[Term] = field(default_factory=list)
    digit_codes: bool = False
    """Whether a code is all digits (a date, time or version): such a sentence states a number."""
    word_count: int = 0

    @property
    def states_number(self) -> bool:
        return bool(self.numbers) or self.digit_codes

    def add(self, other: Claims) -> None:
        """Add ``other``'s numbers, codes and terms (not its word count) to these."""
        self.numbers += other.numbers
        self.codes += other.codes
        self.terms += other.terms
        self.digit_codes |= other.digit_codes


@dataclass
class CitedIndex:
    """The cited text, ready for look-ups."""

    numbers: set[Decimal] = field(default_factory=set)
    codes: set[str] = field(default_factory=set)
    stems: set[str] = field(default_factory=set)
    bigrams: set[str] = field(default_factory=set)
    """CJK bigrams and single characters."""

    def add(self, other: CitedIndex) -> None:
        """Add everything ``other`` holds to this index."""
        self.numbers |= other.numbers
        self.codes |= other.codes
        self.stems |= other.stems
        self.bigrams |= other.bigrams

    @cached_property
    def prefixes(self) -> StemPrefixes:
        """The stems, arranged for matching by shared prefix (built on the first such look-up)."""
        return StemPrefixes(self.stems)


_PREFIX_MIN = 5
"""Fewest leading characters two words must share to match by prefix (and the shortest such word)."""
_PREFIX_SHARE = 0.75
"""The share of the shorter word that the shared leading characters must cover."""
_PREFIX_LONGEST = 64
"""Words longer than this match only exactly: no natural word is, and the bound fixes a look-up's cost."""


def _prefix_key(word: str) -> str:
    """What a longer word must start with to match ``word`` by prefix: its first 5 characters, and at
    least three quarters of it."""
    return word[: max(_PREFIX_MIN, math.ceil(_PREFIX_SHARE * len(word)))]


class StemPrefixes:
    """Stems looked up by shared prefix ("approval"/"approve", "manager"/"management"): two words of 5 to
    64 characters match when they share their first 5 characters and at least three quarters of the
    shorter one.

    Whichever of the two words is the shorter, the longer one starts with the shorter one's
    :func:`_prefix_key`; so the stems matching a word are those starting with the word's key (a
    run of the sorted stems, found by bisection) and those whose key the word starts with (one
    look-up per length a key may have). Finding whether one matches costs the same however many
    stems there are.
    """

    def __init__(self, stems: Iterable[str]) -> None:
        eligible = sorted(stem for stem in set(stems) if _PREFIX_MIN <= len(stem) <= _PREFIX_LONGEST)
        self._sorted = eligible
        self._by_key: dict[str, list[str]] = {}
        for stem in eligible:
            self._by_key.setdefault(_prefix_key(stem), []).append(stem)
        self._key_lengths = sorted({len(key) for key in self._by_key})

    def match(self, word: str) -> bool:
        """Whether a stem and ``word`` share a long enough prefix."""
        return next(self.matching(word), None) is not None

    def matching(self, word: str) -> Iterator[str]:
        """The stems sharing a long enough prefix with ``word`` (one may come twice)."""
        if not _PREFIX_MIN <= len(word) <= _PREFIX_LONGEST:
            return
        key = _prefix_key(word)
        for position in range(bisect_left(self._sorted, key), len(self._sorted)):
            if not self._sorted[position].startswith(key):
                break
            yield self._sorted[position]
        for length in self._key_lengths:
            if length > len(word):
                break
            yield from self._by_key.get(word[:length], ())


def _normalise(text: str) -> str:
    """Citation brackets out, thousands separators out, full-width forms folded (１２ → 12)."""
    return unicodedata.normalize("NFKC", _stream_safe(_THOUSANDS.sub("", remove_citations(text, " "))))


_LONG_SYMBOL_RUN = re.compile(r"[^\w\s]{31,}")
_JOINER = "\u034f"
"""COMBINING GRAPHEME JOINER: a starter that neither composes nor shows."""


def _stream_safe(text: str) -> str:
    """``text`` with a joiner after every 30 characters of a longer run of symbols and combining marks.

    NFKC puts a run of combining marks in canonical order by insertion sort, in time quadratic in
    the run's length; the joiner bounds the runs it sorts, as Unicode's Stream-Safe Text Format
    does. Combining marks are never word characters, so no token changes.
    """
    return _LONG_SYMBOL_RUN.sub(lambda run: _JOINER.join(run[0][k : k + 30] for k in range(0, len(run[0]), 30)), text)


def _code_key(token: str) -> str:
    return "".join(ch for ch in token.lower() if ch.isalnum())


def _stem(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s", "ly", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _number(text: str, scale_word: str | None) -> Number:
    value = Decimal(text)
    scale = _SCALES.get(scale_word.lower()) if scale_word else None
    values = {value} if scale is None else {value, value * scale}
    return Number(text + (scale_word or ""), frozenset(values))


def _scale_after(text: str, end: int) -> str | None:
    match = _SCALE_AFTER.match(text, end)
    return (match.group(1) or match.group(2)) if match else None


def _is_compound(token: str) -> bool:
    """``10-day``, ``24-hour``: numbers and lower-case words joined by hyphens (not a code)."""
    parts = token.split("-")
    return (
        len(parts) > 1
        and all(p.isdigit() or (p.isalpha() and p.islower()) for p in parts)
        and any(p.isalpha() for p in parts)
    )


def claims_of(sentence: str) -> Claims:
    """The numbers, codes and key terms of one sentence."""
    text = _normalise(sentence)
    claims = Claims()
    first_word = True
    for match in _TOKEN.finditer(text):
        if match.group("cjk"):
            claims.word_count += len(match.group("cjk"))
            claims.terms += [Term(gram, gram, 1) for gram in cjk_bigrams(match.group("cjk"), CJK_FUNCTION_CHARS)]
            first_word = False
            continue
        token = match.group("word")
        claims.word_count += 1
        if _PLAIN_NUMBER.fullmatch(token):
            claims.numbers.append(_number(token, _scale_after(text, match.end())))
        else:
            claims.add(_word_claims(token, first_word))
        first_word = False
    return claims


_REMEMBERED_TOKEN_CHARS = 64
R = TypeVar("R")
Ts = TypeVarTuple("Ts")


def _remembered(read: Callable[[str, Unpack[Ts]], R]) -> Callable[[str, Unpack[Ts]], R]:
    """``read`` (of a token), its results for tokens of up to 64 characters remembered: words repeat, in every
    answer and every text. The results are shared: callers must not change them."""
    cached = lru_cache(maxsize=16_384)(read)

    def remembered(token: str, *args: Unpack[Ts]) -> R:
        return (cached if len(token) <= _REMEMBERED_TOKEN_CHARS else read)(token, *args)

    return remembered


@_remembered
def _word_claims(token: str, first_word: bool) -> Claims:
    """What ``token``, any token but a plain number (whose scale is in the words after it), claims: a number
    with a unit, words, a compound, a range of numbers, or a code."""
    claims = Claims()
    if unit := _NUMBER_WITH_UNIT.fullmatch(token):
        claims.numbers.append(_number(unit.group(1), unit.group(2)))
        return claims
    has_digit = any(ch.isdigit() for ch in token)
    if not has_digit and "_" not in token:
        for part in _WORD_JOINERS.split(token):
            _add_word(part, claims, capitalised=not first_word and part[:1].isupper())
        return claims
    if has_digit and _is_compound(token):
        for part in token.split("-"):
            if part.isdigit():
                claims.numbers.append(_number(part, None))
            else:
                _add_word(part, claims, capitalised=False)
        return claims
    if all(ch.isdigit() or ch in "-/.:" for ch in token) and not _DATE_OR_TIME.fullmatch(token):
        claims.numbers += [_number(part, None) for part in re.findall(r"\d+", token)]  # 10-15, 1024/32
        return claims
    claims.codes.append((token, _code_key(token)))
    claims.digit_codes |= not any(ch.isalpha() for ch in token)
    return claims


def _add_word(word: str, claims: Claims, *, capitalised: bool) -> None:
    lower = word.lower()
    calendar = _CALENDAR.get(lower)
    if calendar and (word[:1].isupper() or lower not in _AMBIGUOUS_CALENDAR):
        claims.codes.append((word, calendar))
        return
    if len(lower) < 2 or lower in _STOPWORDS or lower.isdigit():
        return
    number = _NUMBER_WORDS.get(lower)
    claims.terms.append(
        Term(word, _stem(lower), 2 if capitalised else 1, None if number is None else Decimal(str(number)))
    )


@lru_cache(maxsize=256)
def index_cited_text(cited_text: str) -> CitedIndex:
    """:func:`index_text`, cached: an answer's sentences, and its revisions, cite the same texts."""
    return index_text(cited_text)


def index_text(text: str) -> CitedIndex:
    """Everything in ``text`` a sentence's claims can be found as."""
    text = _normalise(text)
    index = CitedIndex()
    for match in _TOKEN.finditer(text):
        if run := match.group("cjk"):
            index.bigrams.update(cjk_bigrams(run, CJK_FUNCTION_CHARS))
            index.bigrams.update(run)  # single characters, for a sentence's one-character runs
            continue
        token = match.group("word")
        if _PLAIN_NUMBER.fullmatch(token):
            index.numbers |= _number(token, _scale_after(text, match.end())).values
        else:
            index.add(_word_index(token))
    return index


@_remembered
def _word_index(token: str) -> CitedIndex:
    """What ``token``, any token but a plain number, can be found as: its numbers, stems and codes; a spelled
    number ("five") is also its value, and a code's parts are findable too: ``X3-Pro`` supplies ``x3``,
    ``CHG-2025-0612-03`` the number 2025, ``2024-05-01`` the month May."""
    claims = _word_claims(token, False)  # as a later word: a capital letter weighs nothing in an index
    index = CitedIndex(
        numbers={value for number in claims.numbers for value in number.values},
        codes={key for _, key in claims.codes},
        stems={term.key for term in claims.terms},
    )
    if (spelled := _NUMBER_WORDS.get(token.lower())) is not None:
        index.numbers.add(Decimal(str(spelled)))
    if claims.codes and any(ch.isdigit() for ch in token):
        index.codes.update(_code_key(part) for part in _CODE_PARTS.split(token) if part)
        index.numbers.update(Decimal(digits) for digits in re.findall(r"\d+", token))
        if (month := _ISO_MONTH.fullmatch(token)) and 1 <= (number := int(month.group(1))) <= 12:
            index.codes.add(_MONTHS[number - 1])
    return index


def term_present(term: Term, cited: Sequence[CitedIndex]) -> bool:
    """Whether one of the cited texts has ``term``: its stem or bigram, a spelled number's value, or (looked
    for last) a long shared prefix with one of its stems (:class:`StemPrefixes`, light stemming's safety net)."""
    for index in cited:
        if term.key in index.stems or term.key in index.bigrams:
            return True
        if term.number is not None and term.number in index.numbers:
            return True
    return any(index.prefixes.match(term.key) for index in cited)

