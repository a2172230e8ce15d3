"""The one English stemmer: Porter2 (Snowball English), as the keyword index has always stemmed.

The index, the citation check and the agent meet a word at the same stem, so "approves",
"approval" and "approve" are one term for all three. Porter2 rather than Whoosh's original
Porter (``whoosh.lang.porter``), which leaves ``running`` as ``runn`` and so misses ``run``.

A stemmer strips suffixes, so it leaves irregular forms apart from their word ("paid" and
"pay", "sold" and "sell", "children" and "child"). :func:`root` takes such a form back to its
dictionary word first, with LemmInflect's English lemma table, and then stems it; the keyword
index stems only (:func:`stem`), as it always has. A form that is another word's dictionary form
too, or the form of more than one word, is left alone: "found" (find, or found a company),
"left" (leave, or the side), "saw" (see, or the tool).
"""

from __future__ import annotations

from functools import lru_cache

from lemminflect import getAllLemmas
from whoosh.lang import porter2


def stem(word: str) -> str:
    """The Porter2 stem of a lower-case English word; a word with digits, joiners or letters beyond ASCII
    (a code, another language) is its own stem."""
    return _porter2(word) if word.isascii() and word.isalpha() else word


def root(word: str) -> str:
    """The stem of a lower-case English word's dictionary form: ``paid`` → ``pay``, ``children`` → ``child``,
    ``approves`` → ``approv`` (as :func:`stem`); see the module docstring for the forms left alone."""
    return stem(_lemma(word)) if word.isascii() and word.isalpha() else word


@lru_cache(maxsize=50_000)
def _porter2(word: str) -> str:
    """Porter2, remembered: the same words recur in every text."""
    return str(porter2.stem(word))


@lru_cache(maxsize=50_000)
def _lemma(word: str) -> str:
    """The one dictionary form ``word`` is a form of, whatever its part of speech, or ``word`` itself."""
    lemmas = {str(lemma) for forms in getAllLemmas(word).values() for lemma in forms}
    return lemmas.pop() if len(lemmas) == 1 else word
