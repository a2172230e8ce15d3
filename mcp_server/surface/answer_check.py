"""The ``check_answer`` tool's behaviour: the agent's citation check, run on a host's draft answer.

:func:`check_cited_answer` reads the chunks an answer cites through ``lookup`` (the caller's
grant applied: an id outside it is the same as an id that does not exist), runs
:func:`mcp_server.grounding.verdict.check_answer` — the one implementation the agent uses
too — and adds, for each supported sentence, where its evidence is: the citation record and
the sentence of the cited chunk that matches it best, with its offsets, page and lines.
SQL citations (``sql:<db>:<hash>``) cannot be re-read later (the server keeps no results), so
they count as unknown ids here.

Any client may call this tool on a shared server, so what one call may cost is bounded: an
answer is refused beyond :data:`MAX_ANSWER_CHARS` characters, :data:`MAX_SENTENCES`
sentences, :data:`MAX_CITED_IDS` distinct ids, :data:`MAX_SENTENCE_IDS` ids in one sentence
or :data:`MAX_CITATIONS` citations in all; of each cited chunk the first
:data:`MAX_CHUNK_CHARS` characters are compared, and a supported sentence's evidence is
looked for among the chunk's first :data:`MAX_EVIDENCE_SENTENCES` sentences. Every cited
chunk is indexed, and cut into sentences, once per call (and remembered for the next), and
the work stops at the call's deadline (:mod:`mcp_server.grounding.deadline`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Literal

from pydantic import Field

from mcp_server.analyzer.sentences import SentenceSpan
from mcp_server.errors import InvalidQueryError
from mcp_server.grounding.claims import claims_of
from mcp_server.grounding.deadline import current_deadline
from mcp_server.grounding.sentences import cited_ids, sentence_spans
from mcp_server.grounding.support import EvidenceSentences
from mcp_server.grounding.verdict import SentenceCheck, check_answer
from mcp_server.models import Citation, PublishedModel

MAX_ANSWER_CHARS = 10_000
"""Longest answer checked in one call."""
MAX_SENTENCES = 100
"""Most sentences (lines, list items, headings included) one answer may have."""
MAX_CITED_IDS = 20
"""Most distinct citation ids one answer may cite."""
MAX_SENTENCE_IDS = 5
"""Most distinct citation ids one sentence may cite."""
MAX_CITATIONS = 100
"""Most citations in one answer, counting the distinct ids of each sentence."""
MAX_CHUNK_CHARS = 4_000
"""Characters of a cited chunk compared with the sentences citing it (its beginning); chunks are shorter
(at most about 1,700 characters with the default chunking)."""
MAX_EVIDENCE_SENTENCES = 64
"""Sentences of a cited chunk looked through for the one that matches a supported sentence best."""

Lookup = Callable[[str], "tuple[Citation, str] | None"]
"""A citation id to its record and chunk text, or None when it is unknown or not granted."""

Status = Literal["supported", "unsupported", "uncited", "unknown_id", "not_factual"]


class EvidenceSpan(PublishedModel):
    """Where in a cited chunk a supported sentence's evidence is."""

    citation: Citation
    quote: str = Field(description="The sentence of the cited chunk that matches the checked sentence best.")
    char_start: int = Field(description="Offset of the quote in the document text.")
    char_end: int = Field(description="Offset one past the quote's end in the document text.")
    line_start: int | None = Field(default=None, description="First line of the quote in the source file, when known.")
    line_end: int | None = Field(default=None, description="Last line of the quote in the source file, when known.")


class SentenceVerdict(PublishedModel):
    """The check of one sentence of the answer."""

    text: str
    status: Status = Field(
        description="supported; unsupported (see reason); uncited (a factual claim with no citation); unknown_id "
        "(cites an id that does not exist or that this client cannot read); not_factual (a question, heading, "
        "or statement about the sources)."
    )
    reason: str | None = Field(description="What fails, e.g. 'number 25 not in the cited text'; null when it passes.")
    citations: list[str]
    unknown_ids: list[str]
    evidence: list[EvidenceSpan] = Field(description="For a supported sentence: where each cited chunk supports it.")


class AnswerCheck(PublishedModel):
    """The citation check of one answer: a verdict per sentence, counts, and one line to act on."""

    question: str | None
    passed: bool
    verdict: str
    sentences: list[SentenceVerdict]
    supported: int
    unsupported: int
    uncited: int
    unknown_id: int
    not_factual: int


def check_cited_answer(answer: str, question: str | None, lookup: Lookup) -> AnswerCheck:
    """Check ``answer`` against the chunks its ids name, as ``lookup`` reads them."""
    spans, ids = _within_limits(answer)
    found = {cid: (record[0], record[1][:MAX_CHUNK_CHARS]) for cid in ids if (record := lookup(cid)) is not None}
    check = check_answer(answer, {cid: text for cid, (_, text) in found.items()}, spans)
    verdicts = [_verdict(sentence, found) for sentence in check.sentences]
    counts = {status: sum(1 for v in verdicts if v.status == status) for status in Status.__args__}  # type: ignore[attr-defined]
    return AnswerCheck(
        question=question, passed=check.passed, verdict=_summary(verdicts), sentences=verdicts, **counts
    )


