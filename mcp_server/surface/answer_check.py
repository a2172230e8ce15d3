"""The ``check_answer`` tool's behaviour: the agent's citation check, run on a host's draft answer.

:func:`check_cited_answer` reads the chunks an answer cites through ``lookup`` (the caller's
grant applied: an id outside it is the same as an id that does not exist), runs
:func:`mcp_server.grounding.citations.check_answer` — the one implementation the agent uses
too — and adds, for each supported sentence, where its evidence is: the citation record and
the sentence of the cited chunk that matches it best, with its offsets, page and lines.
SQL citations (``sql:<db>:<hash>``) cannot be re-read later (the server keeps no results), so
they count as unknown ids here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field

from mcp_server.errors import InvalidQueryError
from mcp_server.grounding.citations import SentenceCheck, check_answer, supports
from mcp_server.grounding.claims import SentenceSpan, cited_ids, sentence_spans
from mcp_server.models import Citation, PublishedModel

MAX_ANSWER_CHARS = 20_000
"""Longest answer checked in one call."""
MAX_CITED_IDS = 100
"""Most distinct citation ids one answer may cite."""

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
    if not answer.strip():
        raise InvalidQueryError("answer is empty; pass the draft answer whose sentences carry [citation ids]")
    if len(answer) > MAX_ANSWER_CHARS:
        raise InvalidQueryError(
            f"answer is {len(answer)} characters; check at most {MAX_ANSWER_CHARS} at a time (split it in parts)"
        )
    ids = cited_ids(answer)
    if len(ids) > MAX_CITED_IDS:
        raise InvalidQueryError(f"answer cites {len(ids)} ids; check at most {MAX_CITED_IDS} at a time")
    found = {cid: record for cid in ids if (record := lookup(cid)) is not None}
    check = check_answer(answer, {cid: text for cid, (_, text) in found.items()})
    verdicts = [_verdict(sentence, found) for sentence in check.sentences]
    counts = {status: sum(1 for v in verdicts if v.status == status) for status in Status.__args__}  # type: ignore[attr-defined]
    return AnswerCheck(
        question=question, passed=check.passed, verdict=_summary(verdicts), sentences=verdicts, **counts
    )


def _verdict(sentence: SentenceCheck, found: dict[str, tuple[Citation, str]]) -> SentenceVerdict:
    status: Status = "unknown_id" if sentence.unknown_ids else sentence.status
    reason = "; ".join(sentence.problems) or None
    if reason is not None:
        reason = reason.replace("not returned by any tool in this run", "no such id, or not readable by this client")
    evidence = []
    if status == "supported":
        evidence = [_locate(sentence.text, *found[cid]) for cid in sentence.citations if cid in found]
    return SentenceVerdict(
        text=sentence.text, status=status, reason=reason, citations=sentence.citations,
        unknown_ids=sentence.unknown_ids, evidence=evidence,
    )  # fmt: skip


def _locate(sentence: str, citation: Citation, chunk_text: str) -> EvidenceSpan:
    """The sentence of ``chunk_text`` that holds most of ``sentence``'s numbers and codes, then most of
    its key terms (the first on a tie)."""

    def score(span: SentenceSpan) -> tuple[int, float]:
        support = supports(sentence, chunk_text[span.start : span.end])
        return -len(support.missing_numbers) - len(support.missing_codes), support.coverage

    best = max(sentence_spans(chunk_text), key=score, default=None)
    start, end = (best.start, best.end) if best is not None else (0, len(chunk_text))
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
