"""Extractive answering: which evidence covers a question, and the sentences to quote.

The offline back-end has no model to write prose, so it answers with sentences copied from
the evidence, each followed by the citation id it came from. That makes its answers
checkable by construction — every number and term is in the cited text — and honest about
what it does not know.

*Coverage* of a sub-question by one evidence item is the share of the sub-question's content
terms that appear in the item (text, title and section); codes and model names must all
appear. A term the item does not contain counts as half present when a word of the item's
sentence holding most of the question's terms means nearly the same
(:data:`~client_agent.offline.meaning.WORD_MEANING`, :mod:`client_agent.offline.meaning`). Coverage
decides what to search next, not what answers.

*Which sentence answers* is decided by a relevance model (:mod:`client_agent.offline.relevance`):
every sentence of the evidence, read with its document's title and section, is scored against
the question, and the best one answers when its score reaches the model's threshold. A
question for the most expensive or cheapest of something gets the extreme row of the best
candidate's table first (:func:`~client_agent.offline.shapes.extreme_row`).
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from client_agent.evidence import Evidence, Ledger
from client_agent.offline.meaning import matched_words
from client_agent.offline.relevance import answers, mostly_cjk, scores
from client_agent.offline.shapes import extreme_row
from client_agent.text import content_terms, identifier_like, identifiers, numbers, original_words, sentences
from mcp_server.analyzer.scripts import is_cjk
from mcp_server.analyzer.words import STOPWORDS

COVERED = 0.6
COVERED_CJK = 0.5
"""Chinese questions are matched by character bigrams, some of which straddle word boundaries
and never occur in the answer, so a lower share suffices."""
MIN_SENTENCE_TERMS = 2
MEANING_SHARE = 0.5
"""How much a term found only in meaning counts toward coverage (a word found verbatim counts 1)."""
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
        threshold = COVERED_CJK if mostly_cjk(self.question) else COVERED
        return self.best is not None and self.score >= threshold and not any(
            identifier_like(t) for t in self.uncovered)


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
    """A sentence of an evidence item and how well it answers the question (:func:`~client_agent.offline.relevance.scores`)."""

    sentence: str
    evidence: Evidence
    score: float

    def cited(self) -> str:
        return f"{self.sentence} [{self.evidence.citation_id}]"


def best_quotes(question: str, ledger: Ledger, exclude: AbstractSet[str] = frozenset(), limit: int = 2,
                extreme_only: bool = False) -> list[Quote]:
    """Up to ``limit`` sentences of the evidence, best answer to ``question`` first, none of them in ``exclude``
    (with ``extreme_only``: only the extreme table row a "most …" question asks for, if any).

    Each sentence is scored by the relevance model as it reads in its passage: after its document's title
    and section, so that a table row is read under the heading that says what it lists.
    """
    seen: set[str] = set()
    candidates: list[tuple[str, Evidence]] = []
    for item in ledger:
        for raw in sentences(item.text, headings=False):
            sentence = clean(raw)
            if sentence in exclude or sentence in seen or len(set(content_terms(sentence))) < MIN_SENTENCE_TERMS:
                continue
            seen.add(sentence)
            candidates.append((sentence, item))
    scored = [Quote(sentence, item, score) for (sentence, item), score in zip(
        candidates, scores(question, [_in_passage(sentence, item) for sentence, item in candidates]), strict=True)]
    scored.sort(key=lambda quote: -quote.score)
    extreme = extreme_row(question, [(quote.sentence, quote.evidence) for quote in scored])
    if extreme is not None:
        scored.insert(0, scored.pop(extreme))
    if extreme_only:
        return scored[:1] if extreme is not None else []
    return scored[:limit]


def _in_passage(sentence: str, item: Evidence) -> str:
    """``sentence`` as the model reads it: after its document's title and section."""
    return f"{item.header}: {sentence}" if item.header else sentence


def answering_quote(question: str, ledger: Ledger, exclude: AbstractSet[str] = frozenset()) -> Quote | None:
    """The best sentence of the evidence for ``question`` that says the codes and numbers the question names
    (:func:`says_what_it_names`), when the relevance model says it answers; else None."""
    candidates = best_quotes(question, ledger, exclude, limit=ANSWER_CANDIDATES)
    best = next((quote for quote in candidates if says_what_it_names(question, _in_passage(quote.sentence, quote.evidence))),
                None)
    return best if best is not None and answers(question, best.score) else None


ANSWER_CANDIDATES = 20
"""How far down the ranked sentences :func:`answering_quote` looks for one that says the question's codes and numbers."""
_ORDINAL = re.compile(r"\b\d+(?:st|nd|rd|th)\b", re.I)


def says_what_it_names(question: str, passage: str) -> bool:
    """Whether ``passage`` says every code, model name and number of ``question`` (ordinals such as "1st"
    aside): a relevance model reads "Q4 2025" and "Q2 2025" as nearly the same, an answer may not."""
    asked = _ORDINAL.sub(" ", question)
    return (all(code.lower() in passage.lower() for code in identifiers(asked))
            and set(numbers(asked)) <= set(numbers(passage)))


def answered_together(question: str, quotes: list[Quote]) -> bool:
    """Whether ``quotes`` (a chain's sentences, one per document), read as one passage, answer ``question``:
    a bridge question is answered by two documents together, neither of which answers it alone."""
    passage = " ".join(_in_passage(quote.sentence, quote.evidence) for quote in quotes)
    return bool(quotes) and answers(question, scores(question, [passage])[0])


_RELATIVE = re.compile(r"\b(?:half|twice|double|triple|a third|a quarter)\b", re.I)
"""An amount given relative to another ("students pay half price"): the answer needs the other as well."""


def with_base(question: str, answer: Quote, ledger: Ledger) -> list[Quote]:
    """``answer``, and before it the best sentence of its document with a number when ``answer`` states an
    amount only relative to one ("half price", no number of its own)."""
    if numbers(answer.sentence) or not _RELATIVE.search(answer.sentence):
        return [answer]
    same = Ledger(ledger.token_budget)
    same.add(item for item in ledger if item.doc_key == answer.evidence.doc_key)
    base = next((quote for quote in best_quotes(question, same, {answer.sentence}, limit=len(same) * 50)
                 if numbers(quote.sentence)), None)
    return [answer] if base is None else [base, answer]


def chain_quotes(question: str, ledger: Ledger, limit: int = 3) -> list[Quote]:
    """For a "why" question: the best sentence of each of the ``limit`` most relevant documents.

    A cause rarely sits in one sentence; one quote per document lays out the chain (the
    symptom, the change, the mechanism) with a citation for each link.
    """
    best: dict[str, Quote] = {}
    for quote in best_quotes(question, ledger, limit=len(ledger) * 50):
        best.setdefault(quote.evidence.doc_key, quote)
    return sorted(best.values(), key=lambda q: -q.score)[:limit]


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
