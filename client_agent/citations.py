"""The final-answer citation check: cited ids were really retrieved, and their text supports the sentence.

Answers cite inline with citation ids in square brackets — ``[handbook:hr/leave-policy#2]``,
``[sql:company:1a2b3c4d]``, several in one bracket (``[a:x#1, a:y#2]`` or ``;``) or adjacent
brackets. :func:`check_answer` splits the answer into sentences (:func:`split_sentences`) and
checks each one against ``evidence``, the text of every citation id a tool returned in this run:

* **Fabricated ids.** Every cited id must be a key of ``evidence``; any other id is reported
  verbatim, in every sentence, factual or not.
* **Uncited claims.** Every *factual* sentence must cite at least one id from this run. A
  sentence is not factual when it is a question, a statement about the evidence itself ("I
  could not find …", "The knowledge base does not say …", "No source mentions …"), a heading
  or list intro ending with ":", or a short discourse line with no content words ("Here is
  what I found."). But any sentence other than a question that contains a number is factual:
  an uncited number is never accepted.
* **Support.** The texts of a sentence's cited ids, taken together, must contain every number
  in the sentence (``1,999`` = ``1999`` = ``¥1,999``; ``10%`` → 10; ``2.8 million`` matches
  ``2.8 million``, ``2.8M`` and ``2,800,000``; ``five`` in the cited text counts as 5; a
  number that is part of an identifier in the cited text, like the 3 of ``X3``, counts as
  present), every identifier, code, date and month or weekday name (``ERR_VPN_AUTH_4012``,
  ``CHG-2025-0612-03``, ``v2.0``, ``2024-05-01``, ``March``; an ISO date in the cited text
  also supplies its month's name), and at least half of its other key terms (content words
  without stopwords, lightly stemmed and matched on long shared prefixes, capitalised names
  counting double; Chinese and Japanese text as character bigrams).

What it does **not** catch, by design of a lexical check: a wrong claim assembled from words
and numbers that all occur in the cited text ("10 days after 5 years" when the text says
"10 days after 1 year … 20 days after 5 years"), flipped negations or modality ("must" vs
"must not"), wrong relations between correct entities, a paraphrase sharing too few words
with its source (a *false alarm*: the sentence fails although it is right), and claims
inside a sentence that is exempt as a statement about the evidence and has no number. A
question is exempt even with numbers in it (it asserts nothing). Numbers spelled as words in
the answer ("three") are key terms, not numbers, so they need no citation of their own.

:func:`enforce` is the last resort after revisions: it removes (or marks ``[unsupported]``)
each factual sentence that is uncited or unsupported, strips fabricated ids from the
sentences it keeps, and leaves everything else verbatim.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from client_agent.text import STOPWORDS

# --------------------------------------------------------------------------- citation ids

_CITATION_ID = re.compile(r"[^\W\d][\w.-]*:[^\s\[\],;]+")
"""``<corpus>:<doc_id>#<chunk>`` or ``sql:<database>:<hash>``: a name, a colon, no spaces."""

_BRACKET = re.compile(r"\[([^\[\]\n]+)\]")
_ID_SEPARATOR = re.compile(r"[,;]")


@dataclass(frozen=True)
class _Bracket:
    start: int
    end: int
    ids: list[str]


def _citation_brackets(text: str) -> list[_Bracket]:
    """Square brackets whose content is one or more citation ids (``[1]`` or ``[see above]`` are not).

    Ids may be separated by commas or semicolons and wrapped in backticks.
    """
    brackets = []
    for match in _BRACKET.finditer(text):
        parts = [part.strip().strip("`") for part in _ID_SEPARATOR.split(match.group(1))]
        ids = [part for part in parts if part]
        if ids and all(_CITATION_ID.fullmatch(part) for part in ids):
            brackets.append(_Bracket(match.start(), match.end(), ids))
    return brackets


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def cited_ids(answer: str) -> list[str]:
    """Every citation id in ``answer``, unique, in order of first appearance."""
    return _unique([cid for bracket in _citation_brackets(answer) for cid in bracket.ids])


# --------------------------------------------------------------------------- sentences

