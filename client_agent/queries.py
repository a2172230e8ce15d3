"""Refusing repeated work: a tool call that would only fetch what the run already has.

Searching again with the same words (or nearly: reordered, pluralised, a stopword more)
returns the same hits and burns a tool call, so the loop refuses it and tells the model to
search for what is actually missing. Two searches are near-duplicates when they go to the
same corpus (or both to all corpora) and their content terms overlap by at least
:data:`NEAR_DUPLICATE` (Jaccard); the retriever does not matter, since hybrid search already
contains both others. Any other tool call is a duplicate only when its arguments are equal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from client_agent.text import content_terms, overlap

NEAR_DUPLICATE = 0.8
SEARCH_TOOLS = frozenset({"hybrid_search", "vector_search", "keyword_search"})


@dataclass
class QueryLog:
    """The tool calls a run has made, to recognise repeats."""

    _searches: list[tuple[str | None, list[str], str]] = field(default_factory=list)
    _calls: set[str] = field(default_factory=set)

    def repeat_of(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """Why this call repeats an earlier one (a message for the model), or None if it is new."""
        if tool in SEARCH_TOOLS:
            corpus = arguments.get("corpus")
            terms = content_terms(str(arguments.get("query", "")))
            for earlier_corpus, earlier_terms, earlier_query in self._searches:
                if earlier_corpus == corpus and terms and overlap(terms, earlier_terms) >= NEAR_DUPLICATE:
                    return (
                        f"Refused: {arguments.get('query')!r} repeats the earlier search {earlier_query!r}, "
                        "which returned the evidence you already have. Search for the specific fact that is "
                        "still missing, with different words, or another corpus."
                    )
            return None
        return "Refused: this exact call was already made in this run; use its result." if (
            _key(tool, arguments) in self._calls
        ) else None

    def record(self, tool: str, arguments: dict[str, Any]) -> None:
        if tool in SEARCH_TOOLS:
            query = str(arguments.get("query", ""))
            self._searches.append((arguments.get("corpus"), content_terms(query), query))
        self._calls.add(_key(tool, arguments))


def _key(tool: str, arguments: dict[str, Any]) -> str:
    return tool + json.dumps(arguments, sort_keys=True, ensure_ascii=False)
