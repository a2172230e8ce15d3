"""How the offline back-end reads a question: arithmetic, relevance, parts, follow-ups and routing.

All of it is deterministic string work, documented so a reader can predict it:

- :func:`about_the_knowledge` decides whether a question could be answered from the
  knowledge base at all: it must share vocabulary with some corpus's description or the
  database schema, be close in meaning to a sentence of a description
  (:data:`DESCRIPTION_MEANING`, by :mod:`client_agent.offline.meaning`: "time off" for a corpus of
  leave rules), or name a code or model (``X9``) that only a search can rule out. Anything
  else is general knowledge, which the offline mode declines honestly — unless a corpus says
  it holds general knowledge (its description mentions an encyclopedia or general-knowledge
  questions), in which case every question is searched.
- :func:`undescribed` names the corpora whose description says nothing about their topics
  (a folder indexed without ``corpus.toml``): a description cannot rule a question out for
  them, so the back-end searches them and lets the results decide.
- :func:`database_tables` and :func:`about_records` tell questions about records ("how many
  refunds…") from questions about what documents say.
- :func:`split_question` splits a multi-part question into sub-questions and gives later
  parts that say "it" or "that" the subject of the first part.
- :func:`resolve_follow_up` does the same across turns of a chat.
- :func:`route` picks the corpus whose description matches a sub-question clearly better
  than the others, or none (search everything) when the match is not clear.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from client_agent.connection import Catalog, CorpusSummary
from client_agent.offline.meaning import best_similarity
from client_agent.text import content_terms, identifiers, original_words, sentences

_QUESTION_WORD = r"(?:what|how|when|who|whom|which|where|why|is|are|do|does|did|can|could|must|should|will|would)\b"
_NOT_RELATIVE = r"(?:what|how|why)\b"
_PART_BREAK = re.compile(
    rf"\s*(?:(?:[,;]\s*(?:and|also)\s+|\s+and\s+(?:also\s+)?|\s+also\s+)(?={_QUESTION_WORD})|[,;]\s*(?={_NOT_RELATIVE}))",
    re.IGNORECASE,
)
"""Where a second question starts: "and"/"also" before a question word, or a comma before what, how
or why — words that cannot open a relative clause or an apposition (", who died in 2007" and
", is a member of" describe; ", and who founded it?" asks)."""
_STARTS_AS_QUESTION = re.compile(rf"\s*{_QUESTION_WORD}", re.IGNORECASE)
_PRONOUN = re.compile(r"\b(it|its|they|them|their|this|that|these|those|there|the same|one)\b", re.IGNORECASE)
_NEGATIVE = re.compile(r"\b(not|never|don't|doesn't|instead|rather than)\b", re.IGNORECASE)
_CAUSAL = re.compile(r"\b(why|cause[sd]?|root cause|reason|what happened|how come)\b|为什么|原因", re.IGNORECASE)
_COUNT = re.compile(r"\bhow many ((?:[a-z]+ ){0,2}?[a-z]+?)\s+(?:were|are|did|have|has|do|does|was|is)\b", re.IGNORECASE)
_GENERAL_KNOWLEDGE = re.compile(r"\bencyclop(?:a)?edi|\bgeneral[- ]knowledge\b", re.IGNORECASE)
_CURRENT_PRICE = re.compile(r"\b(?:current|latest|today's) price\b", re.IGNORECASE)
_RECORDS = re.compile(
    r"\bhow many\b.*\b(?:were|are|did|have|has|was|is)\b|\b(?:total|sum|average|count|number) of\b|\b(?:list|show) "
    r"(?:all|every)\b|\b(?:which|what) (?:customers?|employees?|orders?|tickets?|refunds?|products?)\b"
    r"|\b(?:current|latest|today's) price\b",
    re.IGNORECASE,
)
"""Shapes of questions about records: counts, sums and averages, lists, or a record's current value."""
_GENERIC_DESCRIPTION = frozenset(content_terms(
    "documents document files local folder folders indexed index ad hoc without corpus corpora toml so what they "
    "cover covers covered described describes description search searched it when question questions may might "
    "concern concerns those and no better better-described fits fit use notes"))
"""Words a description uses about itself rather than about a topic (the server's text for an ad-hoc folder)."""
DESCRIPTION_MEANING = 0.2
"""Cosine similarity from which a question counts as close in meaning to a description sentence. On the
bundled descriptions general-knowledge questions ("What is the capital of France?", "Who wrote Hamlet?",
"How do I bake bread?") stay below 0.13, questions in other words than the descriptions' ("How much
notice do I need to give before taking time off?") reach 0.29."""
CLEAR_WINNER = 1.5