def _within_limits(answer: str) -> tuple[list[SentenceSpan], list[str]]:
    """The sentences of ``answer`` and the ids it cites, or the refusal of an answer over one of the limits,
    saying what to do."""
    if not answer.strip():
        raise InvalidQueryError("answer is empty; pass the draft answer whose sentences carry [citation ids]")
    if len(answer) > MAX_ANSWER_CHARS:
        raise InvalidQueryError(
            f"answer is {len(answer)} characters; check at most {MAX_ANSWER_CHARS} at a time (split it in parts)"
        )
    spans = sentence_spans(answer)
    if len(spans) > MAX_SENTENCES:
        raise InvalidQueryError(
            f"answer has {len(spans)} sentences (lines and list items count as sentences); check at most "
            f"{MAX_SENTENCES} at a time (split it in parts)"
        )
    citations = 0
    for span in spans:
        sentence_ids = cited_ids(answer[span.start : span.end])
        if len(sentence_ids) > MAX_SENTENCE_IDS:
            raise InvalidQueryError(
                f'the sentence "{_clip(answer[span.start : span.end])}" cites {len(sentence_ids)} ids; cite at most '
                f"{MAX_SENTENCE_IDS} per sentence: the chunks that hold its numbers and key terms"
            )
        citations += len(sentence_ids)
    if citations > MAX_CITATIONS:
        raise InvalidQueryError(
            f"answer has {citations} citations (the ids of each sentence); check at most {MAX_CITATIONS} at a time "
            "(split it in parts)"
        )
    if len(ids := cited_ids(answer)) > MAX_CITED_IDS:
        raise InvalidQueryError(
            f"answer cites {len(ids)} different ids; check at most {MAX_CITED_IDS} at a time (split it in parts)"
        )
    return spans, ids


def _verdict(sentence: SentenceCheck, found: dict[str, tuple[Citation, str]]) -> SentenceVerdict:
    status: Status = "unknown_id" if sentence.unknown_ids else sentence.status
    reason = "; ".join(sentence.problems) or None
    if reason is not None:
        reason = reason.replace("not returned by any tool in this run", "no such id, or not readable by this client")
    return SentenceVerdict(
        text=sentence.text, status=status, reason=reason, citations=sentence.citations,
        unknown_ids=sentence.unknown_ids, evidence=_evidence(sentence, found) if status == "supported" else [],
    )  # fmt: skip


def _evidence(sentence: SentenceCheck, found: dict[str, tuple[Citation, str]]) -> list[EvidenceSpan]:
    """Where each chunk ``sentence`` cites supports it: the chunk's sentence that holds most of its numbers and
    codes, then most of its key terms (the whole chunk when it has no sentence)."""
    claims = claims_of(sentence.text)
    spans = []
    for cid in sentence.citations:
        if cid in found:
            current_deadline().check()
            citation, chunk_text = found[cid]
            best = _evidence_sentences(chunk_text).best(claims)
            start, end = (best.start, best.end) if best is not None else (0, len(chunk_text))
            spans.append(_span(citation, chunk_text, start, end))
    return spans


@lru_cache(maxsize=64)
def _evidence_sentences(chunk_text: str) -> EvidenceSentences:
    """The sentences of a cited chunk, indexed (cached: answers and their revisions cite the same chunks)."""
    return EvidenceSentences(chunk_text, MAX_EVIDENCE_SENTENCES)


def _span(citation: Citation, chunk_text: str, start: int, end: int) -> EvidenceSpan:
    """``chunk_text[start:end]`` as evidence, placed in its document and source file."""
    line_start = line_end = None
    if citation.line_start is not None:
        line_start = citation.line_start + chunk_text.count("\n", 0, start)
        line_end = line_start + chunk_text.count("\n", start, end)
    return EvidenceSpan(
        citation=citation, quote=chunk_text[start:end], char_start=citation.char_start + start,
        char_end=citation.char_start + end, line_start=line_start, line_end=line_end,
    )  # fmt: skip


def _summary(verdicts: list[SentenceVerdict]) -> str:
    failing = [v for v in verdicts if v.status in ("unsupported", "uncited", "unknown_id")]
    factual = sum(1 for v in verdicts if v.status != "not_factual")
    if not failing:
        return f"All {factual} factual sentences are supported by their citations."
    parts = "; ".join(f'"{_clip(v.text)}" ({v.reason})' for v in failing)
    return (
        f"{len(failing)} of {factual} factual sentences are not supported by their citations: {parts}. "
        "Fix or drop them, citing only ids the tools returned."
    )


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
