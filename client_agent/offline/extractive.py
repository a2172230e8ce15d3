"""Extractive answering: which evidence covers a question, and the best sentences to quote.

The offline back-end has no model to write prose, so it answers with sentences copied from
the evidence, each followed by the citation id it came from. That makes its answers
checkable by construction — every number and term is in the cited text — and honest about
what it does not know: a sub-question whose terms no evidence covers gets "I could not find
…" instead of a guess.

*Coverage* of a sub-question by one evidence item is the share of the sub-question's content
terms that appear in the item (text, title and section); codes and model names must all
appear. A term the item does not contain counts as half present when a word of the item's
sentence holding most of the question's terms means nearly the same (:data:`~client_agent.offline.meaning.WORD_MEANING`, by the bundled embedding
model, :mod:`client_agent.offline.meaning`): "cats" and "pets", "married" and "wedding". A sub-question is
covered when some item reaches :data:`COVERED`.

*Sentence choice* adds meaning to the word counts too: every sentence's score includes
:data:`MEANING_WEIGHT` times its similarity to the question, and a sentence close in meaning
(:data:`MEANING_CANDIDATE`) is a candidate even when it shares no word with the question.
After the best sentence, another from the same evidence item is added when it covers a term
of the question the first does not ("Students pay half price" after the membership fee). A
question for the most expensive or cheapest of something gets the extreme row of the best
candidate's table first (:func:`~client_agent.offline.shapes.extreme_row`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from client_agent.evidence import Evidence, Ledger
from client_agent.offline import aliases
from client_agent.offline.meaning import matched_words, similarity
from client_agent.offline.shapes import extreme_row
from client_agent.text import content_terms, identifier_like, identifiers, numbers, original_words, sentences
from mcp_server.analyzer.dates import MONTH_PATTERN, WEEKDAY_PATTERN
from mcp_server.analyzer.scripts import is_cjk
from mcp_server.analyzer.words import STOPWORDS

COVERED = 0.6
COVERED_CJK = 0.5
"""Chinese questions are matched by character bigrams, some of which straddle word boundaries
and never occur in the answer, so a lower share suffices."""
MIN_SENTENCE_TERMS = 2
MEANING_SHARE = 0.5
"""How much a term found only in meaning counts toward coverage (a word found verbatim counts 1)."""
MEANING_WEIGHT = 4.0
"""Points a sentence gets per unit of cosine similarity to the question (a shared word is worth 1)."""
MEANING_CANDIDATE = 0.45
"""Similarity from which a sentence sharing no word with the question is still a candidate answer."""
SHORT_SENTENCE_WORDS = 5
_ANSWER_KINDS = (
    ("quantity", re.compile(r"\bhow (?:many|much|long|far|often|big|large|fast)\b|\b(?:price|cost|percentage|rate|number of)\b|多少|几", re.I)),
    ("time", re.compile(r"\bwhen\b|\b(?:what|which) (?:time|date|day|month|year|week)\b|\bdeadline\b|什么时候|何时", re.I)),
)
_TIME = re.compile(rf"\b(?:{MONTH_PATTERN}|"
                   rf"{WEEKDAY_PATTERN}|daily|weekly|monthly|annually|"
                   r"quarter|yearly)\w*|\b(?:every|each|per|a|next|last|this|following) year(?![\w-])|\d{1,2}:\d{2}|月|日",
                   re.I)
"""Words that say when: months, days, frequencies, clock times; "year" only as "every year", "next year" (not
"for the year")."""
_ABOUT_THE_PAGE = re.compile(r"\b(?:this|the following) (?:page|document|guide|section|article|manual)\b", re.I)
_SEE_ALSO = re.compile(r"^(?:see|for more|read)\b|\bsee (?:the )?[*_\"“]", re.I)
_MARKUP = re.compile(r"\*\*|__|`|^#+\s*|\[(?=[^\]]*\]\()|\]\([^)]*\)")


@dataclass(frozen=True)
class Coverage:
    """How well the best evidence item covers one sub-question."""

    question: str
    best: Evidence | None
    score: float
    uncovered: list[str]

    @property
    def covered(self) -> bool:
        threshold = COVERED_CJK if _mostly_cjk(self.question) else COVERED
        return self.best is not None and self.score >= threshold and not any(
            identifier_like(t) for t in self.uncovered)


def _mostly_cjk(text: str) -> bool:
    terms = content_terms(text)
    return bool(terms) and sum(map(is_cjk, terms)) > len(terms) / 2


def coverage(question: str, ledger: Ledger) -> Coverage:
    """The evidence item that best covers ``question``: all its codes and model names first, then
    the largest share of its terms (codes weigh double; a term present only in meaning counts
    :data:`MEANING_SHARE`), then the better rank."""
    terms = content_terms(question)
    items = list(ledger)
    haystacks = [set(content_terms(f"{item.header}\n{item.text}")) for item in items]
    weights = {t: 2.0 if identifier_like(t) else 1.0 for t in terms}
    total = sum(weights.values())
    best: tuple[tuple[bool, float, int], Evidence | None, list[str]] = ((False, 0.0, 0), None, terms)
    for item, haystack in zip(items, haystacks, strict=True):
        uncovered = [t for t in terms if t not in haystack]
        missing = sum(weights[t] for t in uncovered)
        if uncovered and terms and 1 - missing / total < COVERED <= 1 - (1 - MEANING_SHARE) * missing / total:
            meant = _meant(question, uncovered, item)
            uncovered = [t for t in uncovered if t not in meant]
            missing -= MEANING_SHARE * sum(weights[t] for t in meant)
        score = 1 - missing / total if terms else 0.0
        key = (not any(identifier_like(t) for t in uncovered), score, -item.rank)
        if best[1] is None or key > best[0]:
            best = (key, item, uncovered)
    return Coverage(question, best[1], best[0][1], best[2])


FRAME_WORDS = frozenset(content_terms("use used make take put long far often ahead advance kind type sort exactly "
                                     "per one fix solve resolve fast quick quickly soon without suit compared "
                                     "earlier"))
"""Words of a question's frame ("how far ahead", "how long", "how fast", "what kind of", "calls per month",
"can one account have", "can I put", "how do I fix it": the answer is the steps, which rarely say "fix";
"without a note", "which one suits", "compared with a year earlier"), not of its topic."""
MAX_MEANT = 1
"""Question terms a sentence that answers may say only in other words or only in the passage around it (the
rest it must say in the question's)."""
_PREDICATE = re.compile(r"\b(?:can|could|do|does|did|will|would|should|must|may|might)\s+"
                        r"(?:(?:I|we|you|they|one)\s+)?([a-z]+)\b|^\s*who\s+([a-z]+s)\b", re.I)
"""The verb of a question's predicate ("how many agents can *work* on", "what do I *get*", "who *decides*"): the
sentence that answers says it in its own verb ("Seats included", "are confirmed by"), or in none."""
_ASKED_KIND = re.compile(r"\b(?:which|what)\s+(month|day|year|date|week)s?\b", re.I)
"""The kind of time asked for ("in which month"): a sentence answers it by naming one (:data:`_KIND_SHAPES`)."""
_KIND_SHAPES = {
    "month": re.compile(rf"\b(?:{MONTH_PATTERN}|month)", re.I),
    "year": re.compile(r"\b(?:19|20)\d\d\b"),
    "day": re.compile(rf"\b(?:{WEEKDAY_PATTERN}|{MONTH_PATTERN}|day)|\d", re.I),
    "date": re.compile(rf"\b(?:{MONTH_PATTERN})\b|\d", re.I),
    "week": re.compile(r"\bweek|\d", re.I),
}
"""What names each kind of time: "December" a month, "2016" a year (not "for the year")."""
_QUARTER = re.compile(r"\b(first|second|third|fourth) quarter\b", re.I)
_ORDINALS = ("first", "second", "third", "fourth")
_NUMBER_WORDS = re.compile(r"(?<!-)\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
                           r"hundred|thousand|half|twice|once|every|each)\b(?!-)", re.I)
"""Counts in words; not inside a compound ("one-click"), which names a thing rather than counting."""
_NAME = re.compile(r"(?<=[^\s.!?¿¡])\s+([A-Z][\w\-'’]*)")


@dataclass(frozen=True)
class Address:
    """How much of a question one sentence says, read with its document's title and section.

    A sentence *answers* when it says every key term of the question — names, codes and
    numbers verbatim, other words verbatim or (at most :data:`MAX_MEANT` of them) in a word
    that means nearly the same (:data:`~client_agent.offline.meaning.WORD_MEANING`) — and has
    the shape the question asks for (a number or a frequency for "how much", a date or time
    for "when"). That the sentence is quoted correctly says nothing about this: a sentence
    about winter tyres is quoted correctly, and does not say the shop's rent.
    """

    missing: list[str]
    """Key terms (stems) and numbers the sentence does not say."""
    meant: list[str]
    """Key terms it says only in other words."""
    shaped: bool
    around: list[str] = field(default_factory=list)
    """Plain key terms it leaves to its passage: "performance" in the heading's paragraph, not the row."""
    earlier: list[str] = field(default_factory=list)
    """Those of :attr:`around` that only an earlier passage of its document says."""
    says_a_word: bool = True
    """Whether it says one of the question's plain key terms (not only its names) itself, when there are any, or one
    of its codes ("ERR_VPN_AUTH_4012")."""

    @property
    def answers(self) -> bool:
        return (not self.missing and len(self.meant) + len(self.around) <= MAX_MEANT and self.shaped
                and self.says_a_word)


def address(question: str, *quotes: Quote, ledger: Ledger | None = None) -> Address:
    """What of ``question`` the sentences of ``quotes`` say together (see :class:`Address`); a Chinese
    question is taken as answered by any sentence (its bigrams cannot tell a missing word from a split one).

    A sentence that says one of the question's codes verbatim may leave out one plain word of it
    ("error" in "what does the error ERR_VPN_AUTH_4012 mean"): the code says what it is about. A plain
    word its own passage says — or, given the ``ledger``, an earlier passage of its document ("performance" in
    the page's opening above the rating table) — counts as said around it (:attr:`Address.around`). The
    verb of the question's predicate (:data:`_PREDICATE`) and the kind of time asked for ("which month",
    :data:`_ASKED_KIND`) need not be said: the sentence's shape answers for them. "The first quarter" is read
    as Q1, as reports write it.
    """
    if _mostly_cjk(question):
        return Address([], [], True)
    asked = _QUARTER.sub(lambda m: f"Q{_ORDINALS.index(m.group(1).lower()) + 1}", re.sub(r"\([^)]*\)", " ", question))
    said = "\n".join(f"{q.evidence.header}\n{q.sentence}" for q in quotes)
    frame = _frame(asked)
    key_terms = [t for t in content_terms(_ASKED_KIND.sub(" ", asked)) if t not in FRAME_WORDS and t not in frame]
    present = set(content_terms(said)) | set(content_terms(said.replace("_", " ")))
    absent = [t for t in key_terms if t not in present]
    names = {t for word in [*identifiers(asked), *_NAME.findall(asked)] for t in content_terms(word)}
    words = {term: word for term, word in zip(absent, original_words(asked, absent), strict=True)
             if term not in names and not identifier_like(term)}
    meant = matched_words(list(words.values()), _vocabulary(" ".join(q.sentence for q in quotes)))
    meant_terms = [t for t, word in words.items() if word in meant]
    said_numbers = set(numbers(said))
    missing = [t for t in absent if t not in meant_terms]
    if len(missing) == 1 and missing[0] in words and _says_a_code(asked, said):
        missing = []
    own = _terms_of(q.evidence for q in quotes)
    earlier = _terms_of(item for item in ledger or [] for q in quotes if _before(item, q.evidence))
    around = [t for t in missing if t in words and (t in own or t in earlier)]
    missing = [t for t in missing if t not in around]
    missing += [f"{n:g}" for n in numbers(asked) if n not in said_numbers]
    plain = [t for t in key_terms if t not in names and not identifier_like(t)]
    says_a_word = not plain or any(t not in absent or t in meant_terms for t in plain) or _says_a_code(asked, said)
    return Address(missing, meant_terms, any(_fits(asked, q.sentence) for q in quotes), around,
                   [t for t in around if t not in own], says_a_word)


def _terms_of(passages: Iterable[Evidence]) -> set[str]:
    """The content terms of ``passages``, headers included."""
    return set(content_terms("\n".join(f"{item.header}\n{item.text}" for item in passages)))


def linked(question: str, quotes: list[Quote]) -> list[Quote]:
    """Those of ``quotes`` (a chain's sentences, one per document) that share two key terms with ``question``,
    title and section included: a sentence that shares one word ("free" space on a disk) adds it by chance."""
    asked = set(content_terms(question))
    return [q for q in quotes if len(asked & set(content_terms(f"{q.evidence.header}\n{q.sentence}"))) >= 2]


def _before(item: Evidence, other: Evidence) -> bool:
    """Whether ``item`` is a passage of ``other``'s document that comes before it: what a reader has read on the way."""
    start, other_start = item.citation.get("char_start"), other.citation.get("char_start")
    return (item.doc_key == other.doc_key and isinstance(start, int) and isinstance(other_start, int)
            and start < other_start)


def _frame(question: str) -> set[str]:
    """The verb of ``question``'s predicate (:data:`_PREDICATE`), as a term, when the question has two key terms
    besides it (else it is what is asked: "what can I expense?")."""
    verbs = {t for match in _PREDICATE.finditer(question) for word in match.groups() if word
             for t in content_terms(word) if not word[0].isupper()}
    return verbs if len(set(content_terms(question)) - verbs - FRAME_WORDS) >= 2 else set()


def _fits(question: str, sentence: str) -> bool:
    """Whether ``sentence`` has the shape of an answer to ``question``: a number or a time for its kind
    (:func:`answer_kind`), a name for "which ..." (:data:`_WHICH`), a month for "which month" (:data:`_KIND_SHAPES`)."""
    kind = _ASKED_KIND.search(question)
    return (_has_shape(answer_kind(question), sentence) and (not _WHICH.match(question) or _names_something(sentence))
            and (kind is None or bool(_KIND_SHAPES[kind.group(1).lower()].search(sentence))))


def _says_a_code(question: str, said: str) -> bool:
    """Whether ``said`` holds one of the codes of ``question`` (see :func:`identifiers`) verbatim."""
    return any(code.lower() in said.lower() for code in identifiers(question) if len(code) > 3)


def answering_quote(question: str, ledger: Ledger, exclude: set[str] = frozenset()  # type: ignore[assignment]
                    ) -> Quote | None:
    """Of the best-scoring sentences (:func:`best_quotes`' order) that :func:`address` finds answer
    ``question``, the one that leaves least to its passage and then says most of the question in its own
    words rather than its heading's (a plan's row rather than a sentence that only shares the page's title;
    "Students pay half price" rather than the adults' fee on a page that also mentions students).

    When none does, the question is read once more with what it describes in the documents' name for it, as a
    definition in the evidence gives it (:func:`~client_agent.offline.aliases.resolve`: "the chatbot platform" →
    WonderBot Pro), so that the guide's "8 GB RAM" row answers how much memory running the chatbot platform needs.
    """
    read = [(quote, address(question, quote, ledger=ledger))
            for quote in best_quotes(question, ledger, exclude, limit=ANSWER_CANDIDATES, spread=True)]
    answering = [(quote, found) for quote, found in read if found.answers]
    if not answering and read:
        renamed = aliases.resolve(question, read[0][1].missing, ledger)
        return answering_quote(renamed, ledger, exclude) if renamed is not None else None
    best = min(answering, key=lambda pair: (len(pair[1].around), len(pair[1].earlier),
                                            len(_unsaid(question, pair[0].sentence))), default=None)
    return best[0] if best is not None else None


_RELATIVE = re.compile(r"\b(?:half|twice|double|triple|a third|a quarter)\b", re.I)
"""An amount given relative to another ("students pay half price"): the answer needs the other as well."""


def with_base(question: str, answer: Quote, ledger: Ledger) -> list[Quote]:
    """``answer``, and before it the best sentence of its document with a number when ``answer`` states a
    quantity only relative to one ("half price", no number of its own) that the question asks for."""
    if answer_kind(question) != "quantity" or numbers(answer.sentence) or not _RELATIVE.search(answer.sentence):
        return [answer]
    base = next((quote for quote in best_quotes(question, ledger, {answer.sentence}, limit=ANSWER_CANDIDATES,
                                                spread=True)
                 if quote.evidence.doc_key == answer.evidence.doc_key and numbers(quote.sentence)), None)
    return [answer] if base is None else [base, answer]


def _unsaid(question: str, sentence: str) -> set[str]:
    """The question's key terms that ``sentence`` alone (without its heading) does not hold."""
    return set(content_terms(question)) - FRAME_WORDS - set(content_terms(sentence.replace("_", " ")))


ANSWER_CANDIDATES = 20
"""How far down the ranked sentences :func:`answering_quote` looks for one that answers."""


_WHICH = re.compile(r"\s*which\s+(?!(?:month|day|year|date|time|week)s?\b)\w+", re.I)
"""A question asking to pick out a thing by name ("Which vector database...", not "which month")."""


def _names_something(sentence: str) -> bool:
    """Whether ``sentence`` names a thing: a capitalised word after its first, or a code, that is not a day,
    a month or another time word. "Which engineer is on call?" is not answered by "a primary on-call engineer
    each week, handing over on Monday"."""
    named = [*_NAME.findall(sentence), *identifiers(sentence)]
    return any(not _TIME.fullmatch(word) for word in named)


def _has_shape(kind: str | None, sentence: str) -> bool:
    """Whether ``sentence`` can be the answer the question's kind asks for (see :func:`answer_kind`)."""
    if kind == "quantity":
        return bool(numbers(sentence) or _NUMBER_WORDS.search(sentence) or _TIME.search(sentence))
    return _answer_shape(kind, sentence) > 0 if kind else True


def _vocabulary(text: str) -> list[str]:
    """The words of ``text`` that meaning can be matched against (no stopwords, no short words)."""
    return list(dict.fromkeys(w.lower() for w in re.findall(r"[A-Za-z][A-Za-z\-]+", text)
                              if len(w) > 2 and w.lower() not in STOPWORDS))


def _meant(question: str, terms: list[str], item: Evidence) -> set[str]:
    """The question ``terms`` (not codes, not Chinese) that a word of ``item``'s best sentence means nearly the
    same as. The best sentence is the one holding most of the question's terms: meaning fills a gap in a
    sentence that says most of the rest, not across unrelated sentences of a long item."""
    words = {term: word for term, word in zip(terms, original_words(question, terms), strict=True)
             if not identifier_like(term) and not is_cjk(term)}
    asked = set(content_terms(question))
    best = max(sentences(item.text, headings=False) or [item.text],
               key=lambda sentence: len(asked & set(content_terms(sentence))))
    meant = matched_words(list(words.values()), _vocabulary(best))
    return {term for term, word in words.items() if word in meant}


@dataclass(frozen=True)
class Quote:
    sentence: str
    evidence: Evidence
    score: float

    def cited(self) -> str:
        return f"{self.sentence} [{self.evidence.citation_id}]"


def chain_quotes(question: str, ledger: Ledger, limit: int = 3) -> list[Quote]:
    """For a "why" question: the best sentence of each of the ``limit`` most relevant documents.

    A cause rarely sits in one sentence; one quote per document lays out the chain (the
    symptom, the change, the mechanism) with a citation for each link.
    """
    best: dict[str, Quote] = {}
    for quote in best_quotes(question, ledger, limit=len(ledger) * 50, spread=True):
        best.setdefault(quote.evidence.doc_key, quote)
    return sorted(best.values(), key=lambda q: -q.score)[:limit]


def best_quotes(question: str, ledger: Ledger, exclude: set[str] = frozenset(), limit: int = 2,  # type: ignore[assignment]
                spread: bool = False, extreme_only: bool = False) -> list[Quote]:
    """Up to ``limit`` sentences that answer ``question``, best first, none of them in ``exclude``.

    With ``spread``, every candidate is returned in score order (for :func:`chain_quotes`); with
    ``extreme_only``, only the extreme table row a "most …" question asks for, if any.

    A sentence scores by the question's terms it contains (codes and model names count
    double, other terms added in parentheses for context count half, terms only in its section
    heading a quarter), the question's numbers it repeats, and :data:`MEANING_WEIGHT` times its
    similarity in meaning to the question. A second sentence is added when the first leaves
    most of the question's own terms uncovered and it covers some of them, or when it comes
    from the same evidence item as the first and covers a term the first does not.
    """
    main, context = _weighted_terms(question)
    wanted_numbers = set(numbers(question))
    kind = answer_kind(question)
    scored: list[tuple[Quote, set[str], bool]] = []
    named = [i.lower() for i in identifiers(question)]
    for item in ledger:
        section = set(content_terms(str(item.citation.get("section", ""))))
        about = 1.0 if named and all(n in item.title.lower() for n in named) else 0.0
        for raw in sentences(item.text, headings=False):
            sentence = clean(raw)
            sentence_terms = set(content_terms(sentence))
            if len(sentence_terms) < MIN_SENTENCE_TERMS or sentence in exclude:
                continue
            hits = {t for t in main if t in sentence_terms}
            context_hits = {t for t in context if t in sentence_terms}
            score = sum(2.0 if identifier_like(t) else 1.0 for t in hits)
            score += sum(2.0 if identifier_like(t) else 0.5 for t in context_hits)
            score += sum((0.5 if identifier_like(t) else 0.25) for t in main + context
                         if t in section and t not in sentence_terms)
            score -= 0.5 if len(sentence.split()) < SHORT_SENTENCE_WORDS else 0.0
            score += 2.5 * len(wanted_numbers & set(numbers(sentence))) + _answer_shape(kind, sentence)
            score += about - 2.0 * len(_rival_names(named, sentence)) - 0.05 * item.rank
            score -= 1.0 if _ABOUT_THE_PAGE.search(sentence) or _SEE_ALSO.search(sentence) else 0.0
            scored.append((Quote(sentence, item, score), hits | {t for t in main if t in section},
                           bool(hits or context_hits)))
    meanings = similarity(question, [quote.sentence for quote, _, _ in scored])
    candidates = [(Quote(quote.sentence, quote.evidence, quote.score + MEANING_WEIGHT * meaning), hits)
                  for (quote, hits, shares), meaning in zip(scored, meanings, strict=True)
                  if shares or meaning >= MEANING_CANDIDATE]
    candidates.sort(key=lambda pair: -pair[0].score)
    extreme = extreme_row(question, [(quote.sentence, quote.evidence) for quote, _ in candidates])
    if extreme is not None:
        candidates.insert(0, candidates.pop(extreme))
    if extreme_only:
        return [candidates[0][0]] if extreme is not None else []
    if spread:
        return [quote for quote, _ in candidates][:limit]
    if not candidates:
        return []
    first, covered = candidates[0]
    chosen = [first]
    most_uncovered = len(covered) < COVERED * len(main)
    for quote, hits in candidates[1:]:
        if len(chosen) == limit:
            break
        same_item = quote.evidence.citation_id == first.evidence.citation_id
        if hits - covered and quote.sentence != first.sentence and (most_uncovered or same_item):
            chosen.append(quote)
            covered |= hits
    return chosen


def _rival_names(named: list[str], sentence: str) -> list[str]:
    """Names in ``sentence`` of the same family as a name asked about but not it: Q1 when Q2 was asked, X3 for X5."""
    families = {re.sub(r"\d+$", "", n): n for n in named if re.fullmatch(r"[a-z]+\d+", n)}
    return [i for i in (x.lower() for x in identifiers(sentence))
            if re.fullmatch(r"[a-z]+\d+", i) and families.get(re.sub(r"\d+$", "", i), i) != i]


def answer_kind(question: str) -> str | None:
    """What shape of answer the question wants: ``quantity``, ``time``, or None for anything else."""
    for kind, pattern in _ANSWER_KINDS:
        if pattern.search(question):
            return kind
    return None


def _answer_shape(kind: str | None, sentence: str) -> float:
    """A bonus for sentences of the wanted shape: numbers for quantities, dates or months for "when"."""
    if kind == "quantity":
        return 1.0 if numbers(sentence) else 0.0
    if kind == "time":
        return 1.0 if _TIME.search(sentence) or numbers(sentence) else 0.0
    return 0.0


def _weighted_terms(question: str) -> tuple[list[str], list[str]]:
    """The question's own terms, and the context terms it carries in parentheses (a resolved "it")."""
    inside = " ".join(re.findall(r"\(([^)]*)\)", question))
    main = content_terms(re.sub(r"\([^)]*\)", " ", question))
    return main, [t for t in content_terms(inside) if t not in main]


def clean(sentence: str) -> str:
    """A sentence without Markdown emphasis, code ticks or link targets, ending in a full stop."""
    text = _MARKUP.sub("", sentence).strip(" |")
    text = re.sub(r"\s*\|\s*", ", ", text)
    text = re.sub(r"\s+", " ", text)
    return text if text.endswith((".", "!", "?", "。", "！", "？", ":")) else text + "."


def leads(items: list[Evidence], question: str, searched: set[str]) -> list[str]:
    """Ticket and change codes that ``items`` mention, most mentioned first, neither asked about nor searched yet."""
    asked = {i.lower() for i in identifiers(question)}
    counts: dict[str, int] = {}
    for item in items:
        for code in re.findall(_REFERENCE, item.text):
            if code.lower() not in asked and code.lower() not in searched:
                counts[code] = counts.get(code, 0) + 1
    return sorted(counts, key=lambda code: -counts[code])


_REFERENCE = r"\b[A-Z]{2,}[-_](?=(?:[A-Z_\-]*\d){4})[A-Z0-9_\-]*\d\b"
"""Ticket- and change-like codes with a number of four digits or more (``CHG-2025-0612-03``,
``INC-1042``) — not severities (``SEV-2``), model names (``X5``) or host names."""


def named_symptoms(titles: list[str]) -> list[str]:
    """CamelCase names in document titles (alerts, errors) split into words: ``LB No Healthy Backend``.

    An alert record is titled by the alert's name; in words, that name is what the manual
    explaining the behaviour talks about, so it makes a good follow-up search.
    """
    names = re.findall(r"\b[A-Z][A-Za-z]*[a-z][A-Z][A-Za-z]*\b", " ".join(titles))
    return list(dict.fromkeys(re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", n) for n in names))


def plain_words(question: str) -> str:
    """The question's meaning-bearing words as written (question words and function words dropped)."""
    return " ".join(w for w in re.findall(r"[\w\-]+", question) if content_terms(w) and not is_cjk(w))
