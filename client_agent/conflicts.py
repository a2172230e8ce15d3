"""Noticing when two sources disagree about the thing asked.

Two versions of a manual, an old and a new price list: both are retrieved, both look
authoritative, and an answer built from whichever ranked first is wrong half the time. The
detector looks for *measurements* (a number with a unit: "120 minutes", "58 dB", "10%")
in sentences (or under headings) that mention the question's terms other than model names,
and reports a :class:`Conflict` when two different documents about the same subject — both
naming every model or code the question names — state different values with the same unit. It is a heuristic with a narrow aim — same subject,
same unit, different number — so it stays quiet about the many numbers
that merely differ; it does not catch disagreements stated in words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

from client_agent.evidence import Evidence, Ledger
from client_agent.text import content_terms, identifier_like, identifiers, overlap, sentences

_MEASURE = re.compile(
    r"(\d+(?:\.\d+)?)\s*(minutes?|mins?|hours?|hrs?|%|percent|gb|mb|db|pa|days?|weeks?|months?|years?|seats?|ms|mah|w|kg|calls?)\b",
    re.IGNORECASE,
)
_UNIT_ALIASES = {"min": "minute", "mins": "minute", "minutes": "minute", "hr": "hour", "hrs": "hour",
                 "hours": "hour", "percent": "%", "days": "day", "weeks": "week", "months": "month",
                 "years": "year", "seats": "seat", "calls": "call"}
SAME_SUBJECT = 0.5


@dataclass(frozen=True)
class Statement:
    """A sentence of one evidence item that states ``value`` ``unit`` about the question's terms."""

    evidence: Evidence
    sentence: str
    value: float
    unit: str
    terms: frozenset[str]


@dataclass(frozen=True)
class Conflict:
    """Two documents that state different values for the same attribute; ``newer`` is the later-dated one."""

    first: Statement
    second: Statement

    @property
    def newer(self) -> Statement | None:
        a, b = self.first.evidence.updated, self.second.evidence.updated
        if not a or not b or a == b:
            return None
        return self.first if a > b else self.second

    @property
    def key(self) -> tuple[str, str, str]:
        docs = sorted([self.first.evidence.doc_key, self.second.evidence.doc_key])
        return docs[0], docs[1], self.first.unit

    def describe(self) -> str:
        """One paragraph for the model and the user: who says what, dated, and which is newer."""
        parts = []
        for statement in (self.first, self.second):
            e = statement.evidence
            dated = f", dated {e.updated}" if e.updated else ", undated"
            parts.append(f"[{e.citation_id}] ({e.title}{dated}) says: \"{statement.sentence}\"")
        newer = self.newer
        verdict = (
            f"The newer source is {newer.evidence.title} ({newer.evidence.updated}) [{newer.evidence.citation_id}]."
            if newer else "Neither source is dated later than the other."
        )
        return "Sources disagree. " + " ".join(parts) + " " + verdict


def find_conflicts(ledger: Ledger, question: str) -> list[Conflict]:
    """Conflicts among the ledger's documents about what ``question`` asks, one per document pair and unit."""
    focus = {t for t in content_terms(question) if not identifier_like(t)}
    names = [n.lower() for n in identifiers(question)]
    statements = [
        s for item in ledger
        if item.kind != "sql" and all(n in f"{item.header}\n{item.text}".lower() for n in names)
        for s in _statements(item, focus)
    ]
    found: dict[tuple[str, str, str], Conflict] = {}
    for a, b in combinations(statements, 2):
        if (a.evidence.doc_key == b.evidence.doc_key or a.unit != b.unit or a.value == b.value
                or not _same_subject(a.evidence, b.evidence)):
            continue
        conflict = Conflict(a, b)
        found.setdefault(conflict.key, conflict)
    return list(found.values())


def _statements(item: Evidence, focus: set[str]) -> list[Statement]:
    """Measurements in ``item`` stated in a sentence, or under a heading, that mentions a focus term."""
    parts = re.split(r"^#{1,6}\s+(.*)$", item.text, flags=re.MULTILINE)
    sections = [(str(item.citation.get("section", "")).split(">")[-1], parts[0]), *zip(parts[1::2], parts[2::2])]
    result = []
    for heading, body in sections:
        heading_terms = set(content_terms(heading))
        for sentence in sentences(body):
            shared = frozenset((set(content_terms(sentence)) | heading_terms) & focus)
            if not shared:
                continue
            for match in _MEASURE.finditer(sentence):
                unit = match.group(2).lower()
                result.append(Statement(item, sentence, float(match.group(1)), _UNIT_ALIASES.get(unit, unit), shared))
    return result


def _same_subject(a: Evidence, b: Evidence) -> bool:
    """Documents about the same thing: titles that share a model name or most of their words."""
    if set(identifiers(a.title)) & set(identifiers(b.title)):
        return True
    return overlap(content_terms(a.title), content_terms(b.title)) >= SAME_SUBJECT