@dataclass(frozen=True)
class SubQuestion:
    text: str
    corpus: str | None


def is_causal(question: str) -> bool:
    """True for "why did X happen" questions, whose answer usually spans several documents."""
    return bool(_CAUSAL.search(question))


def about_the_knowledge(question: str, catalog: Catalog) -> bool:
    """Whether searching could answer ``question``: shared vocabulary with the catalog, closeness in
    meaning to a description, a named code, or a corpus of general knowledge."""
    if identifiers(question) or any(_GENERAL_KNOWLEDGE.search(_positive_description(c)) for c in catalog.corpora):
        return True
    vocabulary = set(content_terms(catalog.sql_schema))
    for corpus in catalog.corpora:
        vocabulary |= set(content_terms(corpus.name + " " + _positive_description(corpus)))
    if set(content_terms(question)) & vocabulary:
        return True
    described = [s for c in catalog.corpora if c.name not in undescribed(catalog)
                 for s in sentences(_positive_description(c))]
    return best_similarity(question, described) >= DESCRIPTION_MEANING


def undescribed(catalog: Catalog) -> list[str]:
    """The corpora whose description names no topic of theirs (only generic words and the corpus's name)."""
    return [c.name for c in catalog.corpora
            if not set(content_terms(_positive_description(c))) - _GENERIC_DESCRIPTION - set(content_terms(c.name))]


def about_records(question: str) -> bool:
    """Whether ``question`` asks about database records (a count, sum, list or current value), not documents."""
    return bool(_RECORDS.search(question))


def database_tables(question: str, catalog: Catalog) -> list[str]:
    """Tables a question asks to count or look up records in ("how many refunds…", "current price of…").

    Such questions are answered by a query, not by documents: the offline mode says so
    instead of quoting a document that merely mentions refunds or prices.
    """
    try:
        tables = [t["name"] for t in json.loads(catalog.sql_schema or "[]")]
    except (json.JSONDecodeError, KeyError, TypeError):
        return []
    counted = _COUNT.search(question)
    nouns = set(content_terms(counted.group(1))) if counted else set()
    if _CURRENT_PRICE.search(question):
        nouns |= {"product", "price"}
    return [t for t in tables if nouns & set(content_terms(t.replace("_", " ")))]


def split_question(question: str) -> list[str]:
    """The parts of a multi-part question; later parts that refer back get the first part's subject.

    A sentence that does not open with a question word is one question whatever follows
    ("At the 2011 census, what was the population of …" is not two).
    """
    pieces = [p.strip(" ?？") for q in re.split(r"(?<=[?？])\s*", question)
              for p in (_PART_BREAK.split(q) if _STARTS_AS_QUESTION.match(q) else [q])]
    parts = [p for p in pieces if content_terms(p)]
    if len(parts) <= 1:
        return [question.strip()]
    subject = " ".join(original_words(parts[0], content_terms(parts[0])[:3]))  # the user's words, not stems
    return [parts[0], *(f"{p} ({subject})" if _PRONOUN.search(p) else p for p in parts[1:])]


def resolve_follow_up(question: str, previous_questions: list[str]) -> str:
    """``question`` with the last turn's subject added when it refers back ("what about it", "the same")."""
    if not previous_questions or not (_PRONOUN.search(question) or len(content_terms(question)) <= 2):
        return question
    subject = " ".join(original_words(previous_questions[-1], content_terms(previous_questions[-1])[:4]))
    return f"{question.rstrip(' ?？')} ({subject})"


def route(question: str, corpora: list[CorpusSummary]) -> str | None:
    """The corpus whose description clearly matches ``question`` best, or None to search all corpora."""
    terms = set(content_terms(question))
    scores = sorted(
        ((len(terms & set(content_terms(c.name + " " + _positive_description(c)))), c.name) for c in corpora),
        reverse=True,
    )
    if not scores or scores[0][0] == 0:
        return None
    if len(scores) > 1 and scores[0][0] < CLEAR_WINNER * scores[1][0]:
        return None
    return scores[0][1]


def _positive_description(corpus: CorpusSummary) -> str:
    """The description without its "do not use it for …" sentences, which name other corpora's topics."""
    return " ".join(s for s in sentences(corpus.description) if not _NEGATIVE.search(s))
