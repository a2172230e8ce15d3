"""Multi-hop questions for the offline back-end: comparisons, bridges, and the chain of documents that answers them.

Some questions no single document answers; they need a second search that depends on the
first, or one search per thing compared. Two shapes are recognised, deterministically:

- **Comparison** — "Who is older, Annie Morton or Terry Richardson?", "Are Nantong and
  Jingdezhen in the same province?". :func:`compared_entities` finds the two names joined by
  "or" (or by "and" when a comparing word such as *both*, *same* or *older* is present);
  :func:`comparison_queries` searches each name with the question's other terms.
- **Bridge** — "What government position was held by the woman who portrayed Corliss Archer
  in the film Kiss and Tell?". The question names one thing (the film); its document names
  the bridge (Shirley Temple), whose own document holds the answer. After the first search,
  :func:`anchors` picks the top documents that are about something the question names (its
  title is in the question, or failing that the top document mentions one of the
  question's names), and :func:`bridge_queries` searches for the names those documents
  mention that the question does not — names in sentences sharing more words with the
  question first — each with the question's words the anchor does not cover.

:func:`best_chain` then picks the two documents that answer together. For a comparison,
that is for each name the document whose title matches it best. For a bridge, it is the
pair with the highest score

    coverage of the question's terms by the two documents together
    + 1 if one document's title appears in the other's text (the link that bridges them) in a
      sentence sharing a word with the question besides the two names; 0.5 in another sentence
    + the larger share of a document's title named in the question
    + 0.5 x (1/rank + 1/rank), each document's best rank in any search of the run.

The weights are round numbers; alternatives within a factor of two scored within a point
on the HotpotQA train sample (``bench/agent/hotpotqa.py``), which is not used for reporting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

from client_agent.evidence import Ledger
from client_agent.queries import NEAR_DUPLICATE
from client_agent.text import content_terms, original_words, overlap, sentences
from mcp_server.analyzer.dates import MONTHS
from mcp_server.analyzer.words import STOPWORDS

MAX_BRIDGES = 4
"""Bridge searches after the first search (the most useful names of up to two anchors, alternating)."""
MAX_ANCHORS = 2
ANCHOR_DEPTH = 3
"""Anchors are looked for among this many top documents of the first search."""
LINK_WEIGHT = 1.0
NAMED_WEIGHT = 1.0
RANK_WEIGHT = 0.5

_WORD = r"(?:[A-Z]\.(?:\s?[A-Z]\.)*|[A-Z\d][\w'’\-.!&]*[\w'’!]|[A-Z])"
"""A capitalised word, a number, or initials ("M.", "J. B.")."""
_JOINER = r"(?:of|the|de|del|della|di|da|do|dos|du|des|la|le|les|von|van|der|den|y|&|upon)"
_PHRASE = re.compile(rf"{_WORD}(?:\s+(?:{_JOINER}\s+)*{_WORD})*")
_QUOTED = re.compile(r"[\"“]([A-Z0-9][^\"“”.;]{1,60})[\"”]")
_DATE_OR_NUMBER = re.compile(
    rf"(?:\d{{1,2}}\s+)?(?:{'|'.join(map(str.capitalize, MONTHS))})"
    r"(?:\s+\d{1,4})?|[\d\s,.\-–]+"
)
_NATIONALITY = re.compile(r"(?:an|ese|ish|ic|i)$|^(?:French|Dutch|Greek|Swiss|Thai)$")
_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")
_COMPARING = re.compile(
    r"\b(?:both|same|either|neither|common|respective(?:ly)?|also|older|oldest|younger|youngest|first|earlier|"
    r"later|larger|largest|bigger|smaller|taller|longer|shorter|higher|lower|more|less|fewer|further|farther|"
    r"closer|newer|faster|slower|richer|greater)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Document:
    """One document as the run has seen it: its retrieved text and its best rank in any search."""

    key: str
    title: str
    text: str
    rank: int

    @property
    def subject(self) -> str:
        """The title without a trailing disambiguation: "Kiss and Tell (1945 film)" → "Kiss and Tell"."""
        return _PARENTHETICAL.sub("", self.title).strip() or self.title


def documents(ledger: Ledger) -> list[Document]:
    """The ledger's documents (SQL results left out), best-ranked first; texts joined in arrival order."""
    ranks = ledger.best_ranks()
    texts: dict[str, list[str]] = {}
    titles: dict[str, str] = {}
    for item in ledger:
        if item.kind == "sql":
            continue
        texts.setdefault(item.doc_key, []).append(item.text)
        titles.setdefault(item.doc_key, item.title)
    found = [Document(key, titles[key], "\n".join(parts), ranks.get(key, len(ranks) + 1)) for key, parts in texts.items()]
    return sorted(found, key=lambda d: d.rank)