_MARKER = r"(?:[-*+•·]|\d{1,3}[.)]|\([a-z]\)|[a-z]\)|>)"
"""A list item's bullet or number, or a quote's ">"."""
_LIST_MARKER = re.compile(rf"[ \t]*{_MARKER}[ \t]+")
_HEADING_MARKER = re.compile(r"[ \t]*#{1,6}[ \t]+")
_FENCE = re.compile(r"[ \t]*(?:```|~~~)")
_TERMINATORS = ".!?"
_CJK_TERMINATORS = "。！？"
_CLOSERS = "\"')»”’」』）*_"
_ABBREVIATIONS = {
    "e.g", "i.e", "cf", "vs", "approx", "incl", "excl", "esp", "resp", "viz", "mr", "mrs", "ms",
    "dr", "prof", "st", "jr", "sr", "ca", "dept", "ext", "min", "max",
}
"""Words whose full stop never ends a sentence."""
_ABBREVIATIONS_BEFORE_NUMBER = {"no", "nr", "fig", "p", "pp", "vol", "ch", "sec", "art", "v"}
"""Words whose full stop does not end a sentence when a number follows ("No. 5")."""
_WORD_BEFORE = re.compile(r"([^\W\d_][\w.]*)$")


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    heading: bool


class _Splitter:
    """Splits one answer into sentence spans; see :func:`split_sentences` for the rules."""

    def __init__(self, text: str) -> None:
        self.text = text
        brackets = _citation_brackets(text)
        self.brackets = {b.start: b for b in brackets}
        self.bracket_ends = {b.end: b for b in brackets}

    def spans(self) -> list[_Span]:
        spans = []
        for start, end, heading in self._blocks():
            for s, e in self._sentences(start, end):
                while s < e and self.text[s].isspace():
                    s += 1
                while e > s and self.text[e - 1].isspace():
                    e -= 1
                if s < e:
                    spans.append(_Span(s, e, heading))
        return spans

    def _blocks(self) -> list[tuple[int, int, bool]]:
        """Lines, list items, table rows and headings; a wrapped line continues an unfinished sentence.

        A line continues the previous one when that did not end its sentence and the line
        is not a list item, heading or table row, and does not start with a capital letter
        (unless the previous line ended with a comma): "… as it stands on\n31 December."
        """
        blocks: list[tuple[int, int, bool]] = []
        unfinished: str | None = None
        pos = 0
        for line in self.text.splitlines(keepends=True):
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
        text = self.text[start:end].rstrip()
        while (bracket := self.bracket_ends.get(start + len(text))) is not None and bracket.start >= start:
            text = self.text[start : bracket.start].rstrip()
        tail = text.rstrip(_CLOSERS + " \t")
        if not tail or tail[-1] in _TERMINATORS + _CJK_TERMINATORS + ":：":
            return None
        return tail[-1]

    def _sentences(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        text = self.text
        sentence_start = i = start
        while i < end:
            bracket = self.brackets.get(i)
            if bracket is not None:
                i = bracket.end
                continue
            ch = text[i]
            boundary = None
            if ch in _CJK_TERMINATORS:
                boundary = self._after_citations(self._after_closers(i + 1, end), end)
            elif ch in _TERMINATORS:
                j = self._after_closers(i + 1, end)
                if self._ends_sentence(ch, i, j, start, end):
                    boundary = self._after_citations(j, end)
            if boundary is None:
                i += 1
                continue
            yield sentence_start, boundary
            sentence_start = i = boundary
        if sentence_start < end:
            yield sentence_start, end

    def _after_closers(self, j: int, end: int) -> int:
        while j < end and self.text[j] in _TERMINATORS + _CJK_TERMINATORS + _CLOSERS:
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

    def _ends_sentence(self, ch: str, i: int, j: int, start: int, end: int) -> bool:
        text = self.text
        if j < end and not (text[j].isspace() or j in self.brackets):
            return False  # "2.8", "v2.0", "example.com", "e.g" inside
        if ch != ".":
            return True
        word = _WORD_BEFORE.search(text, start, i)
        if word is None:
            return True
        before = word.group(1).lower()
        following = text[j:end].lstrip()[:1]
        if before in _ABBREVIATIONS:
            return False
        if before in _ABBREVIATIONS_BEFORE_NUMBER and following.isdigit():
            return False
        return not (before == "etc" and following.islower())


def _sentence_spans(answer: str) -> list[_Span]:
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
    return [answer[span.start : span.end] for span in _sentence_spans(answer)]


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
_CJK_STOP_CHARS = frozenset("的了是在和与及或也都就而被将把之其这那个着过吗呢吧啊您你我他她它们")
_MIN_TERM_SHARE = 0.5
"""Share of a sentence's key-term weight that must appear in the cited text."""


@dataclass(frozen=True)
class _Number:
    text: str
    values: frozenset[Decimal]


@dataclass(frozen=True)
class _Term:
    text: str
    key: str
    """A stem for words, the bigram itself for CJK text."""
    weight: int
    number: Decimal | None = None
    """The value of a number word ("three"), which a digit in the cited text also matches."""


@dataclass
class _Claims:
    """What a piece of text asserts that can be looked up: numbers, codes, key terms."""

    numbers: list[_Number] = field(default_factory=list)
    codes: list[tuple[str, str]] = field(default_factory=list)
    """(as written, normalised) — identifiers, dates and calendar names; each must appear."""
    terms: list[_Term] = field(default_factory=list)
    digit_codes: bool = False
    """Whether a code is all digits (a date, time or version): such a sentence states a number."""
    word_count: int = 0

    @property
    def states_number(self) -> bool:
        return bool(self.numbers) or self.digit_codes


@dataclass
class _Index:
    """The cited text, ready for look-ups."""

    numbers: set[Decimal] = field(default_factory=set)
    codes: set[str] = field(default_factory=set)
    stems: set[str] = field(default_factory=set)
    bigrams: set[str] = field(default_factory=set)
    """CJK bigrams and single characters."""


def _normalise(text: str) -> str:
    """Citation brackets out, thousands separators out, full-width forms folded (１２ → 12)."""
    for bracket in reversed(_citation_brackets(text)):
        text = text[: bracket.start] + " " + text[bracket.end :]
    return unicodedata.normalize("NFKC", _THOUSANDS.sub("", text))


def _code_key(token: str) -> str:
    return "".join(ch for ch in token.lower() if ch.isalnum())


def _stem(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s", "ly", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _number(text: str, scale_word: str | None) -> _Number:
    value = Decimal(text)
    scale = _SCALES.get(scale_word.lower()) if scale_word else None
    values = {value} if scale is None else {value, value * scale}
    return _Number(text + (scale_word or ""), frozenset(values))


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


def _claims(sentence: str) -> _Claims:
    """The numbers, codes and key terms of one sentence."""
    text = _normalise(sentence)
    claims = _Claims()
    first_word = True
    for match in _TOKEN.finditer(text):
        if match.group("cjk"):
            claims.word_count += len(match.group("cjk"))
            claims.terms += [_Term(gram, gram, 1) for gram in _bigrams(match.group("cjk"))]
            first_word = False
            continue
        token = match.group("word")
        claims.word_count += 1
        _classify(token, text, match.end(), claims, first_word)
        first_word = False
    return claims


def _classify(token: str, text: str, end: int, claims: _Claims, first_word: bool) -> None:
    if _PLAIN_NUMBER.fullmatch(token):
        claims.numbers.append(_number(token, _scale_after(text, end)))
        return
    if unit := _NUMBER_WITH_UNIT.fullmatch(token):
        claims.numbers.append(_number(unit.group(1), unit.group(2)))
        return
    has_digit = any(ch.isdigit() for ch in token)
    if not has_digit and "_" not in token:
        for part in _WORD_JOINERS.split(token):
            _add_word(part, claims, capitalised=not first_word and part[:1].isupper())
        return
    if has_digit and _is_compound(token):
        for part in token.split("-"):
            if part.isdigit():
                claims.numbers.append(_number(part, None))
            else:
                _add_word(part, claims, capitalised=False)
        return
    if all(ch.isdigit() or ch in "-/.:" for ch in token) and not _DATE_OR_TIME.fullmatch(token):
        claims.numbers += [_number(part, None) for part in re.findall(r"\d+", token)]  # 10-15, 1024/32
        return
    claims.codes.append((token, _code_key(token)))
    claims.digit_codes |= not any(ch.isalpha() for ch in token)


def _add_word(word: str, claims: _Claims, *, capitalised: bool) -> None:
    lower = word.lower()
    calendar = _CALENDAR.get(lower)
    if calendar and (word[:1].isupper() or lower not in _AMBIGUOUS_CALENDAR):
        claims.codes.append((word, calendar))
        return
    if len(lower) < 2 or lower in _STOPWORDS or lower.isdigit():
        return
    number = _NUMBER_WORDS.get(lower)
    claims.terms.append(
        _Term(word, _stem(lower), 2 if capitalised else 1, None if number is None else Decimal(str(number)))
    )


def _bigrams(run: str) -> list[str]:
    """Character bigrams of a CJK run (the character itself for a run of one), without function characters."""
    grams = [run] if len(run) == 1 else [a + b for a, b in zip(run, run[1:])]
    return [gram for gram in grams if not any(ch in _CJK_STOP_CHARS for ch in gram)]


@lru_cache(maxsize=256)
def _index(cited_text: str) -> _Index:
    """Everything in the cited text a sentence's claims can be found as (cached: revisions cite the same texts)."""
    text = _normalise(cited_text)
    index = _Index()
    for match in _TOKEN.finditer(text):
        if run := match.group("cjk"):
            index.bigrams.update(_bigrams(run))
            index.bigrams.update(run)  # single characters, for a sentence's one-character runs
            continue
        token = match.group("word")
        claims = _Claims()
        _classify(token, text, match.end(), claims, first_word=False)
        for number in claims.numbers:
            index.numbers |= number.values
        index.stems.update(term.key for term in claims.terms)
        if (spelled := _NUMBER_WORDS.get(token.lower())) is not None:
            index.numbers.add(Decimal(str(spelled)))
        for _, key in claims.codes:
            index.codes.add(key)
        if claims.codes and any(ch.isdigit() for ch in token):
            _index_code(token, index)
    return index


def _index_code(token: str, index: _Index) -> None:
    """A code's parts are findable too: ``X3-Pro`` supplies ``x3``, ``CHG-2025-0612-03`` the number 2025."""
    index.codes.update(_code_key(part) for part in _CODE_PARTS.split(token) if part)
    index.numbers.update(Decimal(digits) for digits in re.findall(r"\d+", token))
    if month := _ISO_MONTH.fullmatch(token):
        number = int(month.group(1))
        if 1 <= number <= 12:
            index.codes.add(_MONTHS[number - 1])


def _term_present(term: _Term, index: _Index) -> bool:
    if term.key in index.stems or term.key in index.bigrams:
        return True
    if term.number is not None and term.number in index.numbers:
        return True
    return len(term.key) >= 5 and any(_shares_prefix(term.key, stem) for stem in index.stems)


def _shares_prefix(a: str, b: str) -> bool:
    """Light stemming's safety net: "approval"/"approve", "manager"/"management"."""
    shorter = min(len(a), len(b))
    if shorter < 5:
        return False
    common = 0
    for x, y in zip(a, b):
        if x != y:
            break
        common += 1
    return common >= 5 and common >= 0.75 * shorter


# --------------------------------------------------------------------------- support


@dataclass(frozen=True)
class Support:
    """Whether a cited text supports a sentence, and what of the sentence it lacks."""

    supported: bool
    missing_numbers: list[str]
    missing_terms: list[str]
    """Key terms absent from the cited text (informative even when the sentence is supported)."""
    missing_codes: list[str]
    """Identifiers, codes, dates and calendar names absent from the cited text (each one fails)."""
    coverage: float
    """Share of the sentence's key-term weight found in the cited text (1.0 with no key terms)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "supported": self.supported,
            "missing_numbers": self.missing_numbers,
            "missing_codes": self.missing_codes,
            "missing_terms": self.missing_terms,
            "coverage": round(self.coverage, 3),
        }


def supports(sentence: str, cited_text: str) -> Support:
    """Whether ``cited_text`` contains ``sentence``'s numbers, codes and enough of its key terms.

    Citation brackets in ``sentence`` are ignored. See the module docstring for the rules
    and for what this lexical check cannot see.
    """
    return _support(_claims(sentence), _index(cited_text))


def _support(claims: _Claims, index: _Index) -> Support:
    missing_numbers = _unique([n.text for n in claims.numbers if not n.values & index.numbers])
    missing_codes = _unique([text for text, key in claims.codes if key not in index.codes])
    total = sum(term.weight for term in claims.terms)
    present = [term for term in claims.terms if _term_present(term, index)]
    coverage = sum(term.weight for term in present) / total if total else 1.0
    missing_terms = _unique([term.text for term in claims.terms if term not in present])
    supported = not missing_numbers and not missing_codes and coverage >= _MIN_TERM_SHARE
    return Support(supported, missing_numbers, missing_terms, missing_codes, coverage)


# --------------------------------------------------------------------------- factual sentences

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


def _plain(sentence: str) -> str:
    """The sentence without citation brackets and surrounding whitespace."""
    for bracket in reversed(_citation_brackets(sentence)):
        sentence = sentence[: bracket.start] + sentence[bracket.end :]
    return sentence.strip()


def _is_factual(span: _Span, sentence: str, claims: _Claims) -> bool:
    """Whether the sentence claims something about the world (see the module docstring for the exemptions)."""
    plain = _plain(sentence)
    if plain.rstrip(_CLOSERS + " ").endswith(("?", "？")):
        return False
    if claims.states_number:
        return True
    heading = span.heading or plain.endswith((":", "：")) or _BOLD_LINE.fullmatch(plain) is not None
    discourse = not claims.terms and not claims.codes
    short_discourse = claims.word_count <= _SHORT_DISCOURSE_WORDS and _DISCOURSE.search(plain) is not None
    return not (heading or discourse or short_discourse or _ABOUT_EVIDENCE.search(plain))


# --------------------------------------------------------------------------- the check

SentenceStatus = Literal["supported", "unsupported", "uncited", "not_factual"]


@dataclass(frozen=True)
class SentenceCheck:
    """The verdict on one sentence of the answer."""

    text: str
    citations: list[str]
    factual: bool
    problems: list[str]
    unknown_ids: list[str]
    support: Support | None
    """None when the sentence is not factual or cites nothing from this run."""
    start: int
    end: int
    """Where the sentence is in the answer (for :func:`enforce`)."""

    @property
    def status(self) -> SentenceStatus:
        if not self.factual:
            return "not_factual"
        if self.support is None:
            return "uncited"
        return "supported" if self.support.supported else "unsupported"

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": self.citations,
            "factual": self.factual,
            "status": self.status,
            "problems": self.problems,
            "support": self.support.to_dict() if self.support else None,
        }


@dataclass(frozen=True)
class CitationCheck:
    """The citation check of one answer: per-sentence verdicts and what failed."""

    answer: str
    sentences: list[SentenceCheck]

    @property
    def passed(self) -> bool:
        return all(sentence.passed for sentence in self.sentences)

    @property
    def unknown_ids(self) -> list[str]:
        return _unique([cid for sentence in self.sentences for cid in sentence.unknown_ids])

    @property
    def failures(self) -> list[SentenceCheck]:
        return [sentence for sentence in self.sentences if not sentence.passed]

    def _count(self, status: SentenceStatus) -> int:
        return sum(1 for sentence in self.sentences if sentence.status == status)

    @property
    def factual(self) -> int:
        return sum(1 for sentence in self.sentences if sentence.factual)

    @property
    def supported(self) -> int:
        return self._count("supported")

    @property
    def unsupported(self) -> int:
        return self._count("unsupported")

    @property
    def uncited(self) -> int:
        return self._count("uncited")

    def feedback(self) -> str:
        """What a revision must fix: each failing sentence, quoted, with its specific failures."""
        if self.passed:
            return "The answer passed the citation check."
        lines = ["Your answer failed the citation check. These sentences must be fixed:"]
        for number, sentence in enumerate(self.failures, start=1):
            lines.append(f'{number}. "{sentence.text}" — ' + "; ".join(sentence.problems))
        if self.unknown_ids:
            lines.append(
                "These ids were never returned by a tool in this run, so they must not be cited: "
                + ", ".join(self.unknown_ids)
            )
        lines.append(
            "Cite only ids exactly as a tool returned them in this run. Give every factual sentence a "
            "citation whose text contains its numbers and key terms; drop a claim you cannot support, "
            "or say that the sources do not cover it. Reply with the whole revised answer."
        )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (for the trace and ``--json``'s ``verification``)."""
        return {
            "passed": self.passed,
            "sentences": len(self.sentences),
            "factual": self.factual,
            "supported": self.supported,
            "unsupported": self.unsupported,
            "uncited": self.uncited,
            "unknown_ids": self.unknown_ids,
            "checks": [sentence.to_dict() for sentence in self.sentences],
        }


def check_answer(answer: str, evidence: Mapping[str, str]) -> CitationCheck:
    """Check every sentence of ``answer`` against ``evidence`` (citation id → text, all ids returned in this run).

    A sentence's problems read ``cites unknown id X (not returned by any tool in this run)``,
    ``no citation``, ``number N not in the cited text`` and ``key terms "a", "b" not in the
    cited text``; the answer passes when no sentence has any.
    """
    checks = []
    for span in _sentence_spans(answer):
        text = answer[span.start : span.end]
        ids = cited_ids(text)
        unknown = [cid for cid in ids if cid not in evidence]
        known = tuple(cid for cid in ids if cid in evidence)
        claims = _claims(text)
        factual = _is_factual(span, text, claims)
        problems = [f"cites unknown id {cid} (not returned by any tool in this run)" for cid in unknown]
        support = None
        if factual and known:
            support = _support(claims, _index("\n".join(evidence[cid] for cid in known)))
            problems += _support_problems(support)
        elif factual and not ids:
            problems.append("no citation")
        checks.append(SentenceCheck(text, ids, factual, problems, unknown, support, span.start, span.end))
    return CitationCheck(answer, checks)


def _support_problems(support: Support) -> list[str]:
    problems = [f"number {number} not in the cited text" for number in support.missing_numbers]
    missing = list(support.missing_codes)
    if support.coverage < _MIN_TERM_SHARE:
        missing += support.missing_terms
    if missing:
        quoted = ", ".join(f'"{term}"' for term in missing)
        problems.append(f"key terms {quoted} not in the cited text")
    return problems


# --------------------------------------------------------------------------- enforcement

EnforceMode = Literal["remove", "mark"]
UNSUPPORTED_MARK = "[unsupported]"
_EMPTY_LINE_LEFT = re.compile(rf"[ \t]*(?:{_MARKER}|#{{1,6}})?[ \t]*")
"""What is left of a line whose only sentence was removed: it goes too."""


@dataclass(frozen=True)
class Enforced:
    """An answer after :func:`enforce`: its new text and what was taken out or flagged."""

    answer: str
    mode: EnforceMode
    removed: list[str]
    marked: list[str]
    stripped_ids: list[str]
    """Unknown ids deleted from sentences that were kept."""

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "removed": self.removed, "marked": self.marked, "stripped_ids": self.stripped_ids}


def enforce(answer: str, check: CitationCheck, mode: EnforceMode) -> Enforced:
    """Remove (or mark ``[unsupported]``) the uncited and unsupported factual sentences of ``answer``.

    Fabricated ids are deleted from every sentence that stays (a bracket left empty goes with
    the space before it); all other text stays verbatim. A line left with nothing but its
    list marker is dropped.
    """
    if check.answer != answer:
        raise ValueError("enforce() needs the answer that check_answer() checked; run the check on this answer first")
    failing = [s for s in check.sentences if s.status in ("uncited", "unsupported")]
    kept = [s for s in check.sentences if s not in failing]
    edits: list[tuple[int, int, str]] = []
    stripped: list[str] = []
    for sentence in kept if mode == "remove" else check.sentences:
        edits += _strip_unknown(answer, sentence, stripped)
    if mode == "mark":
        edits += [(s.start, s.start, UNSUPPORTED_MARK + " ") for s in failing]
        return Enforced(_apply(answer, edits), mode, [], [s.text for s in failing], _unique(stripped))
    edits += [(start, end, "") for start, end in _removal_ranges(answer, failing)]
    return Enforced(_apply(answer, edits), mode, [s.text for s in failing], [], _unique(stripped))


def _strip_unknown(answer: str, sentence: SentenceCheck, stripped: list[str]) -> list[tuple[int, int, str]]:
    edits = []
    unknown = set(sentence.unknown_ids)
    for bracket in _citation_brackets(answer[sentence.start : sentence.end]):
        if not unknown & set(bracket.ids):
            continue
        start, end = sentence.start + bracket.start, sentence.start + bracket.end
        stripped += [cid for cid in bracket.ids if cid in unknown]
        remaining = [cid for cid in bracket.ids if cid not in unknown]
        if remaining:
            edits.append((start, end, "[" + ", ".join(remaining) + "]"))
        else:
            while start > sentence.start and answer[start - 1] in " \t":
                start -= 1
            edits.append((start, end, ""))
    return edits


def _removal_ranges(answer: str, failing: list[SentenceCheck]) -> list[tuple[int, int]]:
    """Ranges to delete: runs of adjacent failing sentences, with the whitespace or line they leave."""
    runs: list[list[int]] = []
    for sentence in sorted(failing, key=lambda s: s.start):
        if runs and not answer[runs[-1][1] : sentence.start].strip():
            runs[-1][1] = sentence.end
        else:
            runs.append([sentence.start, sentence.end])
    ranges = []
    for start, end in runs:
        line_start = answer.rfind("\n", 0, start) + 1
        line_end = answer.find("\n", end)
        line_end = len(answer) if line_end == -1 else line_end
        if _EMPTY_LINE_LEFT.fullmatch(answer[line_start:start]) and not answer[end:line_end].strip():
            ranges.append((line_start, min(line_end + 1, len(answer))))  # the whole line goes
            continue
        while end < line_end and answer[end] in " \t":
            end += 1
        if end == line_end:
            while start > line_start and answer[start - 1] in " \t":
                start -= 1
        ranges.append((start, end))
    return ranges


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + replacement + text[end:]
    return text
