"""The third step of the citation check: whether the cited texts hold a sentence's claims.

The texts of a sentence's cited ids, taken together, must contain every number in the sentence
(``1,999`` = ``1999`` = ``¥1,999``; ``10%`` → 10; ``2.8 million`` matches ``2.8 million``,
``2.8M`` and ``2,800,000``; ``five`` in the cited text counts as 5; a number that is part of an
identifier in the cited text, like the 3 of ``X3``, counts as present), every identifier, code,
date and month or weekday name (``ERR_VPN_AUTH_4012``, ``CHG-2025-0612-03``, ``v2.0``,
``2024-05-01``, ``March``; an ISO date in the cited text also supplies its month's name), and at
least half of its other key terms (content words without stopwords, stemmed as the keyword index
stems them and matched on long shared prefixes (words of up to 64 characters), capitalised names
counting double; Chinese and Japanese text as character bigrams). Each cited text is read by
itself: a number at the end of one is not scaled by a word at the start of the next.

:class:`EvidenceSentences` finds, in one cited text, the sentence that best supports some claims.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from mcp_server.analyzer.sentences import SentenceSpan
from mcp_server.grounding.claims import (
    CitedIndex, Claims, SentenceClaims, StemPrefixes, Term, claims_of, index_cited_text, index_text,
)
from mcp_server.grounding.deadline import current_deadline
from mcp_server.grounding.sentences import sentence_spans, unique

MIN_TERM_SHARE = 0.5
"""Share of a sentence's key-term weight that must appear in the cited text."""


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
    return claims_support(claims_of(sentence), [index_cited_text(cited_text)])


def claims_support(claims: Claims, cited: Sequence[CitedIndex]) -> Support:
    """Whether the cited texts ``cited``, taken together, hold ``claims`` (see :func:`supports`).

    Each distinct claim is looked up once in each text (:mod:`~mcp_server.grounding.claims` indexes
    them once), so the work grows with the distinct claims times the texts, not with the texts'
    length nor with a word's repeats.
    """
    numbers = {number.text: number.values for number in claims.numbers}
    missing_numbers = [text for text, values in numbers.items() if not any(values & i.numbers for i in cited)]
    missing_codes = [text for text, key in dict(claims.codes).items() if not any(key in i.codes for i in cited)]
    distinct = {(term.key, term.number): term for term in claims.terms}
    held = {key: term_present(term, cited) for key, term in distinct.items()}
    total = sum(term.weight for term in claims.terms)
    coverage = sum(term.weight for term in claims.terms if held[term.key, term.number]) / total if total else 1.0
    missing_terms = unique([term.text for term in claims.terms if not held[term.key, term.number]])
    supported = not missing_numbers and not missing_codes and coverage >= MIN_TERM_SHARE
    return Support(supported, missing_numbers, missing_terms, missing_codes, coverage)


def support_of_answer(claimed: Sequence[SentenceClaims], evidence: Mapping[str, str]) -> list[Support | None]:
    """For each factual sentence citing an id of ``evidence``, whether those ids' texts hold its claims (None for
    the other sentences); each cited text is indexed once, however many sentences cite it. Stops with
    DeadlineExceeded, between two sentences, once the current deadline has passed."""
    deadline = current_deadline()
    indexes: dict[str, CitedIndex] = {}
    supports: list[Support | None] = []
    for sentence in claimed:
        deadline.check()
        known = [cid for cid in sentence.sentence.ids if cid in evidence]
        if not (sentence.factual and known):
            supports.append(None)
            continue
        for cid in known:
            if cid not in indexes:
                indexes[cid] = index_cited_text(evidence[cid])
        supports.append(claims_support(sentence.claims, [indexes[cid] for cid in known]))
    return supports


class EvidenceSentences:
    """A cited text cut into sentences (the first ``limit``), to find the one that best supports some claims.

    :meth:`best` gives the sentence that :func:`claims_support` would find the fewest numbers and
    codes missing from, then the most key-term weight in (the first on a tie). Every sentence is
    indexed once, and each claim is looked up once in an index of where its keys occur, so
    finding the best sentence for a claim costs the sentences holding it, not all of them.
    """

    def __init__(self, text: str, limit: int | None = None) -> None:
        self.spans = sentence_spans(text)[:limit]
        self._numbers: dict[Decimal, list[int]] = {}
        self._codes: dict[str, list[int]] = {}
        self._words: dict[str, list[int]] = {}
        self._stems: dict[str, list[int]] = {}
        for position, span in enumerate(self.spans):
            index = index_text(text[span.start : span.end])
            for number in index.numbers:
                self._numbers.setdefault(number, []).append(position)
            words = index.stems | index.bigrams
            for where, keys in ((self._codes, index.codes), (self._words, words), (self._stems, index.stems)):
                for key in keys:
                    where.setdefault(key, []).append(position)
        self._prefixes = StemPrefixes(self._stems)

    def best(self, claims: Claims) -> SentenceSpan | None:
        """The sentence holding most of ``claims``' numbers and codes, then most of its key-term weight."""
        if not self.spans:
            return None
        found: Counter[int] = Counter()
        for values in {number.text: number.values for number in claims.numbers}.values():
            found.update({position for value in values for position in self._numbers.get(value, ())})
        for key in {text: key for text, key in claims.codes}.values():
            found.update(self._codes.get(key, ()))
        weights: Counter[tuple[str, Decimal | None]] = Counter()
        for term in claims.terms:
            weights[term.key, term.number] += term.weight
        covered: Counter[int] = Counter()
        for (key, number), weight in weights.items():
            holding = set(self._words.get(key, ()))
            holding.update(self._numbers.get(number, ()) if number is not None else ())
            for stem in self._prefixes.matching(key):
                holding.update(self._stems[stem])
            for position in holding:
                covered[position] += weight
        best = max(sorted({0, *found, *covered}), key=lambda position: (found[position], covered[position]))
        return self.spans[best]


def term_present(term: Term, cited: Sequence[CitedIndex]) -> bool:
    """Whether one of the cited texts has ``term``: its stem or bigram, a spelled number's value, or (looked
    for last) a long shared prefix with one of its stems (:class:`StemPrefixes`, the stemmer's safety net)."""
    for index in cited:
        if term.key in index.stems or term.key in index.bigrams:
            return True
        if term.number is not None and term.number in index.numbers:
            return True
    return any(index.prefixes.match(term.key) for index in cited)