def named_phrases(text: str) -> list[str]:
    """Names in ``text``, in order: quoted titles and runs of capitalised words ("University of Kansas").

    Leading function words and numbers are dropped ("The Beatles" → "Beatles", "1945 American
    comedy" → "American"), as are dates, bare numbers, a possessive "'s", words inside a quoted
    title, and single nationality-like words used as modifiers ("American actor", "Danish band").
    """
    quoted = list(_QUOTED.finditer(text))
    found = [(m.start(1), m.group(1).strip()) for m in quoted]
    for match in _PHRASE.finditer(text):
        if any(q.start(1) <= match.start() < q.end(1) for q in quoted):
            continue
        words = match.group(0).split()
        while len(words) > 1 and (words[0].lower() in STOPWORDS or any(c.isdigit() for c in words[0])):
            words = words[1:]  # "The Beatles", "1945 American", "17-year-old Shirley Temple"
        if words and words[0].lower() in STOPWORDS:
            continue
        phrase = re.sub(r"['’]s$", "", " ".join(words).strip(" .,'’"))
        if not phrase or _DATE_OR_NUMBER.fullmatch(phrase) or _is_modifier(phrase, text[match.end() :]):
            continue
        found.append((match.start(), phrase))
    return list(dict.fromkeys(phrase for _, phrase in sorted(found)))


def _is_modifier(phrase: str, rest: str) -> bool:
    """A single nationality-like word before a lower-case word: "American actor", "Danish heavy metal band"."""
    following = rest.split()[:1]
    return (" " not in phrase and bool(_NATIONALITY.search(phrase)) and bool(following)
            and following[0][:1].islower() and following[0].lower() not in STOPWORDS)


def compared_entities(question: str) -> list[str]:
    """The two names a comparison question compares, or [] when it does not compare two names.

    "A or B" compares whenever both sides are names; "A and B" only when the question also has
    a comparing word (both, same, older, first, …), since "and" joins names in plenty of others.
    """
    for joiner in (" or ", " and "):
        start = question.find(joiner)
        while start >= 0:
            left, right = question[:start], question[start + len(joiner) :]
            pair = _adjacent_names(left, right)
            if pair and (joiner == " or " or _COMPARING.search(question)):
                return list(pair)
            start = question.find(joiner, start + 1)
    return []


def _adjacent_names(left: str, right: str) -> tuple[str, str] | None:
    """The name ending ``left`` and the name starting ``right`` (after an optional "the"), if both are names."""
    before, after = named_phrases(left), named_phrases(right)
    if not before or not after:
        return None
    tail = left.rstrip(" ,")
    head = re.sub(r"^(?:the|a|an)\s+", "", right.lstrip(), flags=re.IGNORECASE)
    if tail.endswith(before[-1]) and head.startswith(after[0]):
        return before[-1], after[0]
    return None


def comparison_queries(question: str, entities: list[str]) -> list[str]:
    """One search per compared name: the name and the question's terms that are not part of any name.

    When that would be a near-duplicate of the question itself (the other name is a small
    part of it), the loop would refuse it as a repeat, so the name is searched alone.
    """
    names = set(content_terms(" ".join(entities)))
    asked = content_terms(question)
    attribute = original_words(question, [t for t in asked if t not in names])
    queries = []
    for entity in entities:
        query = " ".join([entity, *attribute])
        queries.append(entity if overlap(content_terms(query), asked) >= NEAR_DUPLICATE else query)
    return queries


def anchors(question: str, top: list[Document]) -> list[Document]:
    """Top documents about something the question names: titled by it, or else the first, if it mentions one."""
    asked = set(content_terms(question))
    titled = [d for d in top[:ANCHOR_DEPTH] if (t := set(content_terms(d.subject))) and t <= asked][:MAX_ANCHORS]
    if titled or not top:
        return titled
    first = top[0]
    haystack = set(content_terms(f"{first.title} {first.text}"))
    names = [n for n in named_phrases(question[1:]) if content_terms(n)]
    return [first] if any(set(content_terms(n)) <= haystack for n in names) else []


