"""What the question calls a thing, resolved to the name the documents use: "help-desk software" → "Service Cloud".

People name products by what they are; documents name them by their names. The evidence of
a first search usually holds the sentence that connects the two — a definition such as
"Wonderlab Service Cloud is an omnichannel help desk for customer-service teams". When some
words of a sub-question are in no evidence item, :func:`resolve` looks for a definition
("NAME is a/an/our/the …", "NAME, a/an …") whose description is close in meaning
(:data:`DEFINITION_MEANING`, :mod:`client_agent.offline.meaning`) to a run of those words, and
returns the sub-question with that run replaced by the name, for a follow-up search and for
checking coverage and choosing sentences. When the evidence holds no such definition yet, the
back-end first searches for the uncovered words themselves (:func:`uncovered_runs`): the
pages that define a product are found by what it is.
"""

from __future__ import annotations

import re

from client_agent.evidence import Ledger
from client_agent.offline.meaning import similarity
from client_agent.text import content_terms, sentences

DEFINITION_MEANING = 0.45
"""Cosine similarity from which a run of the question's words counts as described by a definition.
"help-desk software" and "omnichannel help desk for customer-service teams" score 0.48, "chatbot
builder" and "platform for building AI assistants and chatbots …" 0.60; "help-desk software" and
the chatbot platform's definition 0.24."""
_NAME = r"(?:[A-Z][\w\-]*\s+){0,3}[A-Z][\w\-]*"
_DEFINITION = re.compile(rf"^(?:The\s+)?(?P<name>{_NAME})(?:\s+is|,)\s+(?:a|an|our|the|\w+['’]s)\s+(?P<what>[^.;]+)")
_WORD = re.compile(r"[\w\-’']+")


def resolve(question: str, uncovered: list[str], ledger: Ledger) -> str | None:
    """``question`` with the words that name a thing by what it is replaced by its name, or None."""
    runs = uncovered_runs(question, uncovered)
    definitions = [(m.group("name"), m.group("what")) for item in ledger for s in sentences(item.text, headings=False)
                   if (m := _DEFINITION.match(s.strip("*_ ")))]
    if not runs or not definitions:
        return None
    best: tuple[float, str, str] | None = None
    for run in runs:
        for score, (name, _) in zip(similarity(run, [what for _, what in definitions]), definitions, strict=True):
            if score >= DEFINITION_MEANING and (best is None or score > best[0]) and name.lower() not in question.lower():
                best = (score, run, name)
    return question.replace(best[1], best[2]) if best else None


def uncovered_runs(question: str, uncovered: list[str]) -> list[str]:
    """Maximal stretches of the question whose meaning-bearing words are all uncovered (function words inside allowed)."""
    spans: list[tuple[int, int]] = []
    open_span: tuple[int, int] | None = None
    for match in _WORD.finditer(question):
        terms = content_terms(match.group(0))
        if terms and all(t in set(uncovered) for t in terms):
            open_span = (open_span[0] if open_span else match.start(), match.end())
        elif terms and open_span:
            spans.append(open_span)
            open_span = None
    if open_span:
        spans.append(open_span)
    return [question[start:end] for start, end in spans]
