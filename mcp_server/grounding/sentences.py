"""The first step of the citation check: an answer's citation brackets, and its sentences.

* **Citations.** :func:`citation_brackets` finds the square brackets that hold citation ids
  (``[handbook:hr/leave-policy#2]``, several separated by ``,`` or ``;``; an id written with its
  file name unescaped too, :mod:`mcp_server.citation_ids`), :func:`cited_ids` lists the ids, as
  the server writes them, and :func:`remove_citations` takes the brackets out of a text.
* **Sentences.** :func:`sentence_spans` cuts an answer into the sentences that are checked one
  by one, with the analyzer's splitter (:mod:`mcp_server.analyzer.sentences`), each keeping its
  citation brackets: none is cut, and one right after a full stop belongs to the sentence it
  ends. It stops at the deadline of the call it serves.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from mcp_server.analyzer.sentences import SentenceSpan
from mcp_server.analyzer.sentences import sentence_spans as analyzer_sentence_spans
from mcp_server.citation_ids import canonical
from mcp_server.grounding.deadline import current_deadline


_CORPUS = r"(?=[\w.-]*?[^\W\d_])[\w.-]+:"
"""A corpus name and its colon; with a letter, so that a time (``[10:30]``) is no citation."""
_CITATION_ID = re.compile(rf"{_CORPUS}[^\s\[\],;]+")
"""An id as the server writes it (:mod:`mcp_server.citation_ids`): a name, a colon, no spaces."""
_CORPUS_PREFIX = re.compile(rf"{_CORPUS}\S")

_BRACKET = re.compile(r"\[([^\[\]\n]+)\]")
_ID_SEPARATOR = re.compile(r"([,;])")


@dataclass(frozen=True)
class Bracket:
    """Where a citation bracket stands in its text, and the ids it holds (as the server writes them)."""

    start: int
    end: int
    ids: tuple[str, ...]


@lru_cache(maxsize=64)
def citation_brackets(text: str) -> tuple[Bracket, ...]:
    """Square brackets whose content is one or more citation ids (``[1]`` or ``[see above]`` are not).

    Ids may be separated by commas or semicolons and wrapped in backticks. Cached: the splitter, the ids and the
    claims of one sentence all read its brackets.
    """
    brackets = []
    for match in _BRACKET.finditer(text):
        if ids := _bracket_ids(match.group(1)):
            brackets.append(Bracket(match.start(), match.end(), ids))
    return tuple(brackets)


def _bracket_ids(content: str) -> tuple[str, ...]:
    """The ids a bracket's content cites, each as the server writes it, or () when it is no citation.

    An id written unescaped (``mydocs:Fire drill on Thursday#0``) counts when it has the shape of
    no ordinary bracketed note: a name and a colon, then no space, and a chunk number at the end.
    A comma or semicolon not followed by ``<corpus>:`` belongs to the file name of the id before it.
    """
    pieces = _ID_SEPARATOR.split(content)
    groups: list[list[str]] = []
    for at in range(0, len(pieces), 2):
        if groups and not _CORPUS_PREFIX.match(_bare(pieces[at])):
            groups[-1] += [pieces[at - 1], pieces[at]]
        elif _bare(pieces[at]):
            groups.append([pieces[at]])
    ids = [_cited("".join(group)) for group in groups]
    return tuple(cid for cid in ids if cid is not None) if ids and None not in ids else ()


def _bare(part: str) -> str:
    """``part`` without the spaces, backticks and trailing separators around it."""
    return part.strip().strip("`,;").strip()


def _cited(part: str) -> str | None:
    """The id ``part`` of a bracket cites, as the server writes it, or None when it is no id."""
    part = _bare(part)
    if not (_CITATION_ID.fullmatch(part) or _unescaped_chunk_id(part)):
        return None
    return canonical(part)


def _unescaped_chunk_id(text: str) -> bool:
    """``<corpus>:<doc_id>#<chunk>`` with the doc_id as the file name has it: starting and ending with no space."""
    body, separator, chunk = text.rpartition("#")
    return (
        bool(separator) and chunk.isascii() and chunk.isdigit() and body[-1:].strip() != ""
        and _CORPUS_PREFIX.match(body) is not None
    )  # fmt: skip


def unique(items: list[str]) -> list[str]:
    """``items`` without repeats, in order of first appearance."""
    return list(dict.fromkeys(items))


def remove_citations(text: str, replacement: str = "") -> str:
    """``text`` with every citation bracket replaced by ``replacement``."""
    parts, done = [], 0
    for bracket in citation_brackets(text):
        parts += [text[done : bracket.start], replacement]
        done = bracket.end
    return "".join(parts) + text[done:]


def cited_ids(answer: str) -> list[str]:
    """Every citation id in ``answer``, unique, in order of first appearance."""
    return unique([cid for bracket in citation_brackets(answer) for cid in bracket.ids])




def sentence_spans(answer: str) -> list[SentenceSpan]:
    """Where the sentences of ``answer`` stand, each with the citation brackets that belong to it; stops with
    DeadlineExceeded once the current deadline has passed."""
    brackets = [(bracket.start, bracket.end) for bracket in citation_brackets(answer)]
    return analyzer_sentence_spans(answer, brackets, current_deadline().check)


def split_sentences(answer: str) -> list[str]:
    """The sentences of ``answer`` (:func:`sentence_spans`), each with its citation brackets."""
    return [answer[span.start : span.end] for span in sentence_spans(answer)]


class AnswerSentence(NamedTuple):
    """One sentence of an answer: where it stands, its text, the ids it cites, and its text without them."""

    span: SentenceSpan
    text: str
    ids: list[str]
    plain: str
    """The text with its citation brackets taken out, stripped."""


def read_answer(answer: str, spans: Sequence[SentenceSpan] | None = None) -> list[AnswerSentence]:
    """The sentences of ``answer`` (at ``spans``, or as :func:`sentence_spans` finds them) with their citations;
    stops with DeadlineExceeded, between two sentences, once the current deadline has passed."""
    deadline = current_deadline()
    sentences = []
    for span in sentence_spans(answer) if spans is None else spans:
        deadline.check()
        text = answer[span.start : span.end]
        sentences.append(AnswerSentence(span, text, cited_ids(text), remove_citations(text).strip()))
    return sentences