def bridge_entities(anchor: Document, question: str) -> list[str]:
    """Names ``anchor`` mentions that the question does not, from sentences sharing most with the question first.

    The document's own subject is left out (a longer form of its title, or the name it opens with).
    """
    asked = set(content_terms(question))
    own = set(content_terms(anchor.subject))
    ranked: list[tuple[int, int, str]] = []
    for number, sentence in enumerate(sentences(anchor.text)):
        relevance = len(set(content_terms(sentence)) & (asked - own))
        for position, name in enumerate(named_phrases(sentence)):
            terms = set(content_terms(name))
            if not terms or terms <= asked | own or (own and own <= terms) or (number == position == 0 and terms & own):
                continue
            ranked.append((-relevance, len(ranked), name))
    return list(dict.fromkeys(name for _, _, name in sorted(ranked)))


def bridge_queries(question: str, anchor_documents: list[Document], limit: int = MAX_BRIDGES) -> list[str]:
    """Searches for the bridge names of each anchor (alternating), each with the question's words it leaves uncovered."""
    per_anchor = []
    for anchor in anchor_documents:
        covered = set(content_terms(f"{anchor.title} {anchor.text}"))
        missing = original_words(question, [t for t in content_terms(question) if t not in covered])
        if missing:
            per_anchor.append([" ".join([name, *missing]) for name in bridge_entities(anchor, question)])
    queries: list[str] = []
    for round_ in range(limit):
        queries.extend(q[round_] for q in per_anchor if round_ < len(q))
    return list(dict.fromkeys(queries))[:limit]


def best_chain(question: str, found: list[Document], entities: list[str] | None = None) -> list[Document]:
    """The documents that answer the question together (see the module docstring for the score)."""
    if entities:
        return _comparison_chain(entities, found)
    asked = set(content_terms(question))
    if not asked or len(found) < 2:
        return found[:2]
    terms = {d.key: set(content_terms(f"{d.title} {d.text}")) for d in found}
    named = {d.key: _named_share(d, asked) for d in found}
    said = {d.key: [(s, set(content_terms(s))) for s in sentences(d.text)] for d in found}

    def link(a: Document, b: Document) -> float:
        """How ``a`` names ``b``: 1 in a sentence sharing a word with the question (beyond both names), else 0.5."""
        beyond = asked - set(content_terms(a.subject)) - set(content_terms(b.subject))
        return max((1.0 if words & beyond else 0.5 for sentence, words in said[a.key] if _mentions(sentence, b.subject)),
                   default=0.0)

    def score(a: Document, b: Document) -> float:
        coverage = len(asked & (terms[a.key] | terms[b.key])) / len(asked)
        return (coverage + LINK_WEIGHT * max(link(a, b), link(b, a)) + NAMED_WEIGHT * max(named[a.key], named[b.key])
                + RANK_WEIGHT * (1 / a.rank + 1 / b.rank))

    first, second = max(combinations(found, 2), key=lambda pair: score(pair[0], pair[1]))
    return [first, second]


def _comparison_chain(entities: list[str], found: list[Document]) -> list[Document]:
    """For each compared name, the document whose title matches it best (the better-ranked on a tie)."""
    chain: list[Document] = []
    for entity in entities:
        wanted = set(content_terms(entity))
        candidates = [d for d in found if d not in chain]
        if candidates:
            chain.append(max(candidates, key=lambda d: (_overlap(wanted, set(content_terms(d.subject))), -d.rank)))
    return chain


def _named_share(document: Document, asked: set[str]) -> float:
    title = set(content_terms(document.subject))
    return len(title & asked) / len(title) if title else 0.0


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _mentions(text: str, name: str) -> bool:
    return bool(name) and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


@dataclass
class HopPlan:
    """The multi-hop part of one offline run: the searches to add, once, and whether a chain answers.

    Comparison searches go out with the first search; bridge searches follow it, once, when
    the first results hold an anchor that leaves some of the question's words uncovered.
    """

    question: str
    compared: list[str]
    bridged: bool = False
    active: bool = False
    """True once a comparison or bridge search was planned: the answer quotes :meth:`chain`."""

    @classmethod
    def for_question(cls, question: str) -> HopPlan:
        return cls(question, compared_entities(question))

    def first_queries(self) -> list[str]:
        """The comparison searches, to run beside the first search of the question."""
        queries = comparison_queries(self.question, self.compared) if self.compared else []
        self.active = self.active or bool(queries)
        self.bridged = self.bridged or bool(queries)
        return queries

    def next_queries(self, ledger: Ledger) -> list[str]:
        """The bridge searches after the first results (only once per run, and never after comparisons)."""
        if self.bridged:
            return []
        self.bridged = True
        queries = bridge_queries(self.question, anchors(self.question, documents(ledger)))
        self.active = bool(queries)
        return queries

    def chain(self, ledger: Ledger) -> list[Document]:
        return best_chain(self.question, documents(ledger), self.compared)
