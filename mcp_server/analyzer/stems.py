"""The one English stemmer: Porter2 (Snowball English), as the keyword index has always stemmed.

The index, the citation check and the agent meet a word at the same stem, so "approves",
"approval" and "approve" are one term for all three. Porter2 rather than Whoosh's original
Porter (``whoosh.lang.porter``), which leaves ``running`` as ``runn`` and so misses ``run``.
"""

from __future__ import annotations

from functools import lru_cache

from whoosh.lang import porter2


def stem(word: str) -> str:
    """The Porter2 stem of a lower-case English word; a word with digits, joiners or letters beyond ASCII
    (a code, another language) is its own stem."""
    return _porter2(word) if word.isascii() and word.isalpha() else word


@lru_cache(maxsize=50_000)
def _porter2(word: str) -> str:
    """Porter2, remembered: the same words recur in every text."""
    return str(porter2.stem(word))
