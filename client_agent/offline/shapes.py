"""Answers with a shape of their own: the numbered steps of a procedure, the extreme row of a table.

- :func:`procedure` — "how do I fix it?", "how can I renew…", "what should I do?" are answered
  by numbered steps, not by the sentence that defines the problem. Of the numbered lists in
  the evidence (two steps or more), the one closest in meaning to the question is quoted
  whole, steps numbered as in the source, with its citation. When the question names codes
  (``ERR_VPN_AUTH_4012``), only a list in an evidence item naming every one of them counts:
  the renewal steps of one error are not the fix for another.
- :func:`extreme_row` — "the most expensive plan", "the cheapest plan": of the table rows
  among the candidate sentences that share the best candidate's table (same item, same
  column headers), the row with the highest (lowest) number in the column the question
  names ("Price").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from client_agent.evidence import Evidence, Ledger
from client_agent.offline.meaning import similarity
from client_agent.text import content_terms, identifiers, numbers

_PROCEDURE = re.compile(
    r"\bhow (?:do|can|should|would) (?:i|we|you)\b|\bhow to\b|\bwhat (?:should|do|can) (?:i|we) do\b|\bsteps?\b",
    re.IGNORECASE,
)
_STEP = re.compile(r"^\s*(\d{1,2})[.)]\s+(.*)$")
_MARKUP = re.compile(r"\*\*|__|`")
MIN_STEPS = 2
PROCEDURE_MEANING = 0.3
"""Similarity from which a numbered list counts as answering a "how do I" question."""
_MOST = re.compile(r"\b(?:most expensive|highest|largest|biggest|longest|maximum|priciest)\b", re.IGNORECASE)
_LEAST = re.compile(r"\b(?:cheapest|least expensive|lowest|smallest|shortest|minimum)\b", re.IGNORECASE)
COLUMN_SHARE = 0.75
_CELL = re.compile(r"(?:^|, )([A-Z][\w ()/-]{0,40}): ")


@dataclass(frozen=True)
class Steps:
    """A numbered list of one evidence item, as the answer quotes it: one line per step."""

    steps: tuple[str, ...]
    evidence: Evidence

    @property
    def text(self) -> str:
        return " ".join(self.steps)

    def cited(self) -> list[str]:
        """Each step on its own line with the citation (a step is a sentence of its own for the citation check)."""
        return [f"{step} [{self.evidence.citation_id}]" for step in self.steps]


def is_procedure(question: str) -> bool:
    return bool(_PROCEDURE.search(question))


def procedure(question: str, ledger: Ledger) -> Steps | None:
    """The numbered list of the evidence that best answers a "how do I" ``question``, or None."""
    if not is_procedure(question):
        return None
    codes = [code.lower() for code in identifiers(question)]
    lists = [Steps(steps, item) for item in ledger if all(code in item.text.lower() for code in codes)
             for steps in numbered_lists(item.text)]
    if not lists:
        return None
    score, best = max(zip(similarity(question, [s.text for s in lists]), lists, strict=True), key=lambda pair: pair[0])
    return best if score >= PROCEDURE_MEANING else None


def numbered_lists(text: str) -> list[tuple[str, ...]]:
    """Each numbered list of ``text`` with at least :data:`MIN_STEPS` steps ("1. Open …", "2. Choose …")."""
    lists: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        step = _STEP.match(line)
        if step:
            current.append(f"{step.group(1)}. {_MARKUP.sub('', step.group(2)).strip()}")
        elif current and line.startswith((" ", "\t")) and line.strip() and not line.strip().startswith("```"):
            current[-1] += " " + _MARKUP.sub("", line.strip())
        elif line.strip() and current:
            lists.append(current)
            current = []
    if current:
        lists.append(current)
    return [tuple(s if s.endswith((".", ":", ";")) else s + "." for s in steps)
            for steps in lists if len(steps) >= MIN_STEPS]


def asks_extreme(question: str) -> bool:
    """Whether the question asks for the most or least of something ("the most expensive plan", "the cheapest")."""
    return bool(_MOST.search(question) or _LEAST.search(question))


def extreme_row(question: str, rows: Sequence[tuple[str, Evidence]]) -> int | None:
    """The index in ``rows`` (candidate sentences, best first) of the extreme row the question asks for, or None.

    Tables are the rows of one evidence item with the same headers; the column is a numeric one
    most of whose header's terms the question names (:data:`COLUMN_SHARE`). Of several, the table whose title shares the
    most terms with the question wins, then the column most of whose header the question names
    ("Price" before "Discount on the monthly list price"), then the better-placed row.
    """
    if not asks_extreme(question):
        return None
    highest = bool(_MOST.search(question))
    wanted = set(content_terms(question))
    tables: dict[tuple[str, tuple[str, ...], str], list[tuple[float, int]]] = {}
    ranks: dict[tuple[str, tuple[str, ...], str], tuple[int, float, int]] = {}
    for index, (sentence, evidence) in enumerate(rows):
        cells = _cells(sentence)
        for column in (h for h in cells if numbers(cells[h]) and _named_share(h, wanted) >= COLUMN_SHARE):
            key = (evidence.citation_id, tuple(cells), column)
            tables.setdefault(key, []).append((numbers(cells[column])[0], index))
            ranks.setdefault(key, (len(set(content_terms(evidence.title)) & wanted), _named_share(column, wanted),
                                   -index))
    candidates = [key for key, values in tables.items() if len(values) >= 2]
    if not candidates:
        return None
    table = tables[max(candidates, key=lambda key: ranks[key])]
    return (max(table) if highest else min(table))[1]


def _named_share(header: str, wanted: set[str]) -> float:
    """The share of ``header``'s terms the question names."""
    terms = set(content_terms(header))
    return len(terms & wanted) / len(terms) if terms else 0.0


def _cells(sentence: str) -> dict[str, str]:
    """A table row sentence ("Plan: Basic, Price: ¥1,999/month, …") as header → cell; {} for other sentences."""
    marks = list(_CELL.finditer(sentence))
    if len(marks) < 2 or marks[0].start() != 0:
        return {}
    ends = [m.start() for m in marks[1:]] + [len(sentence)]
    return {m.group(1): sentence[m.end() : end].rstrip(". ") for m, end in zip(marks, ends, strict=True)}
