"""The second step of the citation check: what a text asserts that can be looked up, and where to look.

:func:`claims_of` reads what a sentence asserts — numbers (with their scale: ``2.8 million``,
``2.8M``), identifiers, codes, dates and calendar names, and key terms (Chinese and Japanese
text as character bigrams); :func:`index_cited_text` reads a cited text into everything such
claims can be found as. Both read with the analyzer (:mod:`mcp_server.analyzer`): its tokens,
its numbers, its month list and its stemmer (Porter2, the keyword index's), with a
shared-prefix fallback (:class:`StemPrefixes`) for derived words Porter2 leaves apart.

For the check of an answer, :func:`claims_of_answer` reads each of its sentences (from
:func:`~mcp_server.grounding.sentences.read_answer`) once: its claims, and whether it is
factual (:func:`is_factual`), so must be cited and supported.

Reading is linear in the text read, whatever its shape: a token is read once and remembered;
a shared prefix is looked up (:class:`StemPrefixes`), not compared with every stem; runs of
more than 30 combining marks are cut for NFKC, which sorts a run in quadratic time.
"""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property, lru_cache
from typing import NamedTuple, TypeVar, TypeVarTuple, Unpack

from mcp_server.analyzer.dates import calendar_name, iso_month
from mcp_server.analyzer.numbers import (
    DATE_OR_TIME,
    NUMBER_WITH_UNIT,
    PLAIN_NUMBER,
    Number,
    drop_thousands_separators,
    number,
    scale_after,
    spelled_number,
)
from mcp_server.analyzer.stems import root
from mcp_server.analyzer.tokens import JOINERS, TOKEN
from mcp_server.analyzer.words import CJK_FUNCTION_CHARS, STOPWORDS, cjk_bigrams
from mcp_server.analyzer.sentences import CLOSERS
from mcp_server.grounding.deadline import current_deadline
from mcp_server.grounding.sentences import AnswerSentence, remove_citations

_WORD_JOINERS = re.compile(r"[-./:]")
"""What joins the words of a token with no digits into parts ("e-bike"); ``_`` joins an identifier."""

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
    return unicodedata.normalize("NFKC", _stream_safe(drop_thousands_separators(remove_citations(text, " "))))


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
    for match in TOKEN.finditer(text):
        if run := match.group("cjk"):
            claims.word_count += len(run)
            claims.terms += [Term(gram, gram, 1) for gram in cjk_bigrams(run, CJK_FUNCTION_CHARS)]
            first_word = False
            continue
        token = match.group("word")
        claims.word_count += 1
        if PLAIN_NUMBER.fullmatch(token):
            claims.numbers.append(number(token, scale_after(text, match.end())))
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
    if unit := NUMBER_WITH_UNIT.fullmatch(token):
        claims.numbers.append(number(unit.group(1), unit.group(2)))
        return claims
    has_digit = any(ch.isdigit() for ch in token)
    if not has_digit and "_" not in token:
        for part in _WORD_JOINERS.split(token):
            _add_word(part, claims, capitalised=not first_word and part[:1].isupper())
        return claims
    if has_digit and _is_compound(token):
        for part in token.split("-"):
            if part.isdigit():
                claims.numbers.append(number(part, None))
            else:
                _add_word(part, claims, capitalised=False)
        return claims
    if all(ch.isdigit() or ch in "-/.:" for ch in token) and not DATE_OR_TIME.fullmatch(token):
        claims.numbers += [number(part, None) for part in re.findall(r"\d+", token)]  # 10-15, 1024/32
        return claims
    claims.codes.append((token, _code_key(token)))
    claims.digit_codes |= not any(ch.isalpha() for ch in token)
    return claims


def _add_word(word: str, claims: Claims, *, capitalised: bool) -> None:
    if calendar := calendar_name(word):
        claims.codes.append((word, calendar))
        return
    lower = word.lower()
    if len(lower) < 2 or lower in _STOPWORDS or lower.isdigit():
        return
    claims.terms.append(Term(word, root(lower), 2 if capitalised else 1, spelled_number(lower)))


@lru_cache(maxsize=256)
def index_cited_text(cited_text: str) -> CitedIndex:
    """:func:`index_text`, cached: an answer's sentences, and its revisions, cite the same texts."""
    return index_text(cited_text)


