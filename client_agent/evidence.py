"""Evidence: what the tools returned in one run, keyed by citation id, within a token budget.

Every search hit, document window and SQL result the agent receives becomes an
:class:`Evidence` item. The :class:`Ledger` keeps them in one place so that the citation
check can ask "was this id really returned in this run, and what did it say?", and so that
a back-end can show the model what it has found without the prompt growing without bound:
when the ledger's texts exceed its token budget, the lowest-ranked, oldest items are
dropped from the *prompt view* (never from the record the citation check uses).

The ledger also remembers each tool result's order, so that a run can name the evidence
it kept: :meth:`Ledger.sources` ranks the run's documents, those its answer cites first,
then the rest by reciprocal-rank fusion of every result list of the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_server.citation_ids import DocumentRef

EvidenceKind = Literal["chunk", "document", "sql"]

FUSION_K = 60
"""The usual constant of reciprocal-rank fusion: a document's score is the sum of 1 / (60 + rank)."""
CHARS_PER_TOKEN = 4
"""Rough size of a token in characters, enough to keep prompts within a budget."""


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Evidence:
    """One citable piece of evidence, as a tool returned it in this run."""

    citation_id: str
    text: str
    kind: EvidenceKind
    citation: dict[str, Any]
    """The citation record (DESIGN.md shape) for chunks and documents; ``{"id", "sql"}`` for SQL results."""
    tool: str
    query: str
    """The search query, document reference or SQL text that produced it."""
    rank: int
    step: int

    @property
    def title(self) -> str:
        return str(self.citation.get("title") or self.citation_id)

    @property
    def doc_key(self) -> str:
        """The document ref (``corpus:doc_id``, escaped as in its citation id) for document evidence, the
        citation id for SQL results."""
        if self.kind == "sql":
            return self.citation_id
        return str(DocumentRef(str(self.citation.get("corpus")), str(self.citation.get("doc_id"))))

    @property
    def header(self) -> str:
        """Title, section and date from the citation record, as one line."""
        parts = [self.title, str(self.citation.get("section") or ""), self.updated or ""]
        return " — ".join(part for part in parts if part)

    @property
    def updated(self) -> str | None:
        value = self.citation.get("updated")
        return str(value) if value else None


@dataclass
class Ledger:
    """All evidence of a run (first arrival wins) and a bounded view of it for prompts."""

    token_budget: int = 6_000
    _items: dict[str, Evidence] = field(default_factory=dict)
    _results: list[list[str]] = field(default_factory=list)
    """Each tool result's distinct sources (:attr:`Evidence.doc_key`), in rank order, repeats included."""

    def add(self, items: Iterable[Evidence]) -> list[Evidence]:
        """Record one tool result's ``items``; returns those whose citation id was new to this run."""
        items = list(items)
        if items:
            self._results.append(list(dict.fromkeys(item.doc_key for item in items)))
        fresh = []
        for item in items:
            if item.citation_id not in self._items:
                self._items[item.citation_id] = item
                fresh.append(item)
        return fresh

    def __contains__(self, citation_id: object) -> bool:
        return citation_id in self._items

    def __iter__(self) -> Iterator[Evidence]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def get(self, citation_id: str) -> Evidence | None:
        return self._items.get(citation_id)

    def texts(self) -> dict[str, str]:
        """Citation id → what the citation check verifies against, for every item this run received.

        That is the item's text headed by its citation record's title and date: a sentence may
        say "the v2.0 manual, dated 2025-01-15, ..." and cite the chunk whose record says so.
        """
        return {cid: f"{item.header}\n{item.text}" for cid, item in self._items.items()}

    def in_budget(self) -> list[Evidence]:
        """The items a prompt should show: best-ranked first within each step, newest steps kept first.

        Items are taken by (rank, most recent step) until the token budget is spent, so old
        low-ranked evidence is what falls out; the result is returned in arrival order.
        """
        order = list(self._items.values())
        priority = sorted(order, key=lambda e: (e.rank, -e.step))
        kept: set[str] = set()
        used = 0
        for item in priority:
            cost = estimate_tokens(item.text)
            if kept and used + cost > self.token_budget:
                continue
            kept.add(item.citation_id)
            used += cost
        return [item for item in order if item.citation_id in kept]

    def best_ranks(self) -> dict[str, int]:
        """Each source's best rank in any result of the run (1 = the top of some result)."""
        ranks: dict[str, int] = {}
        for result in self._results:
            for rank, key in enumerate(result, start=1):
                ranks[key] = min(rank, ranks.get(key, rank))
        return ranks

    def sources(self, cited: Iterable[str] = ()) -> list[str]:
        """Every source of the run, best first: those of the ``cited`` citation ids in citation order,
        then the others by reciprocal-rank fusion (:data:`FUSION_K`) of the run's result lists.

        A source is a document (``corpus:doc_id``) or a SQL result (its citation id). Ties keep
        the order in which the sources first arrived.
        """
        first = [self._items[cid].doc_key for cid in cited if cid in self._items]
        scores: dict[str, float] = {}
        for result in self._results:
            for rank, key in enumerate(result, start=1):
                scores[key] = scores.get(key, 0.0) + 1 / (FUSION_K + rank)
        fused = sorted(scores, key=lambda key: -scores[key])
        return list(dict.fromkeys([*first, *fused]))

    def dropped(self) -> list[Evidence]:
        """Items left out of :meth:`in_budget`."""
        shown = {item.citation_id for item in self.in_budget()}
        return [item for item in self._items.values() if item.citation_id not in shown]