def index_text(text: str) -> CitedIndex:
    """Everything in ``text`` a sentence's claims can be found as."""
    text = _normalise(text)
    index = CitedIndex()
    for match in TOKEN.finditer(text):
        if run := match.group("cjk"):
            index.bigrams.update(cjk_bigrams(run, CJK_FUNCTION_CHARS))
            index.bigrams.update(run)  # single characters, for a sentence's one-character runs
        elif PLAIN_NUMBER.fullmatch(token := match.group("word")):
            index.numbers |= number(token, scale_after(text, match.end())).values
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
    if (spelled := spelled_number(token)) is not None:
        index.numbers.add(spelled)
    if claims.codes and any(ch.isdigit() for ch in token):
        index.codes.update(_code_key(part) for part in JOINERS.split(token) if part)
        index.numbers.update(Decimal(digits) for digits in re.findall(r"\d+", token))
        if month := iso_month(token):
            index.codes.add(month)
    return index


class SentenceClaims(NamedTuple):
    """One sentence of an answer, what it claims, and whether it is factual (so must be cited and supported)."""

    sentence: AnswerSentence
    claims: Claims
    factual: bool


def claims_of_answer(sentences: Sequence[AnswerSentence]) -> list[SentenceClaims]:
    """What each of an answer's sentences claims, and whether it is factual; stops with DeadlineExceeded, between
    two sentences, once the current deadline has passed."""
    deadline = current_deadline()
    claimed = []
    for sentence in sentences:
        deadline.check()
        claims = claims_of(sentence.text)
        claimed.append(SentenceClaims(sentence, claims, is_factual(sentence, claims)))
    return claimed


_ABOUT_EVIDENCE = re.compile(
    r"\b(?:i|we)\s+(?:could\s*not|couldn['’]?t|can\s*not|can['’]?t|did\s*not|didn['’]?t|was\s+unable\s+to|were\s+unable\s+to"
    r"|am\s+unable\s+to|have\s+not\s+been\s+able\s+to|found\s+no|do\s+not\s+know|don['’]?t\s+know"
    r"|do\s+not\s+have|don['’]?t\s+have)\b"
    r"|\b(?:knowledge\s+base|sources?|documents?|documentation|evidence|corpus|corpora|search\s+results?"
    r"|retrieved\s+\w+|available\s+\w+|records?|data(?:base)?)\s+(?:does|do|did)\s*(?:n['’]?t|not)\s+"
    r"(?:say|mention|state|contain|cover|specify|include|provide|list|give|describe|address|explain|show)"
    r"|^(?:no|none\s+of\s+the)\s+(?:\w+\s+)?(?:sources?|documents?|results?|passages?|evidence|records?)\b"
    r"|\bthere\s+(?:is|was|are|were)\s+no\s+(?:information|mention|data|record|evidence|details?)\b"
    r"|\bnot\s+(?:mentioned|covered|specified|stated|documented|found|available)\s+in\s+(?:the|any)\b"
    r"|(?:未|没有|没能|无法|不能)(?:找到|检索到|查到|查询到|确认)|(?:知识库|资料|文档|来源)中?(?:没有|未|并未)",
    re.IGNORECASE,
)
"""Statements about the evidence or the agent's knowledge, not about the world."""
_DISCOURSE = re.compile(
    r"^(?:hope\s+(?:this|that)\s+helps|let\s+me\s+know|feel\s+free|happy\s+to\s+help|in\s+(?:short|summary|brief)"
    r"|to\s+summari[sz]e|here(?:['’]s|\s+is|\s+are)|sure|of\s+course|certainly|great\s+question)\b",
    re.IGNORECASE,
)
_SHORT_DISCOURSE_WORDS = 6
_BOLD_LINE = re.compile(r"\*\*[^*]+\*\*|__[^_]+__")


def is_factual(sentence: AnswerSentence, claims: Claims) -> bool:
    """Whether the sentence, whose claims are ``claims``, claims something about the world.

    It does not when it is a question, a statement about the evidence itself ("I could not find
    …", "The knowledge base does not say …", "No source mentions …"), a heading or list intro
    ending with ":", or a short discourse line with no content words ("Here is what I found.").
    But any sentence other than a question that contains a number is factual.
    """
    plain = sentence.plain
    if plain.rstrip(CLOSERS + " ").endswith(("?", "？")):
        return False
    if claims.states_number:
        return True
    heading = sentence.span.heading or plain.endswith((":", "：")) or _BOLD_LINE.fullmatch(plain) is not None
    discourse = not claims.terms and not claims.codes
    short_discourse = claims.word_count <= _SHORT_DISCOURSE_WORDS and _DISCOURSE.search(plain) is not None
    return not (heading or discourse or short_discourse or _ABOUT_EVIDENCE.search(plain))
